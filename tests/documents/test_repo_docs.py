"""Documentation inside a code repository: Markdown/reST files cut at their headings, and
flat retrieval answering a one-line prose question with a section while code questions rank
as before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import treeseek
from treeseek.code.chunks import section_chunks
from treeseek.code.parse import index_file
from treeseek.database import Database
from treeseek.index.code_hook import CodeIndexHook
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import SearchContext
from treeseek.search.flat.flat import FlatConfig, FlatRetriever, is_prose_question
from treeseek.search.flat.understanding import ParsedQuery

DEPLOY_RST = """\
Deploying
=========

Pick a server.

Gunicorn
--------

Run the app with gunicorn workers behind a proxy::

    gunicorn -w 4 app:app

Waitress
--------

Waitress is a pure Python server.
"""

FILES = {
    "app/server.py": (
        "def run_server(host, port, workers):\n"
        '    """Start the development server with the given workers."""\n'
        "    return (host, port, workers)\n"
    ),
    "app/proxy.py": "class ProxyFix:\n    def __call__(self, environ):\n        return environ\n",
    "docs/deploying.rst": DEPLOY_RST,
    "CHANGES.rst": "Version 2\n---------\n\nDeploy with gunicorn workers is faster.\n",
}


def test_rst_file_chunks_follow_its_sections() -> None:
    chunks = section_chunks("docs/deploying.rst", DEPLOY_RST.splitlines())
    assert chunks is not None
    assert [(c.symbol, c.start_line, c.end_line, c.type.value) for c in chunks] == [
        ("Deploying", 1, 4, "section"),  # without the blank line before the next title
        ("Deploying > Gunicorn", 6, 11, "section"),
        ("Deploying > Waitress", 13, 16, "section"),
    ]
    # the stored chunk index keeps windows: sections are cut at query time, for prose questions
    stored = index_file("docs/deploying.rst", DEPLOY_RST.encode()).chunks
    assert [c.type.value for c in stored] == ["window"]


def test_headingless_docs_and_code_keep_windows() -> None:
    assert section_chunks("notes.md", ["just text"]) is None
    assert section_chunks("app.py", ["# Title", "x = 1"]) is None


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    root = tmp_path / "repo"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    database = treeseek.open(tmp_path / "repo.db", hooks=[CodeIndexHook()])
    database.index(root, name="repo")
    try:
        yield database
    finally:
        database.close()


def test_a_prose_question_gets_the_docs_section(db: Database) -> None:
    result = db.query("repo", "how do I deploy with gunicorn workers", k=3, strategy="flat")
    top = result.files[0]
    assert top.path == "docs/deploying.rst"
    chunk = top.evidence.chunk
    assert chunk is not None and chunk.symbol == "Deploying > Gunicorn"
    assert (chunk.start_line, chunk.end_line) == (6, 11)
    assert "CHANGES.rst" not in [f.path for f in result.files][:1]


def test_code_questions_rank_code_files_as_without_sections(db: Database) -> None:
    question = "run_server ignores workers\nCalling run_server(host, port, workers) drops them"
    assert not is_prose_question(ParsedQuery.parse(question))
    assert not is_prose_question(ParsedQuery.parse("ProxyFix drops the forwarded host"))
    assert not is_prose_question(ParsedQuery.parse("session cookie signing secret key"))
    assert is_prose_question(ParsedQuery.parse("how do I deploy with gunicorn"))
    assert is_prose_question(ParsedQuery.parse("deploying behind a proxy?"))
    with_docs = db.query("repo", question, k=4, strategy="flat")
    ctx = SearchContext(db.store, db.tree("repo"), LexicalNavigator())
    without = FlatRetriever(FlatConfig(w_sections=0.0)).rank(ctx, question, 4).hits
    assert [f.path for f in with_docs.files] == [h.path for h in without]
