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
from collections.abc import Iterable, Iterator
from pathlib import Path

import treeseek
from treeseek.eval.universes import BuiltTree, CommitKey, ContentsUniverse


def shard_path(db_path: Path, repo: str) -> Path:
    """The database file of one repository's contents trees."""
    digest = hashlib.sha1(repo.encode()).hexdigest()[:10]
    return db_path.with_name(f"{db_path.stem}.{digest}{db_path.suffix or '.db'}")


def _build_shard(universe: ContentsUniverse, shard: Path, keys: list[CommitKey]) -> list[BuiltTree]:
    built: list[BuiltTree] = []
    try:
        with treeseek.open(shard) as db:
            for tree in universe.build(db, keys):
                built.append(dataclasses.replace(tree, db_path=shard))
    except Exception as exc:  # whatever broke, the other repositories go on
        done = {b.key for b in built}
        error = f"tree build failed: {type(exc).__name__}: {exc}"
        built += [BuiltTree(k, "", error=error, db_path=shard) for k in keys if k not in done]
    return built


def build_sharded(
    universe: ContentsUniverse, db_path: Path, keys: Iterable[CommitKey], jobs: int = 1
) -> Iterator[BuiltTree]:
    """Yield every tree of ``keys``; with ``jobs > 1``, repositories are built in parallel
    processes and yielded repository by repository as they finish."""
    ordered = list(dict.fromkeys(keys))
    universe.check(ordered)
    by_repo: dict[str, list[CommitKey]] = {}
    for key in ordered:
        by_repo.setdefault(key[0], []).append(key)
    # largest first, so the longest chain does not start last
    repos = sorted(by_repo, key=lambda r: -len(by_repo[r]))
    if jobs <= 1 or len(repos) == 1:
        for repo in repos:
            yield from _build_shard(universe, shard_path(db_path, repo), by_repo[repo])
        return
    context = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(min(jobs, len(repos)), mp_context=context) as pool:
        futures = {
            pool.submit(_build_shard, universe, shard_path(db_path, repo), by_repo[repo]): repo
            for repo in repos
        }
        for future in cf.as_completed(futures):
            yield from future.result()
