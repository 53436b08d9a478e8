"""Where the database lives: --db, then $TREESEEK_DB, then the per-user default."""

from __future__ import annotations

from pathlib import Path

import pytest

from treeseek.config import default_db_path, resolve_db_path
from treeseek.errors import ConfigError


def test_precedence(tmp_path: Path) -> None:
    env = {"TREESEEK_DB": str(tmp_path / "env.db"), "HOME": str(tmp_path / "home")}
    assert resolve_db_path(tmp_path / "flag.db", env) == tmp_path / "flag.db"
    assert resolve_db_path(None, env) == tmp_path / "env.db"
    del env["TREESEEK_DB"]
    assert resolve_db_path(None, env) == tmp_path / "home/.local/share/treeseek/treeseek.db"


def test_xdg_data_home_when_absolute(tmp_path: Path) -> None:
    assert default_db_path({"XDG_DATA_HOME": str(tmp_path), "HOME": "/h"}) == (
        tmp_path / "treeseek" / "treeseek.db"
    )
    assert default_db_path({"XDG_DATA_HOME": "relative", "HOME": "/h"}) == Path(
        "/h/.local/share/treeseek/treeseek.db"
    )


def test_a_directory_is_not_a_database_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory"):
        resolve_db_path(tmp_path, {})


def test_a_postgresql_url_is_kept_as_given() -> None:
    url = "postgresql://team@db.internal:5432/treeseek?sslmode=require"
    assert resolve_db_path(url, {}) == url
    assert resolve_db_path(None, {"TREESEEK_DB": url}) == url
    assert resolve_db_path(None, {"TREESEEK_DB": "postgres://u@h/d"}) == "postgres://u@h/d"
