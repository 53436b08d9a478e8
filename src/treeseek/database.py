"""The Python API: :func:`treeseek.open` returns a :class:`Database`.

A database holds several named trees. Index a directory (git-aware), a path list, or any
:class:`~treeseek.trees.source.TreeBuilder`; read nodes, children and contents back; query.

    import treeseek
    with treeseek.open("repo.db") as db:
        report = db.index("path/to/checkout", name="myrepo")
        for child in db.children("myrepo", ""):
            print(child.path, child.type)
        print(db.text("myrepo", "README.md"))
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treeseek._closing import Closing
from treeseek.config import resolve_db_path
from treeseek.errors import BuildError, ConfigError, NodeNotFound, PathError, StoreError
from treeseek.index.run import (
    DEFAULT_MAX_FILE_BYTES,
    IndexHook,
    IndexReport,
    ProgressCallback,
    default_hooks,
    index_tree,
)
from treeseek.search.caches import TreeCaches
from treeseek.store import Store, open_store
from treeseek.trees.model import ROOT_PATH, Node, TreeInfo
from treeseek.trees.source import TreeBuilder

if TYPE_CHECKING:
    from treeseek.llm.base import Navigator
    from treeseek.search.base import Result

NodeRef = str | Node
#: the shape of :func:`~treeseek.trees.model.node_id_for_path` ids
_LOOKS_LIKE_ID = re.compile(r"[a-z2-7]{10}")


def check_tree_name(name: object) -> str:
    """A tree name as the API takes it: a string of valid Unicode (ConfigError otherwise)."""
    if not isinstance(name, str):
        raise ConfigError(f"a tree name is a string, got {type(name).__name__} {name!r:.80}")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(
            f"tree name {name!r:.80} is not valid Unicode (it has a lone surrogate)"
        ) from None
    return name


def check_path_text(path: object, what: str = "path") -> str:
    """A path as the API takes it: a string that is a file name's text (the bytes of a
    non-UTF-8 name as ``os.fsdecode`` gives them are fine; other lone surrogates, NULs and
    non-strings are a PathError)."""
    if not isinstance(path, str):
        raise PathError(f"a {what} is a string, got {type(path).__name__} {path!r:.80}")
    try:
        path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise PathError(
            f"{what} {path!r:.80} has a lone surrogate no file name can have; pass names as "
            "os.fsdecode() gives them"
        ) from None
    if "\0" in path:
        raise PathError(f"{what} {path!r:.80} contains a NUL character")
    return path


def normalize_query_path(path: str) -> str:
    """A user-typed repo-relative path in stored form (``./a//b/`` -> ``a/b``; ``.`` -> root)."""
    check_path_text(path)
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if path.startswith("/") or ".." in parts:
        raise PathError(f"path {path!r} is not inside the tree; give a repo-relative path")
    return "/".join(parts)


class Database(Closing):
    """A treeseek database: named trees, their nodes and contents.

    ``caches`` holds what retrievers derive from its trees (file tables, BM25 indexes, code
    graphs) across queries; it is this database's alone and is emptied by :meth:`close`.
    """

    def __init__(self, store: Store, *, hooks: Sequence[IndexHook] | None = None) -> None:
        self.store = store
        self.hooks: list[IndexHook] = default_hooks() if hooks is None else list(hooks)
        self.caches = TreeCaches()

    # -- lifecycle -----------------------------------------------------------------------
    def close(self) -> None:
        self.caches.clear()
        self.store.close()

    # -- indexing ------------------------------------------------------------------------
    def index(
        self,
        source: str | Path | TreeBuilder | None = None,
        *,
        name: str | None = None,
        paths_from: str | Path | None = None,
        base: str | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        progress: ProgressCallback | None = None,
    ) -> IndexReport:
        """Build or incrementally update a tree; atomic (all or nothing).

        ``source`` is a directory (git-aware when it is a checkout), a path-list file, or a
        builder. ``paths_from`` reads a path list (a file, or ``-`` for stdin) instead; the tree
        then has no contents. ``name`` defaults to the directory's or file's name. ``base``: a
        new tree starts from a copy of tree ``base`` and applies only the differences.
        """
        for where in (source, paths_from):
            if isinstance(where, str | Path):
                check_path_text(str(where), "source path")
        if base is not None:
            check_tree_name(base)
        builder = self._builder(source, paths_from)
        self._skip_own_files(builder)
        tree_name = check_tree_name(name or _default_name(source, paths_from))
        self.caches.drop(tree_name)  # a new version: what was derived from the old one goes
        return index_tree(
            self.store,
            tree_name,
            builder,
            base=base,
            max_file_bytes=max_file_bytes,
            hooks=self.hooks,
            progress=progress,
        )

    @staticmethod
    def _builder(
        source: str | Path | TreeBuilder | None, paths_from: str | Path | None
    ) -> TreeBuilder:
        from treeseek.trees.pathlist import PathListBuilder

        if paths_from is not None:
            if source is not None:
                raise BuildError("give either a source directory or paths_from, not both")
            return PathListBuilder.from_file(paths_from)
        if source is None:
            raise BuildError("nothing to index: give a directory, a path list or a builder")
        if isinstance(source, TreeBuilder):
            return source
        path = Path(source)
        if path.is_dir():
            from treeseek.trees.filesystem import FilesystemBuilder

            return FilesystemBuilder(path)
        if path.is_file():
            return PathListBuilder.from_file(path)
        raise BuildError(f"{path} does not exist; give a directory or a path-list file")

    def _skip_own_files(self, builder: TreeBuilder) -> None:
        """Indexing a directory that holds this database must not index the database."""
        from treeseek.trees.filesystem import FilesystemBuilder

        if isinstance(builder, FilesystemBuilder):
            builder.skip_files(self.store.local_files())

    def delete(self, name: str) -> None:
        """Remove a tree and the contents no other tree uses."""
        self.caches.drop(check_tree_name(name))
        self.store.delete_tree(name)

    # -- reading -------------------------------------------------------------------------
    def trees(self) -> list[TreeInfo]:
        return self.store.trees()

    def tree(self, name: str) -> TreeInfo:
        return self.store.tree(check_tree_name(name))

    def root(self, tree: str) -> Node:
        return self.store.root(check_tree_name(tree))

    def node(self, tree: str, ref: NodeRef) -> Node:
        """A node by id or by repo-relative path (ids are tried first)."""
        check_tree_name(tree)
        if isinstance(ref, Node):
            return ref
        check_path_text(ref, "node path or id")
        if _LOOKS_LIKE_ID.fullmatch(ref):
            try:
                return self.store.node(tree, ref)
            except NodeNotFound:
                pass
        found = self.store.node_by_path(tree, normalize_query_path(ref))
        if found is None:
            raise NodeNotFound(
                f"no node {ref!r} in tree {tree!r}; use `treeseek show {tree}` to see its paths"
            )
        return found

    def children(self, tree: str, ref: NodeRef = ROOT_PATH) -> list[Node]:
        """Direct children of a node (id, path or Node) in stored sibling order."""
        if isinstance(ref, Node):
            return self.store.children(check_tree_name(tree), ref.id)
        return self.store.children(tree, self.node(tree, ref).id)

    def subtree(self, tree: str, ref: NodeRef = ROOT_PATH) -> Iterator[Node]:
        """Every node under ``ref`` (inclusive), in path order."""
        return self.store.subtree(tree, self.node(tree, ref).path)

    def walk(self, tree: str, ref: NodeRef = ROOT_PATH) -> Iterator[Node]:
        """Depth-first, in stored sibling order (the order a tree view shows)."""
        start = self.node(tree, ref)
        nodes = list(self.store.subtree(tree, start.path))
        by_parent: dict[str | None, list[Node]] = {}
        for node in nodes:
            by_parent.setdefault(node.parent_id, []).append(node)
        for group in by_parent.values():
            group.sort(key=lambda n: n.order)
        stack = [start]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(by_parent.get(node.id, [])))

    def content(self, tree: str, ref: NodeRef) -> bytes | None:
        """The stored bytes of a file, or None (directory, binary, too large, path-only...)."""
        return self.store.content(tree, self.node(tree, ref).id)

    def text(self, tree: str, ref: NodeRef) -> str | None:
        """The stored content as text (UTF-8, undecodable bytes replaced), or None."""
        data = self.content(tree, ref)
        return None if data is None else data.decode("utf-8", "replace")

    # -- querying ------------------------------------------------------------------------
    def query(
        self, tree: str, question: str, *, navigator: Navigator | None = None, **options: Any
    ) -> Result:
        """Answer ``question`` from tree ``tree``: the files that answer it, best first.

        ``options`` are the fields of :class:`treeseek.search.base.QueryOptions` (``strategy``,
        ``k``, ...); ``navigator`` defaults to the configured one (no LLM: lexical). With no
        ``strategy`` (or ``None``): ``flat`` without an LLM, ``auto`` with one. The CLI's
        ``treeseek query`` calls this method.
        """
        from treeseek.llm.select import navigator_from_spec
        from treeseek.search.base import QueryOptions
        from treeseek.search.strategy import default_strategy, run_query

        known = set(QueryOptions.__dataclass_fields__)
        unknown = sorted(set(options) - known)
        if unknown:
            raise ConfigError(
                f"unknown query option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        check_tree_name(tree)
        if navigator is None:
            navigator = navigator_from_spec(None)
        # no strategy (or None): flat with no LLM, LLM tree search (auto) with one
        if options.get("strategy") is None:
            options["strategy"] = default_strategy(navigator)
        return run_query(
            self.store,
            self.tree(tree),
            question,
            QueryOptions(**options),
            navigator,
            caches=self.caches,
        )


def _default_name(source: str | Path | TreeBuilder | None, paths_from: str | Path | None) -> str:
    if isinstance(source, TreeBuilder):
        raise BuildError("give a name= for a tree built from a TreeBuilder")
    origin = paths_from if paths_from is not None else source
    if origin is None or str(origin) == "-":
        raise BuildError("give a tree name (--name) when reading paths from stdin")
    resolved = Path(origin).resolve()
    name = resolved.stem if resolved.is_file() else resolved.name
    if not name:
        raise BuildError(f"cannot derive a tree name from {origin}; give one with --name")
    return name


def open(
    path: str | Path | None = None,
    *,
    hooks: Sequence[IndexHook] | None = None,
    create: bool = True,
) -> Database:
    """Open (creating if needed) a treeseek database.

    ``path``: the SQLite file or a ``postgresql://`` URL; defaults to ``$TREESEEK_DB`` or the
    per-user default (:func:`treeseek.config.resolve_db_path`). ``hooks``: index hooks for
    derived layers (default: the registered ones,
    :data:`treeseek.index.run.DEFAULT_HOOK_FACTORIES`). ``create=False``: a missing file is a
    StoreError, and nothing (no directory, no file) is created; what read-only commands use (a
    server database is always opened: its schema is created or migrated on first use).
    """
    if path is not None and not isinstance(path, str | Path):
        raise ConfigError(f"a database path is a string or a Path, got {type(path).__name__}")
    if isinstance(path, str):
        check_path_text(path, "database path")
    db_path = resolve_db_path(path)
    if not create and isinstance(db_path, Path) and not db_path.exists():
        raise StoreError(
            f"no treeseek database at {db_path}; index a tree into it first "
            "(`treeseek index DIR --db FILE`), or point --db / TREESEEK_DB at an existing one"
        )
    return Database(open_store(db_path), hooks=hooks)
