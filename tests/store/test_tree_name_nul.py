"""A tree name with a NUL character, on either backend: no such tree exists (TreeNotFound),
and a new tree cannot get it (ConfigError naming the rule). On PostgreSQL, whose text cannot
hold a NUL, both were psycopg's DataError (a traceback from the CLI, HTTP 500)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import treeseek
from treeseek.errors import ConfigError, TreeNotFound


def test_a_name_with_a_nul_is_no_tree_and_no_new_tree(
    db_location: Callable[[str], Any], tmp_path: Path
) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "a.py").write_text("x = 1\n")
    with treeseek.open(db_location("db"), hooks=[]) as db:
        db.index(tmp_path / "repo", name="r")
        with pytest.raises(TreeNotFound):
            db.tree("r\x00")
        with pytest.raises(TreeNotFound):
            db.query("r\x00", "x")
        with pytest.raises(TreeNotFound):
            db.delete("r\x00")
        with pytest.raises(ConfigError, match="contains U\\+0000"):
            db.index(tmp_path / "repo", name="r\x00b")
        assert [t.name for t in db.trees()] == ["r"]
