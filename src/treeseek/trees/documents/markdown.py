"""Markdown outlines: ATX (``# Title``) and setext (``Title`` over ``===``/``---``) headings,
YAML/TOML front matter skipped (its ``title`` names the document), and fenced code blocks
(backticks or tildes, closed by a fence of the same character at least as long) never read
as headings. Indented code (4+ spaces) is not a heading either, as in CommonMark, nor are the
lines of an HTML comment or of a ``<pre>``/``<script>``/``<style>``/``<textarea>`` block
(CommonMark's HTML blocks of types 1 and 2: commented-out Markdown stays hidden)."""

from __future__ import annotations

import re

from treeseek.trees.documents.model import Document, Section, fill_line_spans, nest, text_block

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_FRONT_TITLE = re.compile(r"""^title\s*[:=]\s*["']?(.*?)["']?\s*$""", re.IGNORECASE)
_HTML_OPEN = re.compile(r"^ {0,3}<(!--|(?:pre|script|style|textarea)(?=[\s>]|$))", re.IGNORECASE)
_BLOCK_START = re.compile(r"^ {0,3}(?:[-+*>]|\d{1,9}[.)]|#|<|\||```|~~~)")


def _front_matter(lines: list[str]) -> tuple[int, str | None]:
    """(lines the front matter takes, its title)."""
    if not lines or lines[0].strip() not in ("---", "+++"):
        return 0, None
    closer = ("---", "...") if lines[0].strip() == "---" else ("+++",)
    for i in range(1, min(len(lines), 500)):
        if lines[i].strip() in closer:
            title = None
            for line in lines[1:i]:
                m = _FRONT_TITLE.match(line)
                if m and m.group(1):
                    title = m.group(1)
                    break
            return i + 1, title
    return 0, None


def parse_markdown(text: str, name: str) -> Document:
    lines = text.splitlines()
    skip, front_title = _front_matter(lines)
    flat: list[Section] = []
    fence: tuple[str, int] | None = None
    html_end: str | None = None  # inside an HTML block that ends at the line holding this
    paragraph = False  # the previous line continues a paragraph (setext underline allowed)
    for i in range(skip, len(lines)):
        line = lines[i]
        if fence is not None:
            m = _FENCE.match(line)
            if (
                m
                and m.group(1)[0] == fence[0]
                and len(m.group(1)) >= fence[1]
                and not m.group(2).strip()
            ):
                fence = None
            continue
        if html_end is not None:
            if html_end in line.lower():
                html_end = None
            continue
        m = _HTML_OPEN.match(line)
        if m:
            tag = m.group(1).lower()
            end = "-->" if tag == "!--" else f"</{tag}>"
            if end not in line[m.end() :].lower():
                html_end = end
            paragraph = False
            continue
        m = _FENCE.match(line)
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = (m.group(1)[0], len(m.group(1)))
            paragraph = False
            continue
        m = _ATX.match(line)
        if m:
            flat.append(Section(_clean(m.group(2) or ""), len(m.group(1)), i + 1, None))
            paragraph = False
            continue
        m = _SETEXT.match(line)
        if m and paragraph and (m.group(1)[0] == "=" or len(m.group(1)) >= 1):
            title_line = lines[i - 1]
            flat.append(
                Section(_clean(title_line.strip()), 1 if m.group(1)[0] == "=" else 2, i, None)
            )
            paragraph = False
            continue
        stripped = line.strip()
        paragraph = bool(stripped) and not line.startswith("    ") and not _BLOCK_START.match(line)
    doc = Document(title=front_title or name, format="markdown")
    last = len(lines)
    if not flat:
        body, start = text_block(lines, skip + 1, last)
        if not body:
            doc.warnings.append(f"{name}: empty; no sections")
            return doc
        doc.warnings.append(f"{name}: no headings; indexed as one section")
        doc.sections = [Section(front_title or name, 1, start, last, body, last)]
        return doc
    sections = nest(flat)
    first = flat[0].start or 1
    if first - 1 > skip:
        pre, start = text_block(lines, skip + 1, first - 1)
        if pre.strip():
            doc.preamble = Section(front_title or name, 1, start, first - 1, pre, first - 1)
    fill_line_spans(sections, lines, last)
    if front_title is None and len(sections) == 1 and sections[0].level == 1:
        doc.title = sections[0].title or name
    doc.sections = sections
    return doc


def _clean(title: str) -> str:
    """A heading's plain title: inline markup that only decorates is dropped."""
    title = re.sub(r"<!--.*?-->", "", title)  # <!-- omit in toc -->
    title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # links -> their text
    title = re.sub(r"[*_`]+", "", title)
    title = re.sub(r"\s*\{#[^}]*\}\s*$", "", title)  # {#custom-id}
    return title.strip()
