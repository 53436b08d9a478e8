"""Eval trees: path-only from listings, with contents from a bare mirror, cached and chained."""

from __future__ import annotations

from pathlib import Path

import pytest
from bare_repo import BareRepo
from tinybench import COMMIT_A, COMMIT_B, PATHS_A, REPO, TinyBench

import treeseek
from treeseek.errors import ConfigError
from treeseek.eval.datasets import load_path_lists
from treeseek.eval.universes import (
    PathUniverse,
    UniverseKind,
    ancestry_distance,
    eval_tree_name,
    nearest_commit,
)
from treeseek.trees.model import TreeSource


def test_path_trees_are_opaque_cached_and_complete(tmp_path: Path, tiny_bench: TinyBench) -> None:
    universe = PathUniverse(load_path_lists(tiny_bench.trees))
    keys = [(REPO, COMMIT_A), (REPO, COMMIT_B), (REPO, COMMIT_A)]
    with treeseek.open(tmp_path / "e.db") as db:
        built = list(universe.build(db, keys))
        assert [b.key for b in built] == [(REPO, COMMIT_A), (REPO, COMMIT_B)]
        assert all(b.report is not None and b.ok for b in built)
        info = db.tree(built[0].name)
        assert info.source is TreeSource.PATH_LIST and info.file_count == len(PATHS_A)
        for text in (info.name, info.root):
            assert text.startswith("eval-")
            for secret in ("zebracorp", "quokkalib", COMMIT_A[:8]):
                assert secret not in text
        assert built[0].name == eval_tree_name(UniverseKind.PATHS, (REPO, COMMIT_A))
        # a second pass reuses the stored trees
        again = list(universe.build(db, keys))
        assert [b.report for b in again] == [None, None]
    with pytest.raises(ConfigError, match="no listing"):
        universe.check([(REPO, "c" * 40)])


def test_nearest_commit_prefers_fewest_commits_apart(tmp_path: Path) -> None:
    repo = BareRepo(tmp_path)
    commits = [repo.commit({"f": str(i).encode()}) for i in range(5)]
    times = {c: i * 60 for i, c in enumerate(commits)}
    assert ancestry_distance(repo.git_dir, commits[0], commits[3]) == 3
    assert nearest_commit(repo.git_dir, commits[2], [commits[0], commits[4]], times) in {
        commits[0],
        commits[4],
    }
    assert nearest_commit(repo.git_dir, commits[3], [commits[0], commits[4]], times) == commits[4]
    assert nearest_commit(repo.git_dir, commits[1], [], times) is None
