"""Callers and callees of a symbol with each call site's status, resolved at query time.

The stored graph links a call to its target only when resolution at index time found it
(imports, ``self``/``cls``, annotated parameters, recorded attribute types). A call on a local
object (``app = Flask(...); app.register_blueprint(bp)``) or on a pytest fixture stays
partial there. This module goes further for one symbol, from the stored data plus the sources
of the few files that call a method of that name (read from the store, parsed again, never
from disk):

1. every call edge whose callee's last name is the symbol's name is a possible site;
2. one the index resolved to the symbol is ``resolved`` (``via="index"``);
3. otherwise the receiver's class is inferred: ``self``/``cls``, a local bound to a
   constructor or a factory call (``x = Ctor()``, ``with Ctor() as x``, ``x: Type``), an
   annotated parameter, a pytest fixture parameter (a ``@fixture`` function of that name in the
   file, its class or a ``conftest.py`` above it, followed to what it returns), a module-level
   binding, a call's declared return type (``-> Type``), and attribute types along a chain
   (``r.connection.send`` through ``connection: HTTPAdapter``). If the class (or a base) defines
   the method and it is the symbol, the site is ``resolved`` (``via`` says how); if it is
   another symbol, the site is not listed (it calls that one);
4. a site whose receiver stays unknown is a ``candidate``: listed, never dropped.

Callees are the mirror image: each call made by the symbol, ``resolved`` to a symbol of the
tree (by the index or by the same inference), or ``unresolved`` with the callee as written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from treeseek.code.local_types import Binding, LocalTypes, ScopeSpan, local_types
from treeseek.code.model import (
    FileCodeIndex,
    ResolvedEdge,
    SymbolKind,
    first_qname,
    split_symbol_id,
)
from treeseek.code.param_types import type_ref
from treeseek.code.resolve import ResolvedTree
from treeseek.code.resolve_base import Resolver
from treeseek.store.base import Store

RESOLVED = "resolved"
CANDIDATE = "candidate"
UNRESOLVED = "unresolved"
#: how many bindings a receiver's type may be followed through (factories, fixtures)
MAX_DEPTH = 4

_Class = tuple[str, str]  # (path, class qname)


class Resolved(Protocol):
    """What call sites are read from: every file's layers of a tree (``indexes``) and the
    resolved edges of (at least) the files that matter (``resolved``): a whole
    :class:`~treeseek.search.graph.tree_graph.TreeCodeGraph`, or the few files a
    :class:`~treeseek.search.graph.lookup.TreeLookup` resolved."""

    @property
    def indexes(self) -> Mapping[str, FileCodeIndex]: ...

    @property
    def resolved(self) -> ResolvedTree: ...


@dataclass(frozen=True, slots=True)
class CallSite:
    """One call edge as a caller/callee row: ``caller`` (a symbol id, or a file for module
    level code) calls ``callee`` (as written) ``count`` times, the first at ``line``."""

    caller: str
    path: str
    scope: str
    callee: str
    line: int
    count: int
    status: str  # resolved | candidate | unresolved
    via: str  # how: index, self, local, parameter, fixture, module, return, attribute, name
    target: str | None = None  # the symbol id it resolves to (callees; None: unresolved)


def callers(loaded: Resolved, store: Store, tree: str, symbol: str) -> list[CallSite]:
    """Every call site of ``symbol`` (a symbol id), resolved ones first."""
    path, qname = split_symbol_id(symbol)
    if not qname:
        return []
    written = first_qname(qname)  # calls name `of`, never `of@2`
    name = written.rsplit(".", 1)[-1]
    inference = _Inference(loaded, store, tree)
    is_method = inference.is_method(path, qname)

    def sibling(target_path: str | None, target: str | None) -> bool:
        """Another definition of this name in this file (an overload): the index resolves a
        call to the first, not knowing which one it reaches."""
        return target_path == path and target is not None and first_qname(target) == written

    out: list[CallSite] = []
    for edge in loaded.resolved.calls_named(name):
        if edge.dst_path == path and edge.dst_symbol == qname:
            out.append(_site(edge, RESOLVED, "index", symbol))
            continue
        if sibling(edge.dst_path, edge.dst_symbol):
            out.append(_site(edge, CANDIDATE, "index", None))
            continue
        if edge.resolution.value == "resolved" and edge.dst_symbol is not None:
            continue  # the index found what it calls: another symbol
        receiver = edge.dst_ref.rsplit(".", 1)[0] if "." in edge.dst_ref else ""
        if not receiver:  # a bare name: the index looked it up in scope and imports
            if not is_method and edge.dst_path is None:
                out.append(_site(edge, CANDIDATE, "name", None))
            continue
        found = inference.target(edge, receiver, name)
        if found is None:
            if edge.dst_symbol is None or not inference.is_function(edge):
                out.append(_site(edge, CANDIDATE, "name", None))
        elif found[0] == symbol:
            out.append(_site(edge, RESOLVED, found[1], symbol))
        elif sibling(*split_symbol_id(found[0])):
            out.append(_site(edge, CANDIDATE, found[1], None))
    return sorted(out, key=_order)


def callees(loaded: Resolved, store: Store, tree: str, symbol: str) -> list[CallSite]:
    """Every call ``symbol`` (a symbol id, or a file for its module-level code) makes."""
    path, qname = split_symbol_id(symbol)
    scope = qname or ""
    inference = _Inference(loaded, store, tree)
    out: list[CallSite] = []
    for edge in loaded.resolved.edges_of(path):
        if edge.src != scope or edge.type.value != "calls":
            continue
        if (
            edge.dst_path is not None
            and edge.dst_symbol is not None
            and (edge.resolution.value == "resolved" or inference.is_function(edge))
        ):
            target = f"{edge.dst_path}::{edge.dst_symbol}"
            out.append(_site(edge, RESOLVED, "index", target))
            continue
        receiver, _, name = edge.dst_ref.rpartition(".")
        found = inference.target(edge, receiver, name) if receiver else None
        if found is not None:
            out.append(_site(edge, RESOLVED, found[1], found[0]))
        else:
            out.append(_site(edge, UNRESOLVED, "name", None))
    return sorted(out, key=_order)


def _order(site: CallSite) -> tuple[int, str, int]:
    rank = {RESOLVED: 0, CANDIDATE: 1}.get(site.status, 2)
    return rank, site.path, site.line


def _site(edge: ResolvedEdge, status: str, via: str, target: str | None) -> CallSite:
    caller = f"{edge.src_path}::{edge.src}" if edge.src else edge.src_path
    count = int(edge.lang_payload.get("count", 1))
    return CallSite(
        caller, edge.src_path, edge.src, edge.dst_ref, edge.line, count, status, via, target
    )


@dataclass(slots=True)
class _Inference:
    """Receiver types of call edges, from stored symbols and edges plus re-read sources."""

    loaded: Resolved
    store: Store
    tree: str
    _locals: dict[str, LocalTypes | None] = field(default_factory=dict)
    _hashes: dict[str, str] | None = None

    def _resolver(self, path: str) -> Resolver | None:
        language = self.loaded.indexes[path].language if path in self.loaded.indexes else None
        return self.loaded.resolved.resolvers.get(language or "")

    def _symbol_kind(self, path: str, qname: str | None) -> SymbolKind | None:
        resolver = self._resolver(path)
        if resolver is None or qname is None:
            return None
        sym = resolver.facts.symbols.get(path, {}).get(qname)
        return sym.kind if sym is not None else None

    def is_method(self, path: str, qname: str) -> bool:
        parent = qname.rsplit(".", 1)[0] if "." in qname else None
        return self._symbol_kind(path, parent) is SymbolKind.CLASS

    def is_function(self, edge: ResolvedEdge) -> bool:
        """The index's partial target is a function or method (a call into it, not a class
        whose method was not found)."""
        kind = self._symbol_kind(edge.dst_path or "", edge.dst_symbol)
        return kind in (SymbolKind.FUNCTION, SymbolKind.METHOD)

    # --- the receiver's class -----------------------------------------------------------------

    def target(self, edge: ResolvedEdge, receiver: str, name: str) -> tuple[str, str] | None:
        """``(symbol id, via)`` that ``receiver.name`` calls, when the receiver's class is
        known and defines (or inherits) ``name``; None when it is not known."""
        resolver = self._resolver(edge.src_path)
        if resolver is None or "?" in receiver or "[" in receiver:
            return None
        found = self.type_of(resolver, edge.src_path, edge.src, receiver.split("."), 0)
        if found is None:
            return None
        cls, via = found
        method = resolver.method(cls[0], cls[1], name)
        if method is None:
            return None
        return f"{method[0]}::{method[1]}", via

    def type_of(
        self, resolver: Resolver, path: str, scope: str, parts: list[str], depth: int
    ) -> tuple[_Class, str] | None:
        if depth > MAX_DEPTH or not parts:
            return None
        head = self._head(resolver, path, scope, parts[0], depth)
        if head is None:
            return None
        cls, via = head
        for part in parts[1:]:  # attributes and calls along the chain
            step = self._member(resolver, cls, part, depth)
            if step is None:
                return None
            cls = step
            via = "attribute"
        return cls, via

    def _head(
        self, resolver: Resolver, path: str, scope: str, head: str, depth: int
    ) -> tuple[_Class, str] | None:
        call = head.endswith("()")
        name = head[:-2] if call else head
        if name in resolver.self_names and not call:
            own = resolver.enclosing_class(path, scope)
            return ((path, own), "self") if own is not None else None
        if not call:
            binding = self._local(path, scope, name)
            if binding is not None:
                where, found = binding
                bound = self._binding_class(resolver, path, where, found, depth)
                return (bound, "local" if where else "module") if bound is not None else None
            typed = resolver.typed_parameter(path, scope, name) if scope else None
            if typed is not None and typed.path is not None and typed.symbol is not None:
                return (typed.path, typed.symbol), "parameter"
            fixture = self._fixture(resolver, path, scope, name, depth)
            if fixture is not None:
                return fixture, "fixture"
        named = self._ref_class(resolver, path, scope, name, call, depth)
        return (named, "return" if call else "name") if named is not None else None

    def _member(self, resolver: Resolver, cls: _Class, part: str, depth: int) -> _Class | None:
        """The class of ``cls``'s attribute ``part`` (``part()``: what its method returns)."""
        if part.endswith("()"):
            method = resolver.method(cls[0], cls[1], part[:-2])
            return self._returns(resolver, method, depth) if method is not None else None
        todo = [cls]
        seen: set[_Class] = set()
        while todo and len(seen) < MAX_DEPTH * 2:
            where = todo.pop(0)
            if where in seen:
                continue
            seen.add(where)
            sym = resolver.facts.symbols.get(where[0], {}).get(where[1])
            ref = sym.lang_payload.get("attributes", {}).get(part) if sym is not None else None
            if ref is not None:
                outer = where[1].rsplit(".", 1)[0] if "." in where[1] else ""
                return self._class_ref(resolver, where[0], outer, str(ref))
            todo.extend(resolver.base_classes(*where))
        return None

    def _ref_class(
        self, resolver: Resolver, path: str, scope: str, ref: str, call: bool, depth: int
    ) -> _Class | None:
        """What ``ref`` (a name seen from ``scope``) is: a class (``call``: an instance of
        it), a function's result, or a module-level variable's class."""
        t = resolver.resolve_ref(path, scope, ref)
        if t.path is None or t.symbol is None or t.resolution.value != "resolved":
            return None
        kind = self._symbol_kind(t.path, t.symbol)
        if kind is SymbolKind.CLASS:
            return (t.path, t.symbol)
        if call and kind in (SymbolKind.FUNCTION, SymbolKind.METHOD):
            return self._returns(resolver, (t.path, t.symbol), depth)
        if not call and kind is SymbolKind.CONST:
            binding = self._local(t.path, "", t.symbol)
            if binding is not None:
                return self._binding_class(resolver, t.path, "", binding[1], depth)
        return None

    def _class_ref(self, resolver: Resolver, path: str, scope: str, ref: str) -> _Class | None:
        t = resolver.resolve_ref(path, scope, ref)
        if t.path is None or t.symbol is None:
            return None
        return (
            (t.path, t.symbol) if self._symbol_kind(t.path, t.symbol) is SymbolKind.CLASS else None
        )

    def _binding_class(
        self, resolver: Resolver, path: str, scope: str, binding: Binding, depth: int
    ) -> _Class | None:
        if not binding.call:
            return self._class_ref(resolver, path, scope, binding.ref)
        parts = binding.ref.split(".")
        if len(parts) > 1:  # `self.get_adapter(...)`, `obj.make()`: through the receiver
            owner = self.type_of(resolver, path, scope, parts[:-1], depth + 1)
            if owner is not None:
                method = resolver.method(owner[0][0], owner[0][1], parts[-1])
                return self._returns(resolver, method, depth + 1) if method else None
        return self._ref_class(resolver, path, scope, binding.ref, True, depth + 1)

    def _returns(self, resolver: Resolver, function: _Class, depth: int) -> _Class | None:
        """The class a function returns: its ``-> Type``, else what its body returns."""
        path, qname = function
        sym = resolver.facts.symbols.get(path, {}).get(qname)
        if sym is None or depth > MAX_DEPTH:
            return None
        scope = sym.parent or ""
        arrow = sym.signature.rfind("->")
        if arrow >= 0:
            ref = type_ref(sym.signature[arrow + 2 :].strip().rstrip(":").strip())
            return self._class_ref(resolver, path, scope, ref) if ref else None
        types = self._types(path)
        returned = types.returned(qname) if types is not None else None
        if returned is None:
            return None
        return self._binding_class(resolver, path, qname, returned, depth + 1)

    def _fixture(
        self, resolver: Resolver, path: str, scope: str, name: str, depth: int
    ) -> _Class | None:
        """A parameter named like a pytest fixture of the file, its class or a conftest.py
        in the file's directory or above: the class the fixture returns."""
        symbols = resolver.facts.symbols
        cls = resolver.enclosing_class(path, scope)
        places = [(path, f"{cls}.{name}")] if cls else []
        places.append((path, name))
        directory = path.rsplit("/", 1)[0] if "/" in path else ""
        while True:
            places.append((f"{directory}/conftest.py" if directory else "conftest.py", name))
            if not directory:
                break
            directory = directory.rsplit("/", 1)[0] if "/" in directory else ""
        for where, qname in places:
            sym = symbols.get(where, {}).get(qname)
            if sym is None or (where, qname) == (path, scope):
                continue
            if any("fixture" in d for d in sym.decorators):
                return self._returns(resolver, (where, qname), depth + 1)
        return None

    # --- sources ------------------------------------------------------------------------------

    def _local(self, path: str, scope: str, name: str) -> tuple[str, Binding] | None:
        """The binding of ``name`` seen from ``scope``: the scope itself, then its enclosing
        functions, then the module (class bodies are not visible from their methods)."""
        types = self._types(path)
        if types is None:
            return None
        resolver = self._resolver(path)
        q: str | None = scope
        while q:
            binding = types.binding(q, name)
            if binding is not None:
                return q, binding
            parent = q.rsplit(".", 1)[0] if "." in q else None
            while parent and resolver is not None and resolver.facts.is_class(path, parent):
                parent = parent.rsplit(".", 1)[0] if "." in parent else None
            q = parent
        found = types.binding("", name)
        return ("", found) if found is not None else None

    def _types(self, path: str) -> LocalTypes | None:
        if path in self._locals:
            return self._locals[path]
        ix = self.loaded.indexes.get(path)
        types: LocalTypes | None = None
        if ix is not None and ix.language == "python":
            if self._hashes is None:
                states = self.store.file_states(self.tree)
                self._hashes = {p: s.content_hash for p, s in states.items() if s.content_hash}
            digest = self._hashes.get(path)
            types = _PARSED.get(digest) if digest else None
            data = None
            if digest and types is None:
                data = self.store.contents([digest]).get(digest)
            if digest and data is not None:
                spans = [ScopeSpan(s.qname, s.start_line, s.end_line) for s in ix.symbols]
                types = local_types(data, spans)
                if len(_PARSED) >= PARSED_FILES:
                    _PARSED.pop(next(iter(_PARSED)))
                _PARSED[digest] = types
        self._locals[path] = types
        return types


#: the bindings of recently read files, by content hash (the same bytes always give the same
#: bindings, whatever tree holds them); parsing is most of a cold query's time
PARSED_FILES = 256
_PARSED: dict[str, LocalTypes] = {}


def site_rows(sites: Iterable[CallSite]) -> list[dict[str, object]]:
    """The JSON rows of call sites (CLI, HTTP and MCP share them)."""
    return [
        {
            "caller": s.caller,
            "path": s.path,
            "scope": s.scope,
            "callee": s.callee,
            "line": s.line,
            "count": s.count,
            "status": s.status,
            "via": s.via,
            **({"target": s.target} if s.target else {}),
        }
        for s in sites
    ]
