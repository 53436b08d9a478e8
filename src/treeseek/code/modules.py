"""Path -> module or unit name.

:func:`module_name` sees one path (it is what :func:`treeseek.code.parse.index_file` records).
:func:`python_module_names` sees the whole tree and uses ``__init__.py`` files to find package
roots, which is what Python's import system does; cross-file resolution uses both.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

# Leading directories that hold sources but are not part of the import name.
_SOURCE_ROOTS = ("src", "lib", "python", "source")
_JAVA_ROOTS = ("src/main/java/", "src/test/java/", "src/main/kotlin/", "src/test/kotlin/")
_JS_INDEX = ("index",)


def _strip_ext(path: str) -> str:
    root, _ = posixpath.splitext(path)
    return root


def module_name(path: str, language: str | None) -> str:
    """A dotted module (Python, Java, C#), ``crate::a::b`` (Rust) or path-like unit name."""
    path = path.lstrip("./")
    if language == "python":
        return _python_path_module(path)
    if language in ("java", "csharp"):
        for root in _JAVA_ROOTS:
            if root in path:
                path = path.split(root, 1)[1]
                break
        return _strip_ext(path).replace("/", ".")
    if language == "rust":
        return rust_module(path)
    if language == "go":
        return posixpath.dirname(path) or "."
    if language in ("javascript", "typescript", "tsx"):
        stem = _strip_ext(path)
        if posixpath.basename(stem) in _JS_INDEX:
            return posixpath.dirname(stem) or stem
        return stem
    if language is None:
        return path
    return _strip_ext(path)


def _python_path_module(path: str) -> str:
    parts = _strip_ext(path).split("/")
    if len(parts) > 1 and parts[0] in _SOURCE_ROOTS:
        parts = parts[1:]
    if parts and parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(p for p in parts if p)


def rust_module(path: str) -> str:
    """``src/a/b.rs`` -> ``crate::a::b``; ``mod.rs``/``lib.rs``/``main.rs`` name their directory."""
    parts = _strip_ext(path).split("/")
    if "src" in parts:
        parts = parts[len(parts) - 1 - parts[::-1].index("src") + 1 :]
    if parts and parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return "::".join(["crate", *parts])


def python_module_names(paths: Iterable[str]) -> dict[str, str]:
    """Module name of every ``.py``/``.pyi`` path, from package roots found via ``__init__.py``.

    A file's module is named from the highest directory of an unbroken chain of packages
    (directories with ``__init__.py``) above it: ``src/pkg/a.py`` -> ``pkg.a`` when
    ``src/pkg/__init__.py`` exists; ``tests/app/tests.py`` -> ``app.tests`` when ``tests/`` has
    no ``__init__.py`` but ``tests/app`` does (Django's test layout).
    """
    return {path: module for path, (module, _) in python_module_roots(paths).items()}


def python_module_roots(paths: Iterable[str]) -> dict[str, tuple[str, str]]:
    """``path -> (module, root)``: the module name (see :func:`python_module_names`) and the
    directory it is importable from (``""`` for the tree root, ``"src"``, ``"tests"``...)."""
    py = [p for p in paths if p.endswith((".py", ".pyi"))]
    packages = {
        posixpath.dirname(p) for p in py if posixpath.basename(p) in ("__init__.py", "__init__.pyi")
    }
    out: dict[str, tuple[str, str]] = {}
    for path in py:
        directory = posixpath.dirname(path)
        parts = [posixpath.basename(_strip_ext(path))]
        if parts[0] == "__init__":
            parts = []
        while directory and directory in packages:
            parts.append(posixpath.basename(directory))
            directory = posixpath.dirname(directory)
        if not parts:  # a top-level __init__.py outside any package chain
            parts = [posixpath.basename(posixpath.dirname(path)) or "__init__"]
        out[path] = (".".join(reversed(parts)), directory)
    return out
