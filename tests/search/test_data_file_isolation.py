"""A data file reads no code rows, whichever tree parsed its bytes (both backends).

Code rows are kept per content, but whether a file is parsed depends on its path: a minified
bundle (``static/app.min.js``) is data and never parsed, while the same bytes as
``static/app.js`` in another tree are source and are. Every reader must join a tree's files
to their content's code rows as the index hook decides from the file's own path, so a tree
answers the same alone, or next to such a tree indexed before or after it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import treeseek
from treeseek.database import Database
from treeseek.index.code_hook import CodeIndexHook
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import FileHit, SearchContext
from treeseek.search.flat.flat import FlatConfig, FlatRetriever

BUNDLE = (
    "function renderBasket(basket) {\n"
    "  return basket.items.map(function (item) { return checkoutPrice(item); });\n"
    "}\n\n"
    "function checkoutPrice(item) {\n"
    "  return item.price * item.quantity;\n"
    "}\n"
)
SHOP = (
    '"""The shop."""\n\n\n'
    "def checkout(basket):\n"
    '    """Checkout a basket: the total price of its items."""\n'
    "    return sum(item.price for item in basket)\n"
)
#: the tree whose answers are checked: the bundle is data here
A = {"shop.py": SHOP, "static/app.min.js": BUNDLE}
#: the same bytes as source: parsed, with chunks, symbols and term counts
B = {"static/app.js": BUNDLE, "README.md": "# Frontend\n"}

QUESTIONS = ["checkout price of the basket items", "renderBasket checkoutPrice"]

Location = Callable[[str], Any]


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _open(location: Path | str) -> Database:
    return treeseek.open(location, hooks=[CodeIndexHook(workers=1)])


def _answers(db: Database) -> list[Any]:
    """What tree "a" answers through every reader of the code rows: flat ranking (every
    signal), selected context, the outline, the code graph's files and symbols."""
    out: list[Any] = []
    ctx = SearchContext(
        store=db.store, tree=db.tree("a"), navigator=LexicalNavigator(), caches=db.caches
    )
    for question in QUESTIONS:
        result = db.query("a", question, strategy="flat", k=10, include_content=False)
        out.append([(h.path, h.score, h.evidence) for h in result.files])
        ranking = FlatRetriever(FlatConfig(symbols=True)).rank(ctx, question, 10)
        out.append([(h.path, h.score, h.evidence) for h in ranking.hits])
        bundle = db.node("a", "static/app.min.js")
        hits = [*result.files, FileHit(node_id=bundle.id, path=bundle.path)]
        selected = db.select("a", hits, 2000, query=question)
        out.append((selected.context, selected.symbols, selected.outlines))
    out.append(db.outline("a"))
    graph = db.code_graph("a")
    out.append(
        sorted(
            (p, ix.language, [s.qname for s in ix.symbols], len(ix.edges))
            for p, ix in graph.indexes.items()
        )
    )
    return out


@pytest.mark.parametrize("b_first", [False, True])
def test_a_data_file_reads_no_code_rows_of_the_same_bytes_parsed_elsewhere(
    tmp_path: Path, db_location: Location, b_first: bool
) -> None:
    a_repo = _write(tmp_path / "a", A)
    b_repo = _write(tmp_path / "b", B)
    with _open(db_location("alone")) as db:
        db.index(a_repo, name="a")
        alone = _answers(db)
    order = [("b", b_repo), ("a", a_repo)] if b_first else [("a", a_repo), ("b", b_repo)]
    with _open(db_location("both")) as db:
        for name, repo in order:
            db.index(repo, name=name)
        hashes = {n.content_hash for t in ("a", "b") for n in db.subtree(t) if ".js" in n.path}
        assert len(hashes) == 1  # one content: its code rows are the ones tree "b" parsed
        assert _answers(db) == alone
