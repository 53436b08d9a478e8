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
    ContentsUniverse,
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


def _history(repo: BareRepo) -> list[str]:
    base = {f"pkg/m{i}.py": f"x = {i}\n".encode() for i in range(20)}
    commits = [repo.commit({**base, "README": b"v0"})]
    commits.append(repo.commit({"pkg/m1.py": b"x = 'one'\n"}))
    commits.append(repo.commit({"pkg/m2.py": b"x = 'two'\n", "pkg/new.py": b"new"}))
    commits.append(repo.commit({"pkg/m3.py": None}))
    return commits


def test_contents_trees_chain_from_the_nearest_built_commit(tmp_path: Path) -> None:
    repo = BareRepo(tmp_path)
    c0, c1, c2, c3 = _history(repo)
    every = [("acme/widgets", c) for c in (c0, c1, c2, c3)]
    universe = ContentsUniverse({"acme/widgets": repo.git_dir}, related=every)
    with treeseek.open(tmp_path / "e.db") as db:
        # the newest first, to show the build order is by commit time, not request order
        first = list(universe.build(db, [("acme/widgets", c3), ("acme/widgets", c0)]))
        assert [b.key[1] for b in first] == [c0, c3]
        assert first[0].base is None and first[0].report is not None
        assert first[0].report.added == 21
        assert first[1].base == first[0].name  # c3 copied from c0, then diffed
        assert first[1].report is not None
        assert (first[1].report.unchanged, first[1].report.removed) == (18, 1)
        assert (first[1].report.changed, first[1].report.added) == (2, 1)

        # c1 and c2 lie between c0 and c3: each starts from its nearest built neighbour, also
        # when the trees were built by an earlier run (they are found through ``related``)
        second = {b.key[1]: b for b in universe.build(db, [("acme/widgets", c) for c in (c1, c2)])}
        c0_name, c3_name = first[0].name, first[1].name
        assert second[c1].base == c0_name
        assert second[c2].base in {second[c1].name, c3_name}
        report = second[c1].report
        assert report is not None and (report.changed, report.unchanged) == (1, 20)

        info = db.tree(second[c1].name)
        assert info.source is TreeSource.GIT and info.root == info.name
        assert "acme" not in info.root and str(repo.git_dir) not in info.root
        assert db.text(second[c1].name, "pkg/m1.py") == "x = 'one'\n"
        assert db.text(second[c1].name, "pkg/m2.py") == "x = 2\n"
        assert db.text(c3_name, "pkg/new.py") == "new"
        assert db.store.node_by_path(c3_name, "pkg/m3.py") is None

        # cached between runs: nothing is rebuilt
        cached = list(universe.build(db, every))
        assert all(b.report is None for b in cached)


def test_a_missing_commit_is_an_error_per_commit(tmp_path: Path) -> None:
    repo = BareRepo(tmp_path)
    c0 = repo.commit({"a.py": b"a"})
    universe = ContentsUniverse({"acme/widgets": repo.git_dir})
    with treeseek.open(tmp_path / "e.db") as db:
        built = list(universe.build(db, [("acme/widgets", c0), ("acme/widgets", "f" * 40)]))
    assert [b.ok for b in built] == [False, True]  # the missing one is reported first
    assert built[0].key == ("acme/widgets", "f" * 40)
    assert built[0].error is not None and "not found" in built[0].error
    assert built[1].report is not None and built[1].report.added == 1


def test_missing_mirror_mapping_is_a_config_error(tmp_path: Path) -> None:
    universe = ContentsUniverse({"acme/widgets": tmp_path / "nowhere"})
    with pytest.raises(ConfigError, match="--repo other/thing="):
        universe.check([("other/thing", "a" * 40)])
    with pytest.raises(ConfigError, match="does not exist"):
        universe.check([("acme/widgets", "a" * 40)])


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


class _CountingHook:
    """A derived layer that counts the files it was given (a real IndexHook)."""

    def __init__(self) -> None:
        self.files = 0

    def apply(self, writer: object, tree: object, changed: list[object], removed: object) -> None:
        self.files += len(changed)


def test_adding_an_index_layer_rebuilds_cached_contents_trees(tmp_path: Path) -> None:
    repo = BareRepo(tmp_path)
    c0 = repo.commit({"a.py": b"a", "b.py": b"b"})
    universe = ContentsUniverse({"acme/widgets": repo.git_dir})
    with treeseek.open(tmp_path / "e.db", hooks=[]) as db:
        plain = list(universe.build(db, [("acme/widgets", c0)]))
    hook = _CountingHook()
    with treeseek.open(tmp_path / "e.db", hooks=[hook]) as db:  # type: ignore[list-item]
        layered = list(universe.build(db, [("acme/widgets", c0)]))
        again = list(universe.build(db, [("acme/widgets", c0)]))
    assert plain[0].name != layered[0].name
    assert layered[0].report is not None and hook.files == 2
    assert again[0].report is None and again[0].name == layered[0].name
