"""A commit of a (bare) git repository as a tree source: no working checkout needed.

The listing comes from one ``git ls-tree -r -l -z COMMIT``; each file's signature is its blob
id, so the incremental indexer skips every file whose blob did not change between two commits
without reading it. Contents that do need reading are pulled through one long-lived
``git cat-file --batch`` process per builder (see :mod:`treeseek.trees._catfile`).

Submodules (``commit`` entries) are skipped with a warning: their contents live in another
repository. Symlinks are kept as their blob, i.e. the link target text.
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Iterator, Sequence
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
        for record in listing.split(b"\0"):
            if not record:
                continue
            entry = self._entry(record, warnings)
            if entry is not None:
                yield entry

    def _entry(self, record: bytes, warnings: SourceWarnings) -> SourceEntry | None:
        meta, tab, raw_path = record.partition(b"\t")
        fields = meta.split()
        if not tab or len(fields) != 4:
            raise BuildError(f"unexpected git ls-tree output: {record[:200]!r}")
        _mode, kind, object_id, size = (f.decode("ascii") for f in fields)
        path = raw_path.decode("utf-8", "surrogateescape")
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
