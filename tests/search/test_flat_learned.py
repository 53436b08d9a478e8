"""The learned ranking of the flat retriever: features, the shipped model, the reordering."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from code_trees import lexical_context, opened

from treeseek.database import Database
from treeseek.search.base import QueryOptions, SearchContext
from treeseek.search.flat.flat import FlatConfig, FlatRetriever
from treeseek.search.flat.learned import (
    FEATURES,
    TEXT_FEATURES,
    Candidate,
    LinearModel,
    candidate_features,
    counterpart_stem,
    query_words,
)
from treeseek.search.flat.ltr_weights import LEARNED_MODEL

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
    "shop/billing/refund.py": ("def refund(invoice, amount):\n    return invoice.total - amount\n"),
    "shop/catalog/search.py": (
        "def search_products(query, index):\n"
        '    """Full text search over the product catalog."""\n'
        "    return [p for p in index if query in p.name]\n"
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
    "docs/billing.md": "# Billing\n\nInvoices are rendered as PDF, with tax.\n",
}

QUERY = (
    "InvoiceBuilder.apply_tax adds the tax rate twice\n\nThe invoice total is wrong for refunds."
)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    yield from opened(tmp_path, FILES)


def _ctx(db: Database) -> SearchContext:
    return lexical_context(db)


def _ranked(db: Database, config: FlatConfig, query: str = QUERY) -> list[tuple[str, float]]:
    result = FlatRetriever(config).retrieve(_ctx(db), query, QueryOptions(k=50))
    return [(f.path, f.score) for f in result.files]


def test_the_shipped_model_has_a_finite_weight_per_feature() -> None:
    assert LEARNED_MODEL.features == FEATURES
    for column in (LEARNED_MODEL.mean, LEARNED_MODEL.scale, LEARNED_MODEL.weights):
        assert len(column) == len(FEATURES)
        assert all(math.isfinite(v) for v in column)
    assert all(s > 0 for s in LEARNED_MODEL.scale)
    with pytest.raises(ValueError, match="features"):
        LEARNED_MODEL.score(np.zeros((2, len(FEATURES) + 1)))


def test_learned_ranking_is_a_reordering_of_the_fused_files(db: Database) -> None:
    fused = _ranked(db, FlatConfig(ranking="fused"))
    learned = _ranked(db, FlatConfig(ranking="learned"))
    assert sorted(p for p, _ in fused) == sorted(p for p, _ in learned)
    scores = [s for _, s in learned]
    assert scores == sorted(scores, reverse=True)
    assert learned[0][0] == "shop/billing/invoice.py"


def test_files_past_the_learned_depth_keep_their_fused_order(db: Database) -> None:
    fused = [p for p, _ in _ranked(db, FlatConfig(ranking="fused"))]
    learned = [p for p, _ in _ranked(db, FlatConfig(ranking="learned", learned_depth=2))]
    assert len(fused) > 3
    assert sorted(learned[:2]) == sorted(fused[:2])
    assert learned[2:] == fused[2:]
    one = [p for p, _ in _ranked(db, FlatConfig(ranking="learned", learned_depth=1))]
    assert one == fused


def test_a_model_scoring_the_fused_score_alone_keeps_the_fused_order(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    import treeseek.search.flat.flat as flat

    only_fused = LinearModel(
        features=FEATURES,
        mean=tuple(0.0 for _ in FEATURES),
        scale=tuple(1.0 for _ in FEATURES),
        weights=tuple(5.0 if f == "fused.norm" else 0.0 for f in FEATURES),
    )
    monkeypatch.setattr(flat, "LEARNED_MODEL", only_fused)
    fused = [p for p, _ in _ranked(db, FlatConfig(ranking="fused"))]
    learned = [p for p, _ in _ranked(db, FlatConfig(ranking="learned"))]
    assert learned == fused


def test_candidate_table_is_the_fused_head_with_one_row_per_file(db: Database) -> None:
    config = FlatConfig(ranking="fused", learned_depth=4)
    table = FlatRetriever(config).candidate_table(_ctx(db), QUERY)
    fused = [p for p, _ in _ranked(db, config)]
    assert table.paths == fused[:4]
    assert table.features.shape == (4, len(FEATURES))
    col = {f: i for i, f in enumerate(FEATURES)}
    assert table.features[0, col["fused.rr"]] == 1.0
    assert table.features[0, col["fused.norm"]] == 1.0
    invoice = table.paths.index("shop/billing/invoice.py")
    assert table.features[invoice, col["mention.symbol"]] > 0 or (
        table.features[invoice, col["mention.qname"]] > 0
    )


def _cand(path: str, rank: int, fused: float, *, test: bool = False) -> Candidate:
    return Candidate(path, fused, rank, test=test, non_code=False, vendored=False)


def test_candidate_features_from_ranks_scores_mentions_and_paths() -> None:
    cands = [
        _cand("pkg/core/engine.py", 1, 0.5),
        _cand("pkg/core/util.py", 2, 0.25),
        _cand("pkg/other/thing.py", 3, 0.1, test=True),
    ]
    ranks = {"files": {"pkg/core/engine.py": 1, "pkg/other/thing.py": 4}}
    scores = {"files": {"pkg/core/engine.py": 8.0, "pkg/other/thing.py": 2.0}}
    x = candidate_features(
        cands,
        ranks,
        scores,
        {"pkg/other/thing.py": {"symbol": 2}},
        {"pkg/other/thing.py": 3.0},
        rrf_k=20.0,
        words=query_words("the Engine of other modules fails"),
    )
    col = {f: i for i, f in enumerate(FEATURES)}
    assert x.shape == (3, len(FEATURES))
    assert x[0, col["files.rr"]] == 1.0
    assert x[2, col["files.rr"]] == 0.25
    assert x[2, col["files.norm"]] == 0.25
    assert x[2, col["files.rrf"]] == pytest.approx(1 / 24)
    assert x[1, col["files.rr"]] == 0.0  # not ranked by the signal
    assert x[2, col["mention.symbol"]] == pytest.approx(math.log1p(2))
    assert x[2, col["mentions.log"]] == pytest.approx(math.log1p(3.0))
    assert x[:, col["test"]].tolist() == [0.0, 0.0, 1.0]
    assert x[:, col["dir.top"]].tolist() == [0.0, 1.0, 0.0]  # beside the first file
    assert x[:, col["dir.mention"]].tolist() == [0.0, 0.0, 0.0]
    assert x[:, col["stem.named"]].tolist() == [1.0, 0.0, 0.0]  # "engine" is a word
    assert x[:, col["parent.named"]].tolist() == [0.0, 0.0, 1.0]  # "other" is a word
    assert x[:, col["agree.top10"]].tolist() == [1.0, 0.0, 1.0]
    assert x[:, col["agree.top3"]].tolist() == [1.0, 0.0, 0.0]
    assert x[1, col["fused.norm"]] == 0.5


def test_text_match_features_from_the_stored_terms_and_symbols(db: Database) -> None:
    """The question's coverage by each candidate's terms (the file's, its best chunk's), the
    named identifiers it defines, and its test counterpart's fused rank, from the database."""
    table = FlatRetriever(FlatConfig(ranking="fused")).candidate_table(_ctx(db), QUERY)
    col = {f: i for i, f in enumerate(FEATURES)}
    row = {p: table.features[i] for i, p in enumerate(table.paths)}
    invoice, currency = row["shop/billing/invoice.py"], row["shop/billing/currency.py"]
    for f in ("files.cover", "terms.cover", "chunk.cover"):
        assert 0.0 < invoice[col[f]] <= 1.0
        assert invoice[col[f]] > currency[col[f]]
    # InvoiceBuilder, InvoiceBuilder.apply_tax and apply_tax are defined in invoice.py only
    # (the test calls them)
    assert invoice[col["symbols.defined"]] == pytest.approx(math.log1p(3.0))
    assert row["shop/tests/test_invoice.py"][col["symbols.defined"]] == 0.0
    assert currency[col["symbols.defined"]] == 0.0
    # invoice.py and test_invoice.py are each other's counterparts
    rank = {p: i + 1 for i, p in enumerate(table.paths)}
    assert invoice[col["test.pair"]] == pytest.approx(1 / rank["shop/tests/test_invoice.py"])
    assert row["shop/tests/test_invoice.py"][col["test.pair"]] == pytest.approx(
        1 / rank["shop/billing/invoice.py"]
    )
    assert currency[col["test.pair"]] == 0.0


@pytest.mark.parametrize(
    ("path", "stem"),
    [
        ("pkg/tests/test_invoice.py", "invoice"),
        ("pkg/invoice.py", "invoice"),
        ("cmd/server_test.go", "server"),
        ("src/test/java/GsonTest.java", "gson"),
        ("web/cart.spec.ts", "cart"),
        ("tests/tests.rs", "tests"),
    ],
)
def test_test_stem_drops_the_test_affixes(path: str, stem: str) -> None:
    assert counterpart_stem(path) == stem


def test_a_model_weighing_a_text_match_feature_computes_it_at_query_time(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped weights leave the text-match columns out (not computed per query); a model
    that weighs one gets it: a strong negative weight on defining the identifiers the question
    names moves the fused first file, the one defining them, down."""
    import treeseek.search.flat.flat as flat

    fused = [p for p, _ in _ranked(db, FlatConfig(ranking="fused"))]
    assert fused[0] == "shop/billing/invoice.py"
    against = LinearModel(
        features=FEATURES,
        mean=tuple(0.0 for _ in FEATURES),
        scale=tuple(1.0 for _ in FEATURES),
        weights=tuple({"fused.log": 1.0, "symbols.defined": -20.0}.get(f, 0.0) for f in FEATURES),
    )
    assert not LEARNED_MODEL.uses(TEXT_FEATURES) and against.uses(TEXT_FEATURES)
    monkeypatch.setattr(flat, "LEARNED_MODEL", against)
    learned = [p for p, _ in _ranked(db, FlatConfig(ranking="learned"))]
    assert sorted(learned) == sorted(fused)
    assert learned[0] != "shop/billing/invoice.py"
