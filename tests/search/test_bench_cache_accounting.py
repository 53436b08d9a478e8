"""The provider cache model of bench/bench_search.py, which produces the reported cache share."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from treeseek.llm.base import Candidate, RankRequest, Segment
from treeseek.llm.lexical import LexicalNavigator
from treeseek.llm.tokens import count_tokens

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_search.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_search", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_search", module)
    spec.loader.exec_module(module)
    return module


def _words(n: int) -> str:
    text = " w" * n
    assert count_tokens(text) == n
    return text


A, B, C, D = _words(900), _words(200), _words(100), _words(50)
MESSAGE = "Query: w"


def _request(*segments: Segment) -> RankRequest:
    return RankRequest(
        segments=segments,
        message=MESSAGE,
        query="w",
        candidates=(Candidate("n1", "w.py", "file"),),
        pick_limit=1,
    )


def _bill(nav: object, *segments: Segment) -> tuple[int, int, int]:
    usage = nav.rank(_request(*segments)).usage  # type: ignore[attr-defined]
    return usage.cache_read_tokens, usage.cache_write_tokens, usage.input_tokens


def test_prefixes_below_the_minimum_are_never_cached() -> None:
    nav = _bench().CacheAccountingNavigator(LexicalNavigator(), min_tokens=1024)
    segs = (Segment(_words(600)), Segment(C), Segment(C))
    msg = count_tokens(MESSAGE)
    assert _bill(nav, *segs) == (0, 0, 800 + msg)
    assert _bill(nav, *segs) == (0, 0, 800 + msg)  # the same prefix again: still no read


def test_longest_stored_prefix_is_read_and_the_rest_written() -> None:
    nav = _bench().CacheAccountingNavigator(LexicalNavigator(), min_tokens=1024)
    msg = count_tokens(MESSAGE)
    # breakpoints: B (900+200+tools >= 1024) and C; A's prefix alone is too short
    assert _bill(nav, Segment(A), Segment(B), Segment(C)) == (0, 1200, msg)
    assert _bill(nav, Segment(A), Segment(B), Segment(C)) == (1200, 0, msg)
    # a different tail: the prefix through B was stored at its breakpoint, so it is read
    assert _bill(nav, Segment(A), Segment(B), Segment(D)) == (1100, 50, msg)
    # an uncached tail is plain input
    assert _bill(nav, Segment(A), Segment(B), Segment(D, cache=False)) == (1100, 0, 50 + msg)
    nav.reset()
    assert _bill(nav, Segment(A), Segment(B), Segment(C)) == (0, 1200, msg)


def test_no_floor_reads_every_previously_sent_cached_prefix() -> None:
    nav = _bench().CacheAccountingNavigator(LexicalNavigator(), min_tokens=0)
    msg = count_tokens(MESSAGE)
    assert _bill(nav, Segment(C), Segment(D)) == (0, 150, msg)
    assert _bill(nav, Segment(C), Segment(B)) == (100, 200, msg)
