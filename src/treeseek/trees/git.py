"""A commit of a (bare) git repository as a tree source: no working checkout needed.

The listing comes from one ``git ls-tree -r -l -z COMMIT``; each file's signature is its blob
id, so the incremental indexer skips every file whose blob did not change between two commits
without reading it. Contents that do need reading are pulled through one long-lived
``git cat-file --batch`` process per builder (see :mod:`treeseek.trees._catfile`).

Submodules (``commit`` entries) are skipped with a warning: their contents live in another
repository. Symlinks are decided as the filesystem builder decides them in a checkout of the
commit (:mod:`treeseek.trees.filesystem`): a symlink to a file of the commit (through other
symlinks too) is that file, read from the target's blob and signed with its id; one that
points outside the tree, dangles, loops or names a directory is skipped with a warning. (They
used to be their own blob, the target's path as text: zod's root ``README.md``, a link to its
package's, was the text ``packages/zod/README.md`` in a git tree and the README in a
checkout.)
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from treeseek._closing import Closing
from treeseek.errors import BuildError
from treeseek.trees._catfile import CatFileBatch
from treeseek.trees.model import NodeType, TreeSource
from treeseek.trees.source import SourceEntry, SourceWarnings, TreeBuilder


def run_git(git_dir: Path | str, args: Sequence[str]) -> bytes:
    """Run one git command against ``git_dir`` and return its stdout; BuildError on failure."""
    command = ["git", "--git-dir", str(git_dir), *args]
    try:
        done = subprocess.run(command, capture_output=True, check=False)
    except OSError as exc:
        raise BuildError(f"cannot run git ({exc}); is git installed?") from exc
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()
        raise BuildError(f"git {' '.join(args)} failed in {git_dir}: {message}")
    return done.stdout


def resolve_commit(git_dir: Path | str, commit: str) -> str:
    """The full commit id that ``commit`` (a sha, branch, tag, ...) names in ``git_dir``."""
    if commit.startswith("-"):
        raise BuildError(f"not a commit: {commit!r}")
    try:
        out = run_git(git_dir, ["rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"])
    except BuildError as exc:
        raise BuildError(f"commit {commit!r} not found in {git_dir}") from exc
    return out.decode("ascii").strip()


def _check_git_dir(git_dir: Path) -> None:
    if not git_dir.is_dir():
        raise BuildError(f"git directory {git_dir} does not exist")
    if not (git_dir / "objects").is_dir() and not (git_dir / "commondir").is_file():
        raise BuildError(f"{git_dir} is not a git directory (no objects/ inside)")


def checkout_git_dir(path: Path) -> Path:
    """The git directory of ``path``: its ``.git`` directory when it is a checkout, the one a
    ``.git`` file names (``gitdir: ...``) in a linked worktree or a submodule, else ``path``."""
    dot_git = path / ".git"
    if dot_git.is_dir():
        return dot_git
    if dot_git.is_file():
        try:
            line = dot_git.read_text(encoding="utf-8", errors="surrogateescape").strip()
        except OSError as exc:
            raise BuildError(f"cannot read {dot_git}: {exc.strerror or exc}") from exc
        if line.startswith("gitdir:"):
            return (path / line.removeprefix("gitdir:").strip()).resolve()
    return path


class GitTreeBuilder(TreeBuilder, Closing):
    """Lists one commit of a git repository; reads blobs on demand.

    ``root`` defaults to ``"GITDIR@COMMIT"``; callers that must not reveal where a tree came
    from (the evaluation harness) pass an opaque ``root`` instead, because retrievers see
    ``TreeInfo.root``.

    The builder holds a ``git cat-file`` process once the first blob is read: use it as a
    context manager, or call :meth:`close`.
    """

    source = TreeSource.GIT

    def __init__(self, git_dir: Path | str, commit: str, *, root: str | None = None) -> None:
        path = checkout_git_dir(Path(git_dir).expanduser().resolve())  # a checkout was given
        _check_git_dir(path)
        self.git_dir = path
        self.commit = resolve_commit(path, commit)
        self.root = root if root is not None else f"{path}@{self.commit}"
        self._blobs = CatFileBatch(path)

    @property
    def blob_reads(self) -> int:
        """How many blobs this builder has read so far."""
        return self._blobs.reads

    def entries(self, warnings: SourceWarnings) -> Iterator[SourceEntry]:
        listing = run_git(self.git_dir, ["ls-tree", "-r", "-l", "-z", "--full-tree", self.commit])
        records = [_record(r) for r in listing.split(b"\0") if r]
        has_links = any(r[0] == LINK_MODE for r in records)
        links = _Links(records, self._blobs.read) if has_links else None
        for record in records:
            if links is not None and record[0] == LINK_MODE and record[1] == "blob":
                resolved = links.resolve(record, warnings)
                if resolved is None:
                    continue
                record = resolved
            entry = self._entry(record, warnings)
            if entry is not None:
                yield entry

    def _entry(self, record: _Record, warnings: SourceWarnings) -> SourceEntry | None:
        _mode, kind, object_id, size, path = record
        if kind == "commit":
            warnings.add(f"{path}: submodule skipped (its files live in another repository)")
            return None
        if kind != "blob":
            warnings.add(f"{path}: git {kind} entry skipped")
            return None
        if not size.isdigit():
            # git prints "BAD" when it cannot find the blob (e.g. missing from a partial clone)
            warnings.add(f"{path}: git cannot size blob {object_id} ({size}); kept without content")
            return SourceEntry(
                path=path,
                type=NodeType.FILE,
                signature=f"missing:{object_id}",
                problem="blob missing",
            )
        return SourceEntry(
            path=path,
            type=NodeType.FILE,
            size=int(size),
            signature=object_id,
            read=functools.partial(self._blobs.read, object_id),
        )

    def close(self) -> None:
        self._blobs.close()


#: the mode git lists a symlink's blob with
LINK_MODE = "120000"
#: symlinks followed to reach a file, at most (the kernel's limit is 40)
MAX_LINK_HOPS = 40

#: one ``git ls-tree -l`` entry: mode, kind, object id, size, path
_Record = tuple[str, str, str, str, str]


def _record(raw: bytes) -> _Record:
    meta, tab, raw_path = raw.partition(b"\t")
    fields = meta.split()
    if not tab or len(fields) != 4:
        raise BuildError(f"unexpected git ls-tree output: {raw[:200]!r}")
    mode, kind, object_id, size = (f.decode("ascii") for f in fields)
    return mode, kind, object_id, size, raw_path.decode("utf-8", "surrogateescape")


class _Links:
    """The commit's symlinks resolved against its listing, as ``realpath`` would resolve
    them in a checkout (every component, links to links, ``..``)."""

    def __init__(self, records: list[_Record], read: Callable[[str], bytes]) -> None:
        self.files = {r[4]: r for r in records if r[0] != LINK_MODE and r[1] == "blob"}
        self.dirs = {""}
        for r in records:
            parts = r[4].split("/")
            self.dirs.update("/".join(parts[:i]) for i in range(1, len(parts)))
            if r[1] == "commit":  # a submodule's directory
                self.dirs.add(r[4])
        self.targets: dict[str, str | None] = {}  # link path -> its text (None: unreadable)
        for r in records:
            if r[0] == LINK_MODE and r[1] == "blob":
                try:
                    self.targets[r[4]] = read(r[2]).decode("utf-8", "surrogateescape")
                except BuildError:
                    self.targets[r[4]] = None

    def _real(self, path: str) -> tuple[str | None, str]:
        """``path`` with every symlink resolved: (the path, "") or (None, why it has none)."""
        pending = path.split("/")
        out: list[str] = []
        hops = 0
        while pending:
            part = pending.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if not out:
                    return None, "symlink points outside the tree root; not followed"
                out.pop()
                continue
            candidate = "/".join([*out, part])
            if candidate not in self.targets:
                out.append(part)
                continue
            hops += 1
            target = self.targets[candidate]
            if hops > MAX_LINK_HOPS:
                return None, "symlink loop; skipped"
            if target is None:
                return None, "symlink target cannot be read; skipped"
            if target.startswith("/"):
                return None, "symlink points outside the tree root; not followed"
            pending = target.split("/") + pending  # relative to the link's directory: ``out``
        return "/".join(out), ""

    def resolve(self, record: _Record, warnings: SourceWarnings) -> _Record | None:
        """The link ``record`` as the file it leads to: the target's blob at the link's path
        (its id signs it: the content is the target's); None, with a warning, when it leads
        to no file of the commit."""
        path = record[4]
        real, why = self._real(path)
        if real is not None and real not in self.files:
            why = (
                "symlink to a directory, not followed"
                if real in self.dirs
                else "dangling symlink; skipped"
            )
        if real is None or why:
            warnings.add(f"{path}: {why}")
            return None
        mode, kind, object_id, size, _ = self.files[real]
        return mode, kind, object_id, size, path
