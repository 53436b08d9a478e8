"""Answers as budgeted context: spans with line numbers, outlines, name paths.

``select`` chooses line spans of ranked files within a token budget, ``disclose`` shows ranked
files at a level (paths, outline, spans, full), ``expand`` shows one item (a symbol, a line
range, a file) without searching again, ``outline`` lists a file's or directory's symbols.
:class:`treeseek.database.Database` exposes them; the JSON shape is documented in
``docs/context.md``.
"""

from treeseek.context.disclose import DEFAULT_BUDGET, disclose, expand, line_span
from treeseek.context.model import (
    SCHEMA,
    Budget,
    Context,
    FileOutline,
    Level,
    Outline,
    OutlineItem,
    RankedFile,
    Span,
)
from treeseek.context.names import ResolvedSymbol, parse_range, resolve_symbol
from treeseek.context.outline import outline
from treeseek.context.select import Selection, plan, select, whole_files
from treeseek.context.source import TreeSource

__all__ = [
    "DEFAULT_BUDGET",
    "SCHEMA",
    "Budget",
    "Context",
    "FileOutline",
    "Level",
    "Outline",
    "OutlineItem",
    "RankedFile",
    "ResolvedSymbol",
    "Selection",
    "Span",
    "TreeSource",
    "disclose",
    "expand",
    "line_span",
    "outline",
    "parse_range",
    "plan",
    "resolve_symbol",
    "select",
    "whole_files",
]
