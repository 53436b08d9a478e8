"""One tree name, one origin: re-indexing a tree from another directory (or document) is
refused with a one-line error naming both places, unless asked to replace it; the same
origin (any spelling of it, a --rev of its checkout) re-indexes as before, and a moved
checkout is told how to re-point its tree (Python API, CLI; HTTP in tests/doors)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

import treeseek
from treeseek import BuildError, Database
from treeseek.cli.app import load_commands


def _project(root: Path, body: str) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "core.py").write_text(body, encoding="utf-8")
    (root / "README.md").write_text("# Project\n\nIt adds.\n", encoding="utf-8")
    return root


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path]:
    a = _project(tmp_path / "a", "def add(a, b):\n    return a + b\n")
    b = _project(tmp_path / "b", "def sub(a, b):\n    return a - b\n")
    return a, b


def test_another_directory_under_an_existing_name_is_refused(
    database: Database, two: tuple[Path, Path]
) -> None:
    a, b = two
    database.index(a, name="proj")
    with pytest.raises(BuildError) as caught:
        database.index(b, name="proj")
    message = str(caught.value)
    assert "\n" not in message
    assert str(a.resolve()) in message and str(b.resolve()) in message
    assert "--replace" in message and "--name" in message
    # nothing was written: still a's tree
    assert database.tree("proj").root == str(a.resolve())
    assert "return a + b" in (database.text("proj", "pkg/core.py") or "")
    report = database.index(b, name="proj", replace=True)
    assert database.tree("proj").root == str(b.resolve())
    assert report.changed == 1 and report.unchanged == 1
    assert "return a - b" in (database.text("proj", "pkg/core.py") or "")


def test_the_same_directory_however_spelled_re_indexes(
    database: Database, two: tuple[Path, Path], tmp_path: Path
) -> None:
    a, _ = two
    database.index(a, name="proj")
    link = tmp_path / "link"
    link.symlink_to(a, target_is_directory=True)
    for spelling in (a, str(a) + "/", link, a / "pkg" / ".."):
        assert database.index(spelling, name="proj").unchanged == 2
    # the default name is the directory's: a second "a" elsewhere is another origin
    other = _project(tmp_path / "elsewhere" / "a", "x = 1\n")
    database.index(a)
    with pytest.raises(BuildError, match="was indexed from"):
        database.index(other)


def test_a_moved_checkout_is_told_how_to_re_point_its_tree(
    database: Database, two: tuple[Path, Path], tmp_path: Path
) -> None:
    a, _ = two
    database.index(a, name="proj")
    moved = tmp_path / "moved"
    shutil.move(a, moved)
    with pytest.raises(BuildError) as caught:
        database.index(moved, name="proj")
    assert "no longer exists" in str(caught.value) and "--replace" in str(caught.value)
    report = database.index(moved, name="proj", replace=True)
    assert (report.added, report.changed, report.removed, report.unchanged) == (0, 0, 0, 2)
    assert database.tree("proj").root == str(moved.resolve())


def test_a_commit_of_the_indexed_checkout_is_the_same_origin(
    database: Database, two: tuple[Path, Path]
) -> None:
    a, b = two
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "one"]):
        subprocess.run(["git", *args], cwd=a, check=True, env=env)
    database.index(a, name="proj")
    assert database.index(a, name="proj", rev="HEAD").unchanged == 2
    assert database.index(a, name="proj").unchanged == 2
    with pytest.raises(BuildError, match="was indexed from"):
        database.index(b, name="proj")


def test_a_document_of_another_directory_is_another_origin(
    database: Database, tmp_path: Path
) -> None:
    for where in ("one", "two"):
        (tmp_path / where).mkdir()
        (tmp_path / where / "guide.md").write_text(f"# Guide\n\n{where}\n", encoding="utf-8")
    database.index(tmp_path / "one" / "guide.md")
    assert database.index(tmp_path / "one" / "guide.md").unchanged == 1
    with pytest.raises(BuildError, match="was indexed from"):
        database.index(tmp_path / "two" / "guide.md")
    database.index(tmp_path / "two" / "guide.md", replace=True)
    assert database.tree("guide").root == str((tmp_path / "two" / "guide.md").resolve())


def test_the_cli_refuses_in_one_line_and_replaces_with_replace(
    two: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = two
    app, runner, db = load_commands(), CliRunner(), str(tmp_path / "cli.db")
    assert runner.invoke(app, ["index", str(a), "--name", "proj", "--db", db]).exit_code == 0
    refused = runner.invoke(app, ["index", str(b), "--name", "proj", "--db", db])
    assert refused.exit_code == 1
    assert refused.stderr.count("\n") == 1 and "was indexed from" in refused.stderr
    replaced = runner.invoke(app, ["index", str(b), "--name", "proj", "--db", db, "--replace"])
    assert replaced.exit_code == 0, replaced.output
    with treeseek.open(db) as opened:
        assert opened.tree("proj").root == str(b.resolve())
