"""The path-only fast path: a new path list goes from strings to stored rows without a
SourceEntry or Node per path, and stores exactly what the general indexer stores."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import treeseek
from treeseek.errors import BuildError, PathError, StoreError
from treeseek.index.run import PathListing
from treeseek.store import Store
from treeseek.trees.model import (
    Node,
    NodeColumns,
    PathOnlyNodes,
    TreeInfo,
    TreeSource,
    node_id_for_path,
)
from treeseek.trees.path_only import ListedPaths, build_path_only, node_ids_for_paths
from treeseek.trees.pathlist import PathListBuilder, _all_clean, _needs_work
from treeseek.trees.source import SourceEntry, SourceWarnings, TreeBuilder


class GeneralPathList(TreeBuilder):
    """The same listing without ``listed_paths``: indexed by the general (per-entry) path."""

    source = TreeSource.PATH_LIST

    def __init__(self, paths: list[str]) -> None:
        self._inner = PathListBuilder(paths)
        self.root = self._inner.root

    def entries(self, warnings: SourceWarnings) -> Iterator[SourceEntry]:
        return self._inner.entries(warnings)


def _stored(listing: list[str], builder: TreeBuilder) -> tuple[list[Node], TreeInfo]:
    with (
        tempfile.TemporaryDirectory() as scratch,
        treeseek.open(Path(scratch) / "t.db", hooks=[]) as db,
    ):
        db.index(builder, name="t")
        return sorted(db.subtree("t"), key=lambda n: n.path), db.tree("t")


_NAMES = st.text(alphabet="aAbB_.é\udcff-", min_size=1, max_size=3).filter(
    lambda s: s not in (".", "..")
)


@settings(deadline=None, max_examples=60)
@given(
    st.lists(
        st.tuples(st.lists(_NAMES, min_size=1, max_size=4), st.booleans()),
        min_size=0,
        max_size=25,
    )
)
def test_fast_path_stores_what_the_general_indexer_stores(
    listed: list[tuple[list[str], bool]],
) -> None:
    # a trailing "/" lists a directory; clashes (a file with paths under it) are skipped
    listing = ["/".join(parts) + ("/" if is_dir else "") for parts, is_dir in listed]
    try:
        general, general_info = _stored(listing, GeneralPathList(listing))
    except BuildError:
        with pytest.raises(BuildError, match="both a file and a directory"):
            _stored(listing, PathListBuilder(listing))
        return
    fast_builder = PathListBuilder(listing)
    assert isinstance(fast_builder, PathListing)
    fast, fast_info = _stored(listing, fast_builder)
    assert fast == general
    same = ("source", "root", "node_count", "file_count", "dir_count", "max_depth")
    assert [getattr(fast_info, f) for f in same] == [getattr(general_info, f) for f in same]


def test_fast_path_keeps_sibling_order_counts_and_depth(tmp_path: Path) -> None:
    with treeseek.open(tmp_path / "t.db", hooks=[]) as db:
        report = db.index(
            PathListBuilder(["src/b.py", "src/A.py", "src/a.py", "README.md", "src/sub/x.txt"]),
            name="t",
        )
        assert (report.added, report.changed, report.removed) == (5, 0, 0)
        info = db.tree("t")
        assert (info.file_count, info.dir_count, info.node_count, info.max_depth) == (5, 3, 8, 3)
        assert [n.name for n in db.children("t", "src")] == ["sub", "A.py", "a.py", "b.py"]
        assert [n.order for n in db.children("t", "src")] == [0, 1, 2, 3]
        assert db.node("t", "src").child_count == 4
        assert db.node("t", "src/sub/x.txt").depth == 3


def test_batched_ids_equal_node_id_for_path() -> None:
    paths = [
        "",
        "a",
        "a/b.py",
        "dir/ünï.txt",
        "bad\udcffname",
        *(f"p{i}/f{i}.py" for i in range(300)),
    ]
    assert node_ids_for_paths(paths) == [node_id_for_path(p) for p in paths]
    assert node_ids_for_paths([]) == []


@pytest.mark.parametrize(
    "paths",
    [
        ["a.py", ".github/ci.yml", "a/.hidden", "a/b..c", "x..", "a/.../b"],
        ["ab:c/d.py", "dir/x:y"],
    ],
)
def test_clean_listings_pass_the_bulk_check(paths: list[str]) -> None:
    assert not any(_needs_work(p) for p in paths)
    assert _all_clean(paths)


@pytest.mark.parametrize(
    "bad",
    ["/abs", "trail/", "a//b", "a/./b", "./a", "a/..", "..", ".", "a\\b", "C:/x", "a\x00b"],
)
def test_bulk_check_sends_every_unclean_path_to_the_per_path_checks(bad: str) -> None:
    assert not _all_clean(["ok.py", bad, "z/ok.py"])
    assert not _all_clean([bad])


@given(st.lists(st.text(alphabet="a./\\:\n\x00", max_size=6), max_size=6))
def test_bulk_check_never_passes_a_path_that_needs_work(paths: list[str]) -> None:
    paths = [p for p in paths if p]
    if _all_clean(paths):
        assert not any(_needs_work(p) for p in paths)


def test_fast_path_rejects_what_the_builder_rejects(tmp_path: Path) -> None:
    with treeseek.open(tmp_path / "t.db", hooks=[]) as db:
        with pytest.raises(PathError):
            db.index(PathListBuilder(["ok.py", "../etc/passwd"]), name="t")
        with pytest.raises(BuildError, match="holds strings"):
            db.index(PathListBuilder(["ok.py", 3]), name="t")  # type: ignore[list-item]
        with pytest.raises(BuildError, match="both a file and a directory"):
            db.index(PathListBuilder(["a", "a/b"]), name="t")
        assert not db.store.has_tree("t")


def test_listed_paths_normalizes_like_entries() -> None:
    raw = ["pkg\\mod.py", "./a//b.py", "", "dir/sub/", "x.py", "x.py"]
    listed = PathListBuilder(iter(raw)).listed_paths()
    assert listed == ListedPaths(["pkg/mod.py", "a/b.py", "x.py", "x.py"], ["dir/sub"])
    clean = PathListBuilder(["a/b.py", "", "c.py"]).listed_paths()
    assert clean == ListedPaths(["a/b.py", "c.py"], [])


def test_an_iterator_listing_is_read_once_and_kept() -> None:
    builder = PathListBuilder(iter(["a.py", "b/c.py"]))
    assert builder.listed_paths().files == ["a.py", "b/c.py"]
    assert [e.path for e in builder.entries(SourceWarnings())] == ["a.py", "b/c.py"]


def test_insert_path_only_refuses_a_tree_with_nodes(store_factory: Callable[..., Store]) -> None:
    store = store_factory("t")  # each backend (tests/conftest.py)
    try:
        nodes = build_path_only(ListedPaths(["a/b.py"], [])).nodes
        with store.write_tree("t") as writer:
            writer.insert_path_only(nodes)
        assert [n.path for n in store.subtree("t")] == ["", "a", "a/b.py"]
        with pytest.raises(StoreError, match="already has nodes"), store.write_tree("t") as w:
            w.insert_path_only(nodes)
        assert [n.path for n in store.subtree("t")] == ["", "a", "a/b.py"]
    finally:
        store.close()


def test_columns_of_a_small_tree() -> None:
    tree = build_path_only(ListedPaths(["b/x.py", "a.py", "b/X.py"], ["e"]))
    root, b, a = (node_id_for_path(p) for p in ("", "b", "a.py"))
    assert tree.nodes == PathOnlyNodes(
        dirs=NodeColumns(
            ids=[root, b, node_id_for_path("e")],
            paths=["", "b", "e"],
            parent_ids=[None, root, root],
            depths=[0, 1, 1],
            orders=[0, 0, 1],
            child_counts=[3, 2, 0],
        ),
        files=NodeColumns(
            ids=[a, node_id_for_path("b/X.py"), node_id_for_path("b/x.py")],
            paths=["a.py", "b/X.py", "b/x.py"],
            parent_ids=[root, b, b],
            depths=[1, 2, 2],
            orders=[2, 0, 1],
            child_counts=[0, 0, 0],
        ),
    )
    assert (tree.file_count, tree.dir_count, tree.max_depth) == (3, 3, 2)
