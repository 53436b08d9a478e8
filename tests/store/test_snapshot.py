"""SQLiteStore.snapshot: reads inside see one committed version while another thread writes."""

from __future__ import annotations

import threading
from pathlib import Path

import treeseek
from treeseek.trees.pathlist import PathListBuilder


def test_a_snapshot_does_not_see_a_commit_made_during_it(tmp_path: Path) -> None:
    db = treeseek.open(tmp_path / "s.db", hooks=[])
    try:
        db.index(PathListBuilder(["a.py"]), name="t")
        store = db.store
        snapshot = getattr(store, "snapshot")  # noqa: B009 - the SQLite store's, not the protocol's
        with snapshot():
            assert store.tree("t").file_count == 1
            writer = threading.Thread(
                target=lambda: db.index(PathListBuilder(["a.py", "b.py"]), name="t")
            )
            writer.start()
            writer.join(timeout=60)
            assert store.tree("t").file_count == 1  # still the version the snapshot began with
            with snapshot():  # reentrant
                assert [n.path for n in db.children("t")] == ["a.py"]
        assert store.tree("t").file_count == 2  # after it: the new version
    finally:
        db.close()
