"""The rerank strategy with a scripted navigator: order applied, fallback, budget, outlines."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import treeseek
from treeseek.database import Database
from treeseek.errors import LLMError
from treeseek.index.code_hook import CodeIndexHook
from treeseek.llm.base import Navigator, RankReply, RankRequest, Usage, add_usage_spent
from treeseek.llm.lexical import LexicalNavigator
from treeseek.llm.scripted import ScriptedNavigator, ScriptedReply
from treeseek.llm.tokens import count_tokens
from treeseek.search.base import QueryOptions, SearchContext
from treeseek.search.flat.flat import FlatRetriever
from treeseek.search.rerank import INSTRUCTIONS, RerankConfig, RerankRetriever
from treeseek.search.strategy import BUILTIN_STRATEGIES, run_query

FILES = {
    "shop/billing/invoice.py": (
        "class InvoiceBuilder:\n"
        "    def apply_tax(self, order, rate: float) -> float:\n"
        "        return order.total * (1 + rate)\n\n"
        "    def render_pdf(self, invoice):\n"
        "        return b'%PDF'\n"
    ),
    "shop/billing/currency.py": (
        "def convert_currency(amount, rate):\n    return round(amount * rate, 2)\n"
    ),
    "shop/billing/tax.py": "TAX_RATE = 0.2\n\ndef tax_rate(order):\n    return TAX_RATE\n",
    "shop/catalog/search.py": (
        "def search_products(query, index):\n    return [p for p in index if query in p.name]\n"
    ),
    "shop/orders.py": "class Order:\n    def total(self):\n        return 100  # tax rate\n",
}
QUERY = "invoice tax rate applied twice to the order total"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    root = tmp_path / "repo"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    database = treeseek.open(tmp_path / "rerank.db", hooks=[CodeIndexHook()])
    database.index(root, name="shop")
    try:
        yield database
    finally:
        database.close()


def _ctx(db: Database, nav: Navigator) -> SearchContext:
    return SearchContext(store=db.store, tree=db.tree("shop"), navigator=nav)


def _flat_order(db: Database) -> list[str]:
    result = FlatRetriever().retrieve(_ctx(db, LexicalNavigator()), QUERY, QueryOptions(k=20))
    return [f.path for f in result.files]


def _paths(result: treeseek.search.base.Result) -> list[str]:
    return [f.path for f in result.files]


def test_rerank_is_a_registered_strategy() -> None:
    assert "rerank" in BUILTIN_STRATEGIES


def test_order_applied_and_left_out_files_keep_flat_order(db: Database) -> None:
    flat = _flat_order(db)
    assert len(flat) >= 3
    # the navigator names files by path (resolved to the call's ids) and leaves some out
    wanted = [flat[2], flat[0]]
    nav = ScriptedNavigator([ScriptedReply(wanted, done=True, usage=Usage(calls=1))])
    result = RerankRetriever().retrieve(_ctx(db, nav), QUERY, QueryOptions(k=10))
    assert _paths(result)[:2] == wanted
    assert _paths(result)[2:] == [p for p in flat if p not in wanted]
    assert len(nav.requests) == 1
    request = nav.requests[0]
    assert [c.path for c in request.candidates] == flat
    assert request.segments[0].text == INSTRUCTIONS and request.segments[0].cache
    assert result.strategy == "rerank" and result.usage.calls == 1
    assert result.trace.rounds[0].blocks[0].ranked_ids == [
        result.files[0].node_id,
        result.files[1].node_id,
    ]


def test_outlines_show_symbols_with_signatures(db: Database) -> None:
    nav = ScriptedNavigator([ScriptedReply([])])
    RerankRetriever().retrieve(_ctx(db, nav), QUERY, QueryOptions(k=10))
    message = nav.requests[0].message
    assert "shop/billing/invoice.py" in message
    assert "class InvoiceBuilder" in message
    assert "InvoiceBuilder.apply_tax(self, order, rate: float) -> float" in message


class Failing(Navigator):
    name = "failing"

    def __init__(self, exc: Exception) -> None:
        self.exc = exc
        self.calls = 0

    def rank(self, request: RankRequest) -> RankReply:
        self.calls += 1
        raise self.exc


@pytest.mark.parametrize("exc", [LLMError("provider down"), RuntimeError("bug")])
def test_fallback_to_flat_order_when_the_navigator_fails(db: Database, exc: Exception) -> None:
    nav = Failing(exc)
    result = RerankRetriever().retrieve(_ctx(db, nav), QUERY, QueryOptions(k=10))
    assert nav.calls == 1
    assert _paths(result) == _flat_order(db)
    assert any("flat order" in e for e in result.trace.events)


def test_a_failed_call_still_counts_the_reply_it_paid_for(db: Database) -> None:
    """A provider reply without a rank call (paid for), then a corrective call that fails:
    flat's order stands, and the first reply's tokens are in the usage."""
    exc = LLMError("provider still failing after 5 attempts")
    add_usage_spent(exc, Usage(1, 700, output_tokens=12))
    result = RerankRetriever().retrieve(_ctx(db, Failing(exc)), QUERY, QueryOptions(k=10))
    assert _paths(result) == _flat_order(db)
    assert (result.usage.calls, result.usage.input_tokens, result.usage.output_tokens) == (
        1,
        700,
        12,
    )
    assert result.trace.rounds[0].usage.input_tokens == 700


def test_fallback_on_an_empty_or_unusable_reply(db: Database) -> None:
    nav = ScriptedNavigator([ScriptedReply(["not-a-candidate", "n99"])])
    result = RerankRetriever().retrieve(_ctx(db, nav), QUERY, QueryOptions(k=10))
    assert _paths(result) == _flat_order(db)
    notes = result.trace.rounds[0].blocks[0].notes
    assert any("flat order kept" in n for n in notes)


def test_prompt_stays_within_the_token_budget(db: Database) -> None:
    nav = ScriptedNavigator(lambda request: ScriptedReply([]))
    budget = count_tokens(INSTRUCTIONS) + 50
    RerankRetriever().retrieve(_ctx(db, nav), QUERY, QueryOptions(k=10, block_tokens=budget))
    for request in nav.requests:
        used = sum(count_tokens(s.text) for s in request.segments) + count_tokens(request.message)
        assert used <= budget
    # outlines went first, then files
    assert "class InvoiceBuilder" not in nav.requests[0].message
    assert len(nav.requests[0].candidates) < len(_flat_order(db))


def test_a_generous_budget_keeps_every_candidate_and_outline(db: Database) -> None:
    nav = ScriptedNavigator(lambda request: ScriptedReply([]))
    RerankRetriever().retrieve(_ctx(db, nav), QUERY, QueryOptions(k=10, block_tokens=100_000))
    assert len(nav.requests[0].candidates) == len(_flat_order(db))
    assert "class InvoiceBuilder" in nav.requests[0].message


def test_sliding_windows_let_a_low_file_climb_to_the_top(db: Database) -> None:
    flat = _flat_order(db)
    last = flat[-1]

    def promote_last(request: RankRequest) -> ScriptedReply:
        paths = [c.path for c in request.candidates]
        return ScriptedReply([last] if last in paths else [paths[-1]], done=True)

    nav = ScriptedNavigator(promote_last)
    retriever = RerankRetriever(config=RerankConfig(window=3, step=2))
    result = retriever.retrieve(_ctx(db, nav), QUERY, QueryOptions(k=10))
    assert len(nav.requests) > 1
    assert _paths(result)[0] == last
    assert sorted(_paths(result)) == sorted(flat)


def test_candidates_limit_and_k(db: Database) -> None:
    flat = _flat_order(db)
    nav = ScriptedNavigator(lambda request: ScriptedReply([request.candidates[-1].id]))
    result = RerankRetriever(config=RerankConfig(candidates=2)).retrieve(
        _ctx(db, nav), QUERY, QueryOptions(k=3)
    )
    assert len(nav.requests[0].candidates) == 2
    assert _paths(result) == [flat[1], flat[0], flat[2]]


def test_run_query_with_the_lexical_navigator(db: Database) -> None:
    result = run_query(
        db.store, db.tree("shop"), QUERY, QueryOptions(strategy="rerank", k=5), LexicalNavigator()
    )
    assert result.strategy == "rerank"
    assert sorted(_paths(result)) == sorted(_flat_order(db)[:5])
