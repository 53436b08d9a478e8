"""Cross-file resolution of C2 edges and C3 handlers over a whole tree.

``resolve_tree({path: FileCodeIndex}) -> ResolvedTree`` is a pure function of the per-file
indexes and their paths (module names are recomputed from the paths, so indexes cached by
content hash are safe to reuse). It works with dict lookups only: no parsing, no file access.

Per language (see :mod:`treeseek.code.resolve_python` and
:mod:`treeseek.code.resolve_other`): Python imports (absolute, relative, aliases, ``import a.b
as c``, star imports, re-exports through ``__init__``), calls and bases through those bindings,
``self``/``cls``/``super()`` through the class hierarchy; best effort for JS/TS relative imports,
Go package paths, Rust ``use crate::``, Java/C# packages and namespaces, C/C++ local includes and
Ruby ``require_relative``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from treeseek.code.model import (
    Edge,
    EdgeType,
    FileCodeIndex,
    Resolution,
    ResolvedEdge,
    ResolvedEntrypoint,
)
from treeseek.code.packaging import PACKAGING_FRAMEWORKS, split_handler
from treeseek.code.resolve_base import UNRESOLVED, Resolver, Target, TreeFacts
from treeseek.code.resolve_other import OTHER_RESOLVERS
from treeseek.code.resolve_python import PythonResolver


@dataclass(slots=True)
class ResolvedTree:
    edges: list[ResolvedEdge] = field(default_factory=list)
    entrypoints: list[ResolvedEntrypoint] = field(default_factory=list)
    #: language -> the resolver that made these edges, for query-time lookups that go further
    #: (:mod:`treeseek.search.graph.call_sites`)
    resolvers: Mapping[str, Resolver] = field(default_factory=dict, repr=False, compare=False)
    _by_path: dict[str, list[ResolvedEdge]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _calls_by_name: dict[str, list[ResolvedEdge]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def edges_of(self, path: str) -> list[ResolvedEdge]:
        """The resolved edges whose source is file ``path``, in the file's edge order (an
        index by path is built on the first call; :attr:`edges` must not change after)."""
        if self._by_path is None:
            by_path: dict[str, list[ResolvedEdge]] = {}
            for edge in self.edges:
                by_path.setdefault(edge.src_path, []).append(edge)
            self._by_path = by_path
        return self._by_path.get(path, [])

    def calls_named(self, name: str) -> list[ResolvedEdge]:
        """The call edges whose callee's last name is ``name`` (``a.b.save`` -> ``save``),
        however they resolved (an index by name is built on the first call)."""
        if self._calls_by_name is None:
            by_name: dict[str, list[ResolvedEdge]] = {}
            calls = EdgeType.CALLS
            for edge in self.edges:
                if edge.type is calls:
                    last = edge.dst_ref.rsplit(".", 1)[-1]
                    by_name.setdefault(last, []).append(edge)
            self._calls_by_name = by_name
        return self._calls_by_name.get(name, [])

    def stats(self) -> dict[str, int]:
        resolved = sum(1 for e in self.edges if e.resolution is Resolution.RESOLVED)
        located = sum(1 for e in self.edges if e.dst_path is not None)
        return {"edges": len(self.edges), "resolved": resolved, "with_destination": located}


def resolve_tree(indexes: Mapping[str, FileCodeIndex]) -> ResolvedTree:
    facts = TreeFacts.build(indexes)
    return resolve_files(facts, indexes, entrypoints=True)


def resolve_files(
    facts: TreeFacts,
    paths: Iterable[str],
    *,
    entrypoints: bool = False,
    wanted: Callable[[Edge], bool] | None = None,
    resolvers: Resolvers | None = None,
) -> ResolvedTree:
    """The resolved edges (and, with ``entrypoints``, handlers) of the files ``paths``, in
    that order, against ``facts`` (only the edges ``wanted`` keeps, when given): each edge's
    target depends on the facts only, so resolving some edges of a tree gives them exactly as
    resolving the whole tree does. ``resolvers`` (made over ``facts``) may be shared by several
    calls, so their tables are made once."""
    if resolvers is None:
        resolvers = Resolvers(facts)
    out = ResolvedTree(resolvers=resolvers)
    for path in paths:
        ix = facts.indexes[path]
        resolver = resolvers.get(ix.language or "")
        for edge in ix.edges:
            if wanted is not None and not wanted(edge):
                continue
            if resolver is None:
                target = UNRESOLVED
            elif edge.type is EdgeType.IMPORTS:
                target = resolver.resolve_import(path, edge)
            elif edge.type is EdgeType.INHERITS:
                scope = edge.src.rsplit(".", 1)[0] if "." in edge.src else ""
                target = resolver.resolve_ref(path, scope, edge.dst_ref)
            else:
                target = resolver.resolve_ref(path, edge.src, edge.dst_ref)
            out.edges.append(_edge(path, edge, target))
        if not entrypoints:
            continue
        for ep in ix.entrypoints:
            handler = ep.handler
            target = UNRESOLVED
            if handler and ep.framework in PACKAGING_FRAMEWORKS:
                target = _object_reference(resolvers, path, handler)
            elif handler and resolver is not None:
                if handler in facts.symbols[path]:
                    target = Target(Resolution.RESOLVED, path, handler)
                else:
                    target = resolver.resolve_ref(path, "", handler)
            out.entrypoints.append(
                ResolvedEntrypoint(path, ep, target.path, target.symbol if target.path else None)
            )
    return out


def _object_reference(resolvers: Resolvers, path: str, handler: str) -> Target:
    """Where a packaging file's ``module:object.attr`` reference (a console script) points,
    looked up as an import from the declaring file ``path``: the object (followed through
    re-exports), else the module when the object is not found there, else unresolved."""
    module, attrs = split_handler(handler)
    python = resolvers.get("python")
    if not isinstance(python, PythonResolver):
        return UNRESOLVED
    dst = python.module_path(module, path)
    if dst is None:
        return UNRESOLVED
    if not attrs:
        return Target(Resolution.RESOLVED, dst)
    found = python.find(dst, attrs[0])
    if found is None:
        return Target(Resolution.PARTIAL, dst)
    where, qname = found
    if qname is None:  # the object is a module (``pkg:cli`` with a cli/ package)
        return Target(Resolution.RESOLVED, where) if len(attrs) == 1 else UNRESOLVED
    member = ".".join([qname, *attrs[1:]])
    if member in python.facts.symbols.get(where, {}):
        return Target(Resolution.RESOLVED, where, member)
    return Target(Resolution.PARTIAL, where, qname)


#: language -> how its resolver is made from a tree's facts
RESOLVERS: dict[str, Callable[[TreeFacts], Resolver]] = {
    "python": PythonResolver,
    **OTHER_RESOLVERS,
}


class Resolvers(Mapping[str, Resolver]):
    """A tree's resolver of each language, made when a file of that language is first
    resolved (a resolver's tables cover every file of its languages); languages that share a
    resolver class (JS/TS, C/C++) share one resolver."""

    def __init__(self, facts: TreeFacts) -> None:
        self._facts = facts
        self._made: dict[Callable[[TreeFacts], Resolver], Resolver] = {}

    def __getitem__(self, language: str) -> Resolver:
        make = RESOLVERS[language]
        found = self._made.get(make)
        if found is None:
            found = self._made[make] = make(self._facts)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(RESOLVERS)

    def __len__(self) -> int:
        return len(RESOLVERS)


def _edge(path: str, edge: Edge, target: Target) -> ResolvedEdge:
    return ResolvedEdge(
        type=edge.type,
        src_path=path,
        src=edge.src,
        dst_ref=edge.dst_ref,
        line=edge.line,
        resolution=target.resolution,
        dst_path=target.path,
        dst_symbol=target.symbol,
        lang_payload=edge.lang_payload,
    )
