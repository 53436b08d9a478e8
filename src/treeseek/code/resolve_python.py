"""Python import and name resolution across a tree.

Module names come from the paths (``__init__.py`` package roots, with the path-only name as an
alias), bindings from each file's import edges: ``import a.b`` binds ``a``; ``import a.b as c``
binds ``c`` to ``a.b``; ``from m import n as k`` binds ``k`` to ``m.n`` (a submodule if one
exists, else the name ``n`` in ``m``); ``from m import *`` adds ``m`` to the star list. A name
found in a module follows re-exports (``from .query import QuerySet`` in ``__init__.py``) up to
:data:`~treeseek.code.resolve_base.MAX_HOPS` hops.
"""

from __future__ import annotations

import posixpath

from treeseek.code.model import Edge, EdgeType, Resolution
from treeseek.code.modules import module_name, python_module_roots
from treeseek.code.resolve_base import MAX_HOPS, UNRESOLVED, Resolver, Target, TreeFacts

_GLOBAL_ROOTS = frozenset({"src", "lib", "python", "source"})

# name -> (absolute module, attribute or None for the module itself)
_Binding = tuple[str, str | None]


class PythonResolver(Resolver):
    self_names = ("self", "cls")
    class_scope_visible = False

    def __init__(self, facts: TreeFacts) -> None:
        super().__init__(facts)
        paths = [p for p, language in facts.languages.items() if language == "python"]
        roots = python_module_roots(paths)
        for p in paths:  # python by its shebang, not its name (sympy's bin/test): a script
            roots.setdefault(p, (module_name(p, "python"), ""))
        self.module_of = {p: module for p, (module, _) in roots.items()}
        # module -> [(import root, path)]; a root is visible to the files under it (a
        # directory on sys.path: tests/ for Django's test apps), the tree root and the usual
        # source roots to every file
        self.candidates: dict[str, list[tuple[str, str]]] = {}
        for p in sorted(paths, key=len):
            module, root = roots[p]
            self.candidates.setdefault(module, []).append((root, p))
        for p in sorted(paths, key=len):
            alias = module_name(p, "python")
            if alias not in self.candidates:
                self.candidates[alias] = [("", p)]
        self._visible_cache: dict[tuple[str, str], str | None] = {}
        # a file's import bindings, made from its import edges when first looked up
        self._bound: dict[str, tuple[dict[str, _Binding], list[str]]] = {}
        self._find_cache: dict[tuple[str, str], tuple[str, str | None] | None] = {}

    def module_path(self, module: str, ctx: str) -> str | None:
        """The file of ``module`` as imported from file ``ctx``."""
        key = (module, ctx.rsplit("/", 1)[0] if "/" in ctx else "")
        if key in self._visible_cache:
            return self._visible_cache[key]
        best: tuple[str, str] | None = None
        for root, path in self.candidates.get(module, ()):
            visible = (
                not root or posixpath.basename(root) in _GLOBAL_ROOTS or ctx.startswith(root + "/")
            )
            if visible and (best is None or len(root) > len(best[0])):
                best = (root, path)
        found = best[1] if best is not None else None
        self._visible_cache[key] = found
        return found

    def absolute(self, path: str, module: str, level: int) -> str:
        """The absolute module of ``from <level dots><module> import ...`` in ``path``."""
        if level == 0:
            return module
        current = self.module_of.get(path, "")
        if "." not in current and "/" in path:  # not inside a package: use the path's name
            current = module_name(path, "python")
        parts = current.split(".")
        if not path.endswith(("__init__.py", "__init__.pyi")):
            parts = parts[:-1]
        if level > 1:
            parts = parts[: max(0, len(parts) - (level - 1))]
        base = ".".join(p for p in parts if p)
        if module:
            return f"{base}.{module}" if base else module
        return base

    def bindings(self, path: str) -> dict[str, _Binding]:
        """The names the imports of file ``path`` bind (nothing for a non-Python file)."""
        return self._bind(path)[0]

    def stars(self, path: str) -> list[str]:
        """The modules file ``path`` star-imports."""
        return self._bind(path)[1]

    def _bind(self, path: str) -> tuple[dict[str, _Binding], list[str]]:
        found = self._bound.get(path)
        if found is not None:
            return found
        bindings: dict[str, _Binding] = {}
        stars: list[str] = []
        edges = self.facts.indexes[path].edges if path in self.module_of else ()
        for e in edges:
            if e.type is not EdgeType.IMPORTS:
                continue
            p = e.lang_payload
            module = self.absolute(path, str(p.get("module", "")), int(p.get("level", 0)))
            name = p.get("name")
            alias = p.get("alias")
            if name is None:  # import a.b [as c]
                if alias:
                    bindings[str(alias)] = (module, None)
                else:
                    head = module.split(".", 1)[0]
                    bindings.setdefault(head, (head, None))
            elif name == "*":
                stars.append(module)
            else:
                bindings[str(alias or name)] = (module, str(name))
        found = self._bound[path] = (bindings, stars)
        return found

    # --- imports --------------------------------------------------------------------------

    def resolve_import(self, path: str, edge: Edge) -> Target:
        p = edge.lang_payload
        module = self.absolute(path, str(p.get("module", "")), int(p.get("level", 0)))
        name = p.get("name")
        if name is None or name == "*":
            dst = self.module_path(module, path)
            if dst:
                return Target(Resolution.RESOLVED, dst)
            return self._nearest_package(module, path)
        sub = self.module_path(f"{module}.{name}", path)
        if sub is not None:
            return Target(Resolution.RESOLVED, sub)
        dst = self.module_path(module, path)
        if dst is None:
            return UNRESOLVED
        found = self.find(dst, str(name))
        if found is None:
            return Target(Resolution.PARTIAL, dst)
        return Target(Resolution.RESOLVED, found[0], found[1])

    def _nearest_package(self, module: str, ctx: str) -> Target:
        while "." in module:
            module = module.rsplit(".", 1)[0]
            dst = self.module_path(module, ctx)
            if dst is not None:
                return Target(Resolution.PARTIAL, dst)
        return UNRESOLVED

    # --- names ----------------------------------------------------------------------------

    def find(self, path: str, name: str, hops: int = 0) -> tuple[str, str | None] | None:
        """Where ``name`` of module file ``path`` is defined: (path, qname), or (path, None)
        when the name is a module; follows imports and star imports."""
        key = (path, name)
        if key in self._find_cache:
            return self._find_cache[key]
        self._find_cache[key] = None  # cycles resolve to "not found"
        found: tuple[str, str | None] | None = None
        if name in self.facts.symbols.get(path, {}):
            found = (path, name)
        elif hops < MAX_HOPS:
            binding = self.bindings(path).get(name)
            if binding is not None:
                found = self._follow(binding, hops, path)
            if found is None:
                for star in self.stars(path):
                    star_path = self.module_path(star, path)
                    if star_path is not None and star_path != path:
                        found = self.find(star_path, name, hops + 1)
                        if found is not None:
                            break
        self._find_cache[key] = found
        return found

    def _follow(self, binding: _Binding, hops: int, ctx: str) -> tuple[str, str | None] | None:
        module, attr = binding
        if not module and attr is not None:
            module, attr = attr, None
        if attr is None:
            dst = self.module_path(module, ctx)
            return (dst, None) if dst else None
        sub = self.module_path(f"{module}.{attr}", ctx)
        if sub is not None:
            return (sub, None)
        dst = self.module_path(module, ctx)
        return self.find(dst, attr, hops + 1) if dst else None

    def resolve_name(self, path: str, parts: list[str]) -> Target:
        binding = self.bindings(path).get(parts[0])
        if binding is not None:
            module, attr = binding
            if attr is None:
                return self.in_module(module, parts[1:], path)
            return self.in_module(module, [attr, *parts[1:]], path)
        for star in self.stars(path):
            target = self.in_module(star, parts, path)
            if target.symbol is not None:
                return target
        return UNRESOLVED

    def in_module(self, module: str, parts: list[str], ctx: str, hops: int = 0) -> Target:
        """``parts`` looked up inside ``module`` (imported from file ``ctx``): submodules
        first, then (re-exported) names."""
        if not module:  # `from . import x` at the top of the tree
            if not parts:
                return UNRESOLVED
            module, parts = parts[0], parts[1:]
        dst = self.module_path(module, ctx)
        i = 0
        while i < len(parts):
            sub = self.module_path(f"{module}.{parts[i]}", ctx)
            if sub is None:
                break
            module = f"{module}.{parts[i]}"  # submodules, namespace packages included
            dst = sub
            i += 1
        if dst is None:
            return self._nearest_package(module, ctx) if hops == 0 else UNRESOLVED
        if i == len(parts):
            return Target(Resolution.RESOLVED, dst)
        found = self.find(dst, parts[i])
        if found is None:
            return Target(Resolution.PARTIAL, dst)
        found_path, qname = found
        if qname is None:  # the name is a module re-exported under another name
            if hops >= MAX_HOPS:
                return Target(Resolution.PARTIAL, found_path)
            module = self.module_of[found_path]
            return self.in_module(module, parts[i + 1 :], found_path, hops + 1)
        return self._walk_members(Target(Resolution.RESOLVED, found_path, qname), parts[i + 1 :])
