"""The code graph: files and symbols as nodes, resolved imports/calls/inherits as edges.

Node ids are file paths (``"pkg/mod.py"``) and symbol ids (``"pkg/mod.py::Class.method"``,
see :func:`treeseek.code.model.symbol_id`). Edges come from resolved edges that have a
destination in the tree (``resolved`` or ``partial`` with a known target); module-level sources
are the file node. Imports are file -> file. ``contains`` links a file to its top-level symbols
and a symbol to its members, so walks can move between the file and symbol levels.

Every query is a dict lookup plus a bounded BFS; the graph is built in one pass over the
resolved edges.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from treeseek.code.model import EdgeType, FileCodeIndex, split_symbol_id, symbol_id
from treeseek.code.modules import python_module_names
from treeseek.code.resolve import ResolvedTree, resolve_tree
from treeseek.errors import AmbiguousSymbol, ConfigError, NodeNotFound

CONTAINS = "contains"
EDGE_KINDS: tuple[str, ...] = (
    EdgeType.IMPORTS.value,
    EdgeType.CALLS.value,
    EdgeType.INHERITS.value,
    CONTAINS,
)


class NodeNames(ABC):
    """How a name finds its node (:meth:`find`), over what a tree has: its files, its
    modules and its symbols. :class:`CodeGraph` answers from the whole graph; a reader of the
    stored layers answers the same from a few indexed reads
    (:mod:`treeseek.search.graph.lookup`)."""

    __slots__ = ()

    @abstractmethod
    def _is_file(self, path: str) -> bool: ...

    @abstractmethod
    def _is_symbol(self, node: str) -> bool: ...

    @abstractmethod
    def _module_path(self, module: str) -> str | None:
        """The file of a dotted module / unit name, or None."""

    @abstractmethod
    def _last_named(self, last: str) -> Iterable[str]:
        """Symbol ids whose qualified name's last dotted part is ``last`` (may hold more)."""

    @abstractmethod
    def _all_files(self) -> Iterable[str]: ...

    def node(self, name: str) -> str | None:
        """The node id for a path, symbol id, dotted module, or ``module.qname``."""
        if self._is_file(name) or self._is_symbol(name):
            return name
        found = self._module_path(name)
        if found is not None:
            return found
        head, tail = name, ""
        while "." in head:
            head, last = head.rsplit(".", 1)
            tail = f"{last}.{tail}" if tail else last
            path = self._module_path(head)
            if path is not None:
                sid = symbol_id(path, tail)
                return sid if self._is_symbol(sid) else None
        return None

    def find(self, name: str) -> str:
        """The node ``name`` names, short forms included; never a guess.

        Exact forms first (:meth:`node`). Then, as in :mod:`treeseek.context.names`: a symbol
        name or a unique suffix of a qualified name (``register_blueprint``,
        ``App.register_blueprint``), a ``path::name`` whose path is a unique path suffix
        (``app.py::App.run``), or a unique path suffix (``sansio/app.py``). Raises
        :class:`~treeseek.errors.AmbiguousSymbol` with every candidate's id when several
        match, :class:`~treeseek.errors.NodeNotFound` when none does.
        """
        name = name.strip()
        if not name:  # nothing to look up: bad input, not a miss
            raise ConfigError(
                "give a name: a path, a symbol id (path::Class.method), a dotted module,"
                " module.qname or a unique short name"
            )
        found = self.node(name)
        if found is not None:
            return found
        path_part, sep, qname = name.partition("::")
        if sep:
            paths = self._path_suffix(path_part)
            ids = [i for p in paths for i in self._named(qname) if self.file_of(i) == p]
        elif "/" in name:
            ids = self._path_suffix(name)
        else:
            ids = self._named(name) or self._path_suffix(name)  # `main.py`: a file
        if len(ids) == 1:
            return ids[0]
        if ids:
            raise AmbiguousSymbol(name, sorted(ids))
        raise NodeNotFound(
            f"no file or symbol {name!r} in the code graph; give a path, a symbol id "
            f"(path::Class.method), a dotted module, module.qname or a unique short name"
        )

    def _named(self, name: str) -> list[str]:
        """Symbol ids whose qualified name is ``name`` or ends with ``.name``."""
        last = name.rsplit(".", 1)[-1]
        if "::" in last:
            return []
        out = set()
        for sid in self._last_named(last):
            qname = split_symbol_id(sid)[1] or ""
            if qname == name or qname.endswith("." + name):
                out.add(sid)
        return sorted(out)

    def _path_suffix(self, path: str) -> list[str]:
        path = path.strip("/")
        if self._is_file(path):
            return [path]
        return sorted(f for f in self._all_files() if f.endswith("/" + path))

    @staticmethod
    def file_of(node: str) -> str:
        return split_symbol_id(node)[0]


@dataclass(slots=True)
class CodeGraph(NodeNames):
    files: set[str] = field(default_factory=set)
    symbols: set[str] = field(default_factory=set)
    modules: dict[str, str] = field(default_factory=dict)  # dotted module / unit -> path
    out: dict[str, dict[str, set[str]]] = field(default_factory=dict)  # kind -> src -> dsts
    into: dict[str, dict[str, set[str]]] = field(default_factory=dict)  # kind -> dst -> srcs
    _by_last: dict[str, list[str]] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def build(
        cls, indexes: Mapping[str, FileCodeIndex], resolved: ResolvedTree | None = None
    ) -> CodeGraph:
        if resolved is None:
            resolved = resolve_tree(indexes)
        g = cls(out={k: {} for k in EDGE_KINDS}, into={k: {} for k in EDGE_KINDS})
        for path, ix in indexes.items():
            g.files.add(path)
            g.modules.setdefault(ix.module, path)
            for sym in ix.symbols:
                sid = symbol_id(path, sym.qname)
                g.symbols.add(sid)
                parent = symbol_id(path, sym.parent) if sym.parent else path
                g._add(CONTAINS, parent, sid)
        for path, module in python_module_names(indexes).items():
            g.modules[module] = path
        imports = EdgeType.IMPORTS
        tables = {t: (g.out[t.value], g.into[t.value]) for t in EdgeType}
        for e in resolved.edges:
            if e.dst_path is None:
                continue
            if e.type is imports:
                src, dst = e.src_path, e.dst_path
            else:
                src = f"{e.src_path}::{e.src}" if e.src else e.src_path
                dst = f"{e.dst_path}::{e.dst_symbol}" if e.dst_symbol else e.dst_path
            if src == dst:
                continue
            out, into = tables[e.type]
            targets = out.get(src)
            if targets is None:
                out[src] = {dst}
            else:
                targets.add(dst)
            sources = into.get(dst)
            if sources is None:
                into[dst] = {src}
            else:
                sources.add(src)
        return g

    def _add(self, kind: str, src: str, dst: str) -> None:
        self.out[kind].setdefault(src, set()).add(dst)
        self.into[kind].setdefault(dst, set()).add(src)

    # --- lookups ---------------------------------------------------------------------------

    def _is_file(self, path: str) -> bool:
        return path in self.files

    def _is_symbol(self, node: str) -> bool:
        return node in self.symbols

    def _module_path(self, module: str) -> str | None:
        return self.modules.get(module)

    def _last_named(self, last: str) -> Iterable[str]:
        if self._by_last is None:
            by_last: dict[str, list[str]] = {}
            for sid in self.symbols:
                by_last.setdefault(sid.rsplit(".", 1)[-1].rsplit("::", 1)[-1], []).append(sid)
            self._by_last = by_last
        return self._by_last.get(last, ())

    def _all_files(self) -> Iterable[str]:
        return self.files

    def _get(self, table: dict[str, dict[str, set[str]]], kind: str, node: str) -> list[str]:
        return sorted(table[kind].get(node, ()))

    def callers(self, symbol: str) -> list[str]:
        """Symbols (or files, for module-level code) that call ``symbol``."""
        return self._get(self.into, EdgeType.CALLS.value, symbol)

    def callees(self, symbol: str) -> list[str]:
        return self._get(self.out, EdgeType.CALLS.value, symbol)

    def importers(self, file_or_module: str) -> list[str]:
        """Files that import the file (or the module's file)."""
        node = self.node(file_or_module) or file_or_module
        return self._get(self.into, EdgeType.IMPORTS.value, self.file_of(node))

    def imports(self, file: str) -> list[str]:
        node = self.node(file) or file
        return self._get(self.out, EdgeType.IMPORTS.value, self.file_of(node))

    def subclasses(self, cls: str, transitive: bool = False) -> list[str]:
        return self._closure(self.into[EdgeType.INHERITS.value], cls, transitive)

    def superclasses(self, cls: str, transitive: bool = False) -> list[str]:
        return self._closure(self.out[EdgeType.INHERITS.value], cls, transitive)

    def members(self, node: str) -> list[str]:
        """Top-level symbols of a file, or members of a symbol."""
        return self._get(self.out, CONTAINS, node)

    def _closure(self, table: dict[str, set[str]], start: str, transitive: bool) -> list[str]:
        if not transitive:
            return sorted(table.get(start, ()))
        seen: set[str] = set()
        todo = deque(table.get(start, ()))
        while todo:
            n = todo.popleft()
            if n in seen or n == start:
                continue
            seen.add(n)
            todo.extend(table.get(n, ()))
        return sorted(seen)

    def edges_of(
        self, node: str, kinds: Iterable[str] = EDGE_KINDS, direction: str = "both"
    ) -> list[tuple[str, str, str]]:
        """``(kind, direction, neighbour)`` of every edge at ``node`` ("out" / "in")."""
        found: list[tuple[str, str, str]] = []
        for kind in kinds:
            if direction in ("both", "out"):
                found.extend((kind, "out", n) for n in sorted(self.out[kind].get(node, ())))
            if direction in ("both", "in"):
                found.extend((kind, "in", n) for n in sorted(self.into[kind].get(node, ())))
        return found

    def neighbours(
        self,
        node: str,
        hops: int = 1,
        kinds: Iterable[str] = EDGE_KINDS,
        direction: str = "both",
        limit: int = 10_000,
    ) -> dict[str, int]:
        """Nodes within ``hops`` edges of ``node`` (itself excluded) -> their distance."""
        kinds = tuple(kinds)
        dist: dict[str, int] = {node: 0}
        frontier = [node]
        for depth in range(1, hops + 1):
            nxt: list[str] = []
            for n in frontier:
                for _, _, m in self.edges_of(n, kinds, direction):
                    if m not in dist:
                        dist[m] = depth
                        nxt.append(m)
                        if len(dist) > limit:
                            del dist[node]
                            return dist
            frontier = nxt
        del dist[node]
        return dist
