"""The two search universes of the benchmark, built once into the eval database.

- **paths**: a tree from the listing of an instance's (repo, commit) in the trees file; no
  contents (how the reference system was evaluated).
- **contents**: the repository at ``base_commit`` read straight from a bare git mirror. Each
  commit is built from the nearest commit of the same repository already in the database
  (``Database.index(..., base=...)``): the copy keeps every stored file and the indexer only
  reads blobs whose id changed, the same incremental machinery a user's re-index goes through.

Trees are cached between runs: a tree whose name already exists is reused (indexing is atomic,
so an existing tree is a complete one).

Opaque names. Retrievers see ``TreeInfo.name`` and ``TreeInfo.root``, so neither may carry the
repository name or anything else an answer could be guessed from: both are
``"eval-" + sha1(kind:repo@commit[|layers])[:12]``. The mapping back to (repo, commit) lives only
in the harness's memory. Contents trees also hash the database's index hooks (derived layers),
so adding a layer rebuilds them instead of reusing trees that lack it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from treeseek.database import Database
from treeseek.errors import BuildError, ConfigError, TreeseekError
from treeseek.indexing import IndexReport
from treeseek.trees.git import GitTreeBuilder, run_git
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


def layers_of(db: Database) -> str:
    """The index hooks of ``db`` (class and optional ``version`` attribute), sorted."""
    names = sorted(
        f"{type(h).__module__}.{type(h).__qualname__}:{getattr(h, 'version', '')}" for h in db.hooks
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
    #: the database file holding the tree when it is not the run's database (a shard)
    db_path: Path | None = None

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
                yield BuiltTree(key, name, error=_build_error(exc))
                continue
            yield BuiltTree(key, name, report, seconds=time.perf_counter() - started)


class ContentsUniverse:
    """Trees with contents, read from one bare git mirror per repository."""

    kind = UniverseKind.CONTENTS

    def __init__(self, mirrors: Mapping[str, Path], related: Iterable[CommitKey] = ()) -> None:
        """``related``: other commits (e.g. every commit of the dataset file) whose trees, if an
        earlier run built them, may serve as bases; names are opaque, so the database cannot
        be asked which commits it holds."""
        self._mirrors = dict(mirrors)
        self._related = list(dict.fromkeys(related))

    def check(self, keys: Iterable[CommitKey]) -> None:
        repos = sorted({repo for repo, _ in keys})
        missing = [repo for repo in repos if repo not in self._mirrors]
        if missing:
            hint = " ".join(f"--repo {r}=/path/to/{r.split('/')[-1]}.git" for r in missing[:2])
            raise ConfigError(
                f"no git mirror given for {', '.join(missing)}; map each repository to a bare"
                f" git directory, e.g. {hint}"
            )
        for repo in repos:
            if not self._mirrors[repo].is_dir():
                raise ConfigError(f"git directory {self._mirrors[repo]} for {repo} does not exist")

    def build(
        self,
        db: Database,
        keys: Iterable[CommitKey],
        on_progress: Callable[[CommitKey, str], None] | None = None,
    ) -> Iterator[BuiltTree]:
        """Yield each tree as it becomes ready, building missing ones from their nearest
        already-built commit of the same repository."""
        ordered = list(dict.fromkeys(keys))
        self.check(ordered)
        by_repo: dict[str, list[str]] = {}
        for repo, commit in ordered:
            by_repo.setdefault(repo, []).append(commit)
        for repo, commits in by_repo.items():
            yield from self._build_repo(db, repo, commits, on_progress)

    def _build_repo(
        self,
        db: Database,
        repo: str,
        commits: list[str],
        on_progress: Callable[[CommitKey, str], None] | None,
    ) -> Iterator[BuiltTree]:
        git_dir = self._mirrors[repo]
        layers = layers_of(db)

        def name_of(commit: str) -> str:
            return eval_tree_name(self.kind, (repo, commit), layers)

        others = [c for r, c in self._related if r == repo and c not in commits]
        others = [c for c in others if db.store.has_tree(name_of(c))]
        times = commit_times(git_dir, commits + others)
        for commit in commits:
            if commit not in times:
                key = (repo, commit)
                error = f"tree build failed: commit {commit} not found in {git_dir}"
                yield BuiltTree(key, name_of(commit), error=error)
        commits = [c for c in commits if c in times]
        # commit -> tree name, for trees in the database
        built = {c: name_of(c) for c in others if c in times}
        pending: list[str] = []
        for commit in commits:
            name = name_of(commit)
            if db.store.has_tree(name):
                built[commit] = name
            else:
                pending.append(commit)
        for commit in commits:
            if commit in built:
                yield BuiltTree((repo, commit), built[commit])
        # oldest first: each commit then usually has an already-built neighbour to copy
        for commit in sorted(pending, key=lambda c: (times[c], c)):
            key = (repo, commit)
            name = name_of(commit)
            base_commit = nearest_commit(git_dir, commit, list(built), times)
            base = None if base_commit is None else built[base_commit]
            if on_progress is not None:
                on_progress(key, name)
            started = time.perf_counter()
            try:
                with GitTreeBuilder(git_dir, commit, root=name) as builder:
                    report = db.index(builder, name=name, base=base)
            except TreeseekError as exc:
                yield BuiltTree(key, name, base=base, error=_build_error(exc))
                continue
            built[commit] = name
            yield BuiltTree(key, name, report, base, seconds=time.perf_counter() - started)


def _build_error(exc: Exception) -> str:
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
