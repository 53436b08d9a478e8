"""A new tree's name: no '/', control characters or bidi overrides, not blank, bounded.

A tree named ``a/b`` could not be reached over HTTP (a tree is one path segment there), and a
name with escapes or newlines garbles every listing that shows it. Trees that already carry
such a name (indexed before the check) are still read and re-indexed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import treeseek
from treeseek.database import MAX_TREE_NAME
from treeseek.errors import ConfigError
from treeseek.index.run import index_tree
from treeseek.trees.filesystem import FilesystemBuilder


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def f():\n    return 1\n")
    return root


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("owner/repo", "'/'"),
        ("bad\nname", "U+000A"),
        ("title\x1b]0;pwned\x07", "U+001B"),
        ("evil\u202etxt.py", "U+202E"),
        ("   ", "blank"),
        (".", "dot segment"),  # an HTTP client drops it: /v1/trees/./query is another route
        ("..", "dot segment"),
        ("x" * (MAX_TREE_NAME + 1), f"at most {MAX_TREE_NAME}"),
    ],
)
def test_a_new_tree_with_a_bad_name_is_refused(tmp_path: Path, name: str, says: str) -> None:
    with treeseek.open(tmp_path / "t.db") as db:
        with pytest.raises(ConfigError, match=re.escape(says)):
            db.index(_repo(tmp_path), name=name)
        assert db.trees() == []  # nothing written


def test_good_names_and_existing_trees_still_index(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    good = ("repo", "psf.requests@v2", "django-4.2 (main)", "数据", "x" * MAX_TREE_NAME)
    with treeseek.open(tmp_path / "t.db") as db:
        for name in good:
            db.index(root, name=name)
        # a tree that already has a name the check refuses (written before it existed, here
        # by the index run directly): read and re-indexed as before
        index_tree(db.store, "old/name", FilesystemBuilder(root))
        (root / "b.py").write_text("def ledger_total():\n    return 2\n")
        report = db.index(root, name="old/name")
        assert report.added == 1
        assert {t.name for t in db.trees()} == {*good, "old/name"}
        assert db.query("old/name", "ledger_total").files[0].path == "b.py"


def test_the_cli_says_it_in_one_line(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "treeseek", "index", str(root), "--name", "a/b",
         "--db", str(tmp_path / "t.db")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "contains '/'" in lines[0] and "--name" in lines[0]
