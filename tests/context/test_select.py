"""select(): whole symbols with margins, merging, windows, diversity, the best file, exact
token counts, and the whole-file baseline; on a real indexed repository."""

from __future__ import annotations

import importlib
import itertools
from typing import Any

import pytest

from treeseek.context import TreeSource, plan, select, whole_files
from treeseek.context.select import (
    MIN_CUT_TOKENS,
    SYMBOL_MARGIN,
    WINDOW_LINES,
    Anchor,
    Plan,
    chunk_scores,
    unit_priority,
)
from treeseek.context.source import ChunkRow
from treeseek.database import Database
from treeseek.llm.tokens import default_counter
from treeseek.search.base import FileHit

select_module = importlib.import_module("treeseek.context.select")

RETRY = "payments/retry.py"
INVOICE = "payments/invoice.py"


def hit(path: str, **evidence: Any) -> FileHit:
    return FileHit(node_id="x", path=path, evidence=evidence)


def chunk(start: int, end: int, symbol: str | None = None) -> dict[str, Any]:
    return {"start_line": start, "end_line": end, "symbol": symbol}


def mention(symbol: str) -> dict[str, Any]:
    return {"kind": "symbol", "text": symbol, "symbol": symbol, "line": None}


def check_spans(db: Database, spans: list[Any], budget: int) -> None:
    counter = default_counter()
    assert sum(s.tokens for s in spans) <= budget
    by_file: dict[str, list[tuple[int, int]]] = {}
    for s in spans:
        lines = (db.text("shop", s.path) or "").split("\n")
        assert 1 <= s.start_line <= s.end_line <= len(lines)
        assert s.text == "\n".join(lines[s.start_line - 1 : s.end_line])
        assert s.tokens == counter.count(s.text)
        by_file.setdefault(s.path, []).append((s.start_line, s.end_line))
    for ranges in by_file.values():
        ranges.sort()
        for (_, e1), (s2, _) in itertools.pairwise(ranges):
            assert s2 > e1 + 1, f"spans {ranges} overlap or touch: they should be merged"


def test_a_method_comes_whole_with_its_margin(shop: Database) -> None:
    source = TreeSource(shop.store, "shop")
    sel = select(plan(source, [hit(RETRY, chunk=chunk(13, 15, "Backoff.delay"))]), 8000)
    first = sel.spans[0]
    # delay is lines 13-15
    assert (first.path, first.start_line, first.end_line) == (
        RETRY,
        13 - SYMBOL_MARGIN,
        15 + SYMBOL_MARGIN,
    )
    assert first.symbol == f"{RETRY}::Backoff.delay"
    assert first.text.splitlines()[SYMBOL_MARGIN].strip().startswith("def delay")
    assert sel.symbols[0] == f"{RETRY}::Backoff.delay"
    check_spans(shop, sel.spans, 8000)


def test_adjacent_methods_merge_into_one_span(shop: Database) -> None:
    source = TreeSource(shop.store, "shop")
    h = hit(RETRY, mentions=[mention("Backoff.delay"), mention("Backoff.jitter")])
    sel = select(plan(source, [h]), 8000)
    first = sel.spans[0]
    # delay 13-15, jitter 17-19, and their margins
    assert (first.start_line, first.end_line) == (13 - SYMBOL_MARGIN, 19 + SYMBOL_MARGIN)
    assert first.symbol == f"{RETRY}::Backoff.delay"  # the best unit names the span
    assert sel.symbols[:2] == [f"{RETRY}::Backoff.delay", f"{RETRY}::Backoff.jitter"]
    check_spans(shop, sel.spans, 8000)


def test_a_symbol_too_long_for_the_budget_is_cut_around_its_hottest_line(
    shop: Database,
) -> None:
    source = TreeSource(shop.store, "shop")
    h = hit(RETRY, mentions=[mention("retry_payment")])
    p = plan(source, [h], "where is the ledger settled")
    sel = select(p, 600)
    first = sel.spans[0]
    assert 22 <= first.start_line <= first.end_line <= 145
    assert first.end_line - first.start_line + 1 <= WINDOW_LINES
    assert "step_77" in first.text  # the window is around the line matching the query
    assert first.symbol == f"{RETRY}::retry_payment"
    check_spans(shop, sel.spans, 600)
    # with room for it, the whole function comes (and its margin)
    whole = select(p, 16000).spans[0]
    assert (whole.start_line, whole.end_line) == (22 - SYMBOL_MARGIN, 145 + SYMBOL_MARGIN)


def test_the_best_file_is_represented_even_at_a_tiny_budget(shop: Database) -> None:
    source = TreeSource(shop.store, "shop")
    hits = [hit(INVOICE, chunk=chunk(9, 12, "Invoice.add_line")), hit(RETRY)]
    sel = select(plan(source, hits), 25)
    assert sel.spans and sel.spans[0].path == INVOICE
    check_spans(shop, sel.spans, 25)
    assert select(plan(source, hits), 0).spans == []


def test_diversity_across_files_before_more_of_one_file(shop: Database) -> None:
    source = TreeSource(shop.store, "shop")
    hits = [hit(RETRY), hit(INVOICE)]
    p = plan(source, hits, "invoice total retry payment backoff delay jitter refund")
    assert len(p.anchors[RETRY]) > 2  # the file's chunks ranked by the query's terms
    sel = select(p, 700)
    assert {s.path for s in sel.spans} == {RETRY, INVOICE}
    check_spans(shop, sel.spans, 700)


def test_the_best_files_first_places_come_before_the_next_files_best() -> None:
    # the budget leans to the best files: place 2 of file 1 before place 1 of file 2, its
    # 3rd after; file 2's second place after file 3's first
    assert unit_priority(0, 0) > unit_priority(0, 1) > unit_priority(1, 0) > unit_priority(0, 2)
    assert unit_priority(2, 0) > unit_priority(1, 1)


def test_of_two_places_ranked_alike_the_shorter_comes_first() -> None:
    assert unit_priority(0, 1, 100) > unit_priority(0, 1, 1600)
    # damped: sixteen times the size halves the priority ...
    assert unit_priority(0, 1, 100) == pytest.approx(2 * unit_priority(0, 1, 1600))
    # ... so rank still leads: the best file's best place, four times longer, before the
    # second file's best
    assert unit_priority(0, 0, 800) > unit_priority(1, 0, 200)


def test_a_term_in_every_chunk_of_a_file_does_not_decide_its_places() -> None:
    # "session" is in every chunk (the file is about sessions), "redirect" in one
    rows = [
        ChunkRow(1, 10, "Session.get", ("session",) * 4),
        ChunkRow(11, 20, "Session.redirect", ("session", "redirect", "url", "send")),
        ChunkRow(21, 30, "Session.close", ("session", "close", "pool", "adapter")),
    ]
    terms = {"session": 2.0, "redirect": 1.0}
    # plain in-file BM25: the chunk that repeats the heavier term wins ...
    assert chunk_scores(terms, rows)[0][1] == 0
    # ... weighed by IDF among the file's chunks, the one with the rarer term does
    places = chunk_scores(terms, rows, in_file_idf=True)
    assert [i for _, i in places] == [1, 0, 2]


def test_places_of_the_best_file_fill_the_budget_before_the_next_file(shop: Database) -> None:
    source = TreeSource(shop.store, "shop")
    hits = [hit(RETRY), hit(INVOICE)]
    p = plan(source, hits, "invoice total retry payment backoff delay jitter refund")
    first_places = [a for a in p.anchors[RETRY] if a.reason == "bm25"][:3]
    sel = select(p, 16000)
    shown = [(s.start_line, s.end_line) for s in sel.spans if s.path == RETRY]
    for a in first_places:  # the best file's first places are all shown ...
        assert any(lo <= a.start_line <= hi for lo, hi in shown)
    # ... and it comes first
    assert sel.spans[0].path == RETRY
    check_spans(shop, sel.spans, 16000)


SYMBOL_QUESTION = "retry payment backoff delay, `add_line` leaves the invoice total wrong"


def test_the_answers_best_symbol_is_a_place_even_in_a_lower_ranked_file(
    shop: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = TreeSource(shop.store, "shop")
    p = plan(source, [hit(RETRY), hit(INVOICE)], SYMBOL_QUESTION)
    # the question names add_line: the symbol ranking puts it first, though its file is 2nd
    assert p.symbols[0] == f"{INVOICE}::Invoice.add_line"
    delay = f"{RETRY}::Backoff.delay"
    assert [a.symbol for a in p.anchors[RETRY]][1] == "Backoff.delay"  # the best file's 2nd
    sel = select(p, 400)
    order = [(s.path, s.symbol, s.reason) for s in sel.spans]
    # the symbol comes right after the best file's best place, before its second
    assert order[1] == (INVOICE, f"{INVOICE}::Invoice.add_line", "symbol")
    assert order.index((RETRY, delay, "bm25")) > 1
    check_spans(shop, sel.spans, 400)
    # without symbol places the second file's function waits for its own file's turn
    monkeypatch.setattr(select_module, "SYMBOL_PLACES", 0)
    paths = [s.path for s in select(p, 400).spans]
    assert paths.index(INVOICE) > paths.index(RETRY) + 1


def test_a_symbol_of_another_file_leaves_room_for_the_best_file(shop: Database) -> None:
    source = TreeSource(shop.store, "shop")
    # the best file's one place is a long function; the answer's best symbol is in the
    # second file and, being short, ranks before it
    long_one = Anchor(RETRY, 0, 28, 140, "chunk", "retry_payment")
    p = Plan(source, [RETRY, INVOICE], {RETRY: [long_one], INVOICE: []}, {"ledger": 1.0})
    p.symbols = [f"{INVOICE}::Invoice.add_line"]
    assert select(p, 8000).spans[0].path == INVOICE
    for budget in (60, 70, 80, 100, 150):
        # at a small budget, add_line would leave the best file less than a cut's worth
        # (MIN_CUT_TOKENS): the best file's cut comes first, add_line after it if it fits
        sel = select(p, budget)
        assert sel.spans and sel.spans[0].path == RETRY, budget
        assert sel.spans[0].tokens >= min(budget, MIN_CUT_TOKENS) - 20, budget
        check_spans(shop, sel.spans, budget)


def test_query_with_a_budget_returns_spans_and_name_paths(shop: Database) -> None:
    ctx = shop.query("shop", "Backoff delay with jitter for payment retries", budget=400)
    assert ctx.context and ctx.budget.used <= 400 and ctx.budget.limit == 400
    assert ctx.budget.tokenizer == default_counter().name
    assert ctx.context[0].path == RETRY
    assert all("::" in s for s in ctx.symbols)
    assert ctx.files[0].path == RETRY and ctx.files[0].spans >= 1
    check_spans(shop, ctx.context, 400)


def test_whole_files_until_the_budget_is_spent(shop: Database) -> None:
    source = TreeSource(shop.store, "shop")
    hits = [hit(INVOICE), hit(RETRY), hit("users/profile.py")]
    big = whole_files(source, hits, 100_000)
    assert [(s.path, s.start_line) for s in big.spans] == [
        (INVOICE, 1),
        (RETRY, 1),
        ("users/profile.py", 1),
    ]
    invoice_tokens = big.spans[0].tokens
    cut = whole_files(source, hits, invoice_tokens + 50)
    assert [s.path for s in cut.spans] == [INVOICE, RETRY]  # the second is cut, none after
    assert cut.spans[1].start_line == 1 and cut.spans[1].end_line < 150
    check_spans(shop, cut.spans, invoice_tokens + 50)
