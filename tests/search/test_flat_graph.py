"""Query-time signals of the learned ranking over what the code index stores: the import graph
around the question's files (resolution of import references, personalized PageRank) and
symbol BM25 (numpy over the stored symbol documents) as features."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from code_trees import lexical_context, opened
from hypothesis import given, settings
from hypothesis import strategies as st

from treeseek.database import Database
from treeseek.search.base import QueryOptions, SearchContext
from treeseek.search.flat.flat import FlatConfig, FlatRetriever
from treeseek.search.flat.import_graph import ImportResolver, personalized_pagerank
from treeseek.search.flat.learned import FEATURES
from treeseek.search.flat.ltr_weights import LEARNED_MODEL
from treeseek.search.flat.understanding import TreeNames

PATHS = [
    "pkg/__init__.py",
    "pkg/core/__init__.py",
    "pkg/core/engine.py",
    "pkg/core/util.py",
    "pkg/io/reader.py",
    "web/src/api/payments.ts",
    "web/src/components/Form.tsx",
    "include/fmt/core.h",
    "src/format.cc",
    "gson/src/main/java/com/google/gson/Gson.java",
    "gson/src/main/java/com/google/gson/JsonParser.java",
]


@pytest.fixture
def resolver() -> ImportResolver:
    return ImportResolver(TreeNames.build(PATHS))


@pytest.mark.parametrize(
    ("importer", "ref", "expected"),
    [
        ("pkg/core/engine.py", ".util", ["pkg/core/util.py"]),
        ("pkg/core/engine.py", "..io.reader", ["pkg/io/reader.py"]),
        ("pkg/core/engine.py", "pkg.core.util.helper", ["pkg/core/util.py"]),
        ("web/src/components/Form.tsx", "../api/payments", ["web/src/api/payments.ts"]),
        ("web/src/components/Form.tsx", "../api/payments.js", ["web/src/api/payments.ts"]),
        ("src/format.cc", "fmt/core.h", ["include/fmt/core.h"]),
        ("src/format.cc", "core.h", ["include/fmt/core.h"]),
        (
            "gson/src/main/java/com/google/gson/Gson.java",
            "com.google.gson.JsonParser",
            ["gson/src/main/java/com/google/gson/JsonParser.java"],
        ),
        ("pkg/core/engine.py", "os.path", []),
        ("src/format.cc", "stdio.h", []),
        ("web/src/components/Form.tsx", "react", []),
    ],
)
def test_import_references_resolve_to_the_trees_files(
    resolver: ImportResolver, importer: str, ref: str, expected: list[str]
) -> None:
    assert resolver.resolve(importer, ref) == expected


def test_personalized_pagerank_favours_the_neighbours_of_the_restart_nodes() -> None:
    nodes = ["a", "b", "c", "d"]
    links = {"a": ["b"], "b": ["c"]}
    p = personalized_pagerank(nodes, links, {"a": 1.0})
    assert p["a"] > p["b"] > p["c"] > p["d"] == 0.0
    assert sum(p.values()) == pytest.approx(1.0)
    assert set(personalized_pagerank(nodes, links, {}).values()) == {0.0}


def _dense_pagerank(
    nodes: list[str],
    links: dict[str, list[str]],
    restart: dict[str, float],
    damping: float = 0.5,
    iterations: int = 30,
) -> dict[str, float]:
    """The definition, over a dense adjacency matrix (what the sparse walk replaced)."""
    index = {n: i for i, n in enumerate(nodes)}
    n = len(nodes)
    total = sum(w for node, w in restart.items() if node in index and w > 0)
    if n == 0 or total <= 0:
        return dict.fromkeys(nodes, 0.0)
    adj = np.zeros((n, n))
    for src, dsts in links.items():
        for dst in dsts:
            i, j = index.get(src), index.get(dst)
            if i is not None and j is not None and i != j:
                adj[i, j] = adj[j, i] = 1.0
    degree = adj.sum(axis=1)
    walk = np.divide(adj, degree[:, None], out=np.zeros_like(adj), where=degree[:, None] > 0)
    r = np.zeros(n)
    for node, w in restart.items():
        if node in index and w > 0:
            r[index[node]] = w / total
    p = r.copy()
    for _ in range(iterations):
        stuck = float(p[degree == 0].sum())
        p = (1 - damping) * r + damping * (p @ walk + stuck * r)
    return {node: float(p[i]) for node, i in index.items()}


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=0, max_value=40).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.dictionaries(
                st.integers(0, n + 3), st.lists(st.integers(0, n + 3), max_size=6), max_size=n + 4
            ),
            st.dictionaries(
                st.integers(0, n + 3), st.floats(min_value=-1.0, max_value=5.0), max_size=5
            ),
        )
    )
)
def test_the_sparse_pagerank_is_the_dense_definition(
    case: tuple[int, dict[int, list[int]], dict[int, float]],
) -> None:
    """Links to unknown nodes, self links, repeated links, negative or no restart weights:
    the same values as the dense matrix up to the order of float additions."""
    n, raw_links, raw_restart = case
    nodes = [f"f{i}" for i in range(n)]
    links = {f"f{s}": [f"f{d}" for d in ds] for s, ds in raw_links.items()}
    restart = {f"f{k}": w for k, w in raw_restart.items()}
    got = personalized_pagerank(nodes, links, restart)
    want = _dense_pagerank(nodes, links, restart)
    assert got.keys() == want.keys()
    for node in nodes:
        assert got[node] == pytest.approx(want[node], rel=1e-12, abs=1e-15)


FILES = {
    "shop/__init__.py": "",
    "shop/checkout.py": (
        "from .pricing import quote_total\n\n"
        "def checkout(cart):\n"
        '    """Checkout a cart: charge the quoted total."""\n'
        "    return charge(quote_total(cart))\n"
    ),
    "shop/pricing.py": (
        "def quote_total(cart):\n"
        "    return sum(line.amount for line in cart)\n\n"
        "def round_cents(value):\n"
        "    return round(value, 2)\n"
    ),
    "shop/catalog.py": "def list_products(index):\n    return sorted(index)\n",
    "shop/reviews.py": (
        "def moderate_review(text):\n"
        '    """Hide reviews that insult a cart checkout."""\n'
        "    return text\n"
    ),
}

QUERY = "checkout() charges the wrong amount for a cart"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    yield from opened(tmp_path, FILES, db_file="graph.db")


def _ctx(db: Database) -> SearchContext:
    return lexical_context(db)


def _column(db: Database, config: FlatConfig, feature: str) -> dict[str, float]:
    table = FlatRetriever(config).candidate_table(_ctx(db), QUERY)
    col = FEATURES.index(feature)
    return {p: float(table.features[i, col]) for i, p in enumerate(table.paths)}


def test_the_file_the_named_file_imports_gets_the_graph_features(db: Database) -> None:
    config = FlatConfig(ranking="fused", graph=True, graph_anchors=1)
    links = _column(db, config, "graph.link")
    ppr = _column(db, config, "graph.ppr")
    assert links["shop/pricing.py"] == pytest.approx(0.6931, abs=1e-3)  # log1p(1)
    assert ppr["shop/pricing.py"] == 1.0
    assert links.get("shop/reviews.py", 0.0) == 0.0
    assert ppr.get("shop/reviews.py", 0.0) == 0.0
    off = FlatConfig(ranking="fused", graph=False)
    assert set(_column(db, off, "graph.ppr").values()) == {0.0}


def test_symbol_bm25_is_a_feature_and_leaves_the_fused_order_alone(db: Database) -> None:
    on = FlatConfig(ranking="fused", symbols=True)
    norm = _column(db, on, "symbols.norm")
    assert norm["shop/checkout.py"] == 1.0  # its symbol document: checkout, cart, charge
    assert 0.0 < norm["shop/reviews.py"] < 1.0
    assert set(_column(db, FlatConfig(ranking="fused"), "symbols.norm").values()) == {0.0}

    def order(config: FlatConfig) -> list[str]:
        res = FlatRetriever(config).retrieve(_ctx(db), QUERY, QueryOptions(k=20))
        return [f.path for f in res.files]

    assert order(on) == order(FlatConfig(ranking="fused"))
    weighted = order(FlatConfig(ranking="fused", symbols=True, w_symbols=5.0))
    assert weighted.index("shop/reviews.py") < order(on).index("shop/reviews.py")


def test_the_default_ranking_lifts_the_file_the_named_file_imports(db: Database) -> None:
    assert FlatConfig().graph
    assert LEARNED_MODEL.weights[FEATURES.index("graph.ppr")] > 0

    def scores(config: FlatConfig) -> dict[str, float]:
        res = FlatRetriever(config).retrieve(_ctx(db), QUERY, QueryOptions(k=20))
        return {f.path: f.score for f in res.files}

    with_graph = scores(FlatConfig(graph_anchors=1))  # a tiny tree: one anchor
    without = scores(FlatConfig(graph=False, graph_anchors=1))
    # pricing.py (imported by the named checkout.py) gains on reviews.py (no import link)
    lift = with_graph["shop/pricing.py"] / with_graph["shop/reviews.py"]
    assert lift > 1.2 * without["shop/pricing.py"] / without["shop/reviews.py"]
