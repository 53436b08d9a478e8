"""Deadlines and retries on a fake clock: exact, and no test ever waits."""

from __future__ import annotations

import threading

import pytest
from hostile_llm import TREE

import treeseek
from treeseek.errors import DeadlineExceeded, LLMError
from treeseek.eval._worker import Answerer, Job, RunSettings
from treeseek.llm._limits import ConcurrencyLimiter
from treeseek.llm._protocol import (
    Correction,
    ProviderNavigator,
    RawReply,
    RetryPolicy,
    TransientProviderError,
)
from treeseek.llm.base import Candidate, RankRequest, Usage, usage_spent
from treeseek.llm.deadline import (
    DEFAULT_DEADLINE_S,
    Deadline,
    resolve_deadline_s,
)
from treeseek.search.trace import DEADLINE_STOP
from treeseek.service import Limits, Service


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class SlowProvider(ProviderNavigator):
    """Every attempt uses its whole timeout and fails (a server answering after 70 s), or
    answers after ``answer_after`` seconds with the first candidate."""

    name = "slow"

    def __init__(self, clock: FakeClock, *, answer_after: float = 70.0, **kw: object) -> None:
        super().__init__(
            limiter=ConcurrencyLimiter(8), seed=1, clock=clock, sleep=clock.sleep, **kw
        )  # type: ignore[arg-type]
        self.clock = clock
        self.answer_after = answer_after
        self.timeouts: list[float] = []

    def _send(
        self, request: RankRequest, correction: Correction | None, timeout_s: float
    ) -> RawReply:
        self.timeouts.append(timeout_s)
        if self.answer_after > timeout_s:
            self.clock.now += timeout_s
            raise TransientProviderError("timeout: no answer")
        self.clock.now += self.answer_after
        first = request.candidates[0]
        return RawReply({"ranked_ids": [first.id], "done": first.type == "file"}, "", Usage(1))


def _request(deadline: Deadline | None) -> RankRequest:
    cands = (Candidate("n1", "a.py", "file"),)
    return RankRequest((), "m", "q", cands, 1, deadline=deadline)


def test_without_a_deadline_a_70s_server_fails_after_all_retries() -> None:
    clock = FakeClock()
    nav = SlowProvider(clock, policy=RetryPolicy(timeout_s=60, max_retries=4))
    with pytest.raises(LLMError, match="after 5 attempts"):
        nav.rank(_request(None))
    assert nav.timeouts == [60.0] * 5
    assert clock.now - 1000 > 300  # the 316 s


def test_the_deadline_cuts_call_timeouts_and_stops_retrying() -> None:
    clock = FakeClock()
    nav = SlowProvider(clock, policy=RetryPolicy(timeout_s=60, max_retries=4, jitter=0.0))
    deadline = Deadline(100.0, clock=clock)
    with pytest.raises(DeadlineExceeded, match="100 s deadline"):
        nav.rank(_request(deadline))
    assert nav.timeouts[0] == 60.0
    assert nav.timeouts[1] == pytest.approx(100 - 60 - 0.5)  # the time left after a backoff
    assert clock.now - 1000 <= 100.0 + 1e-9  # never past the deadline
    assert sum(clock.sleeps) < 1.0  # no backoff slept past it


def test_a_retry_after_longer_than_the_time_left_is_not_slept() -> None:
    clock = FakeClock()

    class RateLimited(SlowProvider):
        def _send(self, request, correction, timeout_s):  # type: ignore[no-untyped-def]
            self.timeouts.append(timeout_s)
            raise TransientProviderError("HTTP 429", retry_after=50.0)

    nav = RateLimited(clock, policy=RetryPolicy(timeout_s=60, max_retries=4))
    with pytest.raises(DeadlineExceeded):
        nav.rank(_request(Deadline(30.0, clock=clock)))
    assert clock.sleeps == [] and len(nav.timeouts) == 1


def test_per_call_timeout_override() -> None:
    clock = FakeClock()
    nav = SlowProvider(clock, answer_after=5.0, policy=RetryPolicy(timeout_s=60, max_retries=1))
    with pytest.raises(LLMError, match="after 2 attempts"):
        nav.rank(_request(Deadline(None, call_timeout_s=2.0, clock=clock)))
    assert nav.timeouts == [2.0, 2.0]


def test_deadline_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_deadline_s(None, {}) == DEFAULT_DEADLINE_S
    assert resolve_deadline_s(None, {"TREESEEK_DEADLINE": "12.5"}) == 12.5
    assert resolve_deadline_s(None, {"TREESEEK_DEADLINE": "0"}) is None
    assert resolve_deadline_s(3, {"TREESEEK_DEADLINE": "12"}) == 3.0
    assert resolve_deadline_s(0, {}) is None
    for bad in ("soon", "-1"):
        with pytest.raises(treeseek.errors.ConfigError, match="TREESEEK_DEADLINE"):
            resolve_deadline_s(None, {"TREESEEK_DEADLINE": bad})


def test_llm_timeout_and_retries_from_the_environment() -> None:
    from treeseek.llm.select import navigator_from_spec

    env = {
        "TREESEEK_LLM_TIMEOUT": "7",
        "TREESEEK_LLM_RETRIES": "1",
        "OPENAI_COMPATIBLE_API_KEY": "k",
    }
    nav = navigator_from_spec("openai-compatible:m@http://127.0.0.1:9/v1", env=env)
    assert isinstance(nav, ProviderNavigator)
    assert (nav.policy.timeout_s, nav.policy.max_retries) == (7.0, 1)
    with pytest.raises(treeseek.errors.ConfigError, match="TREESEEK_LLM_RETRIES"):
        navigator_from_spec("openai-compatible:m@http://x/v1", env={"TREESEEK_LLM_RETRIES": "x"})


@pytest.mark.parametrize("strategy", ["beam", "block"])
def test_tree_search_returns_finished_rounds_at_the_deadline(
    hostile_db: treeseek.Database, strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rounds that finished before the deadline stand; the round that ran into it does not."""
    clock = FakeClock()
    monkeypatch.setattr("treeseek.llm.deadline.default_clock", clock)
    # each call answers after 30 s: with 50 s, round 0 finishes and round 1 is cut
    nav = SlowProvider(clock, answer_after=30.0, policy=RetryPolicy(timeout_s=60, max_retries=0))

    def first_file_then_dirs(request, correction, timeout_s):  # type: ignore[no-untyped-def]
        nav.timeouts.append(timeout_s)
        if timeout_s < 30.0:
            clock.now += timeout_s
            raise TransientProviderError("timeout")
        clock.now += 30.0
        files = [c.id for c in request.candidates if c.type == "file"][:1]
        dirs = [c.id for c in request.candidates if c.type == "directory"]
        return RawReply({"ranked_ids": files + dirs, "done": False}, "", Usage(1))

    nav._send = first_file_then_dirs  # type: ignore[method-assign]
    result = hostile_db.query(TREE, "q", navigator=nav, strategy=strategy, k=10, deadline_s=50)
    assert result.trace.stop_reason == DEADLINE_STOP
    assert [f.path for f in result.files] == ["README.md"]  # what round 0 found
    assert len(result.trace.rounds) == 1
    assert clock.now - 1000 == pytest.approx(50.0)


def test_no_file_before_the_deadline_is_an_error(
    hostile_db: treeseek.Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    monkeypatch.setattr("treeseek.llm.deadline.default_clock", clock)
    nav = SlowProvider(clock, policy=RetryPolicy(timeout_s=60, max_retries=4))
    with pytest.raises(DeadlineExceeded, match="before block search found any file"):
        hostile_db.query(TREE, "q", navigator=nav, strategy="block", deadline_s=100)
    assert clock.now - 1000 <= 100 + 1e-9


@pytest.mark.parametrize("strategy", ["beam", "block"])
def test_a_round_cut_by_the_deadline_still_counts_the_tokens_it_paid_for(
    hostile_db: treeseek.Database, strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Round 1's first reply is unusable (500 input tokens, paid for) and its corrective call
    runs into the deadline: the round does not count, but its tokens were spent. They were
    missing from the result's usage and cost."""
    clock = FakeClock()
    monkeypatch.setattr("treeseek.llm.deadline.default_clock", clock)
    nav = SlowProvider(clock, policy=RetryPolicy(timeout_s=60, max_retries=0))
    calls: list[int] = []

    def answer(request, correction, timeout_s):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 1:  # round 0: a file and the directories, 100 tokens
            clock.now += 30.0
            files = [c.id for c in request.candidates if c.type == "file"][:1]
            dirs = [c.id for c in request.candidates if c.type == "directory"]
            return RawReply({"ranked_ids": files + dirs, "done": False}, "", Usage(1, 100))
        if correction is None:  # round 1: no rank call, 500 tokens
            clock.now += 5.0
            return RawReply(None, "I am not sure.", Usage(1, 500, output_tokens=4))
        clock.now += timeout_s  # the corrective call: cut at the deadline
        raise TransientProviderError("timeout")

    nav._send = answer  # type: ignore[method-assign]
    result = hostile_db.query(TREE, "q", navigator=nav, strategy=strategy, k=10, deadline_s=50)
    assert result.trace.stop_reason == DEADLINE_STOP and len(result.trace.rounds) == 1
    assert (result.usage.calls, result.usage.input_tokens, result.usage.output_tokens) == (
        2,
        600,
        4,
    )
    assert result.trace.cut_usage.input_tokens == 500
    assert result.trace.usage.input_tokens == 600


def test_the_answered_blocks_of_a_round_cut_by_the_deadline_count(
    hostile_db: treeseek.Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Block asks its blocks in parallel: when one runs into the deadline, the others' answers
    were paid for (they were dropped with the round)."""
    clock = FakeClock()
    monkeypatch.setattr("treeseek.llm.deadline.default_clock", clock)
    nav = SlowProvider(clock, policy=RetryPolicy(timeout_s=60, max_retries=0))
    answered = threading.Event()
    round1_blocks: list[list[str]] = []

    def answer(request, correction, timeout_s):  # type: ignore[no-untyped-def]
        paths = [c.path for c in request.candidates]
        if not any("/" in p for p in paths):  # round 0 (the root's entries): README.md, pkg
            ids = [c.id for c in request.candidates if c.path in ("README.md", "pkg")]
            return RawReply({"ranked_ids": ids, "done": False}, "", Usage(1, 100))
        round1_blocks.append(paths)
        if "pkg/models" in paths:  # answers, 300 tokens
            answered.set()
            return RawReply({"ranked_ids": [request.candidates[0].id]}, "", Usage(1, 300))
        assert answered.wait(60)  # the other blocks run into the deadline after it answered
        clock.now += 1000.0
        raise TransientProviderError("timeout")

    nav._send = answer  # type: ignore[method-assign]
    result = hostile_db.query(
        TREE, "q", navigator=nav, strategy="block", k=10, deadline_s=50, block_tokens=40
    )
    assert len(round1_blocks) >= 2  # the round had parallel calls
    assert result.trace.stop_reason == DEADLINE_STOP and len(result.trace.rounds) == 1
    round0 = result.trace.rounds[0].usage.input_tokens
    assert round0 > 0 and round0 % 100 == 0
    assert result.trace.cut_usage.input_tokens == 300
    assert result.usage.input_tokens == round0 + 300


def test_rerank_calls_keep_the_query_deadline(
    hostile_db: treeseek.Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rerank's rank calls did not carry the query's deadline (nor --timeout): a provider that
    never answers in time held each window for all its retries (5 x 60 s here) whatever
    --deadline said. Now they stop at the deadline, and flat's order stands."""
    clock = FakeClock()
    monkeypatch.setattr("treeseek.llm.deadline.default_clock", clock)
    nav = SlowProvider(clock, policy=RetryPolicy(timeout_s=60, max_retries=4))
    flat = hostile_db.query(TREE, "common query models", strategy="flat", k=10)
    assert len(flat.files) >= 2  # something to rerank
    result = hostile_db.query(
        TREE, "common query models", navigator=nav, strategy="rerank", k=10, deadline_s=100
    )
    assert [f.path for f in result.files] == [f.path for f in flat.files]
    assert result.trace.stop_reason == DEADLINE_STOP
    assert clock.now - 1000 <= 100 + 1e-9
    assert nav.timeouts[0] == 60.0 and sum(nav.timeouts) <= 100 + 1e-9


def _round0_then(clock: FakeClock, then: str) -> SlowProvider:
    """Round 0 answers with the root's directories only (100 tokens); round 1 fails: the
    provider keeps failing (``then="down"``) or the deadline cuts it (``"slow"``)."""
    nav = SlowProvider(clock, policy=RetryPolicy(timeout_s=60, max_retries=0))
    calls: list[int] = []

    def answer(request, correction, timeout_s):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 1:
            clock.now += 10.0
            dirs = [c.id for c in request.candidates if c.type == "directory"]
            return RawReply({"ranked_ids": dirs, "done": False}, "", Usage(1, 100, 0, 40, 7))
        if then == "down":  # at once
            raise TransientProviderError("HTTP 529: overloaded")
        clock.now += timeout_s
        raise TransientProviderError("timeout")

    nav._send = answer  # type: ignore[method-assign]
    return nav


@pytest.mark.parametrize("strategy", ["beam", "block"])
@pytest.mark.parametrize("then", ["down", "slow"])
def test_a_failed_query_still_reports_what_its_calls_spent(
    hostile_db: treeseek.Database, strategy: str, then: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree search that fails after rounds it paid for (the provider went down, or the
    deadline came before any file) raised an error that said nothing of those tokens: an
    evaluation recorded the query at no cost. The error carries them (usage_spent)."""
    clock = FakeClock()
    monkeypatch.setattr("treeseek.llm.deadline.default_clock", clock)
    nav = _round0_then(clock, then)
    expected = LLMError if then == "down" else DeadlineExceeded
    with pytest.raises(expected) as caught:
        hostile_db.query(TREE, "q", navigator=nav, strategy=strategy, k=10, deadline_s=50)
    spent = usage_spent(caught.value)
    assert (spent.calls, spent.input_tokens, spent.cache_read_tokens, spent.output_tokens) == (
        1,
        100,
        40,
        7,
    )


def test_an_evaluation_records_the_cost_of_a_failed_query(
    hostile_db: treeseek.Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    monkeypatch.setattr("treeseek.llm.deadline.default_clock", clock)
    nav = _round0_then(clock, "down")
    nav.name = "anthropic:claude-sonnet-4-6"  # a priced model
    answerer = Answerer(hostile_db, RunSettings("d", "contents", strategy="block"), nav)
    answer = answerer.answer(Job(1, TREE, "q"))
    assert answer.error and answer.error.startswith("LLMError")
    assert (answer.usage.calls, answer.usage.input_tokens) == (1, 100)
    assert answer.cost_usd is not None and answer.cost_usd > 0


def test_a_server_query_stops_its_llm_calls_at_the_request_wall_time(
    hostile_db: treeseek.Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The HTTP server answers 504 after its wall-time limit (60 s) and abandons the worker
    thread, but the query went on calling the LLM until its own deadline (180 s): two more
    minutes of paid calls nobody reads, on a worker thread. A server query's deadline is now
    at most the request's wall time."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from treeseek.server.app import create_app

    clock = FakeClock()
    monkeypatch.setattr("treeseek.llm.deadline.default_clock", clock)
    monkeypatch.delenv("TREESEEK_DEADLINE", raising=False)
    nav = SlowProvider(clock, policy=RetryPolicy(timeout_s=60, max_retries=4))
    service = Service(hostile_db, navigator=nav, limits=Limits(max_seconds=20))
    with TestClient(create_app(service), base_url="http://127.0.0.1") as client:
        response = client.post(
            f"/v1/trees/{TREE}/query", json={"question": "q", "strategy": "block"}
        )
    assert response.status_code == 504, response.text
    assert "its 20 s deadline" in response.json()["error"]["message"]
    assert clock.now - 1000 <= 20 + 1e-9
