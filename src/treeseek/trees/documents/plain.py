"""Plain text: the whole file is one section titled by the file name."""

from __future__ import annotations

from treeseek.trees.documents.model import Document, Section, text_block


def parse_text(text: str, name: str) -> Document:
    lines = text.splitlines()
    doc = Document(title=name, format="text")
    body, start = text_block(lines, 1, len(lines))
    if body:
        doc.sections = [Section(name, 1, start, len(lines), body, len(lines))]
    return doc
