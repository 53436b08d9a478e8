"""The tree commands end to end: typer's CliRunner, and one run of the real console script."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from treeseek.cli.app import load_commands

app = load_commands()


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("TREESEEK_DB", str(tmp_path / "env.db"))
    return CliRunner()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    files = {
        "src/app/main.py": "def main():\n    return 1\n",
        "src/app/util.py": "X = 2\n",
        "docs/guide.md": "# guide\n",
        "logo.png": b"\x89PNG\x00\x00\x01",
        ".gitignore": "*.log\n",
        "noise.log": "ignored\n",
    }
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data)
    return root


def test_index_trees_show_cat_rm(runner: CliRunner, project: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    result = runner.invoke(app, ["index", str(project), "--db", db])
    assert result.exit_code == 0, result.output
    assert "indexed project: 5 files" in result.stdout
    assert "1 binary" in result.stdout

    result = runner.invoke(app, ["trees", "--db", db, "--json"])
    trees = json.loads(result.stdout)["trees"]
    assert [(t["name"], t["source"], t["file_count"]) for t in trees] == [
        ("project", "filesystem", 5)
    ]

    result = runner.invoke(app, ["show", "project", "--db", db, "--depth", "1"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[1:] == [
        "├── docs/",
        "│   └── … 1 entry",
        "├── src/",
        "│   └── … 1 entry",
        "├── .gitignore",
        "└── logo.png (binary)",
    ]
    result = runner.invoke(app, ["show", "project", "src", "--db", db, "--json", "-d", "3"])
    nodes = json.loads(result.stdout)["nodes"]
    assert sorted(n["path"] for n in nodes) == [
        "src",
        "src/app",
        "src/app/main.py",
        "src/app/util.py",
    ]

    result = runner.invoke(app, ["cat", "project", "src/app/main.py", "--db", db])
    assert result.exit_code == 0 and result.stdout == "def main():\n    return 1\n"
    result = runner.invoke(app, ["cat", "project", "./src//app/util.py", "--db", db, "--json"])
    assert json.loads(result.stdout)["content"] == "X = 2\n"

    (project / "src/app/util.py").write_text("X = 3\n")
    result = runner.invoke(app, ["index", str(project), "--db", db, "--json"])
    report = json.loads(result.stdout)
    assert (report["changed"], report["unchanged"], report["added"]) == (1, 4, 0)

    result = runner.invoke(app, ["rm", "project", "--db", db])
    assert result.exit_code == 0 and "deleted tree project" in result.stdout
    assert json.loads(runner.invoke(app, ["trees", "--db", db, "--json"]).stdout) == {"trees": []}


def test_errors_are_one_line_with_exit_code_1(runner: CliRunner, project: Path) -> None:
    runner.invoke(app, ["index", str(project)])  # the database comes from $TREESEEK_DB
    cases = [
        (["show", "nope"], "no tree named 'nope'; run `treeseek trees`"),
        (["cat", "project", "missing.py"], "no node 'missing.py' in tree 'project'"),
        (["cat", "project", "logo.png"], "logo.png has no stored content: it is binary"),
        (["cat", "project", "src"], "src is a directory"),
        (["cat", "project", "../etc/passwd"], "not inside the tree"),
        (["rm", "nope"], "no tree named 'nope'"),
        (["index", str(project / "missing")], "does not exist"),
    ]
    for args, message in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 1, (args, result.output)
        assert result.stderr.startswith("error: ") and message in result.stderr, result.stderr
        assert "Traceback" not in result.output


def test_usage_errors_exit_2(runner: CliRunner, project: Path) -> None:
    for args in (
        ["index"],
        ["index", str(project), "--paths-from", "x.txt"],
        ["index", "--paths-from", "-"],
        ["show", "t", "--depth", "0"],
        ["index", str(project), "--bogus"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)


def test_paths_from_stdin_and_file(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["index", "--paths-from", "-", "--name", "listing", "--json"],
        input="a/b.py\na/c.py\nREADME\n",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tree"]["source"] == "path_list"
    result = runner.invoke(app, ["show", "listing", "--json"])
    assert sorted(n["path"] for n in json.loads(result.stdout)["nodes"]) == [
        "",
        "README",
        "a",
        "a/b.py",
        "a/c.py",
    ]
    result = runner.invoke(app, ["cat", "listing", "a/b.py"])
    assert result.exit_code == 1 and "built from a path list" in result.stderr
    bad = tmp_path / "bad.txt"
    bad.write_text("ok.py\n../../etc/passwd\n")
    result = runner.invoke(app, ["index", "--paths-from", str(bad)])
    assert result.exit_code == 1 and "leaves the tree" in result.stderr


def test_non_utf8_names_are_shown_escaped_and_json_round_trips(
    runner: CliRunner, tmp_path: Path
) -> None:
    root = tmp_path / "odd"
    root.mkdir()
    with open(os.path.join(os.fsencode(root), b"bad\xffname.txt"), "wb") as handle:
        handle.write(b"content\n")
    assert runner.invoke(app, ["index", str(root)]).exit_code == 0
    result = runner.invoke(app, ["show", "odd"])
    assert "bad\\xffname.txt" in result.stdout
    result = runner.invoke(app, ["show", "odd", "--json"])
    paths = [n["path"] for n in json.loads(result.stdout)["nodes"]]
    assert b"bad\xffname.txt".decode("utf-8", "surrogateescape") in paths


def test_the_console_script_runs_in_a_real_process(project: Path, tmp_path: Path) -> None:
    script = shutil.which("treeseek")
    command = (
        [script] if script else [sys.executable, "-c", "from treeseek.cli import main; main()"]
    )
    env = {**os.environ, "TREESEEK_DB": str(tmp_path / "proc.db")}
    done = subprocess.run(
        [*command, "index", str(project), "--name", "p", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tree"]["file_count"] == 5
    done = subprocess.run(
        [*command, "cat", "p", "docs/guide.md"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "# guide\n")
    done = subprocess.run(
        [*command, "show", "nope"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 1 and done.stderr.startswith("error: no tree named 'nope'")


def test_trees_and_query_say_when_a_directory_tree_is_stale(
    runner: CliRunner, project: Path, tmp_path: Path
) -> None:
    db = str(tmp_path / "fresh.db")
    assert runner.invoke(app, ["index", str(project), "--db", db]).exit_code == 0
    result = runner.invoke(app, ["trees", "--db", db])
    assert result.exit_code == 0 and "fresh" in result.stdout and "STALE" not in result.stdout
    query = runner.invoke(app, ["query", "project", "main", "--db", db])
    assert query.exit_code == 0 and "stale" not in query.stderr

    (project / "src/app/main.py").write_text("def main():\n    return 12345\n")
    result = runner.invoke(app, ["trees", "--db", db])
    assert "STALE (1 changed)" in result.stdout
    (row,) = json.loads(runner.invoke(app, ["trees", "--db", db, "--json"]).stdout)["trees"]
    assert row["freshness"]["stale"] is True and row["freshness"]["paths"] == ["src/app/main.py"]
    query = runner.invoke(app, ["query", "project", "main", "--db", db, "--json"])
    assert query.exit_code == 0 and json.loads(query.stdout)["files"]
    (line,) = query.stderr.splitlines()
    assert line.startswith("warning: tree 'project' is stale since ")
    assert f"1 changed; re-index to update (`treeseek index {project} --name project`)" in line


def test_show_of_a_tree_deeper_than_python_recursion(runner: CliRunner, tmp_path: Path) -> None:
    listing = tmp_path / "deep.txt"
    listing.write_text("/".join(["a"] * 1100) + "/leaf.py\n")
    db = str(tmp_path / "deep.db")
    result = runner.invoke(
        app, ["index", "--paths-from", str(listing), "--name", "deep", "--db", db]
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["show", "deep", "--depth", "2000", "--db", db])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()  # piped: 4,096 columns, room for 1,014 levels
    assert lines[1] == "└── a/" and len(lines) == 1 + 1014 + 1
    assert lines[-1].strip() == "└── … 1 entry"
    assert all(line.strip() for line in lines)


def test_query_says_why_a_replay_found_nothing(
    runner: CliRunner, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "replay.db")
    assert runner.invoke(app, ["index", str(project), "--db", db]).exit_code == 0
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("TREESEEK_LLM_RECORD", str(calls))
    args = ["query", "project", "main app", "--strategy", "beam", "--db", db]
    recorded = runner.invoke(app, [*args, "--llm", "lexical"])
    assert recorded.exit_code == 0 and "main.py" in recorded.stdout
    monkeypatch.delenv("TREESEEK_LLM_RECORD")
    replayed = runner.invoke(app, [*args, "--llm", f"replay:{calls}"])
    assert replayed.stdout == recorded.stdout and "note:" not in replayed.stderr
    other = ["query", "project", "an unrecorded question", "--strategy", "beam", "--db", db]
    missed = runner.invoke(app, [*other, "--llm", f"replay:{calls}"])
    assert missed.exit_code == 0 and "no files found" in missed.stdout
    assert "note: replay:lexical: no recorded call for this query and candidates" in missed.stderr


@pytest.mark.parametrize(
    "encode",
    [
        lambda q: q.encode("utf-16"),  # PowerShell 5's `>` writes this
        lambda q: b"\xef\xbb\xbf" + q.encode("utf-8"),  # Notepad's UTF-8 with a mark
        lambda q: q.encode("utf-8"),
    ],
)
def test_a_question_file_with_a_byte_order_mark_is_the_question(
    tmp_path: Path, encode: Any
) -> None:
    from treeseek.cli.query_commands import read_question

    question = "Why does main() return 1? Ünïcode"
    path = tmp_path / "q.txt"
    path.write_bytes(encode(question))
    assert read_question(None, path) == question
