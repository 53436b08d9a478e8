"""The Store protocol: everything persistent goes through it.

No SQL lives outside ``treeseek.store``. A store holds several trees; each tree's nodes, plus
file contents shared by all trees (compressed, keyed by content hash, so identical files are
stored once). Writes happen inside a :class:`TreeWriter` transaction: readers in other threads
or processes keep seeing the previous version of the tree until the writer commits, and a
writer that is interrupted (exception, kill) leaves the previous version intact.

Reads that belong together (one query, one listing) run inside :meth:`Store.snapshot`: every
read in the block sees one committed version, whole, while writers go on committing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from treeseek.store.check import StoreCheck
from treeseek.store.code_base import CodeStore, CodeWriter
from treeseek.store.jobs import JobBoard
from treeseek.trees.model import Node, PathOnlyNodes, TreeInfo


@dataclass(frozen=True, slots=True)
class FileState:
    """What the incremental indexer needs to know about a stored file to skip it.

    ``signature`` is the cheap change detector of the source: ``"size:mtime_ns"`` for a
    directory on disk, the blob id for a git tree. Equal signature means unchanged; otherwise
    the content hash decides.
    """

    node_id: str
    path: str
    signature: str
    content_hash: str | None


@runtime_checkable
class TreeWriter(Protocol):
    """One atomic write of one tree. Obtained from :meth:`Store.write_tree`."""

    def put_contents(self, items: Iterable[tuple[str, bytes]]) -> None:
        """Store (content_hash, raw bytes) pairs; already-stored hashes are skipped."""

    def upsert_nodes(self, nodes: Iterable[Node], signatures: Mapping[str, str]) -> None:
        """Insert or replace nodes; ``signatures`` maps file node id -> source signature."""

    def insert_path_only(self, nodes: PathOnlyNodes) -> None:
        """Insert every node of a path-only tree into this tree, which must have no nodes yet
        (a new tree; raises :class:`~treeseek.errors.StoreError` otherwise). Stores the same
        rows as :meth:`upsert_nodes` with the equivalent :class:`Node` objects."""

    def delete_nodes(self, node_ids: Iterable[str]) -> None:
        """Remove nodes (and anything attached to them) by id."""

    def set_info(self, info: TreeInfo) -> None:
        """Record the tree's metadata (counts, depth, times)."""

    def copy_from(self, source: str) -> None:
        """Replace this tree's nodes and derived rows by a copy of tree ``source``'s, inside
        this write (so "copy a base, then apply the differences" is one atomic step)."""

    def code(self) -> CodeWriter:
        """The code layers' writes (and reads) inside this write: rows commit or roll back
        with the tree."""


@runtime_checkable
class Store(Protocol):
    """Persistent trees and contents. SQLite is the embedded default."""

    # -- trees ---------------------------------------------------------------------------
    def trees(self) -> list[TreeInfo]: ...

    def tree(self, name: str) -> TreeInfo:
        """Metadata of one tree; raises :class:`~treeseek.errors.TreeNotFound`."""

    def has_tree(self, name: str) -> bool: ...

    def delete_tree(self, name: str) -> None:
        """Remove a tree, its nodes, its derived rows and contents no other tree uses."""

    def copy_tree(self, source: str, target: str) -> None:
        """Duplicate a tree under a new name (contents are shared, not copied)."""

    def write_tree(self, name: str) -> AbstractContextManager[TreeWriter]:
        """Open an atomic write of tree ``name`` (created if missing)."""

    def snapshot(self) -> AbstractContextManager[None]:
        """Every read of the calling thread inside the block sees one committed version of the
        whole store (one read transaction), whatever writers commit meanwhile. Reentrant; a
        snapshot opened inside a write of the same thread reads the write's own rows. Do not
        write inside a snapshot."""

    # -- nodes ---------------------------------------------------------------------------
    def root(self, tree: str) -> Node: ...

    def node(self, tree: str, node_id: str) -> Node:
        """One node; raises :class:`~treeseek.errors.NodeNotFound`."""

    def nodes(self, tree: str, node_ids: Sequence[str]) -> list[Node]:
        """Batched multi-get, in the order asked; unknown ids are skipped."""

    def node_by_path(self, tree: str, path: str) -> Node | None: ...

    def nodes_by_paths(self, tree: str, paths: Sequence[str]) -> dict[str, Node]: ...

    def children(self, tree: str, node_id: str) -> list[Node]:
        """Direct children in stored sibling order."""

    def children_many(self, tree: str, node_ids: Sequence[str]) -> dict[str, list[Node]]: ...

    def subtree(self, tree: str, path: str = "") -> Iterator[Node]:
        """All nodes under ``path`` (inclusive), by a materialized-path range read."""

    def file_nodes(self, tree: str) -> list[Node]:
        """The tree's file nodes, in path order: :meth:`subtree`'s files, without reading
        the directories."""

    def file_states(self, tree: str) -> dict[str, FileState]:
        """path -> FileState for every file node (for incremental indexing)."""

    def file_signatures(self, tree: str) -> dict[str, str]:
        """path -> signature ("" when not recorded) of every file node, in the order of
        :meth:`file_states`: what a freshness check compares with the disk, without an
        object per file."""

    def directory_paths(self, tree: str) -> list[str]:
        """The paths of the tree's directories ("" for the root), in path order (those of
        :meth:`subtree`), without a node per directory."""

    # -- contents ------------------------------------------------------------------------
    def content(self, tree: str, node_id: str) -> bytes | None:
        """The stored bytes of a file node, or None when the node has no content."""

    def contents(self, hashes: Sequence[str]) -> dict[str, bytes]: ...

    # -- derived layers ------------------------------------------------------------------
    def code(self) -> CodeStore:
        """The code layers (C0-C3, term counts, vectors) of the contents of every tree."""

    def jobs(self) -> JobBoard | None:
        """Index jobs' status shared by every process serving this database (PostgreSQL), or
        None where one process serves it (SQLite: its jobs live in that process)."""

    # -- lifecycle -----------------------------------------------------------------------
    #: why the store is open for reading only (a read-only file, directory or mount), or None
    read_only: str | None

    def check(self, *, full: bool = False) -> StoreCheck:
        """Whether the database is intact (``treeseek db check``; ``full``: the slow, complete
        check where the backend has one)."""

    def local_files(self) -> list[Path]:
        """The local files holding this store (an indexer must not index them); empty for a
        store that is not on this machine's disk."""

    def close(self) -> None: ...
