"""PDF documents through their outline (the pdf extra)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pypdf")

from pdfs import make_pdf

import treeseek
from treeseek.errors import BuildError
from treeseek.trees.documents import parse_document
from treeseek.trees.documents.pdf import parse_pdf

PAGES = ["Cover page", "Intro about widgets", "Install the widget", "Tuning knobs", "Index"]
OUTLINE = [("Introduction", 2, [("Installing", 3), ("Tuning", 4)]), ("Index", 5, [])]


def test_outline_gives_sections_with_page_spans_and_text() -> None:
    doc = parse_document("manual.pdf", make_pdf(PAGES, OUTLINE))
    assert doc.unit == "page"
    got = [
        (s.level, s.title, s.start, s.end, s.own_end) for s in doc.walk() if s is not doc.preamble
    ]
    assert got == [
        (1, "Introduction", 2, 4, 2),
        (2, "Installing", 3, 3, 3),
        (2, "Tuning", 4, 4, 4),
        (1, "Index", 5, 5, 5),
    ]
    assert "Install the widget" in doc.sections[0].children[0].text
    assert doc.preamble is not None and "Cover page" in doc.preamble.text


def test_no_outline_is_a_clear_error() -> None:
    with pytest.raises(BuildError, match="no outline"):
        parse_document("flat.pdf", make_pdf(["just text"]))


def test_encrypted_pdf_with_a_password_is_refused() -> None:
    with pytest.raises(BuildError, match="encrypted"):
        parse_document("secret.pdf", make_pdf(PAGES, OUTLINE, password="pw"))


def test_broken_pdf_is_refused() -> None:
    data = make_pdf(PAGES, OUTLINE)
    with pytest.raises(BuildError, match="PDF"):
        parse_document("broken.pdf", data[: len(data) // 3])
    with pytest.raises(BuildError, match="PDF"):
        parse_document("garbage.pdf", b"%PDF-1.4\nthis is not a pdf at all")


def test_too_many_pages_is_refused_with_the_limit() -> None:
    with pytest.raises(BuildError, match="more than the limit of 3") as caught:
        parse_pdf(make_pdf(PAGES, OUTLINE), "big.pdf", max_pages=3)
    # before: "raise the limit (max_pages)", which no command can do
    assert "max_pages" not in str(caught.value)
    assert "split it into parts of at most 3 pages" in str(caught.value)


def test_pdf_sections_come_out_of_the_budgeted_context_numbered_within_the_section(
    tmp_path: Path,
) -> None:
    (tmp_path / "manual.pdf").write_bytes(make_pdf(PAGES, OUTLINE))
    with treeseek.open(tmp_path / "pdf.db", hooks=[]) as db:
        db.index(tmp_path / "manual.pdf", name="manual")
        ctx = db.query("manual", "tuning knobs", budget=200)
    assert ctx.context and ctx.budget.used <= 200
    top = ctx.context[0]
    assert top.path.startswith("manual.pdf/") and "Tuning knobs" in top.text
    # pages are not lines: a PDF section's span numbers the lines of its own text
    assert top.start_line == 1 and top.reason == "section"
