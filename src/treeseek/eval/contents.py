"""The with-contents universe: one database file per (repository, commit), chained.

Each commit's tree lives alone in its own SQLite file. A commit is built by copying the file of
the nearest commit of the same repository already built and re-indexing it in place from the
git mirror: the indexer compares blob ids (signatures) and reads, hashes and code-indexes only
the files that changed, exactly as when a user re-indexes a checkout after a pull.

Why a file per commit rather than all trees in one database: a query's full-text searches run
over the whole database, so with the 92 django commits of the dev split in one file every
django query got slower as the run went on (6 s instead of 1 s after 30 commits). A file per
commit keeps each query's index the size of one repository, as in real use.

The build goes to ``<file>.partial`` and is renamed when indexing has finished and the
database is closed, so an interrupted build never leaves a file that looks complete. Files are
named ``<eval db stem>.<sha1(contents:repo@commit|layers)[:12]>.db`` next to the eval
database: opaque, like everything a retriever could see. Inside, the tree is always named
:data:`CONTENTS_TREE` and its root is the same opaque hash.

With ``vectors`` (an embedder's short name, ``treeseek eval run --vectors``) every tree gets
the file vectors it lacks for that embedder the way ``treeseek index --vectors`` gives them: the
commit is indexed again with the code index hook embedding (an unchanged tree re-reads nothing
but its listing, and the hook embeds each file without a vector at its path). Vectors are not
part of a file's name: they are added in place, so a run with vectors uses the trees a run
without them built. Texts are embedded through one cache for the whole evaluation
(``<eval db stem>.embed-cache.sqlite``, :mod:`treeseek.embed.cache`): a file whose outline an
earlier commit embedded is not embedded again.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import treeseek
from treeseek.code.revisions import newest_revision
from treeseek.embed.cache import CachedEmbedder, EmbedCacheStats, EmbeddingCache
from treeseek.errors import ConfigError, TreeseekError
from treeseek.eval.universes import (
    BuiltTree,
    CommitKey,
    UniverseKind,
    build_error,
    commit_times,
    eval_tree_name,
    layers_of,
    nearest_commit,
)
from treeseek.index.code_hook import OUTLINE_KIND, CodeIndexHook
from treeseek.index.run import IndexHook, default_hooks
from treeseek.trees.git import GitTreeBuilder, checkout_git_dir

#: the name of the one tree in each per-commit database file
CONTENTS_TREE = "eval"
_SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")
#: the embedding cache's file name after the eval database's stem (not ``*.db``: it holds no tree)
EMBED_CACHE_SUFFIX = ".embed-cache.sqlite"


def embed_cache_path(db_path: Path) -> Path:
    """The evaluation-wide embedding cache beside the eval database ``db_path``."""
    return db_path.with_name(db_path.stem + EMBED_CACHE_SUFFIX)


@contextlib.contextmanager
def _build_lock(target: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``.locks/<target>.lock`` while one process builds ``target``.

    Eval runs sharing one directory of per-commit files (two runs started side by side) would
    otherwise build the same missing commit into the same ``.partial`` file at once, and one
    would remove or reopen the other's file mid-build. The lock is advisory (``flock``) and is
    released by the kernel when a killed builder's file descriptor closes. Lock files stay (a
    few empty files in a hidden directory): removing one while another process waits on it
    would let a third lock a new file of the same name.
    """
    lock = target.parent / ".locks" / (target.name + ".lock")
    lock.parent.mkdir(exist_ok=True)
    with lock.open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _remove_database(path: Path) -> None:
    for suffix in ("", *_SQLITE_SIDE_FILES):
        with contextlib.suppress(FileNotFoundError):
            path.with_name(path.name + suffix).unlink()


class ContentsUniverse:
    """Trees with contents, read from one bare git mirror per repository."""

    kind = UniverseKind.CONTENTS

    def __init__(
        self,
        mirrors: Mapping[str, Path],
        related: Iterable[CommitKey] = (),
        hooks: Sequence[IndexHook] | None = None,
        vectors: str | None = None,
        layers: str | None = None,
    ) -> None:
        """``related``: other commits (e.g. every commit of the dataset file) whose files, if
        an earlier run built them, may serve as bases. ``hooks``: index layers (default: the
        registered ones). ``vectors``: an embedder's short name (``minilm``); every tree gets
        the file vectors it lacks for it (ConfigError at once when its package is missing).
        ``layers``: the layer string the per-commit files are named by, instead of that of
        ``hooks`` (:func:`layers_of`): files an older hook version built, whose layers the
        store's migrations have brought up to date, are then used rather than built again
        (``treeseek eval run --layers``)."""
        # a checkout (a clone with a work tree) serves as well as a bare mirror: its git dir
        self._mirrors = {repo: checkout_git_dir(Path(d)) for repo, d in mirrors.items()}
        self._related = list(dict.fromkeys(related))
        self._hooks: list[IndexHook] = default_hooks() if hooks is None else list(hooks)
        self._layers = layers_of(self._hooks) if layers is None else layers
        self.vectors = vectors
        if vectors is not None:
            from treeseek.embed.neural import require_installed

            require_installed(vectors)
            if not any(isinstance(h, CodeIndexHook) for h in self._hooks):
                raise ConfigError("--vectors needs the code index hook (it embeds the files)")

    def _build_hooks(self, db_path: Path) -> tuple[list[IndexHook], CachedEmbedder | None]:
        """The hooks a build indexes with: with ``vectors``, the code index hook embedding
        through the evaluation's embedding cache (the same layers: file names do not change)."""
        if self.vectors is None:
            return self._hooks, None
        from treeseek.embed.neural import load_embedder

        embedder = CachedEmbedder(
            load_embedder(self.vectors), EmbeddingCache(embed_cache_path(db_path)), OUTLINE_KIND
        )
        hooks = [
            CodeIndexHook(embedder, workers=h.workers) if isinstance(h, CodeIndexHook) else h
            for h in self._hooks
        ]
        return hooks, embedder

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
            git_dir = self._mirrors[repo]
            if not git_dir.is_dir():
                raise ConfigError(f"git directory {git_dir} for {repo} does not exist")
            if not (git_dir / "objects").is_dir() and not (git_dir / "commondir").is_file():
                raise ConfigError(
                    f"{git_dir} for {repo} is not a git repository (no objects/ inside); give"
                    " a bare mirror or a checkout of it"
                )

    def file_for(self, db_path: Path, key: CommitKey) -> Path:
        """The database file of one commit's tree."""
        digest = eval_tree_name(self.kind, key, self._layers).removeprefix("eval-")
        return db_path.with_name(f"{db_path.stem}.{digest}.db")

    def build(self, db_path: Path, keys: Iterable[CommitKey]) -> Iterator[BuiltTree]:
        """Yield each tree as soon as it is ready, building missing ones from the nearest
        already-built commit of the same repository (``db_path``: the eval database, whose
        directory and name the per-commit files share)."""
        ordered = list(dict.fromkeys(keys))
        self.check(ordered)
        by_repo: dict[str, list[str]] = {}
        for repo, commit in ordered:
            by_repo.setdefault(repo, []).append(commit)
        hooks, embedder = self._build_hooks(db_path)
        try:
            for repo, commits in by_repo.items():
                yield from self._build_repo(db_path, repo, commits, hooks, embedder)
        finally:
            if embedder is not None:
                embedder.cache.close()

    def _build_repo(
        self,
        db_path: Path,
        repo: str,
        commits: list[str],
        hooks: Sequence[IndexHook],
        embedder: CachedEmbedder | None,
    ) -> Iterator[BuiltTree]:
        git_dir = self._mirrors[repo]

        def file_of(commit: str) -> Path:
            return self.file_for(db_path, (repo, commit))

        others = [c for r, c in self._related if r == repo and c not in commits]
        others = [c for c in others if file_of(c).is_file()]
        times = commit_times(git_dir, commits + others)
        for commit in commits:
            if commit not in times:
                error = f"tree build failed: commit {commit} not found in {git_dir}"
                yield BuiltTree((repo, commit), CONTENTS_TREE, error=error, db_path=file_of(commit))
        commits = [c for c in commits if c in times]
        built = [c for c in others if c in times]
        pending: list[str] = []
        for commit in commits:
            if file_of(commit).is_file():
                built.append(commit)
                if embedder is None and not _stale_parses(file_of(commit)):
                    yield BuiltTree((repo, commit), CONTENTS_TREE, db_path=file_of(commit))
                else:  # vectors to add, or files an older parser made to parse again
                    yield self._add_vectors(git_dir, (repo, commit), file_of(commit), hooks)
            else:
                pending.append(commit)
        # oldest first: each commit then usually has an already-built neighbour to copy
        for commit in sorted(pending, key=lambda c: (times[c], c)):
            base = nearest_commit(git_dir, commit, built, times)
            base_file = None if base is None else file_of(base)
            tree = self._build_commit(git_dir, (repo, commit), file_of(commit), base_file, hooks)
            if tree.ok:
                built.append(commit)
            yield tree

    def _add_vectors(
        self, git_dir: Path, key: CommitKey, target: Path, hooks: Sequence[IndexHook]
    ) -> BuiltTree:
        """Index a built commit's tree again: with the embedding hook it gets the vectors it
        lacks (``treeseek index --vectors`` on an indexed tree), and contents an older parser
        made are parsed again (:mod:`treeseek.code.revisions`); nothing else changes."""
        started = time.perf_counter()
        root = target.stem.rpartition(".")[2]
        embedder = _embedder_of(hooks)
        before = _work(embedder)
        try:
            with (
                _build_lock(target),
                GitTreeBuilder(git_dir, key[1], root=f"eval-{root}") as builder,
                treeseek.open(target, hooks=hooks) as db,
            ):
                report = db.index(builder, name=CONTENTS_TREE)
        except (TreeseekError, OSError) as exc:
            return BuiltTree(key, CONTENTS_TREE, error=build_error(exc), db_path=target)
        return BuiltTree(
            key,
            CONTENTS_TREE,
            report,
            seconds=time.perf_counter() - started,
            db_path=target,
            vectors=_work(embedder).minus(before),
        )

    def _build_commit(
        self,
        git_dir: Path,
        key: CommitKey,
        target: Path,
        base_file: Path | None,
        hooks: Sequence[IndexHook],
    ) -> BuiltTree:
        """Copy ``base_file`` (if any) and re-index the copy at the commit of ``key``; a
        commit another process finished building meanwhile is taken as built (and, with
        vectors, given those it lacks)."""
        with _build_lock(target):
            if not target.is_file():
                return self._build_commit_locked(key, target, base_file, git_dir, hooks)
        if _embedder_of(hooks) is not None:
            return self._add_vectors(git_dir, key, target, hooks)
        return BuiltTree(key, CONTENTS_TREE, db_path=target)

    def _build_commit_locked(
        self,
        key: CommitKey,
        target: Path,
        base_file: Path | None,
        git_dir: Path,
        hooks: Sequence[IndexHook],
    ) -> BuiltTree:
        partial = target.with_name(target.name + ".partial")
        _remove_database(partial)
        started = time.perf_counter()
        root = target.stem.rpartition(".")[2]
        embedder = _embedder_of(hooks)
        before = _work(embedder)
        try:
            if base_file is not None:
                shutil.copyfile(base_file, partial)
            with (
                GitTreeBuilder(git_dir, key[1], root=f"eval-{root}") as builder,
                treeseek.open(partial, hooks=hooks) as db,
            ):
                # a copy of the neighbour's tree (its root names that commit's database)
                # becomes this commit's: a replacement by design
                report = db.index(builder, name=CONTENTS_TREE, replace=True)
            for suffix in _SQLITE_SIDE_FILES:  # closed cleanly: nothing left to checkpoint
                side = partial.with_name(partial.name + suffix)
                if side.exists() and side.stat().st_size:
                    raise OSError(f"{side} still holds data after the build closed")
            partial.replace(target)
            _remove_database(partial)
        except (TreeseekError, OSError) as exc:
            _remove_database(partial)
            return BuiltTree(key, CONTENTS_TREE, error=build_error(exc), db_path=target)
        return BuiltTree(
            key,
            CONTENTS_TREE,
            report,
            None if base_file is None else base_file.name,
            seconds=time.perf_counter() - started,
            db_path=target,
            vectors=None if embedder is None else _work(embedder).minus(before),
        )


def _stale_parses(target: Path) -> bool:
    """Whether a built commit's database holds contents an older parser made (checked
    without opening it when no language's parser revision was ever raised)."""
    if newest_revision() == 0:
        return False
    with _build_lock(target), treeseek.open(target) as db:
        return bool(db.store.code().stale_parses(CONTENTS_TREE))


def _embedder_of(hooks: Sequence[IndexHook]) -> CachedEmbedder | None:
    for hook in hooks:
        if isinstance(hook, CodeIndexHook) and isinstance(hook.embedder, CachedEmbedder):
            return hook.embedder
    return None


def _work(embedder: CachedEmbedder | None) -> EmbedCacheStats:
    return EmbedCacheStats() if embedder is None else embedder.stats
