"""PostgreSQL roles a team gives its members: a role that may only read opens a database that
is at this treeseek's schema version and queries it (a write says in one line that it may
not); a role that may not create treeseek's
tables in a new database gets one line saying so (it got a psycopg traceback)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest
from typer.testing import CliRunner

import treeseek
from treeseek.cli import app
from treeseek.cli.app import load_commands
from treeseek.errors import SchemaError, StoreError


def _schema(url: str) -> str:
    options = parse_qs(urlsplit(url).query)["options"][0]
    return options.removeprefix("-csearch_path=").split(",")[0]


@pytest.fixture
def role(postgres_server: str) -> Iterator[str]:
    """A login role with no privileges of its own (dropped at the end)."""
    name = f"reader_{os.getpid()}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"DROP ROLE IF EXISTS {name}")
        conn.execute(f"CREATE ROLE {name} LOGIN")
    try:
        yield name
    finally:
        with psycopg.connect(postgres_server, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {name}")
            conn.execute(f"DROP ROLE {name}")


def test_a_read_only_role_queries_a_migrated_database(
    postgres_url: Callable[[], str], postgres_server: str, role: str, tmp_path: Path
) -> None:
    url = postgres_url()
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "a.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    with treeseek.open(url) as db:
        db.index(tmp_path / "repo", name="r")
        expected = [h.path for h in db.query("r", "greet name").files]
    schema = _schema(url)
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}")
    reader = url.replace("://postgres:", f"://{role}:", 1)
    with treeseek.open(reader) as db:
        assert [t.name for t in db.trees()] == ["r"]
        assert [h.path for h in db.query("r", "greet name").files] == expected == ["a.py"]
        with pytest.raises(StoreError, match="may not write treeseek's tables") as caught:
            db.index(tmp_path / "repo", name="r2")  # one line, not a psycopg traceback
        assert "\n" not in str(caught.value)
        assert [t.name for t in db.trees()] == ["r"]


def test_a_role_that_cannot_create_the_tables_gets_one_line(
    postgres_url: Callable[[], str], postgres_server: str, role: str
) -> None:
    url = postgres_url()  # a new, empty schema: its tables are yet to be created
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"GRANT USAGE ON SCHEMA {_schema(url)} TO {role}")
    reader = url.replace("://postgres:", f"://{role}:", 1)
    with pytest.raises(SchemaError, match="cannot create treeseek's tables") as caught:
        treeseek.open(reader)
    assert "\n" not in str(caught.value) and "CREATE on the schema" in str(caught.value)
    load_commands()
    result = CliRunner().invoke(app, ["trees", "--db", reader])
    assert result.exit_code == 1
    assert result.output.startswith("error: cannot create treeseek's tables"), result.output


def test_a_schema_first_on_the_search_path_gets_its_own_tables(
    postgres_url: Callable[[], str], postgres_server: str, tmp_path: Path
) -> None:
    """Opening checks for treeseek's tables in the schema they would be created in (the first
    on the search path), not in any schema the path reaches: a new schema in front of one
    that holds a treeseek database is a new, empty database."""
    behind = postgres_url()
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "a.py").write_text("x = 1\n")
    with treeseek.open(behind) as db:
        db.index(tmp_path / "repo", name="r")
    front = f"{_schema(behind)}_front"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {front}")
    url = behind.replace(
        f"search_path%3D{_schema(behind)}", f"search_path%3D{front}%2C{_schema(behind)}"
    )
    assert _schema(url) == front
    with treeseek.open(url) as db:
        assert db.trees() == []
    with treeseek.open(behind) as db:
        assert [t.name for t in db.trees()] == ["r"]
