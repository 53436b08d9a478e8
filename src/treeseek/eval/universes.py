"""The two search universes of the benchmark, built once into the eval database.

- **paths**: a tree from the listing of an instance's (repo, commit) in the trees file; no
  contents (how the reference system was evaluated).
- **contents**: the repository at ``base_commit`` read straight from a bare git mirror, one
  database file per commit, each built from the nearest commit already built (see
  :mod:`treeseek.eval.contents`).

Trees are cached between runs: a tree whose name already exists is reused (indexing is atomic,
so an existing tree is a complete one).

Opaque names. Retrievers see ``TreeInfo.name`` and ``TreeInfo.root``, so neither may carry the
repository name or anything else an answer could be guessed from: both are
``"eval-" + sha1(kind:repo@commit[|layers])[:12]``. The mapping back to (repo, commit) lives only
in the harness's memory. Contents trees also hash the database's index hooks (derived layers),
so adding a layer rebuilds them instead of reusing trees that lack it.

This module holds what both universes share: names, :class:`BuiltTree`, the path universe, and
the git helpers that pick the nearest commit.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from treeseek.database import Database
from treeseek.embed.cache import EmbedCacheStats
from treeseek.errors import BuildError, ConfigError, TreeseekError
from treeseek.index.run import IndexReport
from treeseek.trees.git import run_git
from treeseek.trees.pathlist import PathListBuilder

CommitKey = tuple[str, str]  # (repo "owner/name", commit id)

#: how many commit-time neighbours are compared by ancestry distance to pick a base
_BASE_CANDIDATES = 3


class UniverseKind(StrEnum):
    PATHS = "paths"
    CONTENTS = "contents"


def eval_tree_name(kind: UniverseKind, key: CommitKey, layers: str = "") -> str:
    """The opaque name (and root) of the eval tree of one (repo, commit).

    ``layers`` names the derived layers the tree was indexed with (see :func:`layers_of`), so
    a tree cached before a layer existed is not mistaken for one that has it.
    """
    repo, commit = key
    identity = f"{kind.value}:{repo}@{commit}" + (f"|{layers}" if layers else "")
    digest = hashlib.sha1(identity.encode()).hexdigest()[:12]
    return f"eval-{digest}"


def layers_of(hooks: Iterable[object]) -> str:
    """Index hooks described by class and optional ``version`` attribute, sorted."""
    names = sorted(
        f"{type(h).__module__}.{type(h).__qualname__}:{getattr(h, 'version', '')}" for h in hooks
    )
    return ",".join(names)


@dataclass(frozen=True, slots=True)
class BuiltTree:
    """One tree ready to be queried."""

    key: CommitKey
    name: str
    #: None when the tree was already in the database
    report: IndexReport | None = None
    #: the tree this one was copied from before indexing incrementally, if any
    base: str | None = None
    seconds: float = 0.0  # spent building it now (0 when it was cached)
    #: why the tree could not be built (its instances are then scored as misses)
    error: str | None = None
    #: the database file holding the tree when it is not the run's database (contents trees)
    db_path: Path | None = None
    #: the vectors embedded into it now (``--vectors``), None without vectors
    vectors: EmbedCacheStats | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class PathUniverse:
    """Path-only trees from the benchmark's listings."""

    kind = UniverseKind.PATHS

    def __init__(self, listings: Mapping[CommitKey, tuple[str, ...]]) -> None:
        self._listings = listings

    def check(self, keys: Iterable[CommitKey]) -> None:
        missing = sorted({k for k in keys if k not in self._listings})
        if missing:
            repo, commit = missing[0]
            raise ConfigError(
                f"the trees file has no listing for {len(missing)} commit(s), e.g. {repo}@{commit}"
            )

    def build(self, db: Database, keys: Iterable[CommitKey]) -> Iterator[BuiltTree]:
        """Yield each tree as it becomes ready (building the missing ones)."""
        ordered = list(dict.fromkeys(keys))
        self.check(ordered)
        for key in ordered:
            name = eval_tree_name(self.kind, key)
            if db.store.has_tree(name):
                yield BuiltTree(key, name)
                continue
            started = time.perf_counter()
            try:
                report = db.index(PathListBuilder(self._listings[key], root=name), name=name)
            except TreeseekError as exc:
                yield BuiltTree(key, name, error=build_error(exc))
                continue
            yield BuiltTree(key, name, report, seconds=time.perf_counter() - started)


def build_error(exc: Exception) -> str:
    return f"tree build failed: {type(exc).__name__}: {exc}"


def commit_times(git_dir: Path, commits: list[str]) -> dict[str, int]:
    """Committer time of each commit that exists (one git call unless some are missing)."""
    if not commits:
        return {}
    try:
        out = run_git(git_dir, ["show", "-s", "--format=%H %ct", *commits, "--"])
    except BuildError:
        if len(commits) == 1:
            return {}
        times: dict[str, int] = {}
        for commit in commits:  # find which ones are missing
            times.update(commit_times(git_dir, [commit]))
        return times
    stamps = [int(line.partition(" ")[2]) for line in out.decode("ascii").splitlines()]
    return dict(zip(commits, stamps, strict=True))


def ancestry_distance(git_dir: Path, a: str, b: str) -> int:
    """Commits reachable from exactly one of ``a`` and ``b`` (``git rev-list --count a...b``)."""
    return int(run_git(git_dir, ["rev-list", "--count", f"{a}...{b}", "--"]).strip())


def nearest_commit(
    git_dir: Path, commit: str, candidates: list[str], times: Mapping[str, int]
) -> str | None:
    """The built commit closest to ``commit``: among the few nearest in commit time, the one
    with the smallest ancestry distance (fewest commits apart, so fewest changed files)."""
    if not candidates:
        return None
    by_time = sorted(candidates, key=lambda c: (abs(times[c] - times[commit]), c))
    shortlist = by_time[:_BASE_CANDIDATES]
    if len(shortlist) == 1:
        return shortlist[0]
    return min(shortlist, key=lambda c: (ancestry_distance(git_dir, commit, c), c))
