"""Indexing: path lists, incremental re-indexing, hooks, atomicity."""

from __future__ import annotations

from pathlib import Path

import pytest

from treeseek.database import Database
from treeseek.errors import BuildError, PathError
from treeseek.trees.model import ContentStatus, NodeType, TreeSource, node_id_for_path
from treeseek.trees.pathlist import PathListBuilder


def test_path_list_builds_directories_order_and_counts(database: Database) -> None:
    report = database.index(
        PathListBuilder(["src/b.py", "src/A.py", "src/a.py", "README.md", "src/sub/x.txt"]),
        name="t",
    )
    assert (report.added, report.changed, report.removed) == (5, 0, 0)
    info = database.tree("t")
    assert info.source is TreeSource.PATH_LIST
    assert (info.file_count, info.dir_count, info.node_count, info.max_depth) == (5, 3, 8, 3)
    top = database.children("t")
    assert [n.path for n in top] == ["src", "README.md"]
    assert [n.order for n in top] == [0, 1]
    # directories first, then case-insensitive name, ties by exact name
    assert [n.name for n in database.children("t", "src")] == ["sub", "A.py", "a.py", "b.py"]
    node = database.node("t", "src/a.py")
    assert node.id == node_id_for_path("src/a.py")
    assert node.type is NodeType.FILE and node.content_status is ContentStatus.ABSENT
    assert database.content("t", node) is None
    assert database.node("t", node.id) == node


@pytest.mark.parametrize("bad", ["../etc/passwd", "/etc/passwd", "a/../../b", "C:/x"])
def test_path_list_rejects_paths_that_escape(database: Database, bad: str) -> None:
    with pytest.raises(PathError):
        database.index(PathListBuilder(["ok.py", bad]), name="t")
    assert not database.store.has_tree("t")


def test_path_list_file_and_json(database: Database, tmp_path: Path) -> None:
    text = tmp_path / "paths.txt"
    text.write_text("a/b.py\r\n./c.py\n\nd//e.py\nempty/\n")
    database.index(paths_from=text, name="text")
    assert sorted(n.path for n in database.subtree("text")) == [
        "",
        "a",
        "a/b.py",
        "c.py",
        "d",
        "d/e.py",
        "empty",
    ]
    js = tmp_path / "paths.json"
    js.write_text('["x/y.py", "z.py"]')
    database.index(js)  # a file source is a path list; the name is the file's stem
    assert sorted(n.path for n in database.subtree("paths")) == ["", "x", "x/y.py", "z.py"]


def test_file_and_directory_clash_is_an_error(database: Database) -> None:
    with pytest.raises(BuildError):
        database.index(PathListBuilder(["a", "a/b"]), name="t")


def test_reindex_path_list_is_incremental(database: Database) -> None:
    database.index(PathListBuilder(["a/x.py", "a/y.py", "b/z.py"]), name="t")
    before = {n.path: n.id for n in database.subtree("t")}
    report = database.index(PathListBuilder(["a/x.py", "a/w.py", "b/z.py"]), name="t")
    assert (report.added, report.removed, report.unchanged) == (1, 1, 2)
    after = {n.path: n.id for n in database.subtree("t")}
    assert after["a/x.py"] == before["a/x.py"]
    assert "a/y.py" not in after
    assert [n.name for n in database.children("t", "a")] == ["w.py", "x.py"]
