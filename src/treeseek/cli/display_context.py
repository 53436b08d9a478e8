"""Contexts, spans and outlines made safe to print: every stored string through ``display_text``.

A span's text keeps its line breaks (each becomes a numbered line) and tabs; every other
control character and bidi override of contents, paths, symbols, signatures and doc lines is
shown as a visible escape, so an indexed file can neither drive the terminal (``\\x1b]0;``
retitles it, ``\\x1b[2J`` clears it) nor fake a line of the answer (a path with a newline).
"""

from __future__ import annotations

from dataclasses import replace

from treeseek.cli.common import display_text
from treeseek.context.model import Context, FileOutline, Outline, OutlineItem, RankedFile, Span


def _name(text: str | None) -> str | None:
    return None if text is None else display_text(text)


def display_span(span: Span) -> Span:
    return replace(
        span,
        path=display_text(span.path),
        symbol=_name(span.symbol),
        text=display_text(span.text, keep_newlines=True),
    )


def _item(item: OutlineItem) -> OutlineItem:
    return replace(
        item,
        name_path=display_text(item.name_path),
        signature=display_text(item.signature),
        doc=_name(item.doc),
    )


def _file_outline(f: FileOutline) -> FileOutline:
    return replace(f, path=display_text(f.path), items=tuple(_item(i) for i in f.items))


def _ranked(f: RankedFile) -> RankedFile:
    return replace(f, path=display_text(f.path))


def display_outline(outline: Outline) -> Outline:
    return replace(outline, files=tuple(_file_outline(f) for f in outline.files))


def display_context(ctx: Context) -> Context:
    return replace(
        ctx,
        files=[_ranked(f) for f in ctx.files],
        context=[display_span(s) for s in ctx.context],
        outlines=[_file_outline(o) for o in ctx.outlines],
    )
