"""Real trees for the retriever tests: path lists indexed into SQLite files under tmp_path."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

import treeseek
from treeseek.database import Database
from treeseek.search.treeview import TreeView
from treeseek.trees.model import TreeInfo
from treeseek.trees.pathlist import PathListBuilder

TreeFactory = Callable[[Sequence[str]], TreeInfo]


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = treeseek.open(tmp_path / "trees.db")
    try:
        yield database
    finally:
        database.close()


@pytest.fixture
def make_tree(db: Database) -> TreeFactory:
    """Index a list of repo-relative paths (a trailing ``/`` lists an empty directory)."""
    counter = iter(range(1_000_000))

    def build(paths: Sequence[str]) -> TreeInfo:
        name = f"t{next(counter)}"
        db.index(PathListBuilder(list(paths)), name=name)
        return db.tree(name)

    return build


@pytest.fixture
def view_of(db: Database) -> Callable[[TreeInfo], TreeView]:
    return lambda info: TreeView(db.store, info.name)
