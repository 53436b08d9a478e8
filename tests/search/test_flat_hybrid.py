"""The learned ranking in hybrid mode: the vector columns of the candidate table, the model
chosen by mode, and the lexical ranking left as it was."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import treeseek
from treeseek.database import Database
from treeseek.embed.hashing import HashingEmbedder
from treeseek.index.code_hook import OUTLINE_KIND, CodeIndexHook
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import QueryOptions, SearchContext
from treeseek.search.flat.flat import FlatConfig, FlatRetriever
from treeseek.search.flat.learned import (
    FEATURES,
    VECTOR_FEATURES,
    VECTOR_GAP_RANK,
    Candidate,
    LinearModel,
    candidate_features,
)
from treeseek.search.flat.ltr_weights import HYBRID_MODEL, LEARNED_MODEL

FILES = {
    "shop/billing/invoice.py": (
        "class InvoiceBuilder:\n"
        '    """Builds invoices from orders, applying tax rates."""\n\n'
        "    def apply_tax(self, order, rate):\n"
        "        return order.total * (1 + rate)\n"
    ),
    "shop/billing/currency.py": (
        "def convert_currency(amount, rate):\n    return round(amount * rate, 2)\n"
    ),
    "shop/billing/refund.py": "def refund(invoice, amount):\n    return invoice.total - amount\n",
    "shop/catalog/search.py": (
        "def search_products(query, index):\n"
        '    """Full text search over the product catalog."""\n'
        "    return [p for p in index if query in p.name]\n"
    ),
    "shop/catalog/pricing.py": (
        "def price_with_discount(price, discount):\n    return price * (1 - discount)\n"
    ),
    "shop/tests/test_invoice.py": (
        "from shop.billing.invoice import InvoiceBuilder\n\n"
        "def test_apply_tax():\n"
        "    assert InvoiceBuilder().apply_tax(order, 0.2) == 120\n"
    ),
    "web/src/cart.ts": (
        "export function cartTotal(items: Item[]): number {\n"
        "  return items.reduce((sum, i) => sum + i.price * i.quantity, 0);\n"
        "}\n"
    ),
}

#: enough files with vectors for the vector columns (at least VECTOR_GAP_RANK of them)
WORDS = ("shipping", "warehouse", "coupon", "loyalty", "payment", "ledger", "audit", "report")
FILLER = {
    f"shop/ops/{a}_{b}.py": f"def {a}_{b}(order):\n    return order.{a}.{b}\n"
    for a in WORDS[:4]
    for b in (*WORDS[4:], "export", "import", "sync", "check")
}

QUERY = "the invoice tax is applied twice when converting currency\n\nrefund totals are wrong"

COL = {f: i for i, f in enumerate(FEATURES)}


def _indexed(tmp_path: Path, files: dict[str, str]) -> Database:
    root = tmp_path / "repo"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    database = treeseek.open(tmp_path / "hybrid.db", hooks=[CodeIndexHook(HashingEmbedder())])
    database.index(root, name="shop")
    return database


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = _indexed(tmp_path, {**FILES, **FILLER})
    try:
        yield database
    finally:
        database.close()


def _ctx(db: Database) -> SearchContext:
    return SearchContext(store=db.store, tree=db.tree("shop"), navigator=LexicalNavigator())


def _hybrid(config: FlatConfig | None = None) -> FlatRetriever:
    return FlatRetriever(config or FlatConfig(), embedder=HashingEmbedder())


def test_vector_columns_are_the_vector_signals_rank_and_relative_cosine(db: Database) -> None:
    embedder = HashingEmbedder()
    table = _hybrid(FlatConfig(learned_depth=50)).candidate_table(_ctx(db), QUERY)
    assert table.mode == "hybrid"
    nearest = db.store.code().nearest(
        embedder.name, OUTLINE_KIND, embedder.embed([QUERY])[0], 200, None
    )
    cosine = {key.path: s for key, s in nearest}
    rank = {key.path: r for r, (key, _) in enumerate(nearest, start=1)}
    ordered = sorted(cosine.values(), reverse=True)
    assert len(ordered) >= VECTOR_GAP_RANK
    best, floor = ordered[0], ordered[VECTOR_GAP_RANK - 1]
    assert best > floor  # the tree's outlines are not all alike
    seen = 0
    for path, row in zip(table.paths, table.features, strict=True):
        rr, rrf, norm, gap = (row[COL[f]] for f in VECTOR_FEATURES)
        if path not in cosine:  # a test or a file without an outline: no vector
            assert (rr, rrf, norm, gap) == (0.0, 0.0, 0.0, 0.0)
            continue
        seen += 1
        assert rr == pytest.approx(1.0 / rank[path])
        assert rrf == pytest.approx(1.0 / (FlatConfig().rrf_k + rank[path]))
        assert norm == pytest.approx(cosine[path] / best)
        assert gap == pytest.approx(max(0.0, (cosine[path] - floor) / (best - floor)))
    assert seen >= 3
    nearest_path = nearest[0][0].path
    if nearest_path in table.paths:
        row = table.features[table.paths.index(nearest_path)]
        assert row[COL["vectors.gap"]] == 1.0 and row[COL["vectors.norm"]] == 1.0


def test_lexical_mode_leaves_the_vector_columns_zero(db: Database) -> None:
    table = FlatRetriever(FlatConfig()).candidate_table(_ctx(db), QUERY)
    assert table.mode == "lexical"
    cols = [COL[f] for f in VECTOR_FEATURES]
    assert not table.features[:, cols].any()
    # an embedder whose vectors the tree does not hold: lexical too
    other = FlatRetriever(FlatConfig(), embedder=HashingEmbedder(dim=64))
    assert other.candidate_table(_ctx(db), QUERY).mode == "lexical"


def test_a_tree_with_few_vectors_leaves_the_vector_columns_zero(tmp_path: Path) -> None:
    small = _indexed(tmp_path, FILES)  # 6 files with vectors: fewer than VECTOR_GAP_RANK
    try:
        table = _hybrid().candidate_table(_ctx(small), QUERY)
        assert table.mode == "hybrid"
        assert not table.features[:, [COL[f] for f in VECTOR_FEATURES]].any()
    finally:
        small.close()


def test_the_gap_is_relative_to_the_kth_nearest_file() -> None:
    cands = [Candidate(f"f{i}.py", 1.0 / (i + 1), i + 1, False, False, False) for i in range(3)]
    cosines = {f"n{i}.py": 0.5 - 0.01 * i for i in range(VECTOR_GAP_RANK + 10)}
    cosines.update({"f0.py": 0.62, "f1.py": 0.5 - 0.01 * (VECTOR_GAP_RANK - 1) - 0.03})
    ranks = {p: r for r, p in enumerate(sorted(cosines, key=lambda p: -cosines[p]), start=1)}
    x = candidate_features(
        cands, {"vectors": ranks}, {"vectors": cosines}, {}, {}, rrf_k=20.0, words=frozenset()
    )
    floor = sorted(cosines.values(), reverse=True)[VECTOR_GAP_RANK - 1]
    assert x[0, COL["vectors.gap"]] == 1.0 and x[0, COL["vectors.rr"]] == 1.0
    assert x[1, COL["vectors.gap"]] == 0.0  # below the k-th nearest: clipped
    assert x[1, COL["vectors.norm"]] == pytest.approx(cosines["f1.py"] / 0.62)
    assert floor < 0.5
    assert not x[2, [COL[f] for f in VECTOR_FEATURES]].any()  # not ranked by vectors
    few = dict(list(cosines.items())[: VECTOR_GAP_RANK - 1])
    x = candidate_features(
        cands, {"vectors": ranks}, {"vectors": few}, {}, {}, rrf_k=20.0, words=frozenset()
    )
    assert not x[:, [COL[f] for f in VECTOR_FEATURES]].any()


def test_the_shipped_lexical_model_is_unchanged() -> None:
    weights = {f: w for f, w in zip(FEATURES, LEARNED_MODEL.weights, strict=True) if w}
    assert weights == {
        "files.norm": 0.3,
        "title.norm": 0.1,
        "chunks.norm": 0.2,
        "paths.norm": 0.1,
        "fused.log": 1.0,
        "graph.ppr": 0.3,
    }
    assert LEARNED_MODEL.name == "lexical"
    assert not LEARNED_MODEL.uses(VECTOR_FEATURES)
    assert HYBRID_MODEL.features == FEATURES and len(HYBRID_MODEL.weights) == len(FEATURES)


def _ranked(db: Database, retriever: FlatRetriever) -> tuple[list[str], str, str]:
    result = retriever.retrieve(_ctx(db), QUERY, QueryOptions(k=20))
    params = result.trace.params
    return [f.path for f in result.files], params["mode"], params["ranked_by"]


def test_each_mode_ranks_with_its_own_model(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    import treeseek.search.flat.flat as flat

    lexical_before, mode, ranked_by = _ranked(db, FlatRetriever(FlatConfig()))
    assert (mode, ranked_by) == ("lexical", "learned:lexical")
    # a hybrid model that follows the vector gap alone
    by_gap = LinearModel(
        features=FEATURES,
        mean=tuple(0.0 for _ in FEATURES),
        scale=tuple(1.0 for _ in FEATURES),
        weights=tuple(50.0 if f == "vectors.gap" else 0.0 for f in FEATURES),
        name="hybrid",
    )
    monkeypatch.setattr(flat, "HYBRID_MODEL", by_gap)
    hybrid, mode, ranked_by = _ranked(db, _hybrid())
    assert (mode, ranked_by) == ("hybrid", "learned:hybrid")
    table = _hybrid().candidate_table(_ctx(db), QUERY)
    gaps = table.features[:, COL["vectors.gap"]]
    assert hybrid[0] == table.paths[int(np.argmax(gaps))]
    assert hybrid[: len(table.paths)] != table.paths  # the model reordered the fused head
    # lexical mode is untouched by the hybrid model
    lexical_after, mode, ranked_by = _ranked(db, FlatRetriever(FlatConfig()))
    assert lexical_after == lexical_before and ranked_by == "learned:lexical"
    # the fused ranking says so
    _, _, ranked_by = _ranked(db, _hybrid(FlatConfig(ranking="fused")))
    assert ranked_by == "fused"


def test_the_shipped_hybrid_model_ranks_in_hybrid_mode(db: Database) -> None:
    _, mode, ranked_by = _ranked(db, _hybrid())
    assert mode == "hybrid"
    assert ranked_by == f"learned:{HYBRID_MODEL.name}"
