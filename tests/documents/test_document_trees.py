"""Document trees end to end: indexing, bad input, dispatch, the retriever's methods."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from treeseek.code.conventions import is_release_notes_path
from treeseek.database import Database
from treeseek.errors import BuildError, ConfigError
from treeseek.llm.base import RankRequest
from treeseek.llm.lexical import LexicalNavigator
from treeseek.llm.scripted import ScriptedNavigator, ScriptedReply
from treeseek.search.document.corpus import SectionCorpus
from treeseek.search.document.retriever import SectionSurfaces, method_for
from treeseek.search.graph.collapsed import (
    DFLT_LEAF_KINDS,
    DFLT_SEED_K,
    DFLT_SUMMARY_KINDS,
    collapsed_tree_policy,
)
from treeseek.search.graph.traverse import DFLT_MAX_DEPTH, traverse
from treeseek.trees.model import TreeSource

GUIDE = """\
# Widgets

Widgets are small parts.

## Installing widgets

Run the installer with gunicorn workers.

## Tuning widgets

Turn the knobs until the widget hums.

### Knob reference

Knob seven controls humming frequency.

# Appendix

Licence text.
"""

FAQ = """\
FAQ
===

Why is the sky blue
-------------------

Rayleigh scattering of sunlight.
"""


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "guide.md").write_text(GUIDE)
    (root / "sub" / "faq.rst").write_text(FAQ)
    (root / "code.py").write_text("print('not a document')\n")
    return root


def test_index_a_document_file(database: Database, docs: Path) -> None:
    report = database.index(docs / "guide.md")
    assert report.tree.source is TreeSource.DOCUMENT and report.tree.name == "guide"
    paths = [n.path for n in database.store.subtree("guide")]
    assert paths == [
        "",
        "guide.md",
        "guide.md/1-widgets",
        "guide.md/1-widgets/1-installing-widgets",
        "guide.md/1-widgets/2-tuning-widgets",
        "guide.md/1-widgets/2-tuning-widgets/1-knob-reference",
        "guide.md/2-appendix",
    ]
    text = database.store.content(
        "guide", database.store.node_by_path("guide", "guide.md/2-appendix").id
    )
    assert text == b"# Appendix\n\nLicence text."
    again = database.index(docs / "guide.md")
    assert (again.added, again.changed, again.unchanged) == (0, 0, 1)


def test_index_a_directory_of_documents(database: Database, docs: Path) -> None:
    report = database.index(docs, name="docs", documents=True)
    assert report.added == 2
    kids = [n.path for n in database.children("docs", "")]
    assert kids == ["sub", "guide.md"]
    assert (
        database.store.node_by_path("docs", "sub/faq.rst/1-faq/1-why-is-the-sky-blue") is not None
    )
    assert database.store.node_by_path("docs", "code.py") is None


def test_a_broken_document_in_a_directory_keeps_its_stored_version(
    database: Database, docs: Path
) -> None:
    (docs / "outline.json").write_text(json.dumps({"title": "T", "children": [{"title": "A"}]}))
    database.index(docs, name="docs", documents=True)
    (docs / "outline.json").write_text("{broken")
    report = database.index(docs, name="docs", documents=True)
    assert any("not valid JSON" in w and "stored version kept" in w for w in report.warnings)
    assert database.store.node_by_path("docs", "outline.json/1-a") is not None


def test_a_broken_single_document_is_an_error_and_changes_nothing(
    database: Database, tmp_path: Path
) -> None:
    doc = tmp_path / "r.json"
    doc.write_text(json.dumps({"doc_name": "r", "structure": [{"title": "A", "text": "a"}]}))
    database.index(doc, name="r")
    before = [n.path for n in database.store.subtree("r")]
    doc.write_text('{"doc_name": "r", "structure": [')
    with pytest.raises(BuildError, match="not valid JSON"):
        database.index(doc, name="r")
    assert [n.path for n in database.store.subtree("r")] == before


def test_documents_from_a_missing_path_or_a_code_file_say_what_is_wrong(
    database: Database, tmp_path: Path
) -> None:
    # before: "documents=True needs a document file or a directory of documents" for both
    with pytest.raises(BuildError, match=r"nope does not exist; give a document file \(\.md"):
        database.index(tmp_path / "nope", name="n", documents=True)
    code = tmp_path / "app.py"
    code.write_text("x = 1\n")
    with pytest.raises(
        BuildError, match=r"app\.py is not a document format; .* without --documents"
    ):
        database.index(code, name="n", documents=True)


def test_a_json_list_of_paths_is_a_path_list_only_through_paths_from(
    database: Database, tmp_path: Path
) -> None:
    listing = tmp_path / "paths.json"
    listing.write_text('["a/b.py", "c.py"]')
    with pytest.raises(BuildError, match="--paths-from"):
        database.index(listing, name="p")
    assert database.index(paths_from=listing, name="p").tree.source is TreeSource.PATH_LIST


def test_flat_returns_sections_with_text_and_spans(database: Database, docs: Path) -> None:
    database.index(docs, name="docs", documents=True)
    result = database.query("docs", "knob seven humming", k=2)
    assert result.strategy == "document-flat"
    top = result.files[0]
    assert top.path == "guide.md/1-widgets/2-tuning-widgets/1-knob-reference"
    assert top.content == "### Knob reference\n\nKnob seven controls humming frequency."
    section = top.evidence.section
    assert section is not None
    assert (section.title, section.level, section.start, section.end, section.unit) == (
        "Knob reference",
        3,
        13,
        15,  # its text's last line (16 is the blank line after it)
        "line",
    )
    assert section.title_path == ["guide.md", "Widgets", "Tuning widgets", "Knob reference"]


def test_collapsed_tree_defaults_are_the_spec_s() -> None:
    assert DFLT_SUMMARY_KINDS == ("description", "synopsis", "capability", "document")
    assert DFLT_LEAF_KINDS == ("chunk", "readme_chunk")
    assert (DFLT_SEED_K, DFLT_MAX_DEPTH) == (10, 2)


def test_collapsed_tree_routes_summaries_to_leaf_sections(database: Database, docs: Path) -> None:
    database.index(docs, name="docs", documents=True)
    result = database.query("docs", "tuning knobs humming", k=3, strategy="collapsed")
    assert result.strategy == "document-collapsed"
    paths = [f.path for f in result.files]
    assert paths[0] == "guide.md/1-widgets/2-tuning-widgets/1-knob-reference"
    corpus = SectionCorpus.load(database.store, database.tree("docs"))
    surfaces = SectionSurfaces.build(corpus)
    hits = traverse("tuning knobs humming", surfaces, policy=collapsed_tree_policy())
    # routers (document and synopsis surfaces with leaves) are never results
    assert all(h.metadata["kind"] == "chunk" for h in hits)
    assert {h.metadata["seed"] for h in hits} & {"synopsis:guide.md/1-widgets/2-tuning-widgets"}


def test_a_leaf_less_summary_is_emitted(database: Database, tmp_path: Path) -> None:
    outline = {
        "doc_name": "r",
        "structure": [
            {
                "node_id": "0001",
                "title": "Revenue",
                "summary": "Revenue grew by a lot.",
                "start_index": 1,
                "end_index": 2,
            },
            {
                "node_id": "0002",
                "title": "Costs",
                "summary": "Costs fell.",
                "start_index": 3,
                "end_index": 3,
                "text": "Costs fell sharply in spring.",
            },
        ],
    }
    doc = tmp_path / "r.json"
    doc.write_text(json.dumps(outline))
    database.index(doc, name="r")
    corpus = SectionCorpus.load(database.store, database.tree("r"))
    hits = traverse("revenue grew", SectionSurfaces.build(corpus), policy=collapsed_tree_policy())
    by_path = {h.path: h.metadata["kind"] for h in hits}
    assert by_path["r.json/0001-revenue"] == "synopsis"  # no text anywhere: emitted itself
    assert by_path.get("r.json/0002-costs") == "chunk"  # has text: the summary only routes
    assert [p for p, k in by_path.items() if k == "synopsis"] == ["r.json/0001-revenue"]


def _navigator(pick: list[str], requests: list[RankRequest]) -> ScriptedNavigator:
    def reply(request: RankRequest) -> ScriptedReply:
        requests.append(request)
        ids = [c.id for c in request.candidates if any(c.path.endswith(p) for p in pick)]
        return ScriptedReply(ids, False)

    return ScriptedNavigator(reply)


@pytest.mark.parametrize("method", ["beam", "block"])
def test_llm_tree_search_over_sections_with_document_prompts(
    database: Database, docs: Path, method: str
) -> None:
    database.index(docs, name="docs", documents=True)
    requests: list[RankRequest] = []
    nav = _navigator(["guide.md", "Widgets", "Tuning widgets", "Knob reference"], requests)
    result = database.query("docs", "knob seven", k=1, strategy=method, navigator=nav)
    assert result.strategy == f"document-{method}"
    assert [f.path for f in result.files] == ["guide.md/1-widgets"]
    assert result.files[0].evidence.section is not None
    shown = "".join(r.message + "".join(s.text for s in r.segments) for r in requests)
    assert "title: guide.md/Widgets" in shown or "title: Widgets" in shown
    assert "source code repository" not in shown


def test_auto_on_a_document_tree_without_llm_is_flat(database: Database, docs: Path) -> None:
    database.index(docs, name="docs", documents=True)
    assert database.query("docs", "sky", strategy="auto").strategy == "document-flat"
    nav = _navigator([], [])
    assert database.query("docs", "sky", navigator=nav).strategy == "document-beam"


def test_reindex_writes_only_what_changed(database: Database, docs: Path) -> None:
    database.index(docs, name="docs", documents=True)
    (docs / "guide.md").write_text(GUIDE.replace("# Appendix\n\nLicence text.\n", ""))
    (docs / "sub" / "faq.rst").unlink()
    report = database.index(docs, name="docs", documents=True)
    assert (report.added, report.changed, report.removed, report.unchanged) == (0, 1, 1, 0)
    assert database.store.node_by_path("docs", "guide.md/2-appendix") is None
    assert database.store.node_by_path("docs", "sub") is None
    assert database.store.node_by_path("docs", "guide.md/1-widgets") is not None


@pytest.mark.parametrize(
    ("strategy", "navigator", "nodes", "method"),
    [
        ("auto", "lexical", 10_000, "flat"),
        ("document", "lexical", 10, "flat"),
        ("auto", "anthropic", 50, "beam"),
        ("auto", "anthropic", 51, "block"),
        ("traverse", "anthropic", 10, "collapsed"),
        ("collapsed", "lexical", 10, "collapsed"),
        ("flat", "anthropic", 10, "flat"),
        ("block", "lexical", 10, "block"),
    ],
)
def test_method_for_a_document_tree(strategy: str, navigator: str, nodes: int, method: str) -> None:
    assert method_for(strategy, navigator, nodes) == method


def test_unknown_strategy_on_a_document_tree_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="unknown strategy 'graph' for a document tree"):
        method_for("graph", "lexical", 10)


def test_release_notes_are_damped_in_flat_ranking(database: Database, tmp_path: Path) -> None:
    root = tmp_path / "docs"
    (root / "releases").mkdir(parents=True)
    (root / "topics.md").write_text("# Caching\n\nThe cache backend stores pages.\n")
    (root / "releases" / "2.0.md").write_text(
        "# Version 2.0\n\nThe cache backend stores pages faster; cache cache backend.\n"
    )
    database.index(root, name="docs", documents=True)
    paths = [f.path for f in database.query("docs", "cache backend pages", strategy="flat").files]
    assert paths[0] == "topics.md/1-caching"
    corpus = SectionCorpus.load(database.store, database.tree("docs"))
    own = [p for p, _ in corpus.bm25("cache backend pages")]
    assert own[0] == "releases/2.0.md/1-version-2-0"  # undamped, the release notes win


def test_release_notes_paths() -> None:
    for path in ("CHANGES.rst", "docs/changelog.md", "HISTORY.txt", "NEWS", "releases/1.6.txt"):
        assert is_release_notes_path(path), path
    for path in ("docs/topics/cache.txt", "docs/howto/release-process.rst", "newsletter.md"):
        assert not is_release_notes_path(path), path


ONE_HEADING = """\
# Guide

Intro text about the guide.

## Install

Run pip install to set it up.

## Configure

Set the options in the config file.

### Advanced tuning

The knob called turbo doubles the speed.
"""


def test_a_document_titled_by_its_heading_has_that_title_once(
    database: Database, tmp_path: Path
) -> None:
    (tmp_path / "guide.md").write_text(ONE_HEADING)
    database.index(tmp_path / "guide.md", name="guide")
    result = database.query("guide", "turbo knob", k=1)
    section = result.files[0].evidence.section
    assert section is not None
    assert section.title_path == ["Guide", "Configure", "Advanced tuning"]


@pytest.mark.parametrize("strategy", ["beam", "block"])
def test_lexical_tree_search_opens_a_one_heading_document(
    database: Database, tmp_path: Path, strategy: str
) -> None:
    """The only candidate under the document is its top section, whose title does not match
    the question: the lexical navigator opens it (a section with subsections is a way down,
    as a directory is) instead of answering nothing."""
    (tmp_path / "guide.md").write_text(ONE_HEADING)
    database.index(tmp_path / "guide.md", name="guide")
    result = database.query(
        "guide", "advanced tuning", k=3, strategy=strategy, navigator=LexicalNavigator()
    )
    assert result.strategy == f"document-{strategy}"
    assert "guide.md/1-guide/2-configure/1-advanced-tuning" in [f.path for f in result.files]


def test_a_utf16_markdown_document_with_a_byte_order_mark_is_read(
    database: Database, tmp_path: Path
) -> None:
    (tmp_path / "wide.md").write_bytes(ONE_HEADING.encode("utf-16"))
    database.index(tmp_path / "wide.md", name="wide")
    top = database.query("wide", "turbo knob", k=1).files[0]
    assert top.path == "wide.md/1-guide/2-configure/1-advanced-tuning"
    assert top.content == "### Advanced tuning\n\nThe knob called turbo doubles the speed."


def test_a_cp1252_markdown_document_is_read_as_its_text(database: Database, tmp_path: Path) -> None:
    text = ONE_HEADING.replace("turbo doubles", "turbo (« très rapide ») doubles")
    (tmp_path / "old.md").write_bytes(text.encode("cp1252"))
    database.index(tmp_path / "old.md", name="old")
    top = database.query("old", "très rapide", k=1).files[0]
    assert top.path == "old.md/1-guide/2-configure/1-advanced-tuning"
    assert top.content is not None and "(« très rapide »)" in top.content


def test_a_tree_of_the_other_kind_is_never_replaced_by_indexing(
    database: Database, docs: Path, tmp_path: Path
) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "app.py").write_text("def run():\n    pass\n")
    database.index(docs / "guide.md", name="guide")
    database.index(code, name="app")
    with pytest.raises(BuildError, match=r"tree 'guide' exists and is a document tree.*rm guide"):
        database.index(code, name="guide")
    with pytest.raises(BuildError, match=r"tree 'app' exists and is not a document tree.*rm app"):
        database.index(docs / "guide.md", name="app")
    assert database.store.tree("guide").source is TreeSource.DOCUMENT
    assert database.store.node_by_path("guide", "guide.md/2-appendix") is not None
    assert database.store.tree("app").source is TreeSource.FILESYSTEM
    assert database.text("app", "app.py") == "def run():\n    pass\n"


def test_a_utf16_pageindex_json_is_read(database: Database, tmp_path: Path) -> None:
    tree = {
        "doc_name": "manual",
        "structure": [
            {
                "node_id": "0001",
                "title": "Intro",
                "start_index": 1,
                "end_index": 2,
                "text": "turbo knobs",
                "nodes": [],
            }
        ],
    }
    (tmp_path / "manual.json").write_bytes(json.dumps(tree).encode("utf-16"))
    database.index(tmp_path / "manual.json", name="manual")
    assert database.query("manual", "turbo knobs", k=1).files[0].content == "turbo knobs"
