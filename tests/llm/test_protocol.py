"""Reply validation, retry schedule and the concurrency limiter (provider-independent parts)."""

from __future__ import annotations

import json
import random
import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from treeseek.errors import ConfigError
from treeseek.llm._limits import ConcurrencyLimiter
from treeseek.llm._protocol import (
    PermanentProviderError,
    RetryPolicy,
    TransientProviderError,
    classify_status,
    parse_retry_after,
)
from treeseek.llm._validate import ParsedRank, build_reply, find_rank_json, parse_rank_payload
from treeseek.llm.base import Candidate, RankRequest


def _request(n: int, pick_limit: int) -> RankRequest:
    cands = tuple(Candidate(f"n{i}", f"d{i % 3}/f{i}.py", "file") for i in range(1, n + 1))
    return RankRequest((), "q", "q", cands, pick_limit)


@given(
    st.integers(1, 12),
    st.integers(0, 6),
    st.lists(
        st.one_of(st.from_regex(r"n[0-9]{1,2}", fullmatch=True), st.text(max_size=5)), max_size=20
    ),
)
def test_validated_ids_are_allowed_unique_ordered_and_bounded(
    n: int, pick_limit: int, returned: list[str]
) -> None:
    req = _request(n, pick_limit)
    reply = build_reply(req, ParsedRank(list(returned), True))
    assert set(reply.ranked_ids) <= req.allowed_ids
    assert len(reply.ranked_ids) == len(set(reply.ranked_ids))
    if pick_limit:
        assert len(reply.ranked_ids) <= pick_limit
    # kept ids appear in the order the model gave them
    firsts = [r.strip() for r in returned if r.strip() in req.allowed_ids]
    assert reply.ranked_ids == list(dict.fromkeys(firsts))[: pick_limit or None]
    # everything not kept or resolved is counted as dropped
    for r in returned:
        if r.strip() not in req.allowed_ids and r.strip() not in reply.resolved_paths:
            assert r.strip() in reply.dropped_ids or r in reply.dropped_ids


@pytest.mark.parametrize(
    ("payload", "ids", "done"),
    [
        ({"ranked_ids": ["a"], "done": True}, ["a"], True),
        ('{"ranked_ids": ["a"]}', ["a"], False),
        ({"ranked_ids": '["a", "b"]', "done": "true"}, ["a", "b"], True),
        ({"ranked_ids": "a", "done": False}, ["a"], False),
        ({"arguments": '{"ranked_ids": ["x"], "done": true}'}, ["x"], True),
        ({"input": {"ranked_ids": [1, {"id": "n2"}]}}, [1, {"id": "n2"}], False),
        ({"ranked_ids": ["a"], "done": "maybe"}, ["a"], False),
    ],
)
def test_parse_rank_payload_variants(payload: object, ids: list[object], done: bool) -> None:
    parsed = parse_rank_payload(payload)
    assert parsed is not None
    assert parsed.ranked == ids and parsed.done is done


@pytest.mark.parametrize("payload", [None, "garbage", "[1, 2]", {"ids": []}, {"ranked_ids": 3}])
def test_parse_rank_payload_rejects(payload: object) -> None:
    assert parse_rank_payload(payload) is None


def test_find_rank_json_skips_other_objects() -> None:
    text = (
        'thinking {"note": 1} then {not json} and finally {"ranked_ids": ["n1"], "done": true} ok'
    )
    parsed = find_rank_json(text)
    assert parsed is not None and parsed.ranked == ["n1"] and parsed.done
    assert find_rank_json("no braces here") is None
    assert find_rank_json("{ broken") is None


def test_id_objects_and_numbers_are_read() -> None:
    req = RankRequest(
        (), "q", "q", (Candidate("7", "a.py", "file"), Candidate("n2", "b/c.py", "file")), 5
    )
    reply = build_reply(req, ParsedRank([7, {"path": "b/c.py"}, None, True], False))
    assert reply.ranked_ids == ["7", "n2"]
    assert reply.dropped_ids == ["null", "true"]


def test_retry_delay_schedule() -> None:
    p = RetryPolicy(base_delay_s=1.0, max_delay_s=5.0, jitter=0.2)
    rng = random.Random(0)
    for attempt, base in enumerate([1, 2, 4, 5, 5]):
        d = p.delay(attempt, None, rng)
        assert base * 0.8 <= d <= base * 1.2
    assert p.delay(0, 3.0, rng) == 3.0  # Retry-After longer than backoff wins
    assert p.delay(3, 0.1, rng) >= 4.0  # ...but never shortens backoff
    assert RetryPolicy(max_retry_after_s=2.0).delay(0, 100.0, rng) == 2.0
    with pytest.raises(ConfigError):
        RetryPolicy(jitter=1.5)
    with pytest.raises(ConfigError):
        RetryPolicy(timeout_s=0)


def test_retry_after_parsing() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "150", "retry-after": "9"}) == 0.15
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after(None) is None


def test_status_classification() -> None:
    for status in (408, 409, 425, 429, 500, 502, 503, 529):
        assert isinstance(classify_status(status, None, "x"), TransientProviderError)
    for status in (400, 401, 403, 404, 422):
        assert isinstance(classify_status(status, None, "x"), PermanentProviderError)
    exc = classify_status(429, {"retry-after": "4"}, "slow")
    assert isinstance(exc, TransientProviderError) and exc.retry_after == 4.0


def test_limiter_bounds_concurrency_and_can_be_resized() -> None:
    lim = ConcurrencyLimiter(3)
    inside = 0
    peak = 0
    lock = threading.Lock()

    def work() -> None:
        nonlocal inside, peak
        with lim.slot():
            with lock:
                inside += 1
                peak = max(peak, inside)
            time.sleep(0.02)
            with lock:
                inside -= 1

    threads = [threading.Thread(target=work) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak == 3 == lim.peak and lim.active == 0
    lim.set_limit(1)
    assert lim.limit == 1
    with pytest.raises(ConfigError):
        lim.set_limit(0)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(
    st.one_of(_json, st.fixed_dictionaries({"ranked_ids": _json, "done": _json})),
    st.text(max_size=60),
)
def test_parsing_and_validation_never_raise(payload: object, text: str) -> None:
    req = _request(5, 3)
    for parsed in (parse_rank_payload(payload), find_rank_json(text + json.dumps(payload))):
        if parsed is not None:
            reply = build_reply(req, parsed)
            assert set(reply.ranked_ids) <= req.allowed_ids
            assert isinstance(reply.done, bool)
