"""What every language resolver shares: tree facts, targets, scope and class-hierarchy lookups."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from treeseek.code.languages import family
from treeseek.code.model import Edge, EdgeType, FileCodeIndex, Resolution, Symbol, SymbolKind
from treeseek.code.param_types import parameter_types

MAX_HOPS = 8  # re-export chains, base-class chains


@dataclass(frozen=True, slots=True)
class Target:
    resolution: Resolution
    path: str | None = None
    symbol: str | None = None


UNRESOLVED = Target(Resolution.PARTIAL)


@dataclass(slots=True)
class TreeFacts:
    """What resolution looks up per file: its language, symbols by qualified name and base
    references by class. Built for every file at once (:meth:`build`), or read per file on
    first use (:meth:`lazy`): the same facts, so the same targets, whichever is used."""

    indexes: Mapping[str, FileCodeIndex]
    symbols: Mapping[str, dict[str, Symbol]] = field(default_factory=dict)  # path->qname->sym
    bases: Mapping[str, dict[str, list[str]]] = field(default_factory=dict)  # path->cls->refs
    #: path -> language, every file of the tree (what a resolver's tables start from)
    languages: Mapping[str, str | None] = field(default_factory=dict)

    @classmethod
    def build(cls, indexes: Mapping[str, FileCodeIndex]) -> TreeFacts:
        symbols: dict[str, dict[str, Symbol]] = {}
        bases: dict[str, dict[str, list[str]]] = {}
        for path, ix in indexes.items():
            symbols[path] = _symbols(ix)
            bases[path] = _bases(ix)
        languages = {path: ix.language for path, ix in indexes.items()}
        return cls(indexes, symbols, bases, languages)

    @classmethod
    def lazy(
        cls, indexes: Mapping[str, FileCodeIndex], languages: Mapping[str, str | None]
    ) -> TreeFacts:
        """Facts read from ``indexes`` one file at a time, when a lookup first needs that
        file (``indexes`` may itself read files on demand); ``languages``: every file's."""
        return cls(
            indexes,
            _PerFile(indexes, _symbols),
            _PerFile(indexes, _bases),
            languages,
        )

    def is_class(self, path: str, qname: str | None) -> bool:
        if qname is None:
            return False
        sym = self.symbols.get(path, {}).get(qname)
        return sym is not None and sym.kind is SymbolKind.CLASS


class Resolver:
    """Base of the per-language resolvers: same-file scope lookups and class hierarchies.

    Subclasses implement :meth:`resolve_import` and :meth:`resolve_name` (a reference's head
    name seen from a file: imports, package members, ...); :meth:`resolve_ref` handles the rest.
    """

    self_names: tuple[str, ...] = ("self", "this")
    class_scope_visible = True  # Python: a method body does not see its class's names

    def __init__(self, facts: TreeFacts) -> None:
        self.facts = facts
        self._method_cache: dict[tuple[str, str, str], tuple[str, str] | None] = {}
        self._name_cache: dict[tuple[str, str], Target] = {}
        self._param_cache: dict[tuple[str, str], dict[str, str]] = {}

    # --- to implement ---------------------------------------------------------------------

    def resolve_import(self, path: str, edge: Edge) -> Target:
        return UNRESOLVED

    def resolve_name(self, path: str, parts: list[str]) -> Target:
        """Resolve ``parts`` (a dotted reference) through what ``path`` imports."""
        return UNRESOLVED

    # --- shared ---------------------------------------------------------------------------

    def resolve_ref(self, path: str, scope: str, ref: str) -> Target:
        parts = ref.split(".")
        truncated = False
        if "[" in ref or "?" in ref or ".." in ref or ref.endswith("."):
            cut = next((i for i, p in enumerate(parts) if "[" in p or p in ("?", "")), len(parts))
            truncated = cut < len(parts)
            parts = parts[:cut]
            if not parts:
                return UNRESOLVED
        head = parts[0]
        if head in self.self_names and len(parts) > 1:
            if len(parts) > 2:  # self.attr.method: through the attribute's recorded type
                typed = self._attribute_type(path, scope, parts[1])
                if typed is not None:
                    return _demote(self._walk_members(typed, parts[2:]), truncated)
            target = self._self_member(path, scope, parts[1])
        elif head == "super()" and len(parts) > 1:
            target = self._super_member(path, scope, parts[1])
        elif head.endswith("()") and len(parts) > 1:
            target = self._instance_member(path, scope, parts[:2])
        else:
            target = None
            if len(parts) > 1 and scope:
                typed = self.typed_parameter(path, scope, head)
                if typed is not None:
                    return _demote(self._walk_members(typed, parts[1:]), truncated)
            target = self._local(path, scope, parts)
            if target is None:
                key = (path, ".".join(parts))
                target = self._name_cache.get(key)
                if target is None:
                    target = self._name_cache[key] = self.resolve_name(path, parts)
            return _demote(target, truncated)
        if target is None:
            return UNRESOLVED
        return _demote(self._walk_members(target, parts[2:]), truncated)

    def _attribute_type(self, path: str, scope: str, name: str) -> Target | None:
        """The class of attribute ``name`` of the enclosing class (or a base class), from the
        ``attributes`` its symbol records (Python: ``self.x = Foo()``, ``x: Foo``)."""
        cls = self.enclosing_class(path, scope)
        if cls is None:
            return None
        todo = [(path, cls)]
        seen: set[tuple[str, str]] = set()
        while todo and len(seen) < MAX_HOPS:
            where = todo.pop(0)
            if where in seen:
                continue
            seen.add(where)
            sym = self.facts.symbols.get(where[0], {}).get(where[1])
            ref = sym.lang_payload.get("attributes", {}).get(name) if sym is not None else None
            if ref is not None:
                outer = where[1].rsplit(".", 1)[0] if "." in where[1] else ""
                t = self.resolve_ref(where[0], outer, str(ref))
                return t if self.facts.is_class(t.path or "", t.symbol) else None
            todo.extend(self.base_classes(*where))
        return None

    def typed_parameter(self, path: str, scope: str, name: str) -> Target | None:
        """The class a parameter ``name`` of the enclosing function(s) is declared as."""
        symbols = self.facts.symbols.get(path, {})
        q: str | None = scope
        while q:
            sym = symbols.get(q)
            if sym is None:
                return None
            if sym.kind is not SymbolKind.CLASS:
                key = (path, q)
                types = self._param_cache.get(key)
                if types is None:
                    language = self.facts.indexes[path].language or ""
                    types = parameter_types(sym.signature, family(language))
                    self._param_cache[key] = types
                ref = types.get(name)
                if ref is not None:
                    t = self.resolve_ref(path, "", ref)
                    return t if self.facts.is_class(t.path or "", t.symbol) else None
            q = sym.parent
        return None

    def _walk_members(self, target: Target, rest: list[str]) -> Target:
        """Continue ``Class.method.x`` from a found symbol through the remaining parts."""
        if target.path is None or target.symbol is None or not rest:
            return target
        symbols = self.facts.symbols[target.path]
        qname = target.symbol
        i = 0
        while i < len(rest):
            nxt = f"{qname}.{rest[i]}"
            if nxt in symbols:
                qname = nxt
                i += 1
                continue
            if symbols.get(qname) is not None and symbols[qname].kind is SymbolKind.CLASS:
                found = self.method(target.path, qname, rest[i])
                if found is not None:
                    return self._walk_members(Target(Resolution.RESOLVED, *found), rest[i + 1 :])
            break
        if i == len(rest):
            return Target(target.resolution, target.path, qname)
        return Target(Resolution.PARTIAL, target.path, qname)

    def _local(self, path: str, scope: str, parts: list[str]) -> Target | None:
        symbols = self.facts.symbols.get(path, {})
        prefix = scope
        while True:
            cand = f"{prefix}.{parts[0]}" if prefix else parts[0]
            visible = (
                self.class_scope_visible
                or not prefix
                or prefix == scope
                or not self.facts.is_class(path, prefix)
            )
            if visible and cand in symbols:
                return self._walk_members(Target(Resolution.RESOLVED, path, cand), parts[1:])
            if not prefix:
                return None
            prefix = prefix.rsplit(".", 1)[0] if "." in prefix else ""

    def enclosing_class(self, path: str, scope: str) -> str | None:
        symbols = self.facts.symbols.get(path, {})
        q: str | None = scope
        while q:
            sym = symbols.get(q)
            if sym is not None and sym.kind is SymbolKind.CLASS:
                return q
            q = sym.parent if sym is not None else (q.rsplit(".", 1)[0] if "." in q else None)
        return None

    def _self_member(self, path: str, scope: str, name: str) -> Target | None:
        cls = self.enclosing_class(path, scope)
        if cls is None:
            return None
        found = self.method(path, cls, name)
        if found is None:
            return Target(Resolution.PARTIAL, path, cls)
        return Target(Resolution.RESOLVED, *found)

    def _super_member(self, path: str, scope: str, name: str) -> Target | None:
        cls = self.enclosing_class(path, scope)
        if cls is None:
            return None
        for base in self.base_classes(path, cls):
            found = self.method(base[0], base[1], name)
            if found is not None:
                return Target(Resolution.RESOLVED, *found)
        return None

    def _instance_member(self, path: str, scope: str, parts: list[str]) -> Target | None:
        """``Foo().bar``: ``bar`` looked up on class ``Foo``."""
        ctor = self.resolve_ref(path, scope, parts[0][:-2])
        if (
            ctor.path is None
            or ctor.symbol is None
            or not self.facts.is_class(ctor.path, ctor.symbol)
        ):
            return None
        found = self.method(ctor.path, ctor.symbol, parts[1])
        return Target(Resolution.RESOLVED, *found) if found else None

    def base_classes(self, path: str, cls: str) -> list[tuple[str, str]]:
        scope = cls.rsplit(".", 1)[0] if "." in cls else ""
        out: list[tuple[str, str]] = []
        for ref in self.facts.bases.get(path, {}).get(cls, []):
            t = self.resolve_ref(path, scope, ref)
            if t.path is not None and t.symbol is not None and (t.path, t.symbol) != (path, cls):
                out.append((t.path, t.symbol))
        return out

    def method(self, path: str, cls: str, name: str, hops: int = 0) -> tuple[str, str] | None:
        """``name`` defined on class ``cls`` of ``path`` or inherited from a base in the tree."""
        key = (path, cls, name)
        if key in self._method_cache:
            return self._method_cache[key]
        self._method_cache[key] = None  # breaks inheritance cycles
        found: tuple[str, str] | None = None
        qname = f"{cls}.{name}"
        if qname in self.facts.symbols.get(path, {}):
            found = (path, qname)
        elif hops < MAX_HOPS:
            for base_path, base_cls in self.base_classes(path, cls):
                found = self.method(base_path, base_cls, name, hops + 1)
                if found is not None:
                    break
        self._method_cache[key] = found
        return found


def _symbols(ix: FileCodeIndex) -> dict[str, Symbol]:
    return {s.qname: s for s in ix.symbols}


def _bases(ix: FileCodeIndex) -> dict[str, list[str]]:
    bases: dict[str, list[str]] = {}
    for e in ix.edges:
        if e.type is EdgeType.INHERITS:
            bases.setdefault(e.src, []).append(e.dst_ref)
    return bases


_V = TypeVar("_V")


class _PerFile(Mapping[str, _V]):
    """``path -> what`` of each file of ``indexes``, computed on first access and kept."""

    def __init__(self, indexes: Mapping[str, FileCodeIndex], what: Callable[[FileCodeIndex], _V]):
        self._indexes = indexes
        self._what = what
        self._done: dict[str, _V] = {}

    def __getitem__(self, path: str) -> _V:
        found = self._done.get(path)
        if found is None:
            found = self._done[path] = self._what(self._indexes[path])
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._indexes)

    def __len__(self) -> int:
        return len(self._indexes)

    def __contains__(self, path: object) -> bool:
        return path in self._indexes


def _demote(target: Target, truncated: bool) -> Target:
    if truncated and target.resolution is Resolution.RESOLVED:
        return Target(Resolution.PARTIAL, target.path, target.symbol)
    return target
