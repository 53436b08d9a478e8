"""Flat query latency with one tree vs many trees in one database (issue 9).

    python bench/bench_many_trees.py                                   # requests, 50 commits
    python bench/bench_many_trees.py --mirror /work/.mirror/pallets+flask/repo --trees 50
    python bench/bench_many_trees.py --mirror A --mirror B             # commits of both
    python bench/bench_many_trees.py --mirror /work/.mirror/apprent1c3+django/repo \
        --repo django/django --queries /work/shared/bench/swebench-verified-dev.jsonl

Builds two databases from bare git mirrors (``treeseek`` indexes a commit of a bare
repository, :class:`~treeseek.trees.git.GitTreeBuilder`):

- ``one``: the newest commit of the first mirror, alone;
- ``many``: ``--trees`` commits spread over the last ``--span`` first-parent commits of each
  mirror (the same newest commit among them), each indexed from the previous one (``base``),
  so contents are shared by the trees as in an agent's database of many commits.

Then it asks the same questions of that newest tree in both databases: each question once to
warm the process (the tree's tables and indexes are built once per tree and kept in the
database's caches), then ``--runs`` rounds over all questions, each query timed alone, the
two databases in turn (so a change in the machine's load hits both alike).
Reported: the median over questions of each question's median warm latency, per database,
and their ratio (the issue's target: ``many`` not slower than ``one`` by more than 20%).
It also checks that the answers (paths and scores) are identical in both databases.

Questions: ``--queries`` (the issue texts of a dataset file for the mirrors' repositories,
e.g. the dev split) when given, plus a few fixed questions. Uses only the public API
(``treeseek.open``, ``Database.index``, ``Database.query``), so it runs on any version.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import treeseek
from treeseek.trees.git import GitTreeBuilder

MIRRORS = [Path("/work/.mirror/psf+requests/repo")]
OPTIONS: dict[str, Any] = {"strategy": "flat", "k": 10, "include_content": False}
QUESTIONS = [
    "which function handles redirects in requests",
    "Session does not send cookies set by a redirect response",
    "proxy authentication header is dropped when the proxy URL has credentials",
    "timeout parameter is ignored when streaming a response body",
    "how are query parameters encoded into the URL",
    "chunked transfer encoding with a generator body",
    "SSL certificate verification can not be turned off for one request",
    "where is the User-Agent header set by default",
    "Response.json raises a decoding error for an empty body",
    "retry a request after a connection error",
]


def first_parent_commits(git_dir: Path, span: int) -> list[str]:
    """The last ``span`` first-parent commits of HEAD, newest first."""
    out = subprocess.run(
        ["git", "--git-dir", str(git_dir), "rev-list", "--first-parent", f"-n{span}", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


def spread(commits: list[str], n: int) -> list[str]:
    """``n`` commits evenly spread over ``commits`` (newest first), always with the newest."""
    if n >= len(commits):
        return list(commits)
    step = (len(commits) - 1) / max(1, n - 1)
    return list(dict.fromkeys(commits[round(i * step)] for i in range(n)))


def build(path: Path, plan: list[tuple[Path, list[str]]], target: str) -> tuple[float, int, float]:
    """Index each mirror's commits (oldest first, each from the previous) into ``path``;
    returns the seconds spent, the trees and the database size in MB."""
    started = time.perf_counter()
    trees = 0
    with treeseek.open(path) as db:
        for m, (git_dir, commits) in enumerate(plan):
            previous: str | None = None
            for commit in reversed(commits):
                name = target if (m == 0 and commit == commits[0]) else f"m{m}-{commit[:12]}"
                with GitTreeBuilder(git_dir, commit) as builder:
                    db.index(builder, name=name, base=previous)
                previous = name
                trees += 1
    return time.perf_counter() - started, trees, path.stat().st_size / 2**20


def measure(
    paths: list[Path], tree: str, questions: list[str], runs: int
) -> tuple[list[list[float]], list[Any]]:
    """Per database, per question, the median of ``runs`` warm query times (s); and each
    database's answers. The databases are queried in turn, question by question, so a
    change in the machine's load hits all of them alike."""
    dbs = [treeseek.open(p) for p in paths]
    try:
        answers: list[Any] = []
        for db in dbs:  # warm: the tree's tables, indexes and term ids
            answers.append(
                [[(h.path, h.score) for h in db.query(tree, q, **OPTIONS).files] for q in questions]
            )
        times = [[[] for _ in questions] for _ in dbs]
        for _ in range(runs):
            for i, q in enumerate(questions):
                for d, db in enumerate(dbs):
                    t0 = time.perf_counter()
                    db.query(tree, q, **OPTIONS)
                    times[d][i].append(time.perf_counter() - t0)
        return [[statistics.median(t) for t in per_db] for per_db in times], answers
    finally:
        for db in dbs:
            db.close()


def load_questions(dataset: Path | None, repos: set[str]) -> list[str]:
    found: list[str] = []
    if dataset is not None:
        for line in dataset.read_text().splitlines():
            row = json.loads(line)
            if row.get("repo") in repos:
                found.append(row["query"])
    return found + QUESTIONS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mirror", type=Path, action="append", help="bare git mirror (repeatable)")
    ap.add_argument("--trees", type=int, default=50, help="trees in the many-tree database")
    ap.add_argument("--span", type=int, default=1000, help="first-parent commits to spread over")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--queries", type=Path, help="dataset JSONL with repo/query fields")
    ap.add_argument(
        "--repo",
        action="append",
        help="the dataset's name of a mirror's repository (default: from the mirror's directory,"
        " owner+name)",
    )
    ap.add_argument("--max-questions", type=int, default=0, help="0: all")
    ap.add_argument("--work", type=Path, help="where the databases go (default: a temp dir)")
    ap.add_argument("--reuse", action="store_true", help="query the databases in --work as built")
    args = ap.parse_args()
    mirrors = args.mirror or MIRRORS
    work = args.work or Path(tempfile.mkdtemp(prefix="many-trees-"))
    work.mkdir(parents=True, exist_ok=True)
    per_mirror = [args.trees // len(mirrors)] * len(mirrors)
    per_mirror[0] += args.trees - sum(per_mirror)
    plan = [
        (m, spread(first_parent_commits(m, args.span), n))
        for m, n in zip(mirrors, per_mirror, strict=True)
    ]
    repos = set(args.repo or [m.parent.name.replace("+", "/") for m in mirrors])
    questions = load_questions(args.queries, repos)
    if args.max_questions:
        questions = questions[: args.max_questions]
    target = "target"
    one, many = work / "one.db", work / "many.db"
    if args.reuse:
        one_s = many_s = 0.0
        with treeseek.open(many) as db:
            trees = len(db.trees())
        one_mb, many_mb = one.stat().st_size / 2**20, many.stat().st_size / 2**20
    else:
        for p in (one, many):
            for suffix in ("", "-wal", "-shm"):
                Path(f"{p}{suffix}").unlink(missing_ok=True)
        one_s, _, one_mb = build(one, [(plan[0][0], plan[0][1][:1])], target)
        many_s, trees, many_mb = build(many, plan, target)
    (one_t, many_t), (one_answers, many_answers) = measure(
        [one, many], target, questions, args.runs
    )
    one_ms = 1000 * statistics.median(one_t)
    many_ms = 1000 * statistics.median(many_t)
    report = {
        "mirrors": [str(m) for m in mirrors],
        "target_commit": plan[0][1][0],
        "questions": len(questions),
        "runs": args.runs,
        "one": {"trees": 1, "index_s": round(one_s, 1), "db_mb": round(one_mb, 1)},
        "many": {"trees": trees, "index_s": round(many_s, 1), "db_mb": round(many_mb, 1)},
        "median_warm_ms": {"one": round(one_ms, 2), "many": round(many_ms, 2)},
        "ratio": round(many_ms / one_ms, 3),
        "identical_answers": one_answers == many_answers,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
