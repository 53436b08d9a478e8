"""reStructuredText outlines, with section levels assigned as docutils assigns them.

A section title is a line of text with an underline, optionally an overline too, made of one
repeated non-alphanumeric printable ASCII character, at least as long as the title (docutils
accepts a shorter one, with a warning, when it is 4+ characters; so does this parser). Titles
start in column 0 (indented text is a block quote or a directive's body, never a title; an
overlined title may be inset). A *style* is the pair (character, overlined?); levels are given
to styles in the order they are first met, whatever the characters, as docutils does.
A line of 4+ such characters between blank lines is a transition, not a title. Sphinx labels
(``.. _name:``) just above a title are kept as the section's cross-reference targets.
"""

from __future__ import annotations

import re

from treeseek.trees.documents.model import Document, Section, fill_line_spans, nest, text_block

_ADORN_CHARS = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_LABEL = re.compile(r"^\.\.\s+_([^:`][^:]*|`[^`]+`):\s*$")


def _adornment(line: str) -> str | None:
    """The adornment character of ``line`` when it is one repeated punctuation character."""
    s = line.rstrip()
    if len(s) < 2 or s[0] not in _ADORN_CHARS or s != s[0] * len(s):
        return None
    return s[0]


def _title_ok(title: str, underline: str) -> bool:
    t = title.strip()
    if not t or (title[:1].isspace() and title.strip() == ""):
        return False
    return len(underline.rstrip()) >= len(title.rstrip()) or len(underline.rstrip()) >= 4


def parse_rst(text: str, name: str) -> Document:
    lines = text.splitlines()
    n = len(lines)
    styles: list[tuple[str, bool]] = []
    flat: list[Section] = []
    pending_labels: list[str] = []
    i = 0
    while i < n:
        line = lines[i]
        m = _LABEL.match(line)
        if m:
            pending_labels.append(m.group(1).strip("`").strip().lower())
            i += 1
            continue
        ch = _adornment(line)
        # overline + title + underline
        if (
            ch is not None
            and i + 2 < n
            and lines[i + 1].strip()
            and _adornment(lines[i + 2]) == ch
            and len(lines[i + 2].rstrip()) == len(line.rstrip())
            and (i == 0 or not lines[i - 1].strip() or _LABEL.match(lines[i - 1]) is not None)
            and _title_ok(lines[i + 1].strip(), line)
        ):
            title, start = lines[i + 1].strip(), i + 1
            level = _level(styles, (ch, True))
            flat.append(Section(title, level, start, None, labels=pending_labels))
            pending_labels = []
            i += 3
            continue
        # title + underline
        if (
            line.strip()
            and not line[0].isspace()
            and i + 1 < n
            and (ch2 := _adornment(lines[i + 1])) is not None
            and _title_ok(line, lines[i + 1])
            and (
                i == 0
                or not lines[i - 1].strip()
                or _LABEL.match(lines[i - 1]) is not None
                or _adornment(lines[i - 1]) is not None
            )
        ):
            if ch is not None and len(line.rstrip()) >= 4 and ch2 == ch:
                i += 1  # a lone run of punctuation followed by another: not a title
                continue
            level = _level(styles, (ch2, False))
            flat.append(Section(line.strip(), level, i + 1, None, labels=pending_labels))
            pending_labels = []
            i += 2
            continue
        if line.strip():
            pending_labels = []  # a label applies to the next element only
        i += 1
    doc = Document(title=name, format="rst")
    if not flat:
        body, start = text_block(lines, 1, n)
        if not body:
            doc.warnings.append(f"{name}: empty; no sections")
            return doc
        doc.warnings.append(f"{name}: no section titles; indexed as one section")
        doc.sections = [Section(name, 1, start, n, body, n)]
        return doc
    sections = nest(flat)
    first = flat[0].start or 1
    # an overlined title's span starts at its overline
    pre_end = first - 1
    if pre_end >= 1 and _adornment(lines[pre_end - 1]) is not None:
        pre_end -= 1
    pre, start = text_block(lines, 1, pre_end)
    if pre.strip() and not all(_LABEL.match(x) or not x.strip() for x in lines[:pre_end]):
        doc.preamble = Section(name, 1, start, pre_end, pre, pre_end)
    fill_line_spans(sections, lines, n)
    if len(sections) == 1:
        doc.title = sections[0].title
    doc.sections = sections
    return doc


def _level(styles: list[tuple[str, bool]], style: tuple[str, bool]) -> int:
    if style not in styles:
        styles.append(style)
    return styles.index(style) + 1
