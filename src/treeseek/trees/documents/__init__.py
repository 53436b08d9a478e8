"""Document trees: Markdown, reStructuredText, PageIndex JSON, PDF and plain text split into
sections (:mod:`~treeseek.trees.documents.model`), and the section layout of a stored document
tree (:mod:`~treeseek.trees.documents.layout`)."""

from __future__ import annotations

from pathlib import PurePosixPath

from treeseek.errors import BuildError
from treeseek.text.encoding import text_as_utf8
from treeseek.trees.documents.model import LINE, PAGE, Document, Section, fit_line_spans

#: file suffix -> document format
FORMATS: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
    ".rest": "rst",
    ".txt": "rst_or_text",
    ".text": "text",
    ".json": "pageindex",
    ".pdf": "pdf",
}


def document_format(path: str) -> str | None:
    """The format a file is read as, by its suffix (None: not a document)."""
    return FORMATS.get(PurePosixPath(path).suffix.lower())


def parse_document(path: str, data: bytes, *, fmt: str | None = None) -> Document:
    """Parse one document; ``path`` names it in messages and gives its format by suffix.

    Raises :class:`~treeseek.errors.BuildError` with a one-line reason when the document
    cannot be read (malformed JSON, a PDF without outline, an encrypted PDF ...)."""
    name = PurePosixPath(path).name
    fmt = fmt or document_format(path)
    if fmt is None:
        raise BuildError(
            f"{path}: not a known document type (Markdown .md, reST .rst, PageIndex .json,"
            " .pdf, .txt)"
        )
    if fmt == "pdf":
        from treeseek.trees.documents.pdf import parse_pdf

        return parse_pdf(data, name)
    data = text_as_utf8(data) or data  # UTF-16/32 (with its mark) or cp1252 text: as UTF-8
    if fmt == "pageindex":
        from treeseek.trees.documents.pageindex import parse_pageindex

        return parse_pageindex(data, name)
    if b"\x00" in data[:8192]:
        raise BuildError(f"{path}: binary content; not a text document")
    text = data.decode("utf-8-sig", errors="replace")  # a byte order mark is not text
    doc = _parse_text(fmt, text, name)
    fit_line_spans(doc)  # spans of the text as stored: the outline names what expand shows
    return doc


def _parse_text(fmt: str, text: str, name: str) -> Document:
    if fmt == "markdown":
        from treeseek.trees.documents.markdown import parse_markdown

        return parse_markdown(text, name)
    if fmt in ("rst", "rst_or_text"):
        from treeseek.trees.documents.rst import parse_rst

        doc = parse_rst(text, name)
        if fmt == "rst" or doc.preamble is not None or _has_titles(doc):
            return doc
    from treeseek.trees.documents.plain import parse_text

    return parse_text(text, name)


def _has_titles(doc: Document) -> bool:
    return bool(doc.sections) and not doc.warnings


__all__ = ["FORMATS", "LINE", "PAGE", "Document", "Section", "document_format", "parse_document"]
