"""Fixtures of the eval tests (helpers live in tinybench.py; bare_repo.py is shared with
tests/trees)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "trees"))

from tinybench import COMMIT_A, COMMIT_B, INSTANCES, PATHS_A, PATHS_B, REPO, TinyBench, write_bench


@pytest.fixture
def tiny_bench(tmp_path: Path) -> TinyBench:
    return write_bench(tmp_path, INSTANCES, {(REPO, COMMIT_A): PATHS_A, (REPO, COMMIT_B): PATHS_B})
