"""Every hostile reply mode against real HTTP, both wire formats, through ``Database.query``.

A query either returns files of the tree (never a path outside it, never a file reached by
basename) or raises a :class:`~treeseek.TreeseekError`; it never crashes. Slow and failing
providers are checked by attempt counts, never by wall time.
"""

from __future__ import annotations

import pytest
from hostile_llm import HOSTILE_FILES, MODES, TREE, HostileServer

import treeseek
from treeseek.errors import DeadlineExceeded, LLMError, TreeseekError
from treeseek.llm._limits import ConcurrencyLimiter
from treeseek.llm._protocol import ProviderNavigator, RetryPolicy
from treeseek.llm.anthropic import AnthropicNavigator
from treeseek.llm.openai import OpenAINavigator

FAST = RetryPolicy(timeout_s=5.0, max_retries=2, base_delay_s=0.001, max_delay_s=0.005)
PROVIDERS = ("openai", "anthropic")
TREE_FILES = set(HOSTILE_FILES)


def navigator(
    provider: str, server: HostileServer, policy: RetryPolicy = FAST
) -> ProviderNavigator:
    limiter = ConcurrencyLimiter(4)
    if provider == "openai":
        return OpenAINavigator(
            "m", api_key=None, base_url=server.url + "/v1", policy=policy, limiter=limiter, seed=1
        )
    return AnthropicNavigator(
        "claude-test", api_key="k", base_url=server.url, policy=policy, limiter=limiter, seed=1
    )


def run(
    db: treeseek.Database, nav: ProviderNavigator, strategy: str, **options: object
) -> treeseek.search.base.Result | TreeseekError:
    try:
        return db.query(
            TREE, "where is QuerySet.filter", navigator=nav, strategy=strategy, **options
        )
    except TreeseekError as exc:  # the only acceptable failure
        return exc


@pytest.mark.parametrize("strategy", ["beam", "block"])
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("mode", sorted(set(MODES) - {"slow"}))
def test_no_hostile_reply_crashes_or_escapes(
    hostile_db: treeseek.Database,
    hostile_server: HostileServer,
    provider: str,
    strategy: str,
    mode: str,
) -> None:
    hostile_server.mode = mode
    outcome = run(hostile_db, navigator(provider, hostile_server), strategy, deadline_s=60)
    if isinstance(outcome, TreeseekError):
        assert mode.startswith(("status_", "html_")), f"{mode}: {outcome!r}"
        assert isinstance(outcome, LLMError)
        return
    returned = {f.path for f in outcome.files}
    assert returned <= TREE_FILES
    for rnd in outcome.trace.rounds:
        for block in rnd.blocks:
            assert set(block.ranked_ids) <= set(block.candidate_set)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_deep_nesting_is_an_unusable_reply_not_a_crash(
    hostile_db: treeseek.Database, hostile_server: HostileServer, provider: str
) -> None:
    hostile_server.mode = "deep_nesting"
    result = hostile_db.query(
        TREE, "q", navigator=navigator(provider, hostile_server), strategy="beam"
    )
    notes = [n for rnd in result.trace.rounds for b in rnd.blocks for n in b.notes]
    assert any("nested" in n for n in notes)
    assert result.files == []


@pytest.mark.parametrize("provider", PROVIDERS)
def test_escaping_paths_and_basename_traps_resolve_to_nothing(
    hostile_db: treeseek.Database, hostile_server: HostileServer, provider: str
) -> None:
    for mode in ("escaping_paths", "basename_trap"):
        hostile_server.mode = mode
        result = hostile_db.query(
            TREE, "q", navigator=navigator(provider, hostile_server), strategy="beam"
        )
        assert result.files == []
        dropped = [d for rnd in result.trace.rounds for b in rnd.blocks for d in b.dropped_ids]
        assert dropped, mode


@pytest.mark.parametrize("provider", PROVIDERS)
def test_many_unknown_ids_are_capped(
    hostile_db: treeseek.Database, hostile_server: HostileServer, provider: str
) -> None:
    hostile_server.mode = "many_unknown_ids"
    result = hostile_db.query(
        TREE, "q", navigator=navigator(provider, hostile_server), strategy="beam"
    )
    for rnd in result.trace.rounds:
        for block in rnd.blocks:
            assert len(block.dropped_ids) <= 1000
            assert any("only the first 1000 were read" in n for n in block.notes)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_and_5xx_are_retried_then_answered(
    hostile_db: treeseek.Database, hostile_server: HostileServer, provider: str
) -> None:
    hostile_server.mode = "status_429"
    nav = navigator(provider, hostile_server)
    with pytest.raises(LLMError, match="after 3 attempts"):
        hostile_db.query(TREE, "q", navigator=nav, strategy="beam")
    assert len(hostile_server.received) == 3  # 1 + max_retries, then a clear error
    hostile_server.received.clear()
    modes = iter(["status_500", "status_529", "honest"])

    def flaky(body: dict) -> object:
        hostile_server.mode = next(modes, "honest")
        return HostileServer._answer(hostile_server, body)

    hostile_server.responder = flaky
    result = hostile_db.query(TREE, "q", navigator=nav, strategy="beam")
    assert set(f.path for f in result.files) <= TREE_FILES
    first_notes = result.trace.rounds[0].blocks[0].notes
    assert sum("retrying" in n for n in first_notes) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_wrong_tool_gets_one_corrective_call(
    hostile_db: treeseek.Database, hostile_server: HostileServer, provider: str
) -> None:
    hostile_server.mode = "wrong_tool"
    result = hostile_db.query(
        TREE, "q", navigator=navigator(provider, hostile_server), strategy="beam"
    )
    assert result.files == []
    assert len(hostile_server.received) == 2 * len(result.trace.rounds)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_slow_provider_stops_at_the_deadline_by_attempt_count(
    hostile_db: treeseek.Database, hostile_server: HostileServer, provider: str
) -> None:
    """Each answer takes 1 s; calls time out at 0.2 s and the query's deadline is 0.5 s: at
    most 3 attempts can start before the deadline, then DeadlineExceeded (no file yet)."""
    hostile_server.mode = "slow"
    policy = RetryPolicy(timeout_s=0.2, max_retries=10, base_delay_s=0.001, max_delay_s=0.005)
    with pytest.raises(DeadlineExceeded, match="deadline"):
        hostile_db.query(
            TREE, "q", navigator=navigator(provider, hostile_server, policy), strategy="block",
            deadline_s=0.5,
        )  # fmt: skip
    assert 1 <= len(hostile_server.received) <= 3  # not 11 (1 + max_retries)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_per_call_timeout_option_overrides_the_navigators(
    hostile_db: treeseek.Database, hostile_server: HostileServer, provider: str
) -> None:
    hostile_server.mode = "slow"
    policy = RetryPolicy(timeout_s=30.0, max_retries=1, base_delay_s=0.001)
    with pytest.raises(LLMError, match="after 2 attempts"):
        hostile_db.query(
            TREE, "q", navigator=navigator(provider, hostile_server, policy), strategy="beam",
            llm_timeout_s=0.1, deadline_s=0,
        )  # fmt: skip
    assert len(hostile_server.received) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_file_names_reach_the_model_as_data_and_answers_stay_in_the_tree(
    hostile_db: treeseek.Database, hostile_server: HostileServer, provider: str
) -> None:
    hostile_server.mode = "honest"
    result = hostile_db.query(
        TREE, "q", navigator=navigator(provider, hostile_server), strategy="beam"
    )
    sent = str([r.body for r in hostile_server.received])
    assert "IGNORE ALL PREVIOUS INSTRUCTIONS" in sent  # a name is shown, as a path
    assert {f.path for f in result.files} <= TREE_FILES
