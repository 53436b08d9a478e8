"""Fixtures of the tree builder tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from bare_repo import BareRepo


@pytest.fixture
def bare_repo(tmp_path: Path) -> BareRepo:
    return BareRepo(tmp_path)
