"""Sections through the budgeted context (select/disclose/expand): a document tree's sections
and a code repository's documentation sections come out as spans with their document's line
numbers, within the budget, like code spans."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import treeseek
from treeseek.database import Database
from treeseek.errors import PathError
from treeseek.index.code_hook import CodeIndexHook
from treeseek.llm import tokens

GUIDE = """\
# Widgets

Widgets are small parts.

## Installing widgets

Run the installer with gunicorn workers.
Check the installer log.

## Tuning widgets

Turn the knobs until the widget hums.

### Knob reference

Knob seven controls humming frequency.
"""

#: a long section: more lines than a small budget holds
LONG = "# Manual\n\n" + "\n".join(f"Filler line {i} about nothing much." for i in range(200))
LONG += "\nThe calibration dial is set to twelve.\n"


def doc_lines(path: Path, start: int, end: int) -> str:
    return "\n".join(path.read_text().split("\n")[start - 1 : end])


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "guide.md").write_text(GUIDE)
    (root / "manual.md").write_text(LONG)
    return root


@pytest.fixture
def db(tmp_path: Path, docs: Path) -> Iterator[Database]:
    database = treeseek.open(tmp_path / "docs.db", hooks=[])
    database.index(docs, name="docs", documents=True)
    try:
        yield database
    finally:
        database.close()


def test_document_sections_are_spans_with_the_document_s_line_numbers(
    db: Database, docs: Path
) -> None:
    ctx = db.query("docs", "installer gunicorn workers", budget=400)
    assert ctx.strategy == "document-flat"
    assert ctx.context, "no spans"
    top = ctx.context[0]
    assert top.path == "guide.md/1-widgets/1-installing-widgets"
    assert (top.start_line, top.end_line) == (5, 8)
    assert top.text == doc_lines(docs / "guide.md", 5, 8)
    assert top.reason == "section"
    for span in ctx.context:
        document = docs / span.path.split("/")[0]
        assert span.text == doc_lines(document, span.start_line, span.end_line)
    assert ctx.budget.used == sum(s.tokens for s in ctx.context) <= 400
    assert ctx.files[0].path == top.path and ctx.files[0].spans == 1


def test_a_long_section_is_cut_to_the_budget_around_its_matching_lines(
    db: Database, docs: Path
) -> None:
    ctx = db.query("docs", "calibration dial twelve", budget=120)
    assert 0 < ctx.budget.used <= 120
    manual = [s for s in ctx.context if s.path.startswith("manual.md/")]
    assert manual, [s.path for s in ctx.context]
    span = manual[0]
    assert "calibration dial" in span.text
    assert span.end_line - span.start_line + 1 < len(LONG.splitlines())
    assert span.text == doc_lines(docs / "manual.md", span.start_line, span.end_line)


def test_a_match_deep_in_a_very_long_section_is_the_window_shown(tmp_path: Path) -> None:
    """A section of thousands of lines (a log, a generated reference) whose only match lies
    far below its heading: the window is around that match, not the section's head."""
    filler = [f"Filler line {i} about nothing much." for i in range(6000)]
    text = "\n".join(["# Journal", "", *filler, "The calibration dial is set to twelve.", *filler])
    (tmp_path / "journal.md").write_text(text + "\n")
    with treeseek.open(tmp_path / "j.db", hooks=[]) as database:
        database.index(tmp_path / "journal.md", name="j")
        ctx = database.query("j", "calibration dial twelve", budget=150)
    [span] = ctx.context
    assert span.path == "journal.md/1-journal"
    assert "calibration dial" in span.text, (span.start_line, span.end_line)
    assert span.text == doc_lines(tmp_path / "journal.md", span.start_line, span.end_line)


def test_expand_cuts_a_long_section_to_a_budget_reading_it_a_few_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """expand --budget of a section (or file) of thousands of lines: the longest first lines
    that fit, found by counting a few prefixes; it counted every prefix, longest first (for
    40,000 lines: minutes of CPU and gigabytes held by the count cache)."""
    lines = [f"Line {i} of the log, with some words about item {i}." for i in range(3000)]
    text = "# Log\n\n" + "\n".join(lines) + "\n"
    (tmp_path / "log.md").write_text(text)
    real = tokens.default_counter()
    measured: list[int] = []

    class Counting(tokens.TokenCounter):
        def _measure(self, text: str) -> int:
            measured.append(len(text))
            return super()._measure(text)

    monkeypatch.setattr(tokens, "_default", Counting(real.encode, real.name))
    with treeseek.open(tmp_path / "l.db", hooks=[]) as database:
        database.index(tmp_path / "log.md", name="l")
        measured.clear()
        [span] = database.expand("l", "log.md/1-log", budget=500).context
    assert span.start_line == 1 and span.tokens <= 500
    assert span.text == doc_lines(tmp_path / "log.md", 1, span.end_line)
    longer = doc_lines(tmp_path / "log.md", 1, span.end_line + 1)
    assert real.count(longer) > 500  # the longest first lines that fit
    assert sum(measured) < 3 * len(text), f"{len(measured)} counts, {sum(measured)} characters"


@pytest.mark.parametrize("level", ["paths", "outline", "spans", "full"])
def test_every_disclosure_level_keeps_the_budget(db: Database, level: str) -> None:
    ctx = db.query("docs", "widget knobs", budget=60, disclose=level)
    assert ctx.budget.used <= 60
    if level == "full":
        for span in ctx.context:
            assert span.start_line >= 1 and span.end_line >= span.start_line


def test_cat_a_section_by_its_document_s_lines(db: Database, docs: Path) -> None:
    whole = db.expand("docs", "guide.md/1-widgets/2-tuning-widgets")
    [span] = whole.context
    assert (span.start_line, span.end_line) == (10, 12)
    assert span.text == doc_lines(docs / "guide.md", 10, 12)
    part = db.expand("docs", "guide.md/1-widgets/2-tuning-widgets:12-12")
    assert [(s.start_line, s.end_line, s.text) for s in part.context] == [
        (12, 12, "Turn the knobs until the widget hums.")
    ]
    with pytest.raises(PathError):
        db.expand("docs", "guide.md/1-widgets/2-tuning-widgets:1-3")  # lines of another section


def test_a_section_s_outline_span_is_what_expand_shows_and_a_margin_widens_it(
    db: Database, docs: Path
) -> None:
    """The outline said 5-9 of a section whose text, as expand, read and search show it, is
    5-8 (9 is the blank line before the next heading), and expand's --margin was ignored on a
    section (its span was clipped to the section's own text)."""
    [guide] = db.outline("docs", "guide.md").files
    for item in guide.items:
        [span] = db.expand("docs", item.name_path).context
        if not any(i.name_path.startswith(item.name_path + "/") for i in guide.items):
            assert (span.start_line, span.end_line) == (item.start_line, item.end_line)
        else:  # a section's own text: up to its first subsection, within its outline span
            assert span.start_line == item.start_line and span.end_line < item.end_line
    [wide] = db.expand("docs", "guide.md/1-widgets/1-installing-widgets", margin=2).context
    assert (wide.path, wide.start_line, wide.end_line) == ("guide.md", 3, 10)
    assert wide.text == doc_lines(docs / "guide.md", 3, 10)
    [part] = db.expand("docs", "guide.md/1-widgets/2-tuning-widgets:12-12", margin=1).context
    assert (part.path, part.start_line, part.end_line) == ("guide.md", 11, 13)
    knob = "guide.md/1-widgets/2-tuning-widgets/1-knob-reference"
    [last] = db.expand("docs", knob, margin=5).context
    assert (last.start_line, last.end_line) == (9, 16)  # clipped to the document
    with pytest.raises(PathError, match="outside"):
        db.expand("docs", "guide.md/1-widgets/2-tuning-widgets:1-3", margin=1)


@pytest.mark.parametrize("lines", ["1-3", "8-11", "12-30", "40-41"])
def test_a_range_outside_a_section_is_named_in_the_document_s_lines(
    db: Database, lines: str
) -> None:
    # before: "bad line range -8--6: line numbers start at 1", "line 31 is past the end of
    # ... (3 lines); give a range within 1-3": the section's own numbers, which nobody typed
    with pytest.raises(PathError) as caught:
        db.lines("docs", "guide.md/1-widgets/2-tuning-widgets", *map(int, lines.split("-")))
    message = str(caught.value)
    assert f"lines {lines} are outside guide.md/1-widgets/2-tuning-widgets" in message
    assert "lines 10-12 of guide.md; give a range within 10-12" in message


REPO = {
    "app/server.py": "def run_server(host, port, workers):\n    return (host, port, workers)\n",
    "docs/deploying.rst": (
        "Deploying\n=========\n\nPick a server.\n\n"
        "Gunicorn\n--------\n\nRun the app with gunicorn workers behind a proxy::\n\n"
        "    gunicorn -w 4 app:app\n\n"
        "Waitress\n--------\n\nWaitress is a pure Python server.\n"
    ),
}


def test_a_code_repository_s_docs_section_is_a_span_within_the_budget(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for rel, text in REPO.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    with treeseek.open(tmp_path / "repo.db", hooks=[CodeIndexHook()]) as db:
        db.index(root, name="repo")
        ctx = db.query("repo", "how do I deploy with gunicorn workers", budget=80)
    assert ctx.budget.used <= 80
    top = ctx.context[0]
    assert top.path == "docs/deploying.rst"
    assert top.start_line <= 9 <= top.end_line  # the Gunicorn section's text line
    lines = REPO["docs/deploying.rst"].split("\n")
    assert top.text == "\n".join(lines[top.start_line - 1 : top.end_line])


def test_the_outline_of_a_document_lists_its_sections_in_the_document_s_lines(
    db: Database,
) -> None:
    # before: "guide.md (N lines)" with N the lines of the stored outline record, and no items
    [guide] = db.outline("docs", "guide.md").files
    assert guide.lines == GUIDE.count("\n")
    assert [(i.name_path, i.signature, i.start_line, i.end_line, i.depth) for i in guide.items] == [
        ("guide.md/1-widgets", "Widgets", 1, 16, 0),
        ("guide.md/1-widgets/1-installing-widgets", "Installing widgets", 5, 8, 1),
        ("guide.md/1-widgets/2-tuning-widgets", "Tuning widgets", 10, 16, 1),
        ("guide.md/1-widgets/2-tuning-widgets/1-knob-reference", "Knob reference", 14, 16, 2),
    ]
    assert {i.kind for i in guide.items} == {"section"}
    [tuning] = db.outline("docs", "guide.md/1-widgets/2-tuning-widgets").files
    assert (tuning.lines, [(i.signature, i.depth) for i in tuning.items]) == (
        7,
        [("Knob reference", 0)],
    )
    assert [f.path for f in db.outline("docs", "").files] == ["guide.md", "manual.md"]


def test_a_document_outline_cut_to_a_budget_says_sections(db: Database) -> None:
    from treeseek.context.outline import cut_outline, render_file_outline
    from treeseek.llm.tokens import default_counter

    [guide] = db.outline("docs", "guide.md").files
    counter = default_counter()
    cut = cut_outline(guide, guide.tokens - 1, counter)
    assert cut is not None and 0 < len(cut.items) < len(guide.items)
    text = render_file_outline(cut.path, cut.lines, cut.items, cut.omitted, cut.unit)
    assert f"... {cut.omitted} more section" in text and "symbol" not in text


def test_a_document_node_reads_as_its_document_s_text(
    db: Database, docs: Path, tmp_path: Path
) -> None:
    """cat / lines / expand of the document itself: its text in its own line numbers (they
    printed the stored outline record, internal JSON)."""
    import subprocess
    import sys

    whole = db.lines("docs", "guide.md")
    assert whole.text == GUIDE.rstrip("\n") and (whole.start_line, whole.end_line) == (1, 16)
    assert db.lines("docs", "guide.md", 10, 12).text == doc_lines(docs / "guide.md", 10, 12)
    [span] = db.expand("docs", "guide.md:14-16").context
    assert span.text == doc_lines(docs / "guide.md", 14, 16)
    manual = db.lines("docs", "manual.md")
    assert manual.text == LONG.rstrip("\n")
    # what the HTTP and MCP servers read (`Service.read`, through `Database.text`)
    from treeseek.service import Service

    read = Service(db).read("docs", "guide.md", 10, 12)
    assert read["text"] == doc_lines(docs / "guide.md", 10, 12) and read["total_lines"] == 16
    db_file = str(tmp_path / "docs.db")  # the fixture's database
    out = subprocess.run(
        [sys.executable, "-m", "treeseek", "cat", "docs", "guide.md", "--db", db_file],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout == GUIDE and "treeseek-outline" not in out.stdout
