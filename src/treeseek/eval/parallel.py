"""Contents trees of several repositories built at once, streamed as each one is ready.

Within one repository the commits form a chain (each is copied from its nearest built
neighbour), so they are built in order; different repositories are independent, so ``jobs``
processes build them side by side, largest first. Every tree is passed back over a queue as
soon as it is built, so its queries can start while the chains go on.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import queue
from collections.abc import Iterable, Iterator
from multiprocessing.queues import Queue
from pathlib import Path

from treeseek.errors import BuildError
from treeseek.eval.contents import CONTENTS_TREE, ContentsUniverse
from treeseek.eval.universes import BuiltTree, CommitKey, build_error

_TREES: Queue[BuiltTree] | None = None  # set in each build process


def _init_build_process(trees: Queue[BuiltTree]) -> None:
    global _TREES
    _TREES = trees


def _repo_trees(
    universe: ContentsUniverse, db_path: Path, keys: list[CommitKey]
) -> Iterator[BuiltTree]:
    """One repository's trees, each as soon as it is ready; a failure marks the rest."""
    done: set[CommitKey] = set()
    try:
        for tree in universe.build(db_path, keys):
            done.add(tree.key)
            yield tree
    except Exception as exc:  # whatever broke, the other repositories go on
        for key in keys:
            if key not in done:
                yield BuiltTree(key, CONTENTS_TREE, error=build_error(exc))


def _build_repo(universe: ContentsUniverse, db_path: Path, keys: list[CommitKey]) -> int:
    """In a build process: pass each tree to the parent as soon as it is ready."""
    assert _TREES is not None, "build process not initialized"
    count = 0
    for tree in _repo_trees(universe, db_path, keys):
        _TREES.put(tree)
        count += 1
    return count


def build_parallel(
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
    if jobs <= 1 or len(repos) <= 1:
        for repo in repos:
            yield from _repo_trees(universe, db_path, by_repo[repo])
        return
    context = multiprocessing.get_context("spawn")
    trees: Queue[BuiltTree] = context.Queue()
    with cf.ProcessPoolExecutor(
        min(jobs, len(repos)),
        mp_context=context,
        initializer=_init_build_process,
        initargs=(trees,),
    ) as pool:
        futures = [pool.submit(_build_repo, universe, db_path, by_repo[repo]) for repo in repos]
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
