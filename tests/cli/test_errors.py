"""Every command's errors go through the one handler: one ``error: ...`` line on stderr, exit 1.

(typer's own usage errors, and the commands' :func:`~treeseek.cli.common.usage_error`, exit 2.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from treeseek.cli.app import load_commands
from treeseek.cli.common import one_line
from treeseek.database import Database

app = load_commands()


@pytest.fixture
def db(tmp_path: Path) -> list[str]:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("def f():\n    return 1\n")
    args = ["--db", str(tmp_path / "t.db")]
    assert CliRunner().invoke(app, ["index", str(root), "--name", "repo", *args]).exit_code == 0
    return args


def _one_error_line(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, (args, result.output, result.exception)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, (args, result.stderr)
    assert lines[0].startswith("error: ") and message in lines[0], (args, lines[0])
    assert "Traceback" not in result.output and not result.stdout, (args, result.stdout)


def test_query_index_graph_and_eval_errors_are_one_line_exit_1(
    db: list[str], tmp_path: Path
) -> None:
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(
        '{"instance_id": "a-1", "repo": "o/r", "base_commit": "c", "query": "q",'
        ' "gold_files": ["x.py"]}\n'
    )
    cases = [
        (["query", "nope", "question", *db], "no tree named 'nope'"),
        (["query", "repo", "   ", *db], "the question is empty"),
        (["query", "repo", "q", "--strategy", "bogus", *db], "unknown strategy 'bogus'"),
        (["query", "repo", "q", "--llm", "nosuch", *db], "nosuch"),
        (["index", str(tmp_path / "missing"), *db], "does not exist"),
        (["graph", "nope", "entrypoints", *db], "no tree named 'nope'"),
        (["graph", "repo", "callers", "pkg.mod.nope", *db], "no file or symbol"),
        (["eval", str(tmp_path / "none.jsonl"), "--trees", "x.gz"], "does not exist"),
        (["eval", str(dataset), "--repo", "nonsense"], "OWNER/NAME=GIT_DIR"),
        (["eval", "compare", str(tmp_path / "a"), str(tmp_path / "b")], "no per_query"),
        (["eval", "plot", str(tmp_path / "a"), "--out", str(tmp_path / "p")], "summary"),
    ]
    for args, message in cases:
        _one_error_line(args, message)


def test_os_errors_are_one_line_too(db: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(self: Database) -> None:
        raise PermissionError(13, "Permission denied", "/some/where")

    monkeypatch.setattr(Database, "trees", denied)
    _one_error_line(["trees", *db], "Permission denied: /some/where")


def test_long_and_multi_line_messages_stay_one_line() -> None:
    assert one_line("first line\n  second line\n\n") == "first line second line"
    assert one_line("a name with \x1b[31m an escape") == "a name with \\x1b[31m an escape"
    assert one_line("bad\udcffname") == "bad\\xffname"


def test_the_console_script_exits_1_on_an_eval_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from treeseek.cli import main; main()",
            "eval",
            "compare",
            "a",
            "b",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "40"},  # a narrow terminal must not wrap the line
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("error: ")


def test_db_copy_never_creates_its_source_nor_copies_onto_itself(
    db: list[str], tmp_path: Path
) -> None:
    missing = tmp_path / "typo.db"
    _one_error_line(
        ["db", "copy", str(missing), str(tmp_path / "out.db")], "no treeseek database at"
    )
    assert not missing.exists()  # before: an empty database was made and "copied" from
    _one_error_line(["db", "copy", db[1], db[1]], "SOURCE and TARGET are the same database")


def test_db_migrate_never_creates_a_database(db: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "new" / "typo.db"
    _one_error_line(["db", "migrate", "--db", str(missing)], "no treeseek database at")
    assert not missing.exists() and not missing.parent.exists()
    done = CliRunner().invoke(app, ["db", "migrate", "--json", *db])
    assert done.exit_code == 0 and json.loads(done.output)["schema_version"] >= 1
