"""Parsing is deterministic: the same file parsed again in one process gives the same index.

Query captures come back from tree-sitter in no stable order (py-tree-sitter 0.26 gave a
different order on each parse of one file), and extractors that keep the first node they see
(a merged call edge's line, the order of a command's arguments) followed it. Captures are put
in document order when a file is parsed, so the first seen is the first in the file.
"""

from __future__ import annotations

from treeseek.code.model import EdgeType
from treeseek.code.parse import index_file
from treeseek.code.queries import BY_FAMILY
from treeseek.code.source import parse_source

#: many functions, each calling helpers several times: merged call edges with counts
SOURCE = "\n\n".join(
    f"def step{i}(value):\n"
    f"    value = digest(value, {i})\n"
    f"    value = shift(value)\n"
    f"    value = digest(value, {i + 1})\n"
    f"    return self.helper.digest(shift(value))\n"
    for i in range(40)
).encode()


def test_captures_are_in_document_order() -> None:
    src = parse_source("steps.py", "python", SOURCE, BY_FAMILY["python"])
    for capture in src.captures:
        nodes = src.nodes(capture)
        keys = [(n.start_byte, -n.end_byte) for n in nodes]
        assert keys == sorted(keys), capture


def test_the_same_file_parsed_again_gives_the_same_edges() -> None:
    first = index_file("steps.py", SOURCE)
    for _ in range(5):
        assert index_file("steps.py", SOURCE).edges == first.edges
    # a merged call edge records the first call of its source symbol, by line
    lines = SOURCE.decode().splitlines()
    for edge in first.edges:
        if edge.type is EdgeType.CALLS and edge.dst_ref == "digest":
            calls = [
                n
                for n, text in enumerate(lines, 1)
                if "digest(" in text and "self.helper" not in text
            ]
            owner_line = next(
                n for n, text in enumerate(lines, 1) if text.startswith(f"def {edge.src}(")
            )
            assert edge.line == next(n for n in calls if n > owner_line)
            assert edge.lang_payload["count"] == 2
