"""Fixtures of the doors' tests: a small indexed project (see doors_helpers)."""

from __future__ import annotations

from pathlib import Path

import pytest

import treeseek

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")
pytest.importorskip("mcp")

from doors_helpers import make_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "demo")


@pytest.fixture
def db_path(tmp_path: Path, project: Path) -> Path:
    path = tmp_path / "doors.db"
    with treeseek.open(path) as db:
        db.index(project, name="demo")
    return path
