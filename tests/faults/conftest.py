"""The fault suite's fixtures: a hostile loopback LLM server, a database with a hostile tree.

Everything goes through the :class:`treeseek.Database` API (``treeseek.open``), so the same
tests can run against other front ends (HTTP/MCP servers) or stores (PostgreSQL) by swapping
the ``open_db`` fixture.

Long cases (``@pytest.mark.long``: 10,000 fuzzed replies and paths) run only with ``-m long``
or ``TREESEEK_LONG=1``; ``python bench/bench_faults.py`` runs them and reports the counts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "llm"))  # llm_wire

from hostile_llm import HOSTILE_FILES, TREE, HostileServer

import treeseek


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "long: long fault runs (bench/bench_faults.py)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = "long" in (config.getoption("-m") or "") or os.environ.get("TREESEEK_LONG") == "1"
    if wanted:
        return
    skip = pytest.mark.skip(reason="long run: -m long or TREESEEK_LONG=1")
    for item in items:
        if "long" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def hostile_server() -> Iterator[HostileServer]:
    srv = HostileServer()
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def hostile_checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile-src")
    for rel, text in HOSTILE_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def open_db(tmp_path: Path) -> Callable[..., treeseek.Database]:
    """Opens a database by the public API (the seam other back ends replace)."""

    def opener(**kw: object) -> treeseek.Database:
        return treeseek.open(tmp_path / "faults.db", hooks=[], **kw)  # type: ignore[arg-type]

    return opener


@pytest.fixture
def hostile_db(
    open_db: Callable[..., treeseek.Database], hostile_checkout: Path
) -> Iterator[treeseek.Database]:
    db = open_db()
    db.index(hostile_checkout, name=TREE)
    yield db
    db.close()
