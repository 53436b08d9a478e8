"""Persistence: the Store protocol (:mod:`.base`) and the embedded SQLite store (:mod:`.sqlite`)."""

from treeseek.store.base import FileState, Store, TreeWriter
from treeseek.store.sqlite import SQLiteStore, SQLiteTreeWriter

__all__ = ["FileState", "SQLiteStore", "SQLiteTreeWriter", "Store", "TreeWriter"]
