"""The code index layers (C0-C3) as data: what parsing a file produces.

Parsing is a pure function of (path, bytes) -> :class:`FileCodeIndex`; storage, cross-file
resolution and retrieval build on these types. Line numbers are 1-based and inclusive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ChunkType(StrEnum):
    SYMBOL_BLOCK = "symbol_block"  # a function, class or method body
    WINDOW = "window"  # 80-line windows with 15 lines overlap for the rest
    SECTION = "section"  # a Markdown/reST section's own text (symbol: its title path)


class SymbolKind(StrEnum):
    CLASS = "class"
    FUNCTION = "function"
    METHOD = "method"
    CONST = "const"


class EdgeType(StrEnum):
    IMPORTS = "imports"
    CALLS = "calls"
    INHERITS = "inherits"


class Resolution(StrEnum):
    RESOLVED = "resolved"  # destination symbol/module found in the tree
    PARTIAL = "partial"  # only a reference string is known


@dataclass(frozen=True, slots=True)
class Chunk:
    """C0: a source chunk."""

    index: int  # chunk index within the file
    type: ChunkType
    start_line: int
    end_line: int
    text: str
    symbol: str | None = None  # qualified name of the symbol block, if any


@dataclass(frozen=True, slots=True)
class Symbol:
    """C1: a symbol of the catalog."""

    qname: str  # qualified within the module: "Class.method"
    name: str
    kind: SymbolKind
    start_line: int
    end_line: int
    signature: str = ""
    decorators: tuple[str, ...] = ()
    docstring: str | None = None
    parent: str | None = None  # qname of the enclosing symbol
    is_entry_candidate: bool = False
    lang_payload: dict[str, Any] = field(default_factory=dict)  # async, visibility, ...


@dataclass(frozen=True, slots=True)
class Edge:
    """C2: a dependency edge as found in one file (before cross-file resolution)."""

    type: EdgeType
    src: str  # qname of the source symbol, or "" for module level
    dst_ref: str  # the reference as written: "os.path.join", "UserService", "..models"
    line: int
    lang_payload: dict[str, Any] = field(default_factory=dict)  # callsite kind, alias, ...


@dataclass(frozen=True, slots=True)
class Entrypoint:
    """C3: an HTTP route or CLI command."""

    entry_type: str  # "http" | "cli"
    framework: str  # "fastapi" | "flask" | "django" | "typer" | "click" | "argparse"
    route_or_command: str
    handler: str | None  # qname of the handler symbol (None for e.g. argparse parsers)
    line: int
    lang_payload: dict[str, Any] = field(default_factory=dict)  # methods, ...


@dataclass(frozen=True, slots=True)
class FileCodeIndex:
    """Everything the code index knows about one file's content."""

    language: str | None  # None: no grammar, window chunks only
    module: str  # dotted module or unit name ("django.db.models.query")
    chunks: tuple[Chunk, ...]
    symbols: tuple[Symbol, ...] = ()
    edges: tuple[Edge, ...] = ()
    entrypoints: tuple[Entrypoint, ...] = ()
    parse_error: str | None = None  # set when parsing failed and windows were used
    package: str | None = None  # package/namespace declared in the file (Java, C#, Go)


def symbol_id(path: str, qname: str) -> str:
    """The tree-wide id of a symbol: ``"pkg/mod.py::Class.method"``."""
    return f"{path}::{qname}"


_REPEAT = re.compile(r"@\d+$")


def first_qname(qname: str) -> str:
    """``qname`` without the ``@2``, ``@3`` of a repeated definition (an overload, an
    ``#ifdef`` alternative): the name calls are written with."""
    return _REPEAT.sub("", qname)


def split_symbol_id(node_id: str) -> tuple[str, str | None]:
    """``(path, qname)`` of a symbol id, ``(path, None)`` of a file id."""
    path, sep, qname = node_id.partition("::")
    return (path, qname) if sep else (path, None)


@dataclass(frozen=True, slots=True)
class ResolvedEdge:
    """C2 after cross-file resolution: an :class:`Edge` with its destination in the tree.

    ``resolved``: the whole reference was found (a module file, or a symbol in one).
    ``partial``: only part of it was, or nothing: ``dst_path``/``dst_symbol`` then point at the
    nearest known target (e.g. the class of ``Model.objects.filter``) or are ``None``
    (third-party and standard-library references).
    """

    type: EdgeType
    src_path: str
    src: str  # qname of the source symbol, "" for module level
    dst_ref: str
    line: int
    resolution: Resolution
    dst_path: str | None = None
    dst_symbol: str | None = None  # qname in dst_path; None: the file/module itself
    lang_payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ResolvedEntrypoint:
    """An :class:`Entrypoint` whose handler reference was looked up in the tree."""

    path: str
    entrypoint: Entrypoint
    handler_path: str | None = None
    handler_symbol: str | None = None
