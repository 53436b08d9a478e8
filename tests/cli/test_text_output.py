"""What the text output of queries says: budgeted answers, ``expand``, ``outline`` and ``cat
PATH:A-B`` print stored text through the terminal sanitizer (an indexed file's escapes and names
never reach the terminal raw); a plain ranked list marks only printed contents as cut."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from treeseek.cli.app import load_commands

app = load_commands()
#: anything a terminal would act on
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def db(tmp_path: Path) -> list[str]:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "ansi.py").write_text(
        'def hello():\n    """Say \x1b[2J hello."""\n    return "\x1b[31mRED \x1b]0;pwned\x07"\n'
    )
    (root / "new\nline.py").write_text("def newline_file():\n    return 1\n")
    (root / "rtl\u202ename.py").write_text("def rtl_file():\n    return 2\n")
    args = ["--db", str(tmp_path / "t.db")]
    done = CliRunner().invoke(app, ["index", str(root), "--name", "repo", *args])
    assert done.exit_code == 0, done.output
    return args


def _stdout(args: list[str]) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (args, result.output, result.exception)
    assert not RAW_CONTROL.search(result.stdout), (args, result.stdout)
    return result.stdout


@pytest.mark.parametrize("level", ["spans", "full", "paths", "outline"])
def test_budgeted_answers_show_escapes(db: list[str], level: str) -> None:
    q = "hello red pwned newline_file rtl_file"
    out = _stdout(["query", "repo", q, "--budget", "2000", "--disclose", level, *db])
    if level in ("spans", "full"):
        assert '"\\x1b[31mRED \\x1b]0;pwned\\x07"' in out
    assert "new\\nline.py" in out and "rtl\\u202ename.py" in out
    assert not any(line.startswith("line.py") for line in out.splitlines())  # no fake line


def test_expand_cat_and_outline_show_escapes(db: list[str]) -> None:
    for args in (["expand", "repo", "hello"], ["cat", "repo", "ansi.py:1-3"]):
        assert "\\x1b]0;pwned\\x07" in _stdout([*args, *db])
    assert "new\\nline.py:1-2" in _stdout(["cat", "repo", "new\nline.py:1-2", *db])
    out = _stdout(["outline", "repo", *db])
    assert "Say \\x1b[2J hello." in out and "new\\nline.py (2 lines)" in out


def test_truncated_is_said_only_of_printed_contents(tmp_path: Path) -> None:
    """``(truncated)`` describes the contents ``--content`` prints; a plain ranked list has none
    to cut."""
    root = tmp_path / "repo"
    root.mkdir()
    body = "".join(f"def handler_{i}():\n    return 'payload {i}'\n\n" for i in range(4000))
    (root / "big.py").write_text(body)  # over the per-file content budget
    db = ["--db", str(tmp_path / "t.db")]
    assert CliRunner().invoke(app, ["index", str(root), "--name", "repo", *db]).exit_code == 0
    plain = _stdout(["query", "repo", "handler payload", *db])
    assert plain.splitlines()[0].strip() == "1. big.py"
    with_content = _stdout(["query", "repo", "handler payload", "--content", *db])
    assert with_content.splitlines()[0].strip() == "1. big.py  (truncated)"


def test_a_file_without_stored_content_says_why_for_ranges_too(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "blob.bin").write_bytes(b"\x00\x01binary" * 10)
    (root / "main.py").write_text("x = 1\n")
    db = ["--db", str(tmp_path / "t.db")]
    assert CliRunner().invoke(app, ["index", str(root), "--name", "repo", *db]).exit_code == 0
    for args in (["cat", "repo", "blob.bin"], ["cat", "repo", "blob.bin:1-2"]):
        result = CliRunner().invoke(app, [*args, *db])
        assert result.exit_code == 1
        assert result.stderr.strip() == "error: blob.bin has no stored content: it is binary"
    for args in (["expand", "repo", "blob.bin"], ["outline", "repo", "blob.bin"]):
        result = CliRunner().invoke(app, [*args, *db])
        assert result.exit_code == 1, (args, result.stdout)  # not "blob.bin (0 lines)"
        assert "has no stored content: it is binary" in result.stderr


def test_piped_trace_rules_are_not_thousands_of_columns_wide(db: list[str]) -> None:
    """Piped, the console is 4,096 columns wide so nothing wraps; a rule would fill all of it."""
    args = ["query", "repo", "hello", "--strategy", "beam", "--llm", "lexical", "--trace", *db]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rules = [line for line in result.stderr.splitlines() if line.startswith("──")]
    assert rules and rules[0].count("round 0") == 1
    assert all(len(line) <= 100 for line in rules), [len(line) for line in rules]


def test_a_budget_over_a_path_only_tree_says_there_is_no_content(tmp_path: Path) -> None:
    db = ["--db", str(tmp_path / "t.db")]
    listed = CliRunner().invoke(
        app, ["index", "--paths-from", "-", "--name", "p", *db], input="src/models.py\n"
    )
    assert listed.exit_code == 0, listed.output
    out = _stdout(["query", "p", "models", "--budget", "500", *db])
    assert out.strip() == (
        "the ranked files have no stored content to show (a path-only tree?); ask without"
        " --budget for their paths"
    )  # not "nothing fits the budget": no budget would
    assert _stdout(["query", "p", "models", *db]).split()[:2] == ["1.", "src/models.py"]


def test_db_check_shows_a_database_path_s_escapes(tmp_path: Path) -> None:
    """``db check`` of a damaged database whose path holds an escape sequence: the path is
    shown escaped on a terminal (color=True keeps what click would strip from a pipe)."""
    bad = tmp_path / "e\x1b[31mred.db"
    bad.write_text("my notes, not a database\n")
    result = CliRunner().invoke(app, ["db", "check", "--db", str(bad)], color=True)
    assert result.exit_code == 3, result.output
    assert not RAW_CONTROL.search(result.stderr), result.stderr
    assert "e\\x1b[31mred.db" in result.stderr
