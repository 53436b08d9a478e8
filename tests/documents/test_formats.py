"""Document formats: Markdown, reST, PageIndex JSON, plain text and PDF into sections."""

from __future__ import annotations

import json

import pytest

from treeseek.errors import BuildError
from treeseek.trees.documents import Document, Section, parse_document


def outline(doc: Document) -> list[tuple[int, str, int | None, int | None]]:
    return [(s.level, s.title, s.start, s.end) for s in doc.walk() if s is not doc.preamble]


MARKDOWN = """\
---
title: "Field Guide"
tags: [a]
# not a heading: front matter
---
Intro paragraph.

# Install

Run it.

```bash
# a comment, not a heading
pip install x
```

~~~~
## still code
~~~~

    # indented code, not a heading

Setup *Title*
-------------

Configure.

### Deep ###

Deep text.

Other
=====

Last line.
"""


def test_markdown_atx_setext_front_matter_and_fences() -> None:
    doc = parse_document("guide.md", MARKDOWN.encode())
    assert doc.title == "Field Guide"
    assert outline(doc) == [
        (1, "Install", 8, 30),  # to the last line of text (31 is blank)
        (2, "Setup Title", 23, 30),
        (3, "Deep", 28, 30),
        (1, "Other", 32, 35),
    ]
    install = doc.sections[0]
    assert "pip install x" in install.text and "## still code" in install.text
    assert install.own_end == 21  # its last line of text (22 is blank)
    assert doc.preamble is not None and doc.preamble.text == "Intro paragraph."
    assert not doc.warnings


def test_markdown_thematic_break_after_blank_line_is_not_a_heading() -> None:
    doc = parse_document("a.md", b"# A\n\ntext\n\n---\n\nmore\n- item\n---\n")
    assert [s.title for s in doc.walk()] == ["A"]


def test_markdown_html_comments_and_raw_html_blocks_hold_no_headings() -> None:
    """Commented-out Markdown (a README's hidden section) and <pre>/<script>/<style> blocks
    are HTML blocks in CommonMark: their lines are no headings; a comment on a heading's own
    line (``<!-- omit in toc -->``) is not part of its title."""
    text = (
        "# A\n\ntext\n\n<!--\n# commented out\n\n## also out\n-->\n\n"
        "<!-- one line --> more\n\n<pre>\n# pre text\n</pre>\n\n"
        "## B <!-- omit in toc -->\n\nb text\n"
    )
    doc = parse_document("a.md", text.encode())
    assert [(s.level, s.title, s.start) for s in doc.walk()] == [(1, "A", 1), (2, "B", 17)]
    assert "# commented out" in doc.sections[0].text


def test_headingless_markdown_is_one_section_with_a_warning() -> None:
    doc = parse_document("notes.md", b"just some notes\nand more\n")
    assert [(s.title, s.start, s.end) for s in doc.walk()] == [("notes.md", 1, 2)]
    assert "no headings" in doc.warnings[0]


def test_markdown_starting_below_level_one_nests_by_depth() -> None:
    doc = parse_document("a.md", b"### C\n\ntext\n\n#### D\n\n## B\n")
    assert [(s.level, s.title) for s in doc.walk()] == [(1, "C"), (2, "D"), (1, "B")]


RST = """\
.. _top-label:

=============
 The Manual
=============

Intro text.

Chapter One
-----------

Text one.

.. _sec-detail:

Detail
~~~~~~

Detail text::

    Not A Title
    -----------

Chapter Two
-----------

----------

Text two after a transition.

Short
~~~~~

x
"""


def test_rst_levels_follow_the_order_styles_are_met() -> None:
    doc = parse_document("manual.rst", RST.encode())
    assert [(s.level, s.title) for s in doc.walk()] == [
        (1, "The Manual"),
        (2, "Chapter One"),
        (3, "Detail"),
        (2, "Chapter Two"),
        (3, "Short"),
    ]
    assert doc.title == "The Manual"
    manual = doc.sections[0]
    assert manual.labels == ["top-label"]
    assert manual.children[0].children[0].labels == ["sec-detail"]
    assert manual.start == 3  # the overline
    assert "Text two after a transition." in manual.children[1].text


def test_rst_any_adornment_characters() -> None:
    text = "Top\n####\n\nA\n'''\n\nx\n\nB\n'''\n\nSub\n^^^\n\ny\n"
    doc = parse_document("x.rst", text.encode())
    assert [(s.level, s.title) for s in doc.walk()] == [(1, "Top"), (2, "A"), (2, "B"), (3, "Sub")]


PAGEINDEX = {
    "doc_name": "report.pdf",
    "doc_description": "An annual report.",
    "structure": [
        {
            "node_id": "0000",
            "title": "Overview",
            "summary": "What the year was like.",
            "start_index": 1,
            "end_index": 5,
            "nodes": [
                {
                    "node_id": "0001",
                    "title": "Revenue",
                    "start_index": 2,
                    "end_index": 3,
                    "text": "Revenue grew.",
                },
                {"node_id": "0002", "title": "Bad range", "start_index": 4, "end_index": 9},
            ],
        },
        {"node_id": "0003", "title": "Backwards", "start_index": 9, "end_index": 7, "text": "x"},
    ],
}


def test_pageindex_json_keeps_ids_summaries_and_flags_bad_ranges() -> None:
    doc = parse_document("report.json", json.dumps(PAGEINDEX).encode())
    assert doc.title == "report.pdf" and doc.description == "An annual report."
    assert doc.unit == "page"
    got = [(s.source_id, s.title, s.start, s.end) for s in doc.walk()]
    assert got == [
        ("0000", "Overview", 1, 5),
        ("0001", "Revenue", 2, 3),
        ("0002", "Bad range", None, None),
        ("0003", "Backwards", None, None),
    ]
    assert doc.sections[0].summary == "What the year was like."
    assert any("outside its parent" in w for w in doc.warnings)
    assert any("after end_index" in w for w in doc.warnings)


def test_generic_children_form() -> None:
    data = {
        "title": "Book",
        "children": [
            {"title": "Part 1", "children": [{"name": "Ch 1", "content": "one"}]},
            {"heading": "Part 2", "text": "two"},
        ],
    }
    doc = parse_document("book.json", json.dumps(data).encode())
    assert [(s.level, s.title, s.text) for s in doc.walk()] == [
        (1, "Part 1", ""),
        (2, "Ch 1", "one"),
        (1, "Part 2", "two"),
    ]
    assert doc.unit == "none"


def _nested(depth: int) -> bytes:
    """PageIndex JSON with one node per level, ``depth`` levels."""
    open_ = "".join(
        f'{{"title": "t{i}", "start_index": 1, "end_index": 2, "nodes": [' for i in range(depth)
    )
    return f'{{"doc_name": "deep", "structure": [{open_}{"]}" * depth}]}}'.encode()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"doc_name": "x"}', "no outline"),
        (b"42", "no outline"),
        # before: a RecursionError traceback out of json.loads
        (b'{"structure": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
        (_nested(900), "nested too deeply"),
        (_nested(100), "nested deeper than 64 levels"),
    ],
)
def test_malformed_json_is_a_clear_error(data: bytes, message: str) -> None:
    with pytest.raises(BuildError, match=message):
        parse_document("bad.json", data)


def test_plain_text_is_one_section() -> None:
    doc = parse_document("notes.text", b"hello\nworld\n")
    assert [(s.title, s.start, s.end, s.text) for s in doc.walk()] == [
        ("notes.text", 1, 2, "hello\nworld")
    ]


def test_unknown_suffix_is_refused() -> None:
    with pytest.raises(BuildError, match="not a known document type"):
        parse_document("x.docx", b"")


def test_sections_are_plain_dataclasses() -> None:
    s = Section("t", 1, 1, 2)
    assert list(s.walk()) == [s]


def test_awkward_text_documents() -> None:
    # a byte order mark does not hide the first heading
    bom = parse_document("bom.md", "\ufeff# Title\n\nbody\n".encode())
    assert bom.title == "Title" and not bom.warnings
    # Windows line ends
    crlf = parse_document("crlf.md", b"# One\r\n\r\ntext one\r\n\r\n## Two\r\n\r\ntext two\r\n")
    assert outline(crlf) == [(1, "One", 1, 7), (2, "Two", 5, 7)]
    assert crlf.sections[0].children[0].text == "## Two\n\ntext two"
    # the same title twice: two sections, two paths
    dup = parse_document("dup.md", b"# A\n\nx\n\n## Same\n\na\n\n## Same\n\nb\n")
    assert [s.text for s in dup.sections[0].children] == ["## Same\n\na", "## Same\n\nb"]
    # empty documents: no sections, and a warning that says so
    for name in ("empty.md", "empty.rst", "blank.txt"):
        doc = parse_document(name, b"\n\n  \n")
        assert doc.sections == [] and doc.preamble is None, name
    assert parse_document("empty.md", b"").warnings == ["empty.md: empty; no sections"]


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("notes.md", b"\n\n  \nFirst words.\nMore.\n\n"),
        ("notes.rst", b"\n\nFirst words.\nMore.\n"),
        ("notes.text", b"\n\nFirst words.\nMore.\n"),
        ("pre.md", b"\n\nFirst words.\nMore.\n\n# Heading\n\nx\n"),
        ("pre.rst", b"\n\nFirst words.\nMore.\n\nHeading\n=======\n\nx\n"),
    ],
)
def test_own_text_starts_on_the_line_its_span_starts(name: str, data: bytes) -> None:
    doc = parse_document(name, data)
    first = doc.preamble or doc.sections[0]
    assert first.text == "First words.\nMore."
    lines = data.decode().splitlines()
    assert first.start is not None and lines[first.start - 1] == "First words."
