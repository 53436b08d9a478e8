"""A PostgreSQL password never reaches the terminal: neither the URL's ``user:password@`` nor
its ``?password=`` parameter, in any message that names the database."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from treeseek.cli import app
from treeseek.cli.app import load_commands
from treeseek.store.postgres import redact

SECRET = "s3cretPW"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://bob:s3cretPW@db:5432/x", "postgresql://bob:***@db:5432/x"),
        ("postgresql://bob@db/x?password=s3cretPW", "postgresql://bob@db/x?password=***"),
        (
            "postgresql://bob@/x?host=/run/pg&password=s3cretPW&sslmode=require",
            "postgresql://bob@/x?host=/run/pg&password=***&sslmode=require",
        ),
        ("postgresql://bob@db/x?sslmode=require", "postgresql://bob@db/x?sslmode=require"),
    ],
)
def test_redact_hides_the_password_wherever_the_url_puts_it(url: str, shown: str) -> None:
    assert redact(url) == shown


def _with(url: str, **params: str) -> str:
    extra = "&".join(f"{k}={v}" for k, v in params.items())
    return f"{url}{'&' if '?' in url else '?'}{extra}"


def test_cli_errors_name_the_database_without_its_password(
    postgres_server: str, tmp_path: Path
) -> None:
    load_commands()
    runner = CliRunner()
    # a role that does not exist, its password in the query string
    wrong = _with(postgres_server.replace("://postgres", "://nobody", 1), password=SECRET)
    result = runner.invoke(app, ["trees", "--db", wrong])
    assert result.exit_code == 1
    assert "cannot connect to" in result.output and SECRET not in result.output, result.output
    # the same database twice, its password in the userinfo
    same = postgres_server.replace("://postgres:", f"://postgres:{SECRET}", 1)
    assert SECRET in same
    result = runner.invoke(app, ["db", "copy", same, same])
    assert result.exit_code != 0
    assert "same database" in result.output and SECRET not in result.output, result.output
