"""Per-tree caches of one database: keyed by slot and tree version, bounded, droppable."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from treeseek.search.caches import Slot, TreeCaches
from treeseek.trees.model import TreeInfo, TreeSource

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _tree(name: str, minutes: int = 0) -> TreeInfo:
    when = NOW + timedelta(minutes=minutes)
    return TreeInfo(name, TreeSource.FILESYSTEM, "/r/" + name, 1, 1, 0, 0, when, when)


def test_an_entry_is_built_once_per_tree_version() -> None:
    caches, slot = TreeCaches(), Slot[list[int]]("test.slot")
    built: list[str] = []

    def build(tag: str) -> list[int]:
        built.append(tag)
        return [len(built)]

    first = caches.get(slot, _tree("a"), lambda: build("a1"))
    assert caches.get(slot, _tree("a"), lambda: build("again")) is first
    newer = _tree("a", minutes=1)  # re-indexed: a new version replaces the old entry
    assert caches.get(slot, newer, lambda: build("a2")) == [2]
    assert caches.peek(slot, _tree("a")) is None and caches.entries() == 1
    assert built == ["a1", "a2"]


def test_slots_keep_their_own_number_of_trees_and_drop_by_name() -> None:
    caches = TreeCaches()
    small, other = Slot[int]("test.small", trees=2), Slot[int]("test.other")
    for i, name in enumerate("abc"):
        caches.get(small, _tree(name), lambda i=i: i)
        caches.get(other, _tree(name), lambda i=i: i)
    assert caches.peek(small, _tree("a")) is None  # least recently used, past the bound
    assert caches.peek(small, _tree("c")) == 2 and caches.peek(other, _tree("a")) == 0
    caches.drop("c")
    assert caches.peek(small, _tree("c")) is None and caches.peek(other, _tree("c")) is None
    assert caches.entries() == 3
    caches.clear()
    assert caches.entries() == 0


def test_trees_of_the_same_name_in_two_caches_never_meet() -> None:
    slot = Slot[str]("test.name")
    one, two = TreeCaches(), TreeCaches()
    tree = _tree("repo")
    assert one.get(slot, tree, lambda: "one") == "one"
    assert two.get(slot, replace(tree), lambda: "two") == "two"


def test_builds_run_outside_the_lock_once_per_entry_and_old_versions_do_not_evict() -> None:
    import threading

    caches, slot = TreeCaches(), Slot[str]("test.flight")
    started, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def slow() -> str:
        calls.append("a")
        started.set()
        release.wait(30)
        return "a"

    results: list[str] = []
    askers = [
        threading.Thread(target=lambda: results.append(caches.get(slot, _tree("a"), slow)))
        for _ in range(4)
    ]
    for t in askers:
        t.start()
    assert started.wait(30)
    # another tree is served while "a" builds: the cache's lock is not held by the build
    assert caches.get(slot, _tree("b"), lambda: "b") == "b"
    release.set()
    for t in askers:
        t.join(30)
    assert results == ["a"] * 4 and calls == ["a"]  # one build for every asker
    newer = _tree("a", minutes=1)
    assert caches.get(slot, newer, lambda: "a2") == "a2"
    # a query still on the old version gets its value, uncached; the newer entry stays
    assert caches.get(slot, _tree("a"), lambda: "a1 again") == "a1 again"
    assert caches.peek(slot, newer) == "a2" and caches.peek(slot, _tree("a")) is None
