"""One parsed file as the layer extractors see it: bytes, tree, and the query captures.

Each language has ONE tree-sitter query that captures every node any extractor needs
(definitions, calls, imports, ...). It runs once per file, in C; the extractors then touch only
the captured nodes, never walk the whole tree in Python.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from tree_sitter import Node, QueryCursor

from treeseek.code.languages import ts_parser, ts_query


@dataclass(slots=True)
class Source:
    path: str
    language: str
    data: bytes
    root: Node
    captures: dict[str, list[Node]]
    has_error: bool

    def text(self, node: Node | None) -> str:
        if node is None:
            return ""
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def field_text(self, node: Node, name: str) -> str:
        return self.text(node.child_by_field_name(name))

    def nodes(self, capture: str) -> list[Node]:
        """Captured nodes in document order (:func:`parse_source` orders them)."""
        return self.captures.get(capture, [])

    def sorted_nodes(self, capture: str) -> list[Node]:
        return sorted(self.captures.get(capture, []), key=lambda n: n.start_byte)


def _document_order(node: Node) -> tuple[int, int, int]:
    """By start, an enclosing node before the nodes it encloses."""
    return (node.start_byte, -node.end_byte, node.kind_id)


def parse_source(path: str, language: str, data: bytes, query_text: str) -> Source:
    """Parse ``data`` and run the language's query over it. Each capture's nodes are put in
    document order: tree-sitter returns them in no stable order (py-tree-sitter 0.26 gave
    another order on each parse of one file), and extractors that keep the first node they
    see (the line of a merged call edge) would record different rows for the same bytes."""
    tree = ts_parser(language).parse(data)
    root = tree.root_node
    captures = QueryCursor(ts_query(language, query_text)).captures(root) if query_text else {}
    ordered = {name: sorted(nodes, key=_document_order) for name, nodes in captures.items()}
    return Source(path, language, data, root, ordered, root.has_error)


def line_of(node: Node) -> int:
    """1-based first line of ``node``."""
    return node.start_point[0] + 1


def end_line_of(node: Node) -> int:
    """1-based last line of ``node`` (a node ending at column 0 ends on the line before)."""
    row, col = node.end_point
    if col == 0 and row > node.start_point[0]:
        return row
    return row + 1


def collapse(text: str, limit: int = 300) -> str:
    """Whitespace-collapsed ``text``, cut to ``limit`` characters."""
    out = " ".join(text.split())
    return out if len(out) <= limit else out[: limit - 1] + "…"


@dataclass(slots=True)
class Owners:
    """Maps a byte offset to the innermost enclosing symbol (by qname), or "" at module level."""

    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    qnames: list[str] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)

    @classmethod
    def build(cls, spans: list[tuple[int, int, str]]) -> Owners:
        """``spans``: (start_byte, end_byte, qname), properly nested, any order."""
        spans = sorted(spans, key=lambda s: (s[0], -s[1]))
        owners = cls()
        stack: list[int] = []
        for i, (start, end, qname) in enumerate(spans):
            while stack and owners.ends[stack[-1]] <= start:
                stack.pop()
            owners.starts.append(start)
            owners.ends.append(end)
            owners.qnames.append(qname)
            owners.parents.append(stack[-1] if stack else -1)
            stack.append(i)
        return owners

    def owner(self, offset: int) -> str:
        i = bisect.bisect_right(self.starts, offset) - 1
        while i >= 0:
            if self.ends[i] > offset:
                return self.qnames[i]
            i = self.parents[i]
        return ""
