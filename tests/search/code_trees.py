"""Small code repositories for the flat retriever's tests: files written under a temporary
directory and indexed, with the code index, into a real SQLite database."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import treeseek
from treeseek.database import Database
from treeseek.index.code_hook import CodeIndexHook
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import SearchContext


def index_files(tmp_path: Path, files: Mapping[str, str], *, db_file: str = "flat.db") -> Database:
    """``files`` (path -> text) written under ``tmp_path/repo`` and indexed as tree ``shop``
    into ``tmp_path/db_file``; the caller closes the database."""
    root = tmp_path / "repo"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    database = treeseek.open(tmp_path / db_file, hooks=[CodeIndexHook()])
    database.index(root, name="shop")
    return database


def lexical_context(db: Database) -> SearchContext:
    """A search context over tree ``shop`` with the lexical navigator."""
    return SearchContext(store=db.store, tree=db.tree("shop"), navigator=LexicalNavigator())


def opened(
    tmp_path: Path, files: Mapping[str, str], *, db_file: str = "flat.db"
) -> Iterator[Database]:
    """:func:`index_files` for a fixture: yields the database and closes it after the test."""
    database = index_files(tmp_path, files, db_file=db_file)
    try:
        yield database
    finally:
        database.close()
