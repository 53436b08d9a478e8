"""Documentation sections as retrieval items: document trees, and code trees whose code layers
find nothing (``fallback_to_docs_when_code_empty``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import treeseek
from treeseek.database import Database
from treeseek.errors import ConfigError
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import SearchContext
from treeseek.search.document.items import (
    DOCS_LAYER,
    MAX_CONTENT_CHARS,
    retrieve_with_docs,
)
from treeseek.search.graph.items import retrieve_items

GUIDE = """# Guide

Intro to the guide.

## Tuning the knobs

Set the knobs for speed and memory.

## Deployment

Run the service with gunicorn behind nginx, four workers.
"""

README = """# Demo

A tiny adder.

## Deployment

Deploy the adder with gunicorn workers behind a reverse proxy.

## Configuration

Settings live in environment variables.
"""


def _ctx(db: Database, tree: str) -> SearchContext:
    return SearchContext(
        store=db.store, tree=db.tree(tree), navigator=LexicalNavigator(), caches=db.caches
    )


@pytest.fixture
def db(tmp_path: Path) -> Database:
    guide = tmp_path / "guide.md"
    guide.write_text(GUIDE + "\n## Appendix\n\n" + "gunicorn tuning words " * 400 + "\n")
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "core.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "README.md").write_text(README)
    database = treeseek.open(tmp_path / "d.db")
    database.index(guide, name="guide")
    database.index(repo, name="repo")
    return database


def test_a_document_tree_answers_with_its_best_sections(db: Database) -> None:
    try:
        found = retrieve_with_docs(_ctx(db, "guide"), "how do I deploy with nginx?", limit=3)
        assert found.fallback == "docs"
        first = found.items[0]
        assert first.layer == DOCS_LAYER and first.source == "guide.md"
        assert first.title == "Guide > Deployment"
        # the document's own lines: the heading to its last line of text (before the blank
        # line and the next heading)
        assert (first.start_line, first.end_line) == (9, 11)
        lines = (GUIDE + "\n## Appendix").splitlines()
        assert (lines[8], lines[11], lines[12]) == ("## Deployment", "", "## Appendix")
        assert "gunicorn behind nginx" in first.content
        assert first.metadata["artifact_type"] == "DOC"
        assert first.metadata["title_path"] == ["Guide", "Deployment"]
        assert isinstance(first.score, float) and first.score > 0
        assert len(found.items) <= 3
        # the code layers have nothing on a document tree: the same sections whatever is asked
        only = retrieve_with_docs(
            _ctx(db, "guide"), "how do I deploy with nginx?", layers=["C1_SYMBOL_CATALOG"]
        )
        assert only.items[0] == first
    finally:
        db.close()


def test_a_long_section_is_cut_and_says_so(db: Database) -> None:
    try:
        found = retrieve_with_docs(_ctx(db, "guide"), "gunicorn tuning words", limit=8)
        appendix = next(i for i in found.items if i.title == "Guide > Appendix")
        assert len(appendix.content) == MAX_CONTENT_CHARS
        assert appendix.metadata["truncated"] is True
        assert all(not i.metadata["truncated"] for i in found.items if i is not appendix)
        nothing = retrieve_with_docs(_ctx(db, "guide"), "zzzqx", limit=8)
        assert nothing.items == [] and nothing.fallback is None
    finally:
        db.close()


def test_a_code_tree_falls_back_to_its_docs_only_when_the_code_layers_find_nothing(
    db: Database,
) -> None:
    try:
        question = "how do I deploy with gunicorn?"
        ctx = _ctx(db, "repo")
        assert retrieve_items(ctx, question, layers=["C1_SYMBOL_CATALOG"]) == []
        found = retrieve_with_docs(ctx, question, layers=["C1_SYMBOL_CATALOG"])
        assert found.fallback == "docs"
        first = found.items[0]
        assert (first.layer, first.source, first.title) == (
            DOCS_LAYER,
            "README.md",
            "Demo > Deployment",
        )
        assert (first.start_line, first.end_line) == (5, 7)
        assert README.splitlines()[4] == "## Deployment"
        assert first.content.startswith("## Deployment") and "reverse proxy" in first.content
        assert first.metadata["artifact_type"] == "DOC"
        # code layers that answer keep their items, unchanged and without a fallback
        code = retrieve_with_docs(ctx, "add", layers=["C1_SYMBOL_CATALOG"])
        assert code.fallback is None
        assert code.items == retrieve_items(ctx, "add", layers=["C1_SYMBOL_CATALOG"])
        assert code.items and code.items[0].layer == "C1_SYMBOL_CATALOG"
        with pytest.raises(ConfigError, match="unknown layer"):
            retrieve_with_docs(_ctx(db, "guide"), "x", layers=["C9"])
    finally:
        db.close()


def test_docs_asked_for_alone_are_the_sections_without_a_fallback(db: Database) -> None:
    """``layers=["DOCS"]``: the documentation sections directly, on a code tree whose code
    layers would answer too and on a document tree; nothing fell back, so no ``fallback``."""
    try:
        question = "how do I deploy with gunicorn?"
        code_tree = retrieve_with_docs(_ctx(db, "repo"), question, layers=[DOCS_LAYER])
        assert code_tree.fallback is None
        assert [i.layer for i in code_tree.items] == [DOCS_LAYER] * len(code_tree.items)
        assert code_tree.items[0].title == "Demo > Deployment"
        # the same sections the fallback gives, in the same order
        fell = retrieve_with_docs(_ctx(db, "repo"), question, layers=["C1_SYMBOL_CATALOG"])
        assert code_tree.items == fell.items
        # "add" is answered by code, but DOCS asks for documentation only
        add = retrieve_with_docs(_ctx(db, "repo"), "the adder", layers=[DOCS_LAYER])
        assert add.items and {i.metadata["artifact_type"] for i in add.items} == {"DOC"}
        doc_tree = retrieve_with_docs(
            _ctx(db, "guide"), "how do I deploy with nginx?", layers=[DOCS_LAYER], limit=2
        )
        assert doc_tree.fallback is None and doc_tree.items[0].title == "Guide > Deployment"
        assert len(doc_tree.items) <= 2
    finally:
        db.close()


def test_docs_with_code_layers_or_no_layer_at_all_is_a_clear_error(db: Database) -> None:
    try:
        with pytest.raises(ConfigError, match="DOCS is asked for alone"):
            retrieve_with_docs(_ctx(db, "repo"), "x", layers=["C1_SYMBOL_CATALOG", DOCS_LAYER])
        with pytest.raises(ConfigError, match="no layer"):
            retrieve_with_docs(_ctx(db, "repo"), "x", layers=[])
    finally:
        db.close()
