"""Damaged, read-only and full databases: reads work where they can, every failure is one
line naming the database and what to do, and a write never goes into a known-damaged file
nor leaves a half version.

A tiny file system (tmpfs) is used where the machine lets the tests mount one (root); the
file-size limit (RLIMIT_FSIZE, what ``ulimit -f`` sets) everywhere.
"""

from __future__ import annotations

import hashlib
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import treeseek
from treeseek.errors import CorruptDatabase, ReadOnlyDatabase, StoreError

SRC = str(Path(__file__).resolve().parents[2] / "src")
PAGE = 16384


def _checkout(root: Path, files: int, size: int, tag: str = "v1") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        body = "".join(
            f"def {tag}_handler_{i}_{j}(request):\n    return {j} * {len(tag)}  # {tag}\n"
            for j in range(max(size // 60, 1))
        )
        (root / f"mod_{tag}_{i}.py").write_text(body, encoding="utf-8")
    return root


def _cli(*args: str, fsize: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}

    def limit() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.run(
        [sys.executable, "-c", "from treeseek.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        preexec_fn=limit,
    )


def _one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _damage(path: Path) -> None:
    """Garbage over the middle half of the file's pages (the header page stays valid)."""
    size = path.stat().st_size
    pages = size // PAGE
    first, last = max(pages // 4, 1), max(pages * 3 // 4, 2)
    with path.open("r+b") as f:
        f.seek(first * PAGE)
        f.write(os.urandom((last - first) * PAGE))


@pytest.fixture
def indexed(tmp_path: Path) -> tuple[Path, Path]:
    source = _checkout(tmp_path / "src", 30, 3000)
    db = tmp_path / "t.db"
    with treeseek.open(db) as database:
        database.index(source, name="t")
    return db, source


def test_a_damaged_database_is_named_never_written_and_checked(
    indexed: tuple[Path, Path], tmp_path: Path
) -> None:
    db, source = indexed
    good = tmp_path / "good.db"
    shutil.copy(db, good)
    _damage(db)
    with treeseek.open(db) as database, pytest.raises(CorruptDatabase) as caught:
        database.query("t", "handler request", k=30)
    message = str(caught.value)
    assert str(db) in message and "treeseek db check" in message and "\n" not in message
    before = _digest(db)
    proc = _cli("index", str(source), "--name", "t", "--db", str(db))
    _one_line_error(proc, str(db), "damaged", "db check")
    assert _digest(db) == before  # not one byte written
    proc = _cli("query", "t", "handler request", "--db", str(db))
    _one_line_error(proc, str(db))
    check = _cli("db", "check", "--db", str(db))
    assert check.returncode == 3 and "damaged" in check.stderr and "Traceback" not in check.stderr
    shutil.copy(good, db)  # restored from a backup
    check = _cli("db", "check", "--db", str(db))
    assert check.returncode == 0 and "intact" in check.stdout
    assert not Path(f"{db}-corrupt").exists()  # the mark goes with a clean check
    assert _cli("index", str(source), "--name", "t", "--db", str(db)).returncode == 0


@pytest.mark.parametrize("damage", ["schema page", "not a database"])
def test_db_check_calls_a_file_it_cannot_even_read_damaged(
    indexed: tuple[Path, Path], damage: str
) -> None:
    """A file whose schema page is garbage, or that is no SQLite file at all, is a verdict
    (damaged, exit 3), not "cannot open the database to check it" (exit 1): the other commands
    send the user to `treeseek db check` for exactly these."""
    db, _ = indexed
    if damage == "schema page":
        with db.open("r+b") as f:
            f.seek(100)  # past the 100-byte header, over sqlite_master's page
            f.write(b"\xde\xad" * ((PAGE - 100) // 2))
    else:
        db.write_bytes(b"these are not the bytes of a database\n" * 200)
    proc = _cli("query", "t", "handler request", "--db", str(db))
    line = _one_line_error(proc, str(db), "damaged", "db check")
    check = _cli("db", "check", "--db", str(db))
    assert check.returncode == 3 and "damaged" in check.stderr, check.stderr
    assert "Traceback" not in check.stderr
    if damage == "not a database":
        # maybe a file --db names by mistake: never "delete it"; say what it is instead
        for said in (line, check.stderr):
            assert "not a SQLite file" in said and "delete" not in said, said
    else:
        assert "not a SQLite file" not in line


def test_a_text_file_given_as_the_database_is_not_advised_for_deletion(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n" * 100)
    for args in (("trees",), ("index", str(tmp_path), "--name", "n")):
        line = _one_line_error(_cli(*args, "--db", str(notes)), str(notes), "not a SQLite file")
        assert "delete" not in line and "--db" in line
    assert notes.read_text() == "my notes\n" * 100


def test_db_check_of_a_missing_file_is_an_error_not_a_verdict(tmp_path: Path) -> None:
    proc = _cli("db", "check", "--db", str(tmp_path / "none.db"))
    _one_line_error(proc, "none.db")
    assert not (tmp_path / "none.db").exists()


def test_a_full_disk_during_index_is_one_line_and_the_old_version_stays(
    indexed: tuple[Path, Path], tmp_path: Path
) -> None:
    db, _ = indexed
    bigger = _checkout(tmp_path / "bigger", 60, 40_000, tag="v2")
    before = treeseek.open(db, create=False)
    try:
        old = [(n.path, n.content_hash) for n in before.walk("t")]
    finally:
        before.close()
    limit = db.stat().st_size + 4 * PAGE  # the WAL of the new version cannot fit
    proc = _cli("index", str(bigger), "--name", "t", "--db", str(db), "--replace", fsize=limit)
    _one_line_error(proc, str(db), "full or a file-size limit", "previous version is intact")
    with treeseek.open(db, create=False) as database:
        assert [(n.path, n.content_hash) for n in database.walk("t")] == old
        assert database.store.check().ok
        database.index(bigger, name="t", replace=True)  # with room, the next index succeeds
        assert database.tree("t").file_count == 60


def _mount_tmpfs(where: Path, size: str) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
    )
    return done.returncode == 0


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "tiny"
    if not _mount_tmpfs(where, "4m"):
        pytest.skip("cannot mount a tmpfs here (not root, or no permission)")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_tiny_file_system_filling_up_is_one_line_and_the_old_version_stays(
    tiny_fs: Path, tmp_path: Path
) -> None:
    db = tiny_fs / "t.db"
    small = _checkout(tmp_path / "small", 5, 1000)
    with treeseek.open(db) as database:
        database.index(small, name="t")
        old = [(n.path, n.content_hash) for n in database.walk("t")]
    bigger = _checkout(tmp_path / "bigger", 40, 60_000, tag="v2")
    proc = _cli("index", str(bigger), "--name", "t", "--db", str(db), "--replace")
    _one_line_error(proc, str(db), "full")
    with treeseek.open(db, create=False) as database:
        assert [(n.path, n.content_hash) for n in database.walk("t")] == old
        assert database.store.check().ok


@pytest.fixture
def read_only_db(indexed: tuple[Path, Path], tmp_path: Path) -> Iterator[Path]:
    """The indexed database, made read-only: mode 444 in a mode 555 directory (not root), or
    a read-only tmpfs mount (root, who ignores file modes)."""
    db, _ = indexed
    if os.geteuid() != 0:
        folder = tmp_path / "ro"
        folder.mkdir()
        target = folder / "t.db"
        shutil.copy(db, target)
        target.chmod(0o444)
        folder.chmod(0o555)
        try:
            yield target
        finally:
            folder.chmod(0o755)
        return
    where = tmp_path / "ro"
    if not _mount_tmpfs(where, "64m"):
        pytest.skip("root without permission to mount: cannot make a read-only database")
    try:
        shutil.copy(db, where / "t.db")
        remount = subprocess.run(
            ["mount", "-o", "remount,ro", str(where)], capture_output=True, text=True
        )
        if remount.returncode != 0:
            pytest.skip(f"cannot remount read-only: {remount.stderr.strip()}")
        yield where / "t.db"
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_read_only_database_reads_and_says_it_cannot_be_written(
    read_only_db: Path, indexed: tuple[Path, Path]
) -> None:
    _, source = indexed
    with treeseek.open(read_only_db, create=False) as database:
        assert database.store.read_only is not None
        assert database.tree("t").file_count == 30
        assert database.query("t", "handler request", k=5).files
        assert database.listing("t").children
        with pytest.raises(ReadOnlyDatabase, match="read-only"):
            database.index(source, name="t")
    shown = _cli("show", "t", "--db", str(read_only_db))
    assert shown.returncode == 0 and "read-only" in shown.stderr
    queried = _cli("query", "t", "handler request", "--db", str(read_only_db))
    assert queried.returncode == 0 and "mod_v1_" in queried.stdout
    proc = _cli("index", str(source), "--name", "t", "--db", str(read_only_db))
    _one_line_error(proc, "read-only")
    assert _cli("db", "check", "--db", str(read_only_db)).returncode == 0


def test_storage_errors_of_the_api_are_store_errors(tmp_path: Path) -> None:
    not_a_db = tmp_path / "notes.db"
    not_a_db.write_bytes(b"these are my notes, not a database\n" * 1000)
    with pytest.raises(StoreError, match=r"notes\.db"):
        treeseek.open(not_a_db)
    assert not_a_db.read_bytes().startswith(b"these are my notes")


def test_db_check_on_postgres_finds_a_broken_invariant(
    postgres_url: Callable[[], str], tmp_path: Path
) -> None:
    import psycopg

    url = postgres_url()
    with treeseek.open(url, hooks=[]) as database:
        database.index(_checkout(tmp_path / "pg", 3, 200), name="t")
    ok = _cli("db", "check", "--db", url)
    assert ok.returncode == 0 and "intact" in ok.stdout
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE trees SET node_count = node_count + 7")
    broken = _cli("db", "check", "--db", url)
    assert broken.returncode == 3 and "node count" in broken.stderr


def test_db_check_of_a_postgres_server_it_cannot_reach_is_an_error_not_a_verdict() -> None:
    """A PostgreSQL server that refuses the connection (down, a wrong port) was reported as a
    damaged database (exit 3) with the advice to delete it and index again: it could not be
    checked at all (exit 1, as for a SQLite file that cannot be opened)."""
    proc = _cli("db", "check", "--db", "postgresql://someone:secret@127.0.0.1:1/treeseek")
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "cannot connect" in proc.stderr and "127.0.0.1:1" in proc.stderr
    assert "damaged" not in proc.stderr and "delete" not in proc.stderr
    assert "secret" not in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_db_check_of_a_newer_schema_is_an_error_and_never_marks_it_damaged(
    indexed: tuple[Path, Path],
) -> None:
    """A database a newer treeseek wrote (a shared one, a downgrade) was called damaged
    (exit 3), with the advice to delete it, and marked so that treeseek (the newer one too)
    refused to write into it: it cannot be checked by this version (exit 1), nothing else."""
    db, _ = indexed
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO schema_version VALUES (999, 'from the future', 'now')")
    conn.close()
    proc = _cli("db", "check", "--db", str(db))
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "newer" in proc.stderr and "999" in proc.stderr
    assert "damaged" not in proc.stderr and "delete" not in proc.stderr
    assert not Path(f"{db}-corrupt").exists()


def test_db_check_on_postgres_of_another_schema_version_is_an_error_not_damage(
    postgres_url: Callable[[], str], tmp_path: Path
) -> None:
    import psycopg

    url = postgres_url()
    with treeseek.open(url, hooks=[]) as database:
        database.index(_checkout(tmp_path / "pg", 2, 100), name="t")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_version VALUES (999, 'from the future', now()::text)")
    newer = _cli("db", "check", "--db", url)
    assert newer.returncode == 1 and "newer" in newer.stderr, newer.stderr
    assert "damaged" not in newer.stderr and "delete" not in newer.stderr
    with psycopg.connect(url, autocommit=True) as conn:
        # back to before the latest migration (its row and the future one gone)
        conn.execute(
            "DELETE FROM schema_version WHERE version >="
            " (SELECT max(version) FROM schema_version WHERE version < 999)"
        )
    older = _cli("db", "check", "--db", url)
    assert older.returncode == 1 and "db migrate" in older.stderr, older.stderr
    assert "damaged" not in older.stderr and "delete" not in older.stderr
