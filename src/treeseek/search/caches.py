"""Per-tree caches of one database: what retrievers derive from a tree and keep across queries.

A retriever's tables (a tree's files, its BM25 indexes, its code graph) cost more to build than
a warm query, so they are kept, but never per process: a :class:`TreeCaches` belongs to one
:class:`~treeseek.database.Database`, reaches retrievers through the
:class:`~treeseek.search.base.SearchContext`, and is cleared when the database closes. Two
databases in one process never share an entry, even for trees of the same name.

Entries are keyed by a :class:`Slot` (what is cached, with how many trees it keeps) and by the
tree's identity and version (name, root and last update), so re-indexing a tree makes its
entries stale: they are dropped when the new version is cached.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

from treeseek.trees.model import TreeInfo

T = TypeVar("T")

#: trees whose entries one slot keeps unless the slot says otherwise
DEFAULT_TREES = 8


@dataclass(frozen=True)  # no slots: ``Slot[int](...)`` sets ``__orig_class__``
class Slot(Generic[T]):
    """What is cached per tree: a name, and how many trees' entries are kept (least recently
    used first out). Declared once at module level by the code that builds the entries; it
    holds no state."""

    name: str
    trees: int = DEFAULT_TREES


def tree_key(tree: TreeInfo) -> tuple[str, str, str]:
    """A tree's identity and version: re-indexing changes ``updated_at``."""
    return (tree.name, tree.root, tree.updated_at.isoformat())


class TreeCaches:
    """Per-tree cache entries of one database, by slot (thread-safe)."""

    def __init__(self) -> None:
        self._slots: dict[str, OrderedDict[tuple[str, str, str], object]] = {}
        self._lock = threading.RLock()
        #: one lock per entry being built: concurrent askers of one entry wait for one build
        #: (single flight), while every other entry stays readable and buildable meanwhile
        self._building: dict[tuple[str, tuple[str, str, str]], threading.Lock] = {}

    def get(self, slot: Slot[T], tree: TreeInfo, build: Callable[[], T]) -> T:
        """The entry of ``slot`` for ``tree``, built by ``build()`` on first use.

        The build runs outside the cache's lock (one build per entry at a time). A newer
        version of the tree replaces older entries; an older version asked for while a newer
        one is cached (a query that started before a re-index committed) is built and
        returned but not kept, so the two versions never evict each other in turn.
        """
        key = tree_key(tree)
        with self._lock:
            entries = self._slots.setdefault(slot.name, OrderedDict())
            if key in entries:
                entries.move_to_end(key)
                return cast(T, entries[key])
            building = self._building.setdefault((slot.name, key), threading.Lock())
        with building:
            with self._lock:
                if key in entries:  # built by another thread meanwhile
                    entries.move_to_end(key)
                    return cast(T, entries[key])
            try:
                value = build()
            finally:
                with self._lock:
                    self._building.pop((slot.name, key), None)
            with self._lock:
                same = [k for k in entries if k[0] == key[0]]
                if any(k[2] > key[2] for k in same):
                    return value  # a newer version is cached: serve this one uncached
                for old in same:  # older versions of the tree
                    del entries[old]
                entries[key] = value
                while len(entries) > max(1, slot.trees):
                    entries.popitem(last=False)
                return value

    def peek(self, slot: Slot[T], tree: TreeInfo) -> T | None:
        """The entry of ``slot`` for ``tree`` if one is cached (never builds)."""
        with self._lock:
            entries = self._slots.get(slot.name)
            found = None if entries is None else entries.get(tree_key(tree))
            return None if found is None else cast(T, found)

    def drop(self, name: str) -> None:
        """Drop every entry of the tree named ``name`` (re-indexed or deleted)."""
        with self._lock:
            for entries in self._slots.values():
                for key in [k for k in entries if k[0] == name]:
                    del entries[key]

    def entries(self) -> int:
        """How many entries are cached (all slots)."""
        with self._lock:
            return sum(len(e) for e in self._slots.values())

    def clear(self) -> None:
        """Drop every entry (the database closed)."""
        with self._lock:
            self._slots.clear()


__all__ = ["DEFAULT_TREES", "Slot", "TreeCaches", "tree_key"]
