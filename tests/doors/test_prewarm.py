"""The prewarmer: a server builds a changed tree's tables before the next question asks."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from doors_helpers import TOKEN, live

import treeseek
from treeseek.database import Database
from treeseek.search.caches import tree_key
from treeseek.search.flat.flat import TREE_FILES
from treeseek.server.app import create_app
from treeseek.service import Jobs, Service
from treeseek.service.core import LAYOUT
from treeseek.service.prewarm import Prewarmer

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def is_warm(db: Database, tree: str) -> bool:
    """Whether ``db`` holds the built tables of ``tree``'s current version."""
    files = db.caches.peek(TREE_FILES, db.tree(tree))
    return files is not None and files.chunk_index is not None and files.catalog is not None


def edit_and_reindex(db_path: Path, project: Path) -> None:
    """Another process's re-index (``treeseek watch``, say): its own database handle."""
    service_py = project / "app" / "service.py"
    service_py.write_text(service_py.read_text() + f"\n# edited {time.time_ns()}\n")
    with treeseek.open(db_path) as other:
        other.index(project, name="demo")


def wait_until_warm(db: Database, tree: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not is_warm(db, tree):
        assert time.monotonic() < deadline, f"{tree} was not warmed within {seconds} s"
        time.sleep(0.05)


def test_check_warms_a_tree_that_changed(db_path: Path, project: Path) -> None:
    with treeseek.open(db_path) as db:
        prewarmer = Prewarmer(db)
        prewarmer.note("demo")
        assert prewarmer.check() == ["demo"]  # the version it had not seen warm yet
        assert prewarmer.check() == []  # unchanged
        before = tree_key(db.tree("demo"))
        edit_and_reindex(db_path, project)
        assert tree_key(db.tree("demo")) != before
        assert not is_warm(db, "demo")
        assert prewarmer.check() == ["demo"]
        assert is_warm(db, "demo")
        assert prewarmer.check() == []


def test_only_trees_asked_for_are_watched_and_a_deleted_one_is_dropped(
    db_path: Path, project: Path
) -> None:
    with treeseek.open(db_path) as db:
        db.index(project, name="other")
        prewarmer = Prewarmer(db, max_trees=1)
        assert prewarmer.check() == []  # nothing asked yet: nothing warmed
        prewarmer.note("demo")
        prewarmer.note("other")  # the most recent max_trees are watched
        assert prewarmer.watched() == ["other"]
        assert prewarmer.check() == ["other"]
        assert not is_warm(db, "demo")
        db.delete("other")
        assert prewarmer.check() == []
        assert prewarmer.watched() == []


def test_the_thread_warms_after_another_process_reindexes(db_path: Path, project: Path) -> None:
    with treeseek.open(db_path) as db:
        service = Service(db, prewarm=True, prewarm_interval=0.05)
        prewarmer = service.prewarmer
        assert prewarmer is not None
        try:
            service.query("demo", "UserService get_user")  # notes the tree
            assert prewarmer.watched() == ["demo"]
            edit_and_reindex(db_path, project)
            wait_until_warm(db, "demo")
            # the service's warm-up also keeps the new version's layout for freshness checks
            assert db.caches.peek(LAYOUT, db.tree("demo")) is not None
        finally:
            service.close()
        assert prewarmer._thread is not None and not prewarmer._thread.is_alive()


def test_a_server_answers_the_same_after_it_warmed(db_path: Path, project: Path) -> None:
    """A real HTTP server with its prewarmer: a re-index from another process is warmed in
    the background, and the next answer is the one a cold server gives."""
    with treeseek.open(db_path) as db:
        service = Service(db, freshness_ttl=0, prewarm=True, prewarm_interval=0.05)
        jobs = Jobs(service)
        question = {"question": "where does the user service normalize a user's name", "k": 3}
        try:
            with (
                live(create_app(service, token=TOKEN, jobs=jobs)) as url,
                httpx.Client(base_url=url, headers=AUTH, timeout=60) as client,
            ):
                assert client.post("/v1/trees/demo/query", json=question).status_code == 200
                edit_and_reindex(db_path, project)
                wait_until_warm(db, "demo")
                answer = client.post("/v1/trees/demo/query", json=question).json()
        finally:
            service.close()
            jobs.close()
    with treeseek.open(db_path) as cold:
        expected = Service(cold, freshness_ttl=0).query("demo", question["question"], k=3)

    def ranked(files: list[dict[str, Any]]) -> list[tuple[str, float, Any]]:
        return [(f["path"], f["score"], f["evidence"]) for f in files]

    assert ranked(answer["files"]) == ranked(expected["files"])
    assert answer["freshness"]["stale"] is False


def test_a_failing_warm_up_is_logged_once_and_does_not_stop_the_others(
    db_path: Path, project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with treeseek.open(db_path) as db:
        db.index(project, name="other")

        def warm(tree: str) -> bool:
            if tree == "demo":
                raise RuntimeError("disk on fire\x1b[31m")
            return db.warm(tree)

        prewarmer = Prewarmer(db, warm=warm)
        prewarmer.note("demo")
        prewarmer.note("other")
        with caplog.at_level("WARNING", logger="treeseek.service.prewarm"):
            assert prewarmer.check() == ["other"]
            assert prewarmer.check() == []  # demo is not logged again
    failures = [r for r in caplog.records if "disk on fire" in r.getMessage()]
    assert len(failures) == 1
    assert "\x1b" not in failures[0].getMessage()  # shown escaped (%r)


def test_freshness_uses_the_versions_layout_and_still_sees_changes(
    db_path: Path, project: Path
) -> None:
    """The stored layout is kept per version; a change on disk is still seen (the stat
    calls are not cached), and a re-index brings a new layout."""
    with treeseek.open(db_path) as db:
        service = Service(db, freshness_ttl=0)
        assert service.freshness("demo").stale is False
        first = db.caches.peek(LAYOUT, db.tree("demo"))
        assert first is not None and "app/service.py" in first.files
        (project / "app" / "service.py").write_text("changed\n")
        (project / "app" / "new.py").write_text("x = 1\n")
        fresh = service.freshness("demo")
        assert fresh.stale is True and fresh.changed == 1 and fresh.dirs_changed == 1
        db.index(project, name="demo")
        assert service.freshness("demo").stale is False
        second = db.caches.peek(LAYOUT, db.tree("demo"))
        assert second is not None and "app/new.py" in second.files


def test_a_git_tree_keeps_no_layout(tmp_path: Path, project: Path) -> None:
    """A git tree is a commit (never stale): its freshness reads no stored layout."""
    import subprocess

    repo = tmp_path / "g"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.py").write_text("def f():\n    return 1\n")
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
    with treeseek.open(tmp_path / "git.db") as db:
        db.index(repo, name="g", rev="HEAD")
        service = Service(db, freshness_ttl=0)
        assert service.freshness("g").stale is False
        service.warm("g")
        assert db.caches.peek(LAYOUT, db.tree("g")) is None


def test_a_failed_warm_up_is_tried_again_after_a_growing_wait_or_for_a_new_version(
    db_path: Path, project: Path
) -> None:
    """A warm-up that fails was tried again at every poll (every second), so one that kept
    failing rebuilt a large tree's tables for ever; now the same version waits interval * 2,
    4, 8 ... (up to MAX_RETRY_S) between tries, and a new version is tried at once."""
    now = [0.0]
    tries: list[str] = []
    with treeseek.open(db_path) as db:

        def warm(tree: str) -> bool:
            tries.append(tree)
            if len(tries) < 4:
                raise RuntimeError("out of memory")
            return db.warm(tree)

        prewarmer = Prewarmer(db, warm=warm, interval=1.0, clock=lambda: now[0])
        prewarmer.note("demo")
        assert prewarmer.check() == [] and len(tries) == 1
        for _ in range(5):
            assert prewarmer.check() == []  # at once again: not tried
        assert len(tries) == 1
        now[0] = 2.0  # interval * 2 after the first failure
        assert prewarmer.check() == [] and len(tries) == 2
        now[0] = 5.0  # the next wait is 4 s: not yet
        assert prewarmer.check() == [] and len(tries) == 2
        edit_and_reindex(db_path, project)  # a new version: tried at once
        assert prewarmer.check() == [] and len(tries) == 3
        assert prewarmer.check() == [] and len(tries) == 3
        now[0] = 7.0
        assert prewarmer.check() == ["demo"] and len(tries) == 4
        assert is_warm(db, "demo")
        assert prewarmer.check() == [] and len(tries) == 4
