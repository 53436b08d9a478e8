"""Callers, callees, importers, class hierarchies and members of one name without building
the tree's graph.

The whole graph (:mod:`treeseek.search.graph.tree_graph`) reads and resolves every file of a
tree: seconds on django, over a minute and gigabytes on a 50,000-file tree. A call-site query
needs far less, so :class:`TreeLookup` reads the stored layers on demand and answers exactly
as the whole graph does:

* the name is found first (:class:`~treeseek.code.graph.NodeNames`): paths and modules come
  from the file table, a short symbol name from an indexed read of the symbols whose qualified
  name ends with it, an exact symbol id from its file's symbols;
* callers read and resolve only the files with a call edge whose callee's last name is the
  symbol's (an indexed read, :meth:`~treeseek.store.code_base.CodeStore.calls_named`), in
  path order as the whole graph lists them; callees resolve only the symbol's file;
* importers and subclasses resolve only the import or base-class rows that can name the node
  (:class:`~treeseek.search.graph.reverse.ReverseIndex`, a complete superset read from the
  rows as written), subclasses one level of the hierarchy at a time;
* resolution looks files up as it needs them (:meth:`~treeseek.code.resolve_base.TreeFacts.lazy`,
  :class:`~treeseek.code.resolve.Resolvers`): an import followed, a base class, a module's
  re-exports. Each edge's target is a function of the tree's facts only, so it is the same
  whether the tree was resolved whole or in part.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass

from treeseek.code.conventions import code_content
from treeseek.code.graph import NodeNames
from treeseek.code.languages import language_for_path
from treeseek.code.model import (
    Edge,
    EdgeType,
    Entrypoint,
    FileCodeIndex,
    ResolvedEdge,
    ResolvedEntrypoint,
    first_qname,
    split_symbol_id,
    symbol_id,
)
from treeseek.code.modules import module_name, python_module_names
from treeseek.code.packaging import is_packaging_file, with_packaging_entrypoints
from treeseek.code.resolve import ResolvedTree, Resolvers, resolve_files
from treeseek.code.resolve_base import TreeFacts
from treeseek.code.resolve_python import PythonResolver
from treeseek.search.caches import Slot, TreeCaches
from treeseek.search.graph import call_sites
from treeseek.search.graph.reverse import ReverseIndex
from treeseek.store.base import Store
from treeseek.store.code_base import CodeFileInfo, CodeStore
from treeseek.trees.model import TreeInfo


class StoredLayers(Mapping[str, FileCodeIndex]):
    """``path -> FileCodeIndex`` (without chunks) of every file of a tree, each read from the
    store when first asked for: what :func:`~treeseek.search.graph.tree_graph.load_tree_indexes`
    returns for the whole tree, file by file. Iterating lists the paths in path order without
    reading them; ``in`` reads nothing."""

    def __init__(self, store: Store, tree: str) -> None:
        self.store = store
        self.code: CodeStore = store.code()
        states = store.file_states(tree)
        self.paths = sorted(states)
        #: path -> the content hash its code layers are stored under (None: never parsed)
        self.digests = {p: code_content(p, states[p].content_hash) for p in self.paths}
        self._infos: dict[str, CodeFileInfo] = self.code.code_files(
            {d for d in self.digests.values() if d}
        )
        self.languages: dict[str, str | None] = {}
        for path in self.paths:
            digest = self.digests[path]
            info = self._infos.get(digest) if digest else None
            self.languages[path] = info.language if info is not None else language_for_path(path)
        self._by_digest: dict[str, FileCodeIndex] = {}
        self._read: dict[str, FileCodeIndex] = {}
        #: every content's entrypoint rows when one batched read has them (absent: none);
        #: None: each file's are read with its other layers
        self.entrypoint_rows: Mapping[str, list[Entrypoint]] | None = None

    def __getitem__(self, path: str) -> FileCodeIndex:
        found = self._read.get(path)
        if found is not None:
            return found
        language = self.languages[path]  # KeyError: not a file of the tree
        digest = self.digests[path]
        info = self._infos.get(digest) if digest else None
        if digest is None or info is None:
            # never parsed (empty, skipped): still a path, as in load_tree_indexes
            found = FileCodeIndex(language, module_name(path, language), ())
        else:
            base = self._by_digest.get(digest)
            if base is None:
                base = self._by_digest[digest] = FileCodeIndex(
                    language=info.language,
                    module="",
                    chunks=(),
                    symbols=tuple(self.code.symbols(digest)),
                    edges=tuple(self.code.edges(digest)),
                    entrypoints=tuple(
                        self.code.entrypoints(digest)
                        if self.entrypoint_rows is None
                        else self.entrypoint_rows.get(digest, ())
                    ),
                    parse_error=info.parse_error,
                )
            found = FileCodeIndex(
                language=language,
                module=module_name(path, language),
                chunks=(),
                symbols=base.symbols,
                edges=base.edges,
                entrypoints=base.entrypoints,
                parse_error=base.parse_error,
            )
        if digest is not None and is_packaging_file(path):  # as load_tree_indexes
            data = self.store.contents([digest]).get(digest)
            if data:
                found = with_packaging_entrypoints(found, path, data)
        self._read[path] = found
        return found

    def __contains__(self, path: object) -> bool:
        return path in self.languages

    def __iter__(self) -> Iterator[str]:
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)

    def read_files(self) -> int:
        """How many files have been read so far (what a lookup cost)."""
        return len(self._read)


@dataclass(frozen=True, slots=True)
class ResolvedFiles:
    """Some files of a tree resolved against the whole tree: what
    :mod:`~treeseek.search.graph.call_sites` reads (``indexes`` holds every file)."""

    indexes: Mapping[str, FileCodeIndex]
    resolved: ResolvedTree


class TreeLookup(NodeNames):
    """One tree's names, callers and callees, read from the store as needed (see the module
    docstring). Use it inside one store snapshot: its reads must see one version."""

    def __init__(self, store: Store, tree: str) -> None:
        self.store = store
        self.tree = tree
        self.layers = StoredLayers(store, tree)
        self.facts = TreeFacts.lazy(self.layers, self.layers.languages)
        self.resolvers = Resolvers(self.facts)  # one per lookup: their tables are made once
        # as CodeGraph.build names modules: each file's own name (the first path wins),
        # then the Python package names, which take precedence
        self.modules: dict[str, str] = {}
        for path in self.layers.paths:
            self.modules.setdefault(module_name(path, self.layers.languages[path]), path)
        for path, module in python_module_names(self.layers.paths).items():
            self.modules[module] = path
        self._paths_of: dict[str, list[str]] = {}
        for path, digest in self.layers.digests.items():
            if digest:
                self._paths_of.setdefault(digest, []).append(path)
        self._digests = set(self._paths_of)
        self.reverse = ReverseIndex(self.layers.code, self._paths_of)
        #: the graph's ``into["inherits"]`` for the nodes asked so far (see :meth:`subclasses`)
        self._inherited: dict[str, set[str]] = {}
        self._inherits_asked: set[str] = set()
        self._inherits_read: dict[str, set[tuple[str, str]]] = {}  # path -> rows resolved

    # --- NodeNames ------------------------------------------------------------------------

    def _is_file(self, path: str) -> bool:
        return path in self.layers

    def _is_symbol(self, node: str) -> bool:
        path, qname = split_symbol_id(node)
        return qname is not None and path in self.layers and qname in self.facts.symbols[path]

    def _module_path(self, module: str) -> str | None:
        return self.modules.get(module)

    def _last_named(self, last: str) -> Iterable[str]:
        hits = self.layers.code.symbols_last_named(last, self._digests)
        return [symbol_id(p, h.qname) for h in hits for p in self._paths_of[h.content_hash]]

    def _all_files(self) -> Iterable[str]:
        return self.layers.paths

    # --- relations ------------------------------------------------------------------------

    def resolve(
        self, paths: Iterable[str], wanted: Callable[[Edge], bool] | None = None
    ) -> ResolvedFiles:
        """The edges of ``paths`` (those ``wanted`` keeps) resolved, in the order given,
        against the whole tree."""
        return ResolvedFiles(
            self.layers, resolve_files(self.facts, paths, wanted=wanted, resolvers=self.resolvers)
        )

    def callers(self, symbol: str) -> list[call_sites.CallSite]:
        """:func:`call_sites.callers` of ``symbol``, reading only the files that may call it."""
        qname = split_symbol_id(symbol)[1]
        if not qname:
            return []
        name = first_qname(qname).rsplit(".", 1)[-1]  # calls name `of`, never `of@2`
        digests = self.layers.code.calls_named(name, self._digests)
        paths = sorted(p for d in digests for p in self._paths_of[d])

        def named(edge: Edge) -> bool:  # what call_sites.callers reads: calls_named(name)
            return edge.type is EdgeType.CALLS and edge.dst_ref.rsplit(".", 1)[-1] == name

        return call_sites.callers(self.resolve(paths, named), self.store, self.tree, symbol)

    def callees(self, node: str) -> list[call_sites.CallSite]:
        """:func:`call_sites.callees` of ``node``, resolving only its file."""
        path, qname = split_symbol_id(node)
        files = [path] if path in self.layers else []
        scope = qname or ""

        def made(edge: Edge) -> bool:  # what call_sites.callees reads of the file's edges
            return edge.type is EdgeType.CALLS and edge.src == scope

        return call_sites.callees(self.resolve(files, made), self.store, self.tree, node)

    def imports(self, node: str) -> list[str]:
        """:meth:`CodeGraph.imports <treeseek.code.graph.CodeGraph.imports>` of a found node:
        the files its file's imports resolve to, resolving that file's imports only."""
        return sorted(self._out(EdgeType.IMPORTS, self.file_of(node)))

    def superclasses(self, cls: str, transitive: bool = False) -> list[str]:
        """:meth:`CodeGraph.superclasses <treeseek.code.graph.CodeGraph.superclasses>`: the
        bases of ``cls`` (all levels with ``transitive``), resolving each class's own bases."""
        if not transitive:
            return sorted(self._out(EdgeType.INHERITS, cls))
        seen: set[str] = set()
        todo = deque(self._out(EdgeType.INHERITS, cls))
        while todo:
            n = todo.popleft()
            if n in seen or n == cls:
                continue
            seen.add(n)
            todo.extend(self._out(EdgeType.INHERITS, n))
        return sorted(seen)

    def importers(self, node: str) -> list[str]:
        """:meth:`CodeGraph.importers <treeseek.code.graph.CodeGraph.importers>` of a found
        node: the files an import of which resolves to its file, resolving only the files
        whose import rows can name it (:meth:`ReverseIndex.importer_candidates`)."""
        path = self.file_of(node)
        if path not in self.layers:
            return []
        language = self.layers.languages[path]
        modules: list[str] = []
        if language == "python":
            python = self.resolvers["python"]
            if isinstance(python, PythonResolver) and path in python.module_of:
                modules.append(python.module_of[path])
        rows = self.reverse.importer_candidates(path, language, modules, self.layers[path].symbols)
        found: set[str] = set()
        for where in sorted(rows):
            for e in self._resolve_rows(where, EdgeType.IMPORTS, rows[where]):
                if e.dst_path == path and where != path:
                    found.add(where)
        return sorted(found)

    def subclasses(self, cls: str, transitive: bool = False) -> list[str]:
        """:meth:`CodeGraph.subclasses <treeseek.code.graph.CodeGraph.subclasses>`: the
        classes whose bases resolve to ``cls`` (all levels with ``transitive``), resolving
        only the files whose base-class rows can name them
        (:meth:`ReverseIndex.subclass_candidates`), one level at a time."""
        self._inheritors([cls])
        if not transitive:
            return sorted(self._inherited.get(cls, ()))
        seen: set[str] = set()
        frontier = set(self._inherited.get(cls, ())) - {cls}
        while frontier:
            seen |= frontier
            self._inheritors(frontier)
            frontier = {m for n in frontier for m in self._inherited.get(n, ())} - seen - {cls}
        return sorted(seen)

    def _inheritors(self, nodes: Iterable[str]) -> None:
        """Resolve every base-class row that can name one of ``nodes`` (once each), adding
        what they resolve to to the ``into["inherits"]`` table."""
        todo = sorted(set(nodes) - self._inherits_asked)
        if not todo:
            return
        self._inherits_asked.update(todo)
        rows = self.reverse.subclass_candidates(todo)
        for path in sorted(rows):
            new = rows[path] - self._inherits_read.get(path, set())
            if not new:
                continue
            self._inherits_read.setdefault(path, set()).update(new)
            for e in self._resolve_rows(path, EdgeType.INHERITS, new):  # as CodeGraph.build
                if e.dst_path is None:
                    continue
                src = f"{path}::{e.src}" if e.src else path
                dst = f"{e.dst_path}::{e.dst_symbol}" if e.dst_symbol else e.dst_path
                if src != dst:
                    self._inherited.setdefault(dst, set()).add(src)

    def _resolve_rows(
        self, path: str, kind: EdgeType, rows: Collection[tuple[str, str]]
    ) -> list[ResolvedEdge]:
        """The edges of file ``path`` of type ``kind`` whose ``(src, dst_ref)`` is one of
        ``rows`` (an import's ``src`` counts as ""), resolved."""

        def wanted(edge: Edge) -> bool:
            if edge.type is not kind:
                return False
            return (edge.src if kind is EdgeType.INHERITS else "", edge.dst_ref) in rows

        return resolve_files(self.facts, [path], wanted=wanted, resolvers=self.resolvers).edges

    def entrypoints(self) -> list[ResolvedEntrypoint]:
        """The whole graph's ``resolved.entrypoints`` (in path order), resolving only the files
        that have some: those with stored entrypoint rows, and the packaging files that can
        declare console scripts (:mod:`treeseek.code.packaging`)."""
        stored = self.layers.code.entrypoints_of(self._digests)
        self.layers.entrypoint_rows = stored  # the files resolved below read them from here
        paths = [
            p
            for p in self.layers.paths
            if (digest := self.layers.digests[p]) and (digest in stored or is_packaging_file(p))
        ]

        def no_edges(edge: Edge) -> bool:
            return False

        return resolve_files(
            self.facts, paths, entrypoints=True, wanted=no_edges, resolvers=self.resolvers
        ).entrypoints

    def members(self, node: str) -> list[str]:
        """:meth:`CodeGraph.members <treeseek.code.graph.CodeGraph.members>`: a file's
        top-level symbols or a symbol's members, from that file's symbols."""
        path = self.file_of(node)
        if path not in self.layers:
            return []
        symbols = self.layers[path].symbols
        return sorted(
            symbol_id(path, s.qname)
            for s in symbols
            if (symbol_id(path, s.parent) if s.parent else path) == node
        )

    def _out(self, kind: EdgeType, node: str) -> set[str]:
        """The graph's ``out[kind][node]``: the edges of that kind from ``node`` (as
        :meth:`CodeGraph.build <treeseek.code.graph.CodeGraph.build>` keys them: imports by
        file, the others by their source symbol) resolved, with a destination in the tree."""
        path = self.file_of(node)
        if path not in self.layers:
            return set()
        imports = kind is EdgeType.IMPORTS

        def source(edge: Edge) -> str:
            return path if imports or not edge.src else f"{path}::{edge.src}"

        def wanted(edge: Edge) -> bool:
            return edge.type is kind and source(edge) == node

        found: set[str] = set()
        for e in resolve_files(self.facts, [path], wanted=wanted, resolvers=self.resolvers).edges:
            if e.dst_path is None:
                continue
            if imports:
                dst = e.dst_path
            else:
                dst = f"{e.dst_path}::{e.dst_symbol}" if e.dst_symbol else e.dst_path
            if dst != node:
                found.add(dst)
        return found


@dataclass(frozen=True, slots=True)
class SharedLookup:
    """A tree version's :class:`TreeLookup` kept between requests (its module tables are made
    once, what it has read it keeps), used by one request at a time: its caches are not
    thread-safe (a name being looked up is marked "not found" while it is followed)."""

    lookup: TreeLookup
    lock: threading.Lock


#: trees whose lookup a database keeps (:func:`cached_tree_lookup`)
TREE_LOOKUP: Slot[SharedLookup] = Slot("graph.tree_lookup", trees=2)


def cached_tree_lookup(caches: TreeCaches, store: Store, tree: TreeInfo) -> SharedLookup:
    """The lookup of ``tree``'s version from ``caches``, made on first use (inside the
    caller's snapshot, like every read of that version). Its answers are those of a fresh
    lookup: each target is a function of the version's facts only."""
    return caches.get(
        TREE_LOOKUP, tree, lambda: SharedLookup(TreeLookup(store, tree.name), threading.Lock())
    )
