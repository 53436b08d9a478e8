"""Store.snapshot: reads inside see one committed version while another thread writes (both
backends)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import treeseek
from treeseek.trees.pathlist import PathListBuilder


def test_a_snapshot_does_not_see_a_commit_made_during_it(
    db_location: Callable[[str], Any],
) -> None:
    db = treeseek.open(db_location("s"), hooks=[])
    try:
        db.index(PathListBuilder(["a.py"]), name="t")
        store = db.store
        with db.snapshot():
            assert store.tree("t").file_count == 1
            writer = threading.Thread(
                target=lambda: db.index(PathListBuilder(["a.py", "b.py"]), name="t")
            )
            writer.start()
            writer.join(timeout=60)
            assert not writer.is_alive()  # a snapshot never blocks a writer
            assert store.tree("t").file_count == 1  # still the version the snapshot began with
            with store.snapshot():  # reentrant
                assert [n.path for n in db.children("t")] == ["a.py"]
            listing = db.listing("t", "", depth=2)
            assert [n.path for n in listing.children[listing.start.id]] == ["a.py"]
        assert store.tree("t").file_count == 2  # after it: the new version
        assert [n.path for n in db.listing("t").children[db.root("t").id]] == ["a.py", "b.py"]
    finally:
        db.close()
