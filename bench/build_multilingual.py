"""Build the multilingual file-localization benchmark from real fix commits.

Built the way SWE-bench was, from the history of public repositories in languages other
than Python: a commit that fixes a bug, in the authors' own words, is an instance; its query
is that text, its gold is the non-test code files it modified, as they exist at its parent
(the instance's ``base_commit``). Deterministic: the same mirrors give the same file.

    python bench/build_multilingual.py                  # mirrors under /work/.mirror
    python bench/build_multilingual.py --mirror gin-gonic/gin=/path/to/gin.git --stats

Construction (documented in bench/data/README.md):

1. Commits: every non-merge commit reachable from the mirror's HEAD (``git log --no-merges``),
   not written by a bot, whose message says it fixes a bug: the subject has a bug word (fix,
   bug, crash, regression, wrong, incorrect, broken, leak, hang, panic, segfault, overflow,
   error, fail) or the message closes an issue (``fixes #N``, ``closes #N``, ``Fixes:
   https://github.com/.../issues/N``), and the subject is not housekeeping (docs, ci, chore,
   build, style, test, perf, refactor, release prefixes; typo, readme, changelog, bump, release,
   lint, clippy, revert, spelling, workflow, dependabot, deps, doc(s), documentation).
2. Gold: the files the commit *modified* (status M against its first parent, no rename
   detection) that are code (a language the code index parses, by extension) and not tests
   (test directories and test-file conventions of each language, see ``is_test``). Added code
   files are kept as ``gold_files_added`` (not retrievable). Kept when 1 <= |gold| <= 4, at
   most 300 changed lines over the gold files, and no code file deleted or renamed.
3. Query: the full commit message with trailer lines (``Signed-off-by:``, ``Co-authored-by:``,
   ``PR-URL:``, ``Reviewed-By:`` ...) removed; at least 6 words. The issue text is not used:
   the search tool's issues corpus answers by similarity with excerpts, not by number, and is
   not reachable from a script, so every query is the commit message (the "bug described in
   the authors' own words" case of the construction).
4. Leak filter: an instance is dropped when its query names a gold file: the repo-relative
   path or the basename appears verbatim (case-insensitive). ``tier`` is then computed as the
   SWE-bench dev README defines it (easy: path, medium: basename, hard: module stem as a
   word, none), so only ``hard`` and ``none`` remain.
5. Per repository, the eligible commits are ordered by sha256 of the instance id and the
   first ``--per-repo`` (default 30) are kept: a deterministic sample spread over history.
6. Split: ``dev`` when the first byte of sha256(instance_id) is even, else ``heldout``; both
   halves span every repository. Tune only on dev.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import posixpath
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from treeseek.code.languages import language_for_path

OUT_DIR = Path(__file__).resolve().parent / "data"
MIRRORS = Path("/work/.mirror")

#: repository -> main language of its source (for reporting per language)
REPOS: dict[str, str] = {
    "gin-gonic/gin": "go",
    "sharkdp/fd": "rust",
    "colinhacks/zod": "typescript",
    "google/gson": "java",
    "rack/rack": "ruby",
    "libuv/libuv": "c",
    "fmtlib/fmt": "cpp",
}
#: held out for an independent check: never used here
EXCLUDED = frozenset(
    {
        "caddyserver/caddy",
        "burntsushi/ripgrep",
        "vitejs/vite",
        "jhy/jsoup",
        "sinatra/sinatra",
        "jqlang/jq",
        "nlohmann/json",
    }
)

PER_REPO = 30
MAX_GOLD = 4
MAX_CHANGED_LINES = 300
MIN_QUERY_WORDS = 6

_BUG_WORDS = re.compile(
    r"\b(fix(e[sd]|ing)?|bug(s|fix)?|crash(es|ed|ing)?|regression|incorrect(ly)?|wrong(ly)?|"
    r"broken|leak(s|ing)?|hang(s|ing)?|panic(s|ked)?|segfault|overflow|errors?|"
    r"fail(s|ed|ing|ure)?)\b",
    re.IGNORECASE,
)
_CLOSES = re.compile(
    r"\b(fix(e[sd])?|close[sd]?|resolve[sd]?)\s*:?\s*(#\d+|https://github\.com/\S+/issues/\d+)",
    re.IGNORECASE,
)
_HOUSEKEEPING_PREFIX = re.compile(
    r"^\s*(docs?|ci|chore|build|style|tests?|perf|refac(tor)?|release)(\([^)]*\))?!?:", re.I
)
_HOUSEKEEPING_WORDS = re.compile(
    r"\b(typos?|readme|changelog|bump(ed|s)?|release|lint(er|ing)?|clippy|revert(s|ed)?|"
    r"spelling|workflows?|dependabot|deps|docs?|documentation)\b",
    re.IGNORECASE,
)
_TRAILER = re.compile(r"^\s*[A-Za-z][A-Za-z-]*-(by|to|URL|Id)\s*:", re.IGNORECASE)
_TRAILER_NAMES = re.compile(r"^\s*(Refs?|Fixes|Closes|Cc|See|PR|Link)\s*:\s*\S+\s*$", re.I)

_TEST_DIRS = frozenset(
    {"test", "tests", "testing", "__tests__", "spec", "specs", "testdata", "fixtures", "bench"}
)
_TEST_FILE = re.compile(
    r"(^test_.*|.*_tests?\.\w+$|.*_spec\.rb$|.*\.(test|spec)\.\w+$|.*Tests?\.java$|"
    r"^conftest\.py$)"
)


def is_test(path: str) -> bool:
    """Tests, fixtures and benchmarks by the conventions of the benchmark's languages."""
    parts = path.split("/")
    if any(p.lower() in _TEST_DIRS for p in parts[:-1]):
        return True
    return bool(_TEST_FILE.match(parts[-1]))


def is_code(path: str) -> bool:
    return language_for_path(path) is not None


def clean_message(message: str) -> str:
    """The commit message without trailer lines, whitespace normalized at the ends."""
    lines = [
        ln
        for ln in message.replace("\r\n", "\n").split("\n")
        if not _TRAILER.match(ln) and not _TRAILER_NAMES.match(ln)
    ]
    return "\n".join(lines).strip()


def is_bug_fix(subject: str, message: str) -> bool:
    if _HOUSEKEEPING_PREFIX.match(subject) or _HOUSEKEEPING_WORDS.search(subject):
        return False
    return bool(_BUG_WORDS.search(subject) or _CLOSES.search(message))


def tier(query: str, gold: list[str]) -> str:
    """The SWE-bench dev README's tiers: easy (a gold path verbatim), medium (a basename),
    hard (a module stem as a word), none."""
    low = query.lower()
    if any(g.lower() in low for g in gold):
        return "easy"
    if any(posixpath.basename(g).lower() in low for g in gold):
        return "medium"
    for g in gold:
        stem = posixpath.splitext(posixpath.basename(g))[0]
        if stem and re.search(rf"(?<![\w]){re.escape(stem)}(?![\w])", query, re.IGNORECASE):
            return "hard"
    return "none"


def split_of(instance_id: str) -> str:
    return "dev" if hashlib.sha256(instance_id.encode()).digest()[0] % 2 == 0 else "heldout"


def _order(instance_id: str) -> str:
    return hashlib.sha256(("order:" + instance_id).encode()).hexdigest()


@dataclass
class Stats:
    commits: int = 0
    bug: int = 0
    shape: int = 0
    short: int = 0
    leak: int = 0
    eligible: int = 0
    kept: int = 0


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), *args],
        check=True,
        capture_output=True,
        text=True,
        errors="replace",
    ).stdout


def build_repo(repo: str, git_dir: Path, per_repo: int, stats: Stats) -> list[dict[str, object]]:
    log = _git(git_dir, "log", "--no-merges", "--format=%H%x00%P%x00%an%x00%B%x01", "HEAD")
    eligible: list[dict[str, object]] = []
    for record in log.split("\x01"):
        record = record.strip("\n")
        if not record:
            continue
        sha, parents, author, message = record.split("\x00", 3)
        stats.commits += 1
        parent = parents.split()[0] if parents else ""
        subject = message.strip().split("\n", 1)[0]
        if not parent or "[bot]" in author or not is_bug_fix(subject, message):
            continue
        stats.bug += 1
        status = _git(git_dir, "diff-tree", "-r", "--no-renames", "--name-status", parent, sha)
        numstat = _git(git_dir, "diff-tree", "-r", "--no-renames", "--numstat", parent, sha)
        modified: list[str] = []
        added: list[str] = []
        deleted = False
        for line in status.splitlines():
            code, _, path = line.partition("\t")
            if not is_code(path) or is_test(path):
                continue
            if code == "M":
                modified.append(path)
            elif code == "A":
                added.append(path)
            else:
                deleted = True
        changed = 0
        for line in numstat.splitlines():
            a, d, path = line.split("\t", 2)
            if path in modified:
                changed += (int(a) if a != "-" else 0) + (int(d) if d != "-" else 0)
        if deleted or not 1 <= len(modified) <= MAX_GOLD or changed > MAX_CHANGED_LINES:
            continue
        stats.shape += 1
        query = clean_message(message)
        if len(query.split()) < MIN_QUERY_WORDS:
            stats.short += 1
            continue
        gold = sorted(modified)
        t = tier(query, gold)
        if t in ("easy", "medium"):
            stats.leak += 1
            continue
        owner, name = repo.split("/")
        eligible.append(
            {
                "instance_id": f"{owner}__{name}-{sha[:12]}",
                "repo": repo,
                "base_commit": parent,
                "fix_commit": sha,
                "query": query,
                "gold_files": gold,
                "gold_files_added": sorted(added),
                "tier": t,
                "language": REPOS.get(repo, "unknown"),
            }
        )
    stats.eligible = len(eligible)
    eligible.sort(key=lambda inst: _order(str(inst["instance_id"])))
    kept = eligible[:per_repo]
    stats.kept = len(kept)
    for inst in kept:
        inst["split"] = split_of(str(inst["instance_id"]))
    return kept


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror", action="append", default=[], metavar="OWNER/NAME=GIT_DIR")
    ap.add_argument("--per-repo", type=int, default=PER_REPO)
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    ap.add_argument("--stats", action="store_true", help="print the funnel per repository")
    args = ap.parse_args(argv)
    mirrors = {r: MIRRORS / r.replace("/", "+") / "repo" for r in REPOS}
    for spec in args.mirror:
        repo, _, where = spec.partition("=")
        mirrors[repo] = Path(where)
    instances: list[dict[str, object]] = []
    for repo, git_dir in sorted(mirrors.items()):
        if repo.lower() in EXCLUDED:
            raise SystemExit(f"{repo} is held out for an independent check")
        stats = Stats()
        instances.extend(build_repo(repo, git_dir, args.per_repo, stats))
        if args.stats:
            print(f"{repo}: {stats}", file=sys.stderr)
    instances.sort(key=lambda inst: str(inst["instance_id"]))
    args.out.mkdir(parents=True, exist_ok=True)
    for split in ("dev", "heldout"):
        rows = [i for i in instances if i["split"] == split]
        path = args.out / f"multilingual-{split}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        per = Counter(str(i["repo"]) for i in rows)
        print(f"{path.name}: {len(rows)} instances {dict(sorted(per.items()))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
