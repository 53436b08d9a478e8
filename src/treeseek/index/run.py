"""Indexing: turn what a builder lists into a stored tree, touching only what changed.

The same machinery serves every source (directory, path list, git commit):

1. enumerate the builder's entries (files, and directories that must exist even when empty),
   checking that every path is a clean repo-relative path;
2. for each file, reuse the stored content hash when the source's cheap signature
   (``size:mtime_ns``, a blob id) is unchanged; otherwise read the bytes, sniff for binary
   (a NUL byte in the first 8 KiB), apply the size limit, and hash (sha256 hex);
3. derive the directory nodes, ids (:func:`~treeseek.trees.model.node_id_for_path`), sibling
   order (:func:`~treeseek.trees.model.sibling_sort_key`), depth and child counts;
4. compare with the stored version and write, in ONE transaction, only the rows that changed,
   the new contents, the removals and the tree metadata; the index hooks (derived layers such as
   the code index) run inside that same transaction.

A killed indexer therefore leaves the previous version intact, and readers never see half a tree.

A NEW tree from a path list (a builder with ``listed_paths``, see :class:`PathListing`) has
nothing to read or diff, so it skips steps 2-4's per-path objects: :mod:`treeseek.trees.path_only`
turns the path strings into node columns and :meth:`TreeWriter.insert_path_only` writes them,
still in one transaction with the hooks.
"""

from __future__ import annotations

import gc
import hashlib
import importlib
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable

from treeseek.errors import BuildError, PathError, StoreError, TreeNotFound
from treeseek.store.base import Store, TreeWriter
from treeseek.text.encoding import text_as_utf8
from treeseek.trees.model import (
    ROOT_PATH,
    ContentStatus,
    Node,
    NodeType,
    TreeInfo,
    TreeSource,
    is_clean_path,
    node_id_for_path,
)
from treeseek.trees.path_only import (
    ListedPaths,
    build_path_only,
    raise_if_file_is_dir,
    raise_if_ids_collide,
    sort_siblings,
)
from treeseek.trees.source import SourceEntry, SourceWarnings, TreeBuilder

#: files larger than this keep their node but no content (ContentStatus.TOO_LARGE)
DEFAULT_MAX_FILE_BYTES = 1024 * 1024
#: how much of a file is sniffed for NUL bytes
BINARY_SNIFF_BYTES = 8192

#: index hooks every Database runs unless told otherwise: "module:callable" factories that
#: return an IndexHook (imported lazily, like cli.app.COMMAND_MODULES)
DEFAULT_HOOK_FACTORIES: tuple[str, ...] = ("treeseek.index.code_hook:default_code_hook",)


@dataclass(frozen=True, slots=True)
class ChangedFile:
    """A file whose content was added or changed in this run (as the new node says).

    A file whose content went away while its node stayed (now binary, too large or unreadable)
    is listed too, with empty ``data``: its ``node.content_status`` says why, and derived rows
    for it must be dropped.
    """

    node: Node
    data: bytes
    #: True when the tree has no previous version in this write (nothing derived to replace)
    full: bool = False


class IndexHook(Protocol):
    """A derived layer that is updated atomically with the tree it derives from."""

    def apply(
        self,
        writer: TreeWriter,
        tree: TreeInfo,
        changed: Sequence[ChangedFile],
        removed: Sequence[Node],
    ) -> None:
        """Update the derived rows of ``tree`` inside the tree's write transaction."""


@runtime_checkable
class PathListing(Protocol):
    """A builder that can hand over its paths as plain strings (the path-list builder): a
    new tree from it takes the fast path of :mod:`treeseek.trees.path_only`."""

    def listed_paths(self) -> ListedPaths: ...


@dataclass(frozen=True, slots=True)
class IndexProgress:
    """Progress of one run: ``phase`` is "scan", "read" or "write"; ``total`` None if unknown."""

    phase: str
    done: int
    total: int | None = None


ProgressCallback = Callable[[IndexProgress], None]


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What one indexing run did. Counts are of file nodes."""

    tree: TreeInfo
    added: int
    changed: int
    removed: int
    unchanged: int
    #: files without stored content, by reason (whole tree after this run)
    binary: int
    too_large: int
    unreadable: int
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0


def default_hooks() -> list[IndexHook]:
    """Instantiate the hooks listed in :data:`DEFAULT_HOOK_FACTORIES`."""
    hooks: list[IndexHook] = []
    for spec in DEFAULT_HOOK_FACTORIES:
        module_name, _, attribute = spec.partition(":")
        factory = getattr(importlib.import_module(module_name), attribute)
        hooks.append(factory())
    return hooks


def check_relative_path(path: str) -> None:
    """Raise :class:`PathError` unless ``path`` is a clean repo-relative POSIX path."""
    if not is_clean_path(path):
        raise PathError(
            f"path {path!r} is not a clean repo-relative path (no leading '/', no '.' or '..'"
            " parts, no empty parts); fix the path list"
        )


@dataclass(slots=True)
class _FileOutcome:
    size: int | None
    content_hash: str | None
    status: ContentStatus
    signature: str | None
    data: bytes | None  # bytes read this run (None: reused or unavailable)


#: the outcome of every file of a path list (shared: outcomes are never mutated)
_PATH_ONLY = _FileOutcome(None, None, ContentStatus.ABSENT, None, None)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(slots=True)
class _Layout:
    """What a source lists, shaped for building nodes: files by path, every directory (listed
    or implied, the root included), and the child names of each directory."""

    files: dict[str, SourceEntry] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=lambda: {ROOT_PATH})
    dir_names: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    file_names: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def add_dir(self, path: str) -> None:
        """Register ``path`` and its missing ancestors as directories."""
        dirs, dir_names = self.dirs, self.dir_names
        while path not in dirs:
            dirs.add(path)
            parent, _, name = path.rpartition("/")
            dir_names[parent].append(name)
            path = parent


def _collect(
    builder: TreeBuilder, warnings: SourceWarnings, progress: ProgressCallback | None
) -> _Layout:
    """Enumerate the builder once, checking every path."""
    layout = _Layout()
    files, dirs, file_names = layout.files, layout.dirs, layout.file_names
    file_type = NodeType.FILE
    clean = is_clean_path
    for count, entry in enumerate(builder.entries(warnings), 1):
        path = entry.path
        if not clean(path):
            check_relative_path(path)  # raises with the full explanation
        if entry.type is file_type:
            if path not in files:
                parent, _, name = path.rpartition("/")
                file_names[parent].append(name)
                if parent not in dirs:
                    layout.add_dir(parent)
            files[path] = entry
        else:
            layout.add_dir(path)
        if progress is not None and count % 5000 == 0:
            progress(IndexProgress("scan", count))
    raise_if_file_is_dir(dirs, files)
    return layout


def _decide(
    entry: SourceEntry,
    old: Node | None,
    old_signature: str | None,
    max_file_bytes: int,
    warnings: SourceWarnings,
) -> _FileOutcome:
    """Reuse the stored state when the signature is unchanged, else read, sniff and hash."""
    if entry.problem is not None:
        warnings.add(f"{entry.path}: {entry.problem}")
        return _FileOutcome(entry.size, None, ContentStatus.UNREADABLE, None, None)
    if entry.read is None:
        return _FileOutcome(entry.size, None, ContentStatus.ABSENT, entry.signature, None)
    if (
        old is not None
        and entry.signature is not None
        and old_signature == entry.signature
        and _still_valid(old, max_file_bytes)
    ):
        return _FileOutcome(old.size, old.content_hash, old.content_status, entry.signature, None)
    if entry.size is not None and entry.size > max_file_bytes:
        return _FileOutcome(entry.size, None, ContentStatus.TOO_LARGE, entry.signature, None)
    try:
        data = entry.read()
    except OSError as exc:
        warnings.add(f"{entry.path}: cannot read ({exc.strerror or exc}); kept without content")
        return _FileOutcome(entry.size, None, ContentStatus.UNREADABLE, None, None)
    size = len(data)
    if size > max_file_bytes:
        return _FileOutcome(size, None, ContentStatus.TOO_LARGE, entry.signature, None)
    data = text_as_utf8(data) or data  # UTF-16/32 (with its mark) or cp1252 text: as UTF-8
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return _FileOutcome(size, None, ContentStatus.BINARY, entry.signature, None)
    return _FileOutcome(size, _sha256(data), ContentStatus.STORED, entry.signature, data)


def _still_valid(old: Node, max_file_bytes: int) -> bool:
    """Whether a stored decision still holds under the current size limit."""
    size = old.size or 0
    if old.content_status is ContentStatus.STORED:
        return size <= max_file_bytes
    if old.content_status is ContentStatus.TOO_LARGE:
        return size > max_file_bytes
    return old.content_status in (ContentStatus.BINARY, ContentStatus.ABSENT)


_NODE_SETTERS = tuple(
    getattr(Node, name).__set__
    for name in (
        "id",
        "path",
        "type",
        "parent_id",
        "depth",
        "order",
        "child_count",
        "size",
        "content_hash",
        "content_status",
    )
)


def _make_node(
    node_id: str,
    path: str,
    node_type: NodeType,
    parent_id: str | None,
    depth: int,
    order: int,
    child_count: int,
    size: int | None,
    content_hash: str | None,
    status: ContentStatus,
) -> Node:
    """``Node(...)`` without the frozen dataclass's per-field ``object.__setattr__`` calls.

    Twice as fast, which matters at 200k+ nodes; the result is an ordinary, equal Node (a test
    compares it with the constructor's).
    """
    node: Node = object.__new__(Node)
    s_id, s_path, s_type, s_parent, s_depth, s_order, s_count, s_size, s_hash, s_status = (
        _NODE_SETTERS
    )
    s_id(node, node_id)
    s_path(node, path)
    s_type(node, node_type)
    s_parent(node, parent_id)
    s_depth(node, depth)
    s_order(node, order)
    s_count(node, child_count)
    s_size(node, size)
    s_hash(node, content_hash)
    s_status(node, status)
    return node


def _build_nodes(layout: _Layout, outcomes: dict[str, _FileOutcome]) -> tuple[list[Node], int]:
    """Every node of the tree, depth-first in sibling order, and the maximum depth."""
    directory, file, no_content = NodeType.DIRECTORY, NodeType.FILE, ContentStatus.NONE
    dir_names, file_names = layout.dir_names, layout.file_names
    make, node_id = _make_node, node_id_for_path
    empty: list[str] = []
    root_id = node_id(ROOT_PATH)
    nodes = [
        make(
            root_id,
            ROOT_PATH,
            directory,
            None,
            0,
            0,
            len(dir_names.get(ROOT_PATH, empty)) + len(file_names.get(ROOT_PATH, empty)),
            None,
            None,
            no_content,
        )
    ]
    max_depth = 0
    stack: list[tuple[str, str, int]] = [(ROOT_PATH, root_id, 0)]
    while stack:
        parent, parent_id, parent_depth = stack.pop()
        prefix = parent + "/" if parent else ""
        depth = parent_depth + 1
        position = 0
        subdirs = dir_names.get(parent)
        if subdirs:
            for name in sort_siblings(subdirs):
                path = prefix + name
                nid = node_id(path)
                count = len(dir_names.get(path, empty)) + len(file_names.get(path, empty))
                nodes.append(
                    make(
                        nid,
                        path,
                        directory,
                        parent_id,
                        depth,
                        position,
                        count,
                        None,
                        None,
                        no_content,
                    )
                )
                stack.append((path, nid, depth))
                position += 1
        children = file_names.get(parent)
        if children:
            for name in sort_siblings(children):
                path = prefix + name
                outcome = outcomes[path]
                nodes.append(
                    make(
                        node_id(path),
                        path,
                        file,
                        parent_id,
                        depth,
                        position,
                        0,
                        outcome.size,
                        outcome.content_hash,
                        outcome.status,
                    )
                )
                position += 1
        if position and depth > max_depth:
            max_depth = depth
    raise_if_ids_collide([n.path for n in nodes], [n.id for n in nodes])
    return nodes, max_depth


def _check_not_rewritten(store: Store, name: str, seen: TreeInfo | None) -> None:
    """Inside the write lock: the tree must still be the version the diff was made against
    (another indexer may have written it meanwhile; the diff would then be wrong)."""
    now = store.tree(name)
    fresh = now.node_count == 0 and now.built_at == now.updated_at and seen is None
    if (seen is None and not fresh) or (seen is not None and now.updated_at != seen.updated_at):
        raise StoreError(
            f"tree {name!r} was written by another indexer while this one was reading; run"
            " the index command again"
        )


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector around a bulk step that allocates several hundred
    thousand acyclic containers (lists, row tuples): its passes over the growing heap cost
    5-10% of the step and can free nothing there."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _index_new_path_list(
    store: Store,
    name: str,
    builder: TreeBuilder,
    listed: ListedPaths,
    hooks: Sequence[IndexHook],
    progress: ProgressCallback | None,
    started: float,
) -> IndexReport:
    """A new tree from a path list: every node is new and has no content, so there is
    nothing to read or diff; nodes go from path strings to the store as columns."""
    if progress is not None:
        progress(IndexProgress("scan", len(listed.files)))
    with _gc_paused():
        tree = build_path_only(listed)
    now = datetime.now(UTC)
    info = TreeInfo(
        name=name,
        source=builder.source,
        root=builder.root,
        node_count=tree.file_count + tree.dir_count,
        file_count=tree.file_count,
        dir_count=tree.dir_count,
        max_depth=tree.max_depth,
        built_at=now,
        updated_at=now,
    )
    if progress is not None:
        progress(IndexProgress("write", 0, info.node_count))
    with store.write_tree(name) as writer:
        _check_not_rewritten(store, name, None)
        with _gc_paused():
            writer.insert_path_only(tree.nodes)
        writer.set_info(info)
        for hook in hooks:
            hook.apply(writer, info, [], [])
    if progress is not None:
        progress(IndexProgress("write", info.node_count, info.node_count))
    return IndexReport(
        tree=store.tree(name),
        added=info.file_count,
        changed=0,
        removed=0,
        unchanged=0,
        binary=0,
        too_large=0,
        unreadable=0,
        seconds=time.perf_counter() - started,
    )


def index_tree(
    store: Store,
    name: str,
    builder: TreeBuilder,
    *,
    base: str | None = None,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    hooks: Iterable[IndexHook] = (),
    progress: ProgressCallback | None = None,
) -> IndexReport:
    """Build or update tree ``name`` from ``builder`` in one atomic write.

    ``base``: when tree ``name`` does not exist yet, start from a copy of tree ``base`` and
    apply only the differences (how a git commit reuses the nearest commit already indexed).
    It is ignored when ``name`` already exists.
    """
    started = time.perf_counter()
    if not name or name != name.strip():
        raise BuildError(f"invalid tree name {name!r}: use a non-empty name without outer spaces")
    if max_file_bytes < 0:
        raise BuildError(f"max_file_bytes must be >= 0, got {max_file_bytes}")
    if (
        builder.source is not TreeSource.DOCUMENT
        and store.has_tree(name)
        and store.tree(name).source is TreeSource.DOCUMENT
    ):
        raise BuildError(
            f"tree {name!r} exists and is a document tree; pick another --name (or"
            f" `treeseek rm {name}` first to replace it)"
        )
    hook_list = list(hooks)
    if base is None and isinstance(builder, PathListing) and not store.has_tree(name):
        listed = builder.listed_paths()
        return _index_new_path_list(store, name, builder, listed, hook_list, progress, started)
    warnings = SourceWarnings()
    # the version is the source as listed from now on: a file created in a directory after
    # the listing (while files are read) must make the directory newer than the version, so
    # freshness calls the tree stale (the commit's time, after the reads, hid it)
    listed_at = datetime.now(UTC)
    layout = _collect(builder, warnings, progress)
    files, dirs = layout.files, layout.dirs

    exists = store.has_tree(name)
    previous: str | None = name if exists else None
    copy_base = False
    if not exists and base is not None:
        if not store.has_tree(base):
            raise TreeNotFound(base)
        previous, copy_base = base, True
    old_nodes: dict[str, Node] = {}
    old_signatures: dict[str, str] = {}
    old_info: TreeInfo | None = None
    if previous is not None:
        old_info = store.tree(previous)
        old_nodes = {n.path: n for n in store.subtree(previous)}
        old_signatures = {
            path: state.signature for path, state in store.file_states(previous).items()
        }

    outcomes: dict[str, _FileOutcome] = {}
    total = len(files)
    for done, (path, entry) in enumerate(files.items(), 1):
        if entry.read is None and entry.problem is None and entry.size is None:
            outcomes[path] = _PATH_ONLY  # path lists: nothing to read or compare
            continue
        old = old_nodes.get(path)
        old_file = old if old is not None and old.is_file else None
        outcomes[path] = _decide(
            entry, old_file, old_signatures.get(path), max_file_bytes, warnings
        )
        if progress is not None and (done % 200 == 0 or done == total):
            progress(IndexProgress("read", done, total))

    nodes, max_depth = _build_nodes(layout, outcomes)

    to_write: list[Node] = []
    signatures: dict[str, str] = {}
    changed_files: list[ChangedFile] = []
    added = changed = unchanged = 0
    binary = too_large = unreadable = 0
    full = previous is None
    new_contents: dict[str, bytes] = {}
    file_type = NodeType.FILE
    path_only_build = not old_nodes and all(o is _PATH_ONLY for o in outcomes.values())
    if path_only_build:  # new path-only tree (not a PathListing): nothing to read or diff
        to_write, added = nodes, len(outcomes)
    for node in () if path_only_build else nodes:
        old = old_nodes.get(node.path)
        if node.type is not file_type:
            if old != node:
                to_write.append(node)
            continue
        outcome = outcomes[node.path]
        status = node.content_status
        if status is not ContentStatus.STORED and status is not ContentStatus.ABSENT:
            binary += status is ContentStatus.BINARY
            too_large += status is ContentStatus.TOO_LARGE
            unreadable += status is ContentStatus.UNREADABLE
        if outcome.signature is not None:
            signatures[node.id] = outcome.signature
        if old is None:
            added += 1
        elif old == node and old_signatures.get(node.path, "") == (outcome.signature or ""):
            unchanged += 1
            continue
        elif old.type is not file_type:
            added += 1
        elif old.content_hash != node.content_hash or old.content_status is not status:
            changed += 1
        else:
            unchanged += 1  # only metadata (signature, order) moved
        to_write.append(node)
        if outcome.data is not None and (old is None or old.content_hash != node.content_hash):
            new_contents[node.content_hash or ""] = outcome.data
            changed_files.append(ChangedFile(node, outcome.data, full))
        elif old is not None and old.content_hash is not None and node.content_hash is None:
            changed_files.append(ChangedFile(node, b"", full))

    removed_nodes: list[Node] = []
    if old_nodes:
        new_paths = {n.path for n in nodes}
        removed_nodes = [n for path, n in old_nodes.items() if path not in new_paths]
    removed = sum(1 for n in removed_nodes if n.is_file)

    now = listed_at
    info = TreeInfo(
        name=name,
        source=builder.source,
        root=builder.root,
        node_count=len(nodes),
        file_count=len(files),
        dir_count=len(dirs),
        max_depth=max_depth,
        built_at=old_info.built_at if exists and old_info is not None else now,
        updated_at=now,
    )
    if progress is not None:
        progress(IndexProgress("write", 0, len(to_write)))
    with store.write_tree(name) as writer:
        _check_not_rewritten(store, name, old_info if exists else None)
        if copy_base and previous is not None:
            writer.copy_from(previous)
        writer.put_contents(new_contents.items())
        writer.delete_nodes(n.id for n in removed_nodes)
        writer.upsert_nodes(to_write, signatures)
        writer.set_info(info)
        for hook in hook_list:
            hook.apply(writer, info, changed_files, removed_nodes)
    if progress is not None:
        progress(IndexProgress("write", len(to_write), len(to_write)))
    return IndexReport(
        tree=store.tree(name),
        added=added,
        changed=changed,
        removed=removed,
        unchanged=unchanged,
        binary=binary,
        too_large=too_large,
        unreadable=unreadable,
        warnings=list(warnings.messages),
        seconds=time.perf_counter() - started,
    )
