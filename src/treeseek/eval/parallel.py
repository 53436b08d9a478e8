"""Contents trees in one SQLite file per repository, built in parallel.

Indexing a commit with contents is dominated by the code-index layer, which runs inside the
tree's write transaction; SQLite has one writer per file, so two commits of one database can
not be indexed at the same time. Each repository's chain of commits therefore lives in its own
file (``<db stem>.<sha1(repo)[:10]><suffix>`` next to the eval database: opaque, like the tree
names), and ``jobs`` processes build different repositories at once, largest first.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import hashlib
import multiprocessing
import queue
from collections.abc import Iterable, Iterator
from multiprocessing.queues import Queue
from pathlib import Path

import treeseek
from treeseek.errors import BuildError
from treeseek.eval.universes import BuiltTree, CommitKey, ContentsUniverse


def shard_path(db_path: Path, repo: str) -> Path:
    """The database file of one repository's contents trees."""
    digest = hashlib.sha1(repo.encode()).hexdigest()[:10]
    return db_path.with_name(f"{db_path.stem}.{digest}{db_path.suffix or '.db'}")


_TREES: Queue[BuiltTree] | None = None  # set in each build process


def _init_build_process(trees: Queue[BuiltTree]) -> None:
    global _TREES
    _TREES = trees


def _shard_trees(
    universe: ContentsUniverse, shard: Path, keys: list[CommitKey]
) -> Iterator[BuiltTree]:
    """One repository's trees, each as soon as it is ready; a failure marks the rest."""
    done: set[CommitKey] = set()
    try:
        with treeseek.open(shard) as db:
            for tree in universe.build(db, keys):
                done.add(tree.key)
                yield dataclasses.replace(tree, db_path=shard)
    except Exception as exc:  # whatever broke, the other repositories go on
        error = f"tree build failed: {type(exc).__name__}: {exc}"
        for key in keys:
            if key not in done:
                yield BuiltTree(key, "", error=error, db_path=shard)


def _build_shard(universe: ContentsUniverse, shard: Path, keys: list[CommitKey]) -> int:
    """In a build process: pass each tree to the parent as soon as it is ready."""
    assert _TREES is not None, "build process not initialized"
    count = 0
    for tree in _shard_trees(universe, shard, keys):
        _TREES.put(tree)
        count += 1
    return count


def build_sharded(
    universe: ContentsUniverse, db_path: Path, keys: Iterable[CommitKey], jobs: int = 1
) -> Iterator[BuiltTree]:
    """Yield every tree of ``keys`` as soon as it is ready; with ``jobs > 1``, repositories
    are built in parallel processes."""
    ordered = list(dict.fromkeys(keys))
    universe.check(ordered)
    by_repo: dict[str, list[CommitKey]] = {}
    for key in ordered:
        by_repo.setdefault(key[0], []).append(key)
    # largest first, so the longest chain does not start last
    repos = sorted(by_repo, key=lambda r: -len(by_repo[r]))
    if jobs <= 1 or len(repos) == 1:
        for repo in repos:
            yield from _shard_trees(universe, shard_path(db_path, repo), by_repo[repo])
        return
    context = multiprocessing.get_context("spawn")
    trees: Queue[BuiltTree] = context.Queue()
    with cf.ProcessPoolExecutor(
        min(jobs, len(repos)),
        mp_context=context,
        initializer=_init_build_process,
        initargs=(trees,),
    ) as pool:
        futures = [
            pool.submit(_build_shard, universe, shard_path(db_path, repo), by_repo[repo])
            for repo in repos
        ]
        remaining = len(ordered)
        while remaining:
            try:
                tree = trees.get(timeout=1.0)
            except queue.Empty:
                for future in futures:
                    failure = future.exception() if future.done() else None
                    if failure is not None:
                        raise BuildError(f"a tree build process failed: {failure}") from failure
                continue
            remaining -= 1
            yield tree
