"""The answer as budgeted context: typed values in, typed values out, ``to_dict()`` at the edge.

These are what :class:`treeseek.database.Database` returns from ``select``, ``disclose``,
``outline`` and ``expand`` (and what a later MCP / HTTP layer serializes). Line numbers are
1-based and inclusive; ``tokens`` are counted with the project's tokenizer
(:func:`treeseek.llm.tokens.counter_name` says which). The JSON shape is versioned by
:data:`SCHEMA` and documented field by field in ``docs/context.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

#: the version of the JSON shape of :class:`Context` and :class:`Outline` (docs/context.md)
SCHEMA = "treeseek.context/1"


class Level(StrEnum):
    """Progressive disclosure: what an answer shows, cheapest first."""

    PATHS = "paths"  # ranked files with scores and why
    OUTLINE = "outline"  # each ranked file's symbols: signatures, line spans, first doc lines
    SPANS = "spans"  # the selected line ranges with their text
    FULL = "full"  # whole files, best first, until the budget is spent


@dataclass(frozen=True, slots=True)
class Span:
    """Lines ``start_line..end_line`` of ``path`` (1-based, inclusive) and their text."""

    path: str
    start_line: int
    end_line: int
    symbol: str | None  # the name path ("path::Qual.name") the span belongs to, if one
    tokens: int  # tokens of ``text``
    text: str  # the lines, joined by "\n" (no trailing newline)
    #: why the span was chosen: "chunk", "mention", "symbol", "walk", "expand", "file", ...
    reason: str = ""

    @property
    def lines(self) -> int:
        return self.end_line - self.start_line + 1

    def to_dict(self, *, text: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "symbol": self.symbol,
            "tokens": self.tokens,
            "reason": self.reason,
        }
        if text:
            data["text"] = self.text
        return data


@dataclass(frozen=True, slots=True)
class Budget:
    limit: int  # the hard cap on the sum of the returned items' tokens
    used: int  # what the returned items take
    tokenizer: str  # which tokenizer counted

    def to_dict(self) -> dict[str, Any]:
        return {"limit": self.limit, "used": self.used, "tokenizer": self.tokenizer}


@dataclass(frozen=True, slots=True)
class RankedFile:
    """One ranked file of the answer (the ``paths`` level)."""

    path: str
    rank: int  # 1-based
    score: float | None
    why: dict[str, Any]  # the signals that ranked it and their ranks ("files": 1, ...)
    spans: int = 0  # how many spans of the answer come from this file

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "rank": self.rank,
            "score": self.score,
            "why": self.why,
            "spans": self.spans,
        }


@dataclass(frozen=True, slots=True)
class OutlineItem:
    """One symbol of a file's outline."""

    name_path: str  # "path::Qual.name"
    kind: str  # class | function | method | const
    signature: str
    start_line: int
    end_line: int
    doc: str | None  # the first line of its docstring / doc comment
    depth: int  # nesting: 0 top level, 1 a method of a class, ...

    def to_dict(self) -> dict[str, Any]:
        return {
            "name_path": self.name_path,
            "kind": self.kind,
            "signature": self.signature,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "doc": self.doc,
            "depth": self.depth,
        }


@dataclass(frozen=True, slots=True)
class FileOutline:
    path: str
    language: str | None
    lines: int
    tokens: int  # tokens of the outline as text (what it costs an agent to read)
    items: tuple[OutlineItem, ...]
    #: items left out so the outline fits a budget (the best file's, cut to its first items)
    omitted: int = 0
    #: what ``lines`` and the items' spans count: "lines", or "pages" (a PDF or PageIndex
    #: document's sections)
    unit: str = "lines"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "language": self.language,
            "lines": self.lines,
            "tokens": self.tokens,
            "items": [i.to_dict() for i in self.items],
            "omitted": self.omitted,
        }
        if self.unit != "lines":
            out["unit"] = self.unit
        return out


@dataclass(frozen=True, slots=True)
class Outline:
    """The outline of a file or of every code file under a directory."""

    tree: str
    path: str
    files: tuple[FileOutline, ...]
    schema: str = SCHEMA

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "tree": self.tree,
            "path": self.path,
            "files": [f.to_dict() for f in self.files],
        }


@dataclass(slots=True)
class Context:
    """A budgeted answer: what ``query(..., budget=)``, ``disclose`` and ``expand`` return."""

    tree: str
    query: str
    level: Level
    budget: Budget
    files: list[RankedFile] = field(default_factory=list)
    context: list[Span] = field(default_factory=list)  # best first
    symbols: list[str] = field(default_factory=list)  # ranked name paths
    outlines: list[FileOutline] = field(default_factory=list)
    strategy: str = ""
    navigator: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    cost_usd: float | None = None
    schema: str = SCHEMA

    def to_dict(self, *, text: bool = True) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "tree": self.tree,
            "query": self.query,
            "level": str(self.level),
            "budget": self.budget.to_dict(),
            "files": [f.to_dict() for f in self.files],
            "context": [s.to_dict(text=text) for s in self.context],
            "symbols": list(self.symbols),
            "outlines": [o.to_dict() for o in self.outlines],
            "strategy": self.strategy,
            "navigator": self.navigator,
            "usage": dict(self.usage),
            "cost_usd": self.cost_usd,
        }
