"""C3: the commands a Python package installs, read from its packaging metadata.

``pip install`` turns each console script of a distribution into a command on ``PATH``, so
they are a package's command-line entrypoints as much as its ``@click.command`` functions.
They are declared as ``name = "module:object.attr"`` (the entry-point specification of the
Python packaging guide) in:

* ``pyproject.toml``: ``[project.scripts]``, ``[project.gui-scripts]`` (PEP 621) and
  ``[tool.poetry.scripts]``;
* ``setup.cfg``: the ``console_scripts`` / ``gui_scripts`` keys of ``[options.entry_points]``;
* ``setup.py``: the ``entry_points=`` argument of a ``setup(...)`` call, a dict literal (or a
  module-level name bound to one) whose ``console_scripts`` / ``gui_scripts`` values are lists
  of ``"name = module:object"`` strings or one such string per line.

These files are read when a tree's code graph is built (not when it is indexed), so trees
indexed before this module existed have them too. The handler (``module:object``) is resolved
like an import, from the declaring file: see :func:`treeseek.code.resolve.resolve_files`.
Malformed files give no entrypoints (a broken ``setup.cfg`` is the build's problem, not the
graph's); at most :data:`MAX_SCRIPTS` per file.
"""

from __future__ import annotations

import ast
import configparser
import dataclasses
import posixpath
import re
import tomllib
from collections.abc import Iterator
from typing import Any

from treeseek.code.model import Entrypoint, FileCodeIndex

#: the file names that can declare console scripts
PACKAGING_FILES = frozenset({"pyproject.toml", "setup.cfg", "setup.py"})
#: the frameworks these entrypoints are reported under (resolved as ``module:object`` refs)
PACKAGING_FRAMEWORKS = frozenset({"console_scripts", "gui_scripts", "poetry"})
MAX_SCRIPTS = 1_000
_GROUPS = ("console_scripts", "gui_scripts")
#: ``name = module.path:object.attr [extra1, extra2]`` (the packaging guide's syntax)
_SPEC = re.compile(r"^\s*([^=\s][^=]*?)\s*=\s*([\w.]+)\s*(?::\s*([\w.]+))?\s*(?:\[[^\]]*\])?\s*$")
_REF = re.compile(r"^\s*([\w.]+)\s*(?::\s*([\w.]+))?\s*(?:\[[^\]]*\])?\s*$")


def is_packaging_file(path: str) -> bool:
    return posixpath.basename(path) in PACKAGING_FILES


def packaging_entrypoints(path: str, text: str) -> list[Entrypoint]:
    """The console and GUI scripts ``path`` (a packaging file) declares, in file order."""
    name = posixpath.basename(path)
    if name == "pyproject.toml":
        found = _pyproject(text)
    elif name == "setup.cfg":
        found = _setup_cfg(text)
    elif name == "setup.py":
        found = _setup_py(text)
    else:
        return []
    out: list[Entrypoint] = []
    for framework, command, ref, line in found:
        if len(out) >= MAX_SCRIPTS:
            break
        match = _REF.match(ref)
        if not command or match is None:
            continue
        handler = match.group(1) + (f":{match.group(2)}" if match.group(2) else "")
        entry_type = "gui" if framework == "gui_scripts" else "cli"
        out.append(Entrypoint(entry_type, framework, command, handler, line))
    out.sort(key=lambda e: e.line)
    return out


def with_packaging_entrypoints(index: FileCodeIndex, path: str, data: bytes) -> FileCodeIndex:
    """``index`` of the packaging file ``path`` (stored bytes ``data``) with its scripts
    after the entrypoints its code gave (a ``setup.py`` may also build an argparse parser)."""
    found = packaging_entrypoints(path, data.decode("utf-8", "replace"))
    if not found:
        return index
    return dataclasses.replace(index, entrypoints=(*index.entrypoints, *found))


def split_handler(handler: str) -> tuple[str, list[str]]:
    """``"pkg.mod:Obj.attr"`` -> ``("pkg.mod", ["Obj", "attr"])``; no object: ``[]``."""
    module, _, obj = handler.partition(":")
    return module, [p for p in obj.split(".") if p]


# -- pyproject.toml ----------------------------------------------------------------------


def _pyproject(text: str) -> Iterator[tuple[str, str, str, int]]:
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):  # deep nesting: not ours
        return
    project = _table(data.get("project"))
    poetry = _table(_table(data.get("tool")).get("poetry"))
    tables = (
        ("console_scripts", ("project", "scripts"), _table(project.get("scripts"))),
        ("gui_scripts", ("project", "gui-scripts"), _table(project.get("gui-scripts"))),
        ("poetry", ("tool", "poetry", "scripts"), _table(poetry.get("scripts"))),
    )
    lines = text.splitlines()
    for framework, header, table in tables:
        for command, value in table.items():
            # poetry also takes {reference = "mod:obj", type = "console"}
            ref = value.get("reference") if isinstance(value, dict) else value
            if isinstance(ref, str):
                yield framework, command, ref, _toml_line(lines, header, command, ref)


def _table(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _toml_line(lines: list[str], header: tuple[str, ...], key: str, ref: str) -> int:
    """The 1-based line of ``key`` in table ``header``: in a ``[a.b]`` section (else the
    section's line), as a dotted key ``a.b.key = ...``, else the first line quoting ``ref``
    (an inline table), else 1."""
    section = re.compile(r"^\s*\[\s*" + r"\s*\.\s*".join(map(re.escape, header)) + r"\s*\]")
    bare = re.escape(key)
    key_line = re.compile(r"^\s*(?:" + bare + r'|"' + bare + r'"' + r"|'" + bare + r"')\s*=")
    dotted = re.compile(
        r"^\s*" + r"\s*\.\s*".join(map(re.escape, header)) + r"\s*\.\s*[\"']?" + bare
    )
    start = next((i for i, line in enumerate(lines) if section.match(line)), None)
    if start is not None:
        for i in range(start + 1, len(lines)):
            if lines[i].lstrip().startswith("["):
                break
            if key_line.match(lines[i]):
                return i + 1
        return start + 1
    found = next((i + 1 for i, line in enumerate(lines) if dotted.match(line)), None)
    if found is not None:
        return found
    return next(
        (i + 1 for i, line in enumerate(lines) if f'"{ref}"' in line or f"'{ref}'" in line), 1
    )


# -- setup.cfg ---------------------------------------------------------------------------


def _setup_cfg(text: str) -> Iterator[tuple[str, str, str, int]]:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return
    if not parser.has_section("options.entry_points"):
        return
    lines = text.splitlines()
    for group in _GROUPS:
        value = parser.get("options.entry_points", group, fallback="")
        for spec in value.splitlines():
            match = _SPEC.match(spec)
            if match is not None:
                ref = match.group(2) + (f":{match.group(3)}" if match.group(3) else "")
                yield group, match.group(1), ref, _text_line(lines, spec.strip())


def _text_line(lines: list[str], needle: str) -> int:
    return next((i + 1 for i, line in enumerate(lines) if needle and needle in line), 1)


# -- setup.py ----------------------------------------------------------------------------


def _setup_py(text: str) -> Iterator[tuple[str, str, str, int]]:
    try:
        module = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return
    names: dict[str, ast.expr] = {}  # module-level NAME = <expr>
    for stmt in module.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                names[target.id] = stmt.value
    for node in ast.walk(module):
        if not (isinstance(node, ast.Call) and _called(node.func) == "setup"):
            continue
        for kw in node.keywords:
            if kw.arg != "entry_points":
                continue
            value = kw.value
            if isinstance(value, ast.Name):
                value = names.get(value.id, value)
            if isinstance(value, ast.Dict):
                yield from _setup_dict(value)


def _called(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _setup_dict(value: ast.Dict) -> Iterator[tuple[str, str, str, int]]:
    for key, item in zip(value.keys, value.values, strict=True):
        if not (isinstance(key, ast.Constant) and key.value in _GROUPS):
            continue
        group = str(key.value)
        strings: list[ast.Constant] = []
        if isinstance(item, (ast.List, ast.Tuple)):
            strings = [
                e for e in item.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
            ]
        elif isinstance(item, ast.Constant) and isinstance(item.value, str):
            strings = [item]
        for const in strings:
            for offset, spec in enumerate(str(const.value).splitlines()):
                match = _SPEC.match(spec)
                if match is not None:
                    ref = match.group(2) + (f":{match.group(3)}" if match.group(3) else "")
                    yield group, match.group(1), ref, const.lineno + offset
