"""Property: whatever the ranked evidence and the budget, the answer never exceeds the budget,
its spans are the file's exact lines with exact token counts, and a file's spans never
overlap or touch (they are merged)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shop_repo import REPO

import treeseek
from treeseek.context import TreeSource, plan, select, whole_files
from treeseek.database import Database
from treeseek.llm.tokens import default_counter
from treeseek.search.base import FileHit

FILES = sorted(REPO)
LINES = {p: REPO[p].split("\n")[:-1] for p in FILES}
QNAMES = ["Backoff", "Backoff.delay", "Backoff.jitter", "retry_payment", "refund", "Invoice",
          "Invoice.add_line", "delay", "Profile", "Profile.rename", "nope"]  # fmt: skip


@pytest.fixture(scope="module")
def db(shop_db: Path) -> Iterator[Database]:
    with treeseek.open(shop_db) as database:
        yield database


@st.composite
def hits(draw: st.DrawFn) -> list[FileHit]:
    paths = draw(st.lists(st.sampled_from(FILES), min_size=0, max_size=4, unique=True))
    out = []
    for path in paths:
        n = len(LINES[path])
        evidence: dict[str, Any] = {}
        if draw(st.booleans()):
            a = draw(st.integers(1, n + 3))  # sometimes past the end: must not break
            b = draw(st.integers(a, a + 90))
            evidence["chunk"] = {
                "start_line": a,
                "end_line": b,
                "symbol": draw(st.none() | st.sampled_from(QNAMES)),
            }
        mentions = draw(
            st.lists(
                st.fixed_dictionaries(
                    {
                        "kind": st.sampled_from(["symbol", "frame", "path"]),
                        "symbol": st.none() | st.sampled_from(QNAMES),
                        "line": st.none() | st.integers(-2, n + 2),
                        "text": st.just("x"),
                    }
                ),
                max_size=3,
            )
        )
        if mentions:
            evidence["mentions"] = mentions
        out.append(FileHit(node_id="x", path=path, evidence=evidence))
    return out


def _check(spans: list[Any], budget: int) -> None:
    counter = default_counter()
    assert sum(s.tokens for s in spans) <= budget
    seen: dict[str, list[tuple[int, int]]] = {}
    for s in spans:
        lines = LINES[s.path]
        assert 1 <= s.start_line <= s.end_line <= len(lines)
        assert s.text == "\n".join(lines[s.start_line - 1 : s.end_line])
        assert s.tokens == counter.count(s.text)
        seen.setdefault(s.path, []).append((s.start_line, s.end_line))
    for ranges in seen.values():
        ranges.sort()
        assert all(b[0] > a[1] + 1 for a, b in itertools.pairwise(ranges))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ranked=hits(),
    budget=st.integers(0, 3000),
    query=st.sampled_from(["", "retry backoff delay", "invoice total ledger", "rename"]),
)
def test_the_budget_is_never_exceeded(
    db: Database, ranked: list[FileHit], budget: int, query: str
) -> None:
    source = TreeSource(db.store, "shop")
    selection = select(plan(source, ranked, query), budget)
    _check(selection.spans, budget)
    assert selection.budget.used == sum(s.tokens for s in selection.spans)
    assert selection.budget.limit == budget
    if ranked and budget >= 60:
        # the best file (every file here has a short enough first unit) is always shown
        assert selection.spans and ranked[0].path in {s.path for s in selection.spans}
    baseline = whole_files(source, ranked, budget)
    _check(baseline.spans, budget)
