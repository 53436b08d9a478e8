"""Shared fixtures: a real SQLite database file under tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import treeseek
from treeseek.database import Database


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    """A fresh database file with no index hooks (the tree layer alone)."""
    db = treeseek.open(tmp_path / "treeseek.db", hooks=[])
    try:
        yield db
    finally:
        db.close()
