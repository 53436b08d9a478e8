"""Python import and name resolution across a tree.

Module names come from the paths (``__init__.py`` package roots, with the path-only name as an
alias), bindings from each file's import edges: ``import a.b`` binds ``a``; ``import a.b as c``
binds ``c`` to ``a.b``; ``from m import n as k`` binds ``k`` to ``m.n`` (a submodule if one
exists, else the name ``n`` in ``m``); ``from m import *`` adds ``m`` to the star list. A name
found in a module follows re-exports (``from .query import QuerySet`` in ``__init__.py``) up to
:data:`~treeseek.code.resolve_base.MAX_HOPS` hops.
"""

from __future__ import annotations

from treeseek.code.model import Edge, EdgeType, Resolution
from treeseek.code.modules import module_name, python_module_names
from treeseek.code.resolve_base import MAX_HOPS, UNRESOLVED, Resolver, Target, TreeFacts

# name -> (absolute module, attribute or None for the module itself)
_Binding = tuple[str, str | None]


class PythonResolver(Resolver):
    self_names = ("self", "cls")
    class_scope_visible = False

    def __init__(self, facts: TreeFacts) -> None:
        super().__init__(facts)
        paths = [p for p, ix in facts.indexes.items() if ix.language == "python"]
        self.module_of = python_module_names(paths)
        self.path_of: dict[str, str] = {}
        for p in sorted(paths, key=len):
            self.path_of.setdefault(self.module_of[p], p)
        for p in sorted(paths, key=len):
            self.path_of.setdefault(module_name(p, "python"), p)
        self.bindings: dict[str, dict[str, _Binding]] = {}
        self.stars: dict[str, list[str]] = {}
        self._find_cache: dict[tuple[str, str], tuple[str, str | None] | None] = {}
        for p in paths:
            self._bind(p)

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

    def _bind(self, path: str) -> None:
        bindings: dict[str, _Binding] = {}
        stars: list[str] = []
        for e in self.facts.indexes[path].edges:
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
        self.bindings[path] = bindings
        self.stars[path] = stars

    # --- imports --------------------------------------------------------------------------

    def resolve_import(self, path: str, edge: Edge) -> Target:
        p = edge.lang_payload
        module = self.absolute(path, str(p.get("module", "")), int(p.get("level", 0)))
        name = p.get("name")
        if name is None or name == "*":
            dst = self.path_of.get(module)
            return Target(Resolution.RESOLVED, dst) if dst else self._nearest_package(module)
        sub = self.path_of.get(f"{module}.{name}")
        if sub is not None:
            return Target(Resolution.RESOLVED, sub)
        dst = self.path_of.get(module)
        if dst is None:
            return UNRESOLVED
        found = self.find(dst, str(name))
        if found is None:
            return Target(Resolution.PARTIAL, dst)
        return Target(Resolution.RESOLVED, found[0], found[1])

    def _nearest_package(self, module: str) -> Target:
        while "." in module:
            module = module.rsplit(".", 1)[0]
            dst = self.path_of.get(module)
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
            binding = self.bindings.get(path, {}).get(name)
            if binding is not None:
                found = self._follow(binding, hops)
            if found is None:
                for star in self.stars.get(path, ()):
                    star_path = self.path_of.get(star)
                    if star_path is not None and star_path != path:
                        found = self.find(star_path, name, hops + 1)
                        if found is not None:
                            break
        self._find_cache[key] = found
        return found

    def _follow(self, binding: _Binding, hops: int) -> tuple[str, str | None] | None:
        module, attr = binding
        if not module and attr is not None:
            module, attr = attr, None
        if attr is None:
            dst = self.path_of.get(module)
            return (dst, None) if dst else None
        sub = self.path_of.get(f"{module}.{attr}")
        if sub is not None:
            return (sub, None)
        dst = self.path_of.get(module)
        return self.find(dst, attr, hops + 1) if dst else None

    def resolve_name(self, path: str, parts: list[str]) -> Target:
        binding = self.bindings.get(path, {}).get(parts[0])
        if binding is not None:
            module, attr = binding
            if attr is None:
                return self.in_module(module, parts[1:])
            return self.in_module(module, [attr, *parts[1:]])
        for star in self.stars.get(path, ()):
            target = self.in_module(star, parts)
            if target.symbol is not None:
                return target
        return UNRESOLVED

    def in_module(self, module: str, parts: list[str], hops: int = 0) -> Target:
        """``parts`` looked up inside ``module``: submodules first, then (re-exported) names."""
        if not module:  # `from . import x` at the top of the tree
            if not parts:
                return UNRESOLVED
            module, parts = parts[0], parts[1:]
        dst = self.path_of.get(module)
        i = 0
        while i < len(parts) and f"{module}.{parts[i]}" in self.path_of:
            module = f"{module}.{parts[i]}"  # submodules, namespace packages included
            dst = self.path_of[module]
            i += 1
        if dst is None:
            return self._nearest_package(module) if hops == 0 else UNRESOLVED
        if i == len(parts):
            return Target(Resolution.RESOLVED, dst)
        found = self.find(dst, parts[i])
        if found is None:
            return Target(Resolution.PARTIAL, dst)
        found_path, qname = found
        if qname is None:  # the name is a module re-exported under another name
            if hops >= MAX_HOPS:
                return Target(Resolution.PARTIAL, found_path)
            return self.in_module(self.module_of[found_path], parts[i + 1 :], hops + 1)
        return self._walk_members(Target(Resolution.RESOLVED, found_path, qname), parts[i + 1 :])
