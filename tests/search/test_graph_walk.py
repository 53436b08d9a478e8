"""The ``traverse`` strategy on a small real repository: flat seeds, a code-graph walk, fusion,
provenance, the node budget, the graph cache, and the fallback for a tree without code index."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import treeseek
from treeseek.database import Database
from treeseek.index.code_hook import CodeIndexHook
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import QueryOptions, SearchContext
from treeseek.search.caches import TreeCaches
from treeseek.search.flat.flat import FlatRetriever
from treeseek.search.graph.walk import GraphWalkRetriever, WalkConfig
from treeseek.search.strategy import run_query, strategies

# ledger.py shares no word with the question: only the call/import from checkout.py reaches it
FILES = {
    "shop/__init__.py": "",
    "shop/checkout.py": (
        "from shop.ledger import settle\n\n"
        "def checkout_cart(cart):\n"
        '    """Checkout a shopping cart: charge the customer for the cart total."""\n'
        "    return settle(cart.total)\n"
    ),
    "shop/ledger.py": "def settle(amount):\n    return round(amount, 2)\n",
    "shop/catalog.py": (
        "def list_products(index):\n"
        '    """Products of the catalog; a customer browses them before checkout."""\n'
        "    return sorted(index)\n"
    ),
    "shop/unrelated.py": "def noise():\n    return 0\n",
}
QUERY = "checkout_cart charges the customer twice for the cart total at checkout"


def _write(root: Path) -> None:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    _write(tmp_path / "repo")
    database = treeseek.open(tmp_path / "walk.db", hooks=[CodeIndexHook()])
    database.index(tmp_path / "repo", name="shop")
    try:
        yield database
    finally:
        database.close()


def _ctx(db: Database, caches: TreeCaches | None = None) -> SearchContext:
    return SearchContext(
        store=db.store,
        tree=db.tree("shop"),
        navigator=LexicalNavigator(),
        caches=caches if caches is not None else TreeCaches(),
    )


def test_a_file_reached_only_through_the_graph_is_added_with_provenance(db: Database) -> None:
    options = QueryOptions(strategy="traverse")
    flat = FlatRetriever().retrieve(_ctx(db), QUERY, options)
    assert flat.files[0].path == "shop/checkout.py"
    assert "shop/ledger.py" not in [h.path for h in flat.files]

    result = GraphWalkRetriever().retrieve(_ctx(db), QUERY, options)
    paths = [h.path for h in result.files]
    assert paths[0] == "shop/checkout.py"  # the seed keeps its place
    assert "shop/ledger.py" in paths
    ledger = result.files[paths.index("shop/ledger.py")]
    walk = ledger.evidence.walk
    assert walk is not None and walk.seed.startswith("shop/checkout.py")
    assert walk.walk_depth >= 1
    assert walk.relation in ("calls", "imports")
    assert walk.direction == "out"
    assert ledger.content is not None and "def settle" in ledger.content
    assert ledger.score is not None and 0 < ledger.score < (result.files[0].score or 0)
    assert "unrelated.py" not in " ".join(paths)
    assert result.strategy == "traverse"
    assert result.trace.params["walked_files"] >= 1


def test_the_node_budget_bounds_the_walk(db: Database) -> None:
    options = QueryOptions(strategy="traverse", include_content=False)
    for budget in (1, 3):
        retriever = GraphWalkRetriever(WalkConfig(node_budget=budget))
        result = retriever.retrieve(_ctx(db), QUERY, options)
        assert result.trace.params["walk_nodes"] <= budget
    # a budget of one commits the best seed only: nothing is walked, flat's files remain
    tight = GraphWalkRetriever(WalkConfig(node_budget=1))
    result = tight.retrieve(_ctx(db), QUERY, options)
    flat = FlatRetriever().retrieve(_ctx(db), QUERY, options)
    assert [h.path for h in result.files] == [h.path for h in flat.files]
    assert all(h.evidence.walk is None for h in result.files)


def test_depth_zero_walks_nowhere_and_k_is_respected(db: Database) -> None:
    retriever = GraphWalkRetriever(WalkConfig(max_depth=0))
    result = retriever.retrieve(_ctx(db), QUERY, QueryOptions(strategy="traverse", k=1))
    assert [h.path for h in result.files] == ["shop/checkout.py"]
    assert result.trace.params["walked_files"] == 0


def test_the_graph_is_built_once_per_tree_version(db: Database, tmp_path: Path) -> None:
    caches = TreeCaches()
    retriever = GraphWalkRetriever()
    options = QueryOptions(strategy="traverse", include_content=False)
    first = retriever.retrieve(_ctx(db, caches), QUERY, options)
    second = retriever.retrieve(_ctx(db, caches), "settle the amount", options)
    assert first.trace.params["graph_built"] and not second.trace.params["graph_built"]
    # re-indexing after a change gives the tree a new version: the graph is rebuilt
    (tmp_path / "repo" / "shop" / "ledger.py").write_text("def settle(amount):\n    return 0\n")
    db.index(tmp_path / "repo", name="shop")
    third = retriever.retrieve(_ctx(db, caches), QUERY, options)
    assert third.trace.params["graph_built"]


def test_a_tree_without_code_index_gets_the_flat_ranking(tmp_path: Path) -> None:
    _write(tmp_path / "repo")
    with treeseek.open(tmp_path / "plain.db", hooks=[]) as plain:
        plain.index(tmp_path / "repo", name="shop")
        options = QueryOptions(strategy="traverse", include_content=False)
        result = GraphWalkRetriever().retrieve(_ctx(plain), QUERY, options)
        flat = FlatRetriever().retrieve(_ctx(plain), QUERY, options)
    assert result.files, "the path signal still ranks files"
    assert [h.path for h in result.files] == [h.path for h in flat.files]
    assert "no code index" in result.trace.stop_reason
    assert all(h.evidence.walk is None for h in result.files)


def test_registered_as_a_strategy(db: Database) -> None:
    assert "traverse" in strategies()
    result = run_query(db.store, db.tree("shop"), QUERY, QueryOptions(strategy="traverse"))
    assert result.strategy == "traverse"
    assert "shop/ledger.py" in [h.path for h in result.files]


def test_head_protection_keeps_flat_order_and_between_fusion_sorts_by_score(
    db: Database,
) -> None:
    options = QueryOptions(strategy="traverse", include_content=False)
    flat = [h.path for h in FlatRetriever().retrieve(_ctx(db), QUERY, options).files]
    protected = GraphWalkRetriever(WalkConfig(protect_head=2))
    head = [h.path for h in protected.retrieve(_ctx(db), QUERY, options).files[:2]]
    assert head == flat[:2]
    between = GraphWalkRetriever(WalkConfig(protect_head=0))
    files = between.retrieve(_ctx(db), QUERY, options).files
    scores = [h.score or 0.0 for h in files]
    assert scores == sorted(scores, reverse=True)
    assert "shop/ledger.py" in [h.path for h in files]
    assert "traverse-between" in strategies()
