"""A small real repository written to a temp dir and indexed (with the code index) into a real
SQLite file, shared by the context tests of a session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from shop_repo import REPO

import treeseek
from treeseek.database import Database


@pytest.fixture(scope="session")
def shop_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shop")
    source = root / "shop"
    for rel, text in REPO.items():
        path = source / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    db_path = root / "shop.db"
    with treeseek.open(db_path) as db:
        db.index(source, name="shop")
    return db_path


@pytest.fixture
def shop(shop_db: Path) -> Iterator[Database]:
    with treeseek.open(shop_db) as db:
        yield db
