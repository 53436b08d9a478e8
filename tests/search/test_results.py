"""Output semantics: at most k files with contents under per-file and total budgets."""

from __future__ import annotations

from pathlib import Path

from scripting import scripted

from treeseek.database import Database
from treeseek.search.base import QueryOptions
from treeseek.search.strategy import run_query


def _index_dir(db: Database, tmp_path: Path) -> str:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "big.py").write_text("x = 1\n" * 100)  # 600 bytes
    (root / "pkg" / "small.py").write_text("y = 'é'\n")
    (root / "pkg" / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    (root / "README.md").write_text("hello\n")
    db.index(root, name="repo")
    return "repo"


def _query(db: Database, tree: str, picks: list[str], **opts: object) -> list[dict[str, object]]:
    nav = scripted(lambda r: (picks, True))
    options = QueryOptions(strategy="beam", beam_width=1, **opts)  # type: ignore[arg-type]
    result = run_query(db.store, db.tree(tree), "q", options, nav)
    return [
        {"path": f.path, "content": f.content, "truncated": f.truncated, "status": f.content_status}
        for f in result.files
    ]


def test_contents_come_with_the_files(db: Database, tmp_path: Path) -> None:
    tree = _index_dir(db, tmp_path)
    files = _query(db, tree, ["README.md"], k=1)
    assert files == [
        {"path": "README.md", "content": "hello\n", "truncated": False, "status": "stored"}
    ]


def test_per_file_budget_truncates_and_marks(db: Database, tmp_path: Path) -> None:
    tree = _index_dir(db, tmp_path)
    nav_picks = ["pkg", "pkg/big.py", "pkg/small.py"]
    files = _query(db, tree, nav_picks, k=2, max_file_bytes=6)
    big, small = files
    assert big["content"] == "x = 1\n" and big["truncated"] is True
    # a cut inside a multi-byte character drops the partial character
    assert small["content"] == "y = '" and small["truncated"] is True


def test_total_budget_spans_files(db: Database, tmp_path: Path) -> None:
    tree = _index_dir(db, tmp_path)
    files = _query(db, tree, ["pkg", "pkg/big.py", "pkg/small.py"], k=2, max_total_bytes=600)
    assert files[0]["content"] == "x = 1\n" * 100 and files[0]["truncated"] is False
    assert files[1]["content"] is None and files[1]["truncated"] is True


def test_missing_content_is_reported_not_invented(db: Database, tmp_path: Path) -> None:
    tree = _index_dir(db, tmp_path)
    files = _query(db, tree, ["pkg", "pkg/blob.bin"], k=1)
    assert files == [
        {"path": "pkg/blob.bin", "content": None, "truncated": False, "status": "binary"}
    ]


def test_no_contents_when_not_asked(db: Database, tmp_path: Path) -> None:
    tree = _index_dir(db, tmp_path)
    files = _query(db, tree, ["README.md"], k=1, include_content=False)
    assert files[0]["content"] is None and files[0]["status"] == "stored"
