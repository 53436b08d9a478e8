"""The document model: a document is an outline of sections, each with its own text.

A :class:`Section` is one heading (or outline entry) of a document: its title, its nesting
level (1 = top), its span in the document (lines for text formats, pages for PDF and
PageIndex, 1-based, inclusive) and its *own* text: the heading and the body up to its first
subsection (a section's subsections hold the rest). Text before the first heading is the
document's ``preamble``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

LINE = "line"
PAGE = "page"


@dataclass(slots=True)
class Section:
    title: str
    level: int
    start: int | None  # first line/page of the section (1-based); None: unknown
    end: int | None  # last line/page, subsections included
    text: str = ""  # own text: the heading and the body up to the first subsection
    own_end: int | None = None  # last line/page of the own text
    summary: str | None = None
    source_id: str | None = None  # an id the source format gave the section (PageIndex)
    labels: list[str] = field(default_factory=list)  # cross-reference targets (reST labels)
    children: list[Section] = field(default_factory=list)

    def walk(self) -> Iterator[Section]:
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(slots=True)
class Document:
    title: str
    format: str  # "markdown" | "rst" | "pageindex" | "pdf" | "text"
    unit: str = LINE  # what spans count: LINE or PAGE
    description: str | None = None
    preamble: Section | None = None  # text before the first heading
    sections: list[Section] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def walk(self) -> Iterator[Section]:
        if self.preamble is not None:
            yield self.preamble
        for s in self.sections:
            yield from s.walk()


def text_block(lines: list[str], start: int, end: int) -> tuple[str, int]:
    """Lines ``start..end`` (1-based, inclusive) without the blank lines around them, and the
    line the text starts on (so a section's own text line ``i`` is line ``first + i - 1`` of
    the document); ``("", start)`` when all are blank."""
    lo, hi = max(start, 1), min(end, len(lines))
    while lo <= hi and not lines[lo - 1].strip():
        lo += 1
    while hi >= lo and not lines[hi - 1].strip():
        hi -= 1
    if lo > hi:
        return "", start
    return "\n".join(lines[lo - 1 : hi]), lo


def nest(flat: list[Section]) -> list[Section]:
    """Nest sections given in document order by level: a section becomes a child of the
    nearest earlier section of a smaller level. Levels are renumbered by depth (a document
    that starts at ``###`` still has top-level sections of level 1)."""
    roots: list[Section] = []
    stack: list[tuple[int, Section]] = []  # (original level, section)
    for s in flat:
        while stack and stack[-1][0] >= s.level:
            stack.pop()
        original = s.level
        s.level = len(stack) + 1
        (stack[-1][1].children if stack else roots).append(s)
        stack.append((original, s))
    return roots


def fill_line_spans(sections: list[Section], lines: list[str], last: int) -> None:
    """Given sections nested in document order whose ``start`` is their heading's first line,
    set ``end``, ``own_end`` and the own ``text`` from ``lines`` (``last``: the document's
    last line)."""
    ordered = [s for root in sections for s in root.walk()]
    starts = [s.start or 1 for s in ordered]
    for i, s in enumerate(ordered):
        own_end = (starts[i + 1] - 1) if i + 1 < len(ordered) else last
        s.own_end = max(own_end, s.start or 1)
        s.text = "\n".join(lines[(s.start or 1) - 1 : s.own_end]).strip("\n")

    def close(s: Section, end: int) -> None:
        s.end = end
        for j, c in enumerate(s.children):
            nxt = s.children[j + 1].start if j + 1 < len(s.children) else None
            close(c, (nxt - 1) if nxt is not None else end)

    for j, root in enumerate(sections):
        nxt = sections[j + 1].start if j + 1 < len(sections) else None
        close(root, (nxt - 1) if nxt is not None else last)


def fit_line_spans(doc: Document) -> None:
    """Make a line-counted document's spans those of the text its sections store: a
    section's ``own_end`` is its own text's last line and its ``end`` the last of its own and
    its subsections' (the blank lines before the next heading belong to no section). The
    outline then names the lines ``expand`` and ``read`` give (they said 16-26 of a section
    whose text, as shown, was 16-24)."""

    def fit(s: Section) -> int | None:
        ends = [fit(c) for c in s.children]
        if s.start is not None:
            s.own_end = s.start + (s.text.count("\n") if s.text else 0)
            ends.append(s.own_end)
        known = [e for e in ends if e is not None]
        if known:
            s.end = max(known)
        return s.end

    if doc.unit != LINE:
        return
    for root in ([doc.preamble] if doc.preamble is not None else []) + doc.sections:
        fit(root)
