"""Plain text: the whole file is one section titled by the file name."""

from __future__ import annotations

from treeseek.trees.documents.model import Document, Section


def parse_text(text: str, name: str) -> Document:
    lines = text.splitlines()
    doc = Document(title=name, format="text")
    body = text.strip("\n")
    if body.strip():
        doc.sections = [Section(name, 1, 1, len(lines), body, len(lines))]
    return doc
