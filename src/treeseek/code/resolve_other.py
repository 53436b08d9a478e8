"""Best-effort resolution for the non-Python languages.

* JS/TS: relative module specifiers (``./x``, ``../y/index``) with the usual extensions; named,
  default and namespace import bindings.
* Go: an import path names the tree directory that is its longest suffix; ``pkg.Name`` and
  same-package names resolve among that directory's files.
* Rust: ``use crate::a::b::C`` / ``self::`` / ``super::`` against ``src/`` module files (per
  crate root); aliases.
* Java / C#: classes indexed by package/namespace; imports, wildcard imports, ``using``
  namespaces and the file's own package make names visible.
* C/C++: ``#include "x.h"`` relative to the file, else by unique path suffix; calls resolve in
  included headers and their sibling sources, else to a function defined once in the tree
  (C links functions by name).
* Ruby: ``require_relative`` paths, ``require`` by unique suffix; constants are global.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Callable
from functools import partial

from treeseek.code.model import Edge, EdgeType, Resolution, SymbolKind
from treeseek.code.modules import module_name, rust_module
from treeseek.code.resolve_base import MAX_HOPS, UNRESOLVED, Resolver, Target, TreeFacts

_JS_LANGS = ("javascript", "typescript", "tsx")
_JS_EXTS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".d.ts")


def _paths_of(facts: TreeFacts, languages: tuple[str, ...]) -> list[str]:
    return [p for p, language in facts.languages.items() if language in languages]


def _top_level(facts: TreeFacts, path: str) -> list[str]:
    return [q for q, s in facts.symbols[path].items() if s.parent is None]


def _suffix_index(paths: list[str]) -> dict[str, list[str]]:
    by_base: dict[str, list[str]] = defaultdict(list)
    for p in paths:
        by_base[posixpath.basename(p)].append(p)
    return by_base


def _by_suffix(by_base: dict[str, list[str]], spec: str) -> str | None:
    """The one path ending with ``/spec`` (or equal to it), else None."""
    spec = spec.lstrip("./")
    matches = [
        p for p in by_base.get(posixpath.basename(spec), []) if p == spec or p.endswith("/" + spec)
    ]
    return matches[0] if len(matches) == 1 else None


# --- JavaScript / TypeScript ------------------------------------------------------------------


class JsResolver(Resolver):
    def __init__(self, facts: TreeFacts) -> None:
        super().__init__(facts)
        self.files = set(_paths_of(facts, _JS_LANGS))
        # path -> bound name -> (target path, exported name | None for a namespace)
        self.bindings: dict[str, dict[str, tuple[str, str | None]]] = {}
        # path -> exported name -> (target path, name there | None for a namespace)
        self.reexports: dict[str, dict[str, tuple[str, str | None]]] = {}
        self.star_exports: dict[str, list[str]] = {}
        for path in self.files:
            bound: dict[str, tuple[str, str | None]] = {}
            exported: dict[str, tuple[str, str | None]] = {}
            stars: list[str] = []
            for e in facts.indexes[path].edges:
                p = e.lang_payload
                if e.type is not EdgeType.IMPORTS:
                    continue
                target = self.module_path(path, str(p.get("module", "")))
                if target is None:
                    continue
                if p.get("reexport"):
                    if p.get("star"):
                        stars.append(target)
                    if "namespace" in p:
                        exported[str(p["namespace"])] = (target, None)
                    for name, alias in p.get("names", []):
                        exported[str(alias)] = (target, str(name))
                    continue
                if "default" in p:
                    bound[str(p["default"])] = (target, "default")
                if "namespace" in p:
                    bound[str(p["namespace"])] = (target, None)
                for name, alias in p.get("names", []):
                    bound[str(alias)] = (target, str(name))
            self.bindings[path] = bound
            self.reexports[path] = exported
            self.star_exports[path] = stars

    def module_path(self, path: str, spec: str) -> str | None:
        if not spec.startswith("."):
            return None
        base = posixpath.normpath(posixpath.join(posixpath.dirname(path), spec))
        if base in self.files:
            return base
        stem = base
        for ext in _JS_EXTS:
            if base.endswith(ext[:3]) and ext != ".d.ts":  # `./x.js` importing `x.ts`
                stem = base[: -len(posixpath.splitext(base)[1])]
                break
        for candidate in (stem, base):
            for ext in _JS_EXTS:
                for name in (candidate + ext, f"{candidate}/index{ext}"):
                    if name in self.files:
                        return name
        return None

    def resolve_import(self, path: str, edge: Edge) -> Target:
        target = self.module_path(path, str(edge.lang_payload.get("module", "")))
        return Target(Resolution.RESOLVED, target) if target else UNRESOLVED

    def resolve_name(self, path: str, parts: list[str]) -> Target:
        binding = self.bindings.get(path, {}).get(parts[0])
        if binding is None:
            return UNRESOLVED
        target, name = binding
        rest = parts[1:]
        if name is None:  # namespace import: utils.format
            if not rest:
                return Target(Resolution.RESOLVED, target)
            name, rest = rest[0], rest[1:]
        elif name == "default":
            name = parts[0]  # conventionally the default export's own name
        found = self.exported(target, name)
        if found is None:
            return Target(Resolution.PARTIAL, target)
        if found[1] is None:  # a re-exported namespace
            if not rest:
                return Target(Resolution.RESOLVED, found[0])
            return self.resolve_in_file(found[0], rest)
        return self._walk_members(Target(Resolution.RESOLVED, found[0], found[1]), rest)

    def resolve_in_file(self, path: str, parts: list[str]) -> Target:
        found = self.exported(path, parts[0])
        if found is None or found[1] is None:
            return Target(Resolution.PARTIAL, path)
        return self._walk_members(Target(Resolution.RESOLVED, found[0], found[1]), parts[1:])

    def exported(self, path: str, name: str, hops: int = 0) -> tuple[str, str | None] | None:
        """Where ``name`` exported by ``path`` is defined, through ``export ... from`` barrels."""
        if name in self.facts.symbols.get(path, {}):
            return (path, name)
        if hops >= MAX_HOPS:
            return None
        hit = self.reexports.get(path, {}).get(name)
        if hit is not None:
            target, inner = hit
            return (target, None) if inner is None else self.exported(target, inner, hops + 1)
        for star in self.star_exports.get(path, ()):
            if star != path:
                found = self.exported(star, name, hops + 1)
                if found is not None:
                    return found
        return None


# --- Go ---------------------------------------------------------------------------------------


class GoResolver(Resolver):
    def __init__(self, facts: TreeFacts) -> None:
        super().__init__(facts)
        self.dirs: dict[str, dict[str, str]] = defaultdict(dict)  # dir -> qname -> path
        for path in _paths_of(facts, ("go",)):
            d = posixpath.dirname(path)
            for q in facts.symbols[path]:
                self.dirs[d].setdefault(q, path)
        self.bindings: dict[str, dict[str, str]] = {}
        for path in _paths_of(facts, ("go",)):
            bound: dict[str, str] = {}
            for e in facts.indexes[path].edges:
                if e.type is not EdgeType.IMPORTS:
                    continue
                found = self.directory(e.dst_ref)
                if found is not None:
                    alias = e.lang_payload.get("alias")
                    bound[str(alias) if alias else e.dst_ref.rsplit("/", 1)[-1]] = found
            self.bindings[path] = bound

    def directory(self, import_path: str) -> str | None:
        parts = import_path.split("/")
        for i in range(len(parts)):
            cand = "/".join(parts[i:])
            if cand in self.dirs:
                return cand
        return None

    def resolve_import(self, path: str, edge: Edge) -> Target:
        d = self.directory(edge.dst_ref)
        if d is None:
            return UNRESOLVED
        files = sorted(set(self.dirs[d].values()))
        if not files:
            return UNRESOLVED
        package = posixpath.basename(d)

        def rank(p: str) -> tuple[bool, bool, str]:  # named like the package, not a test
            stem = posixpath.basename(p).removesuffix(".go")
            return stem != package, stem.endswith("_test"), p

        return Target(Resolution.RESOLVED, min(files, key=rank))

    def resolve_name(self, path: str, parts: list[str]) -> Target:
        d = self.bindings.get(path, {}).get(parts[0])
        if d is not None:
            parts = parts[1:]
        else:
            d = posixpath.dirname(path)  # same package, another file
        if not parts:
            return UNRESOLVED
        symbols = self.dirs.get(d, {})
        found = symbols.get(parts[0])
        if found is None:
            return UNRESOLVED
        return self._walk_members(Target(Resolution.RESOLVED, found, parts[0]), parts[1:])


# --- Rust -------------------------------------------------------------------------------------


class RustResolver(Resolver):
    def __init__(self, facts: TreeFacts) -> None:
        super().__init__(facts)
        self.modules: dict[tuple[str, str], str] = {}  # (crate root, crate::a::b) -> path
        self.root_of: dict[str, str] = {}
        for path in _paths_of(facts, ("rust",)):
            root = path[: path.rfind("src/") + 4] if "src/" in path else ""
            self.root_of[path] = root
            self.modules.setdefault((root, rust_module(path)), path)
        self.bindings: dict[str, dict[str, str]] = {}
        for path in self.root_of:
            bound: dict[str, str] = {}
            for e in facts.indexes[path].edges:
                if e.type is EdgeType.IMPORTS:
                    alias = e.lang_payload.get("alias")
                    bound[str(alias) if alias else e.dst_ref.rsplit("::", 1)[-1]] = e.dst_ref
            self.bindings[path] = bound

    def _absolute(self, path: str, segs: list[str]) -> list[str] | None:
        own = rust_module(path).split("::")
        if segs[0] == "crate":
            return segs
        if segs[0] == "self":
            return own + segs[1:]
        if segs[0] == "super":
            base = own
            while segs and segs[0] == "super":
                base = base[:-1] if len(base) > 1 else base
                segs = segs[1:]
            return base + segs
        return None

    def resolve_path(self, path: str, segs: list[str]) -> Target:
        absolute = self._absolute(path, segs)
        if absolute is None:
            return UNRESOLVED
        root = self.root_of.get(path, "")
        for cut in range(len(absolute), 0, -1):
            dst = self.modules.get((root, "::".join(absolute[:cut])))
            if dst is None:
                continue
            rest = absolute[cut:]
            if not rest:
                return Target(Resolution.RESOLVED, dst)
            if rest[0] in self.facts.symbols[dst]:
                return self._walk_members(Target(Resolution.RESOLVED, dst, rest[0]), rest[1:])
            return Target(Resolution.PARTIAL, dst)
        return UNRESOLVED

    def resolve_import(self, path: str, edge: Edge) -> Target:
        return self.resolve_path(path, edge.dst_ref.split("::"))

    def resolve_name(self, path: str, parts: list[str]) -> Target:
        bound = self.bindings.get(path, {}).get(parts[0])
        if bound is not None:
            return self.resolve_path(path, bound.split("::") + parts[1:])
        if parts[0] in ("crate", "self", "super"):
            return self.resolve_path(path, parts)
        return UNRESOLVED


# --- Java / C# --------------------------------------------------------------------------------


class PackageResolver(Resolver):
    """Java packages and C# namespaces: classes visible by package, import or ``using``."""

    def __init__(self, facts: TreeFacts, language: str) -> None:
        super().__init__(facts)
        self.language = language
        self.classes: dict[str, tuple[str, str]] = {}  # fully qualified -> (path, qname)
        self.packages: dict[str, dict[str, tuple[str, str]]] = defaultdict(dict)
        paths = _paths_of(facts, (language,))
        self.package_of = {p: self._package(p) for p in paths}
        for path in paths:
            package = self.package_of[path]
            for q, sym in facts.symbols[path].items():
                if sym.kind is not SymbolKind.CLASS:
                    continue
                fq = f"{package}.{q}" if package else q
                self.classes.setdefault(fq, (path, q))
                if sym.parent is None:
                    self.packages[package].setdefault(q, (path, q))
        self.visible: dict[str, tuple[dict[str, str], list[str]]] = {}
        for path in paths:
            named: dict[str, str] = {}  # simple name -> fully qualified class
            wild: list[str] = []
            package = self.package_of[path]
            if package:
                parts = package.split(".")
                wild.extend(".".join(parts[:i]) for i in range(len(parts), 0, -1))
            for e in facts.indexes[path].edges:
                if e.type is not EdgeType.IMPORTS:
                    continue
                ref = e.dst_ref
                alias = e.lang_payload.get("alias")
                if ref.endswith(".*"):
                    wild.append(ref[:-2])
                elif alias:
                    named[str(alias)] = ref
                elif language == "csharp" or ref in self.packages:
                    wild.append(ref)
                else:
                    named[ref.rsplit(".", 1)[-1]] = ref
            self.visible[path] = (named, wild)

    def _package(self, path: str) -> str:
        """The declared package/namespace, else the one the path implies (an index that was
        stored without its ``package``)."""
        declared = self.facts.indexes[path].package
        if declared is not None:
            return declared
        module = module_name(path, self.language)
        return module.rsplit(".", 1)[0] if "." in module else ""

    def _class(self, fq: str) -> Target:
        hit = self.classes.get(fq)
        if hit is not None:
            return Target(Resolution.RESOLVED, *hit)
        return UNRESOLVED

    def resolve_import(self, path: str, edge: Edge) -> Target:
        ref = edge.dst_ref.removesuffix(".*")
        target = self._class(ref)
        if target.path is None and "." in ref:  # static member import: a.b.C.m
            owner, _, member = ref.rpartition(".")
            cls = self._class(owner)
            if cls.path is not None:
                return self._walk_members(cls, [member])
        if target.path is None and ref in self.packages:
            files = sorted({p for p, _ in self.packages[ref].values()})
            return Target(Resolution.PARTIAL, files[0])
        return target

    def resolve_name(self, path: str, parts: list[str]) -> Target:
        named, wild = self.visible.get(path, ({}, []))
        head = parts[0]
        fq = named.get(head)
        target = self._class(fq) if fq else UNRESOLVED
        if target.path is None:
            for package in wild:
                hit = self.packages.get(package, {}).get(head)
                if hit is not None:
                    target = Target(Resolution.RESOLVED, *hit)
                    break
        if target.path is None:
            target = self._class(".".join(parts))  # fully qualified in the code
            return target
        return self._walk_members(target, parts[1:])


# --- C / C++ ----------------------------------------------------------------------------------


class CResolver(Resolver):
    def __init__(self, facts: TreeFacts) -> None:
        super().__init__(facts)
        self.files = _paths_of(facts, ("c", "cpp"))
        self.file_set = set(self.files)
        self.by_base = _suffix_index(self.files)
        self.functions: dict[str, list[str]] = defaultdict(list)  # name -> defining paths
        for path in self.files:
            for q in _top_level(facts, path):
                self.functions[q].append(path)
        self.includes: dict[str, list[str]] = {}
        for path in self.files:
            found: list[str] = []
            for e in facts.indexes[path].edges:
                if e.type is EdgeType.IMPORTS and e.lang_payload.get("local"):
                    target = self.include_path(path, e.dst_ref)
                    if target is not None:
                        found.append(target)
            self.includes[path] = found

    def include_path(self, path: str, spec: str) -> str | None:
        near = posixpath.normpath(posixpath.join(posixpath.dirname(path), spec))
        if near in self.file_set:
            return near
        return _by_suffix(self.by_base, spec)

    def resolve_import(self, path: str, edge: Edge) -> Target:
        target = self.include_path(path, edge.dst_ref)
        return Target(Resolution.RESOLVED, target) if target else UNRESOLVED

    def resolve_name(self, path: str, parts: list[str]) -> Target:
        head = parts[0]
        related: list[str] = []
        for header in self.includes.get(path, []):
            related.append(header)
            stem = posixpath.splitext(header)[0]
            related.extend(p for p in self.by_base.get(posixpath.basename(stem) + ".c", []))
            for ext in (".cc", ".cpp", ".cxx"):
                related.extend(self.by_base.get(posixpath.basename(stem) + ext, []))
        for candidate in related:
            if head in self.facts.symbols.get(candidate, {}):
                return self._walk_members(Target(Resolution.RESOLVED, candidate, head), parts[1:])
        defs = self.functions.get(head, [])
        if len(defs) == 1:
            return self._walk_members(Target(Resolution.RESOLVED, defs[0], head), parts[1:])
        if len(parts) > 1:  # `ns::Circle` / `std::vector`: qnames carry no namespace
            return self.resolve_name(path, parts[1:])
        return UNRESOLVED


# --- Ruby -------------------------------------------------------------------------------------


class RubyResolver(Resolver):
    def __init__(self, facts: TreeFacts) -> None:
        super().__init__(facts)
        self.files = _paths_of(facts, ("ruby",))
        self.file_set = set(self.files)
        self.by_base = _suffix_index(self.files)
        self.constants: dict[str, tuple[str, str]] = {}
        for path in self.files:
            for q, sym in facts.symbols[path].items():
                if sym.kind is SymbolKind.CLASS:
                    self.constants.setdefault(q, (path, q))
                    self.constants.setdefault(q.rsplit(".", 1)[-1], (path, q))

    def resolve_import(self, path: str, edge: Edge) -> Target:
        spec = edge.dst_ref if edge.dst_ref.endswith(".rb") else edge.dst_ref + ".rb"
        if edge.lang_payload.get("local"):
            near = posixpath.normpath(posixpath.join(posixpath.dirname(path), spec))
            if near in self.file_set:
                return Target(Resolution.RESOLVED, near)
        target = _by_suffix(self.by_base, spec)
        return Target(Resolution.RESOLVED, target) if target else UNRESOLVED

    def resolve_name(self, path: str, parts: list[str]) -> Target:
        for cut in range(len(parts), 0, -1):
            hit = self.constants.get(".".join(parts[:cut]))
            if hit is not None:
                return self._walk_members(Target(Resolution.RESOLVED, *hit), parts[cut:])
        return UNRESOLVED


#: language -> the resolver class that resolves it (one resolver serves the JS family, one C
#: and C++); built per tree when a file of one of its languages is first resolved
OTHER_RESOLVERS: dict[str, Callable[[TreeFacts], Resolver]] = {
    **{lang: JsResolver for lang in _JS_LANGS},
    "go": GoResolver,
    "rust": RustResolver,
    "java": partial(PackageResolver, language="java"),
    "csharp": partial(PackageResolver, language="csharp"),
    "c": CResolver,
    "cpp": CResolver,
    "ruby": RubyResolver,
}
