"""The Anthropic adapter against a real loopback server speaking the Messages wire format."""

from __future__ import annotations

import logging

import pytest
from llm_wire import (
    LoopbackServer,
    Reply,
    anthropic_message,
    anthropic_text_reply,
    anthropic_tool_reply,
    make_request,
)

from treeseek.errors import ConfigError, LLMError
from treeseek.llm._limits import ConcurrencyLimiter
from treeseek.llm._protocol import CORRECTION_MESSAGE, RetryPolicy
from treeseek.llm.anthropic import (
    TOOL_TOKENS,
    AnthropicNavigator,
    cache_breakpoints,
    min_cache_tokens_for,
)
from treeseek.llm.base import RANK_TOOL, Segment
from treeseek.llm.tokens import count_tokens

FAST = RetryPolicy(timeout_s=2.0, max_retries=3, base_delay_s=0.001, max_delay_s=0.01)


def nav(server: LoopbackServer, policy: RetryPolicy = FAST, **kw: object) -> AnthropicNavigator:
    kw.setdefault("min_cache_tokens", 0)  # tiny test segments; the floor has its own tests
    return AnthropicNavigator(
        "claude-sonnet-4-6",
        api_key="test-key",
        base_url=server.url,
        policy=policy,
        limiter=ConcurrencyLimiter(4),
        seed=1,
        **kw,  # type: ignore[arg-type]
    )


def test_tool_call_usage_and_request_shape(server: LoopbackServer) -> None:
    server.queue(
        Reply(
            anthropic_tool_reply(
                ["n2", "n1"],
                True,
                input_tokens=50,
                cache_write=1200,
                cache_read=3400,
                output_tokens=20,
            )
        )
    )
    segs = (
        Segment("INSTRUCTIONS", cache=True),
        Segment("BLOCK 1", cache=False),
        Segment("BLOCK 2"),
    )
    reply = nav(server).rank(make_request(segments=segs))
    assert reply.ranked_ids == ["n2", "n1"] and reply.done is True
    assert reply.dropped_ids == [] and reply.notes == []
    u = reply.usage
    assert (u.calls, u.input_tokens, u.cache_write_tokens) == (1, 50, 1200)
    assert (u.cache_read_tokens, u.output_tokens) == (3400, 20)
    assert u.latency_s > 0

    [req] = server.received
    assert req.path == "/v1/messages"
    # the key travels as x-api-key or (newer SDKs) as a bearer token
    assert "test-key" in (
        req.headers.get("x-api-key", ""),
        req.headers.get("authorization", "")[7:],
    )
    assert "anthropic-version" in req.headers
    body = req.body
    assert body["model"] == "claude-sonnet-4-6"
    assert body["tool_choice"] == {"type": "tool", "name": "rank"}
    assert body["tools"] == [RANK_TOOL]
    assert body["system"] == [
        {"type": "text", "text": "INSTRUCTIONS", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "BLOCK 1"},
        {"type": "text", "text": "BLOCK 2", "cache_control": {"type": "ephemeral"}},
    ]
    assert body["messages"] == [{"role": "user", "content": make_request().message}]


def test_at_most_four_breakpoints_on_the_last_cacheable_segments(server: LoopbackServer) -> None:
    server.queue(Reply(anthropic_tool_reply(["n1"], False)))
    segs = tuple(Segment(f"S{i}", cache=(i != 5)) for i in range(7))  # 6 ask for a breakpoint
    nav(server).rank(make_request(segments=segs))
    system = server.received[0].body["system"]
    marked = [b["text"] for b in system if "cache_control" in b]
    assert marked == ["S2", "S3", "S4", "S6"]
    assert [b["text"] for b in system] == [f"S{i}" for i in range(7)]


def _words(n: int) -> str:
    """Text of exactly ``n`` cl100k tokens (" w" is one token)."""
    text = " w" * n
    assert count_tokens(text) == n
    return text


def test_no_breakpoint_on_a_prefix_below_the_minimum(server: LoopbackServer) -> None:
    # prefixes, tools included: 600+T (too short), 1200+T, 1210+T
    segs = (Segment(_words(600)), Segment(_words(600)), Segment(_words(10)))
    server.queue(Reply(anthropic_tool_reply(["n1"], False)))
    nav(server, min_cache_tokens=1024).rank(make_request(segments=segs))
    system = server.received[0].body["system"]
    assert ["cache_control" in b for b in system] == [False, True, True]
    assert [b["text"] for b in system] == [s.text for s in segs]  # nothing else changes


def test_the_tool_definition_counts_toward_the_minimum() -> None:
    segs = (Segment(_words(1024 - TOOL_TOKENS)), Segment(_words(TOOL_TOKENS)))
    assert cache_breakpoints(segs, min_tokens=1024) == [0, 1]
    assert cache_breakpoints(segs, min_tokens=1024, preceding_tokens=0) == [1]


def test_four_breakpoints_go_to_the_last_eligible_segments() -> None:
    segs = (
        Segment(_words(900)),  # with the tools: 973 tokens, below the minimum
        *(Segment(_words(50), cache=(i != 2)) for i in range(7)),  # segment 3 asks for none
    )
    # eligible: 2 (1073 tokens), 4, 5, 6, 7 (segment 1 ends at 1023); the last four win
    assert cache_breakpoints(segs, min_tokens=1024) == [4, 5, 6, 7]
    assert cache_breakpoints(segs, min_tokens=1024, limit=0) == []


def test_the_minimum_depends_on_the_model(server: LoopbackServer) -> None:
    assert min_cache_tokens_for("claude-sonnet-4-6") == 1024
    assert min_cache_tokens_for("claude-opus-4-1-20250805") == 1024
    assert min_cache_tokens_for("claude-haiku-4-5-20251001") == 4096
    assert min_cache_tokens_for("claude-3-haiku-20240307") == 2048
    segs = (Segment(_words(2000)),)
    for model, marked in (("claude-sonnet-4-6", True), ("claude-haiku-4-5", False)):
        server.queue(Reply(anthropic_tool_reply(["n1"], False)))
        navigator = AnthropicNavigator(
            model, api_key="k", base_url=server.url, policy=FAST, limiter=ConcurrencyLimiter(1)
        )
        assert navigator.min_cache_tokens == min_cache_tokens_for(model)
        navigator.rank(make_request(segments=segs))
        assert ("cache_control" in server.received[-1].body["system"][0]) is marked


def test_no_segments_means_no_system(server: LoopbackServer) -> None:
    server.queue(Reply(anthropic_tool_reply(["n1"], False)))
    nav(server).rank(make_request(segments=()))
    assert "system" not in server.received[0].body


def test_429_then_success_honours_retry_after(server: LoopbackServer) -> None:
    err = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    server.queue(
        Reply(err, 429, {"retry-after": "0.3"}),
        Reply(anthropic_tool_reply(["n2"], True)),
    )
    navigator = nav(server)
    waits: list[float] = []
    navigator.sleep = waits.append  # a fake clock: record the wait instead of sleeping
    reply = navigator.rank(make_request())
    assert waits == [pytest.approx(0.3)]  # Retry-After wins over the tiny backoff
    assert reply.ranked_ids == ["n2"]
    assert len(server.received) == 2
    assert any("429" in n and "retrying" in n for n in reply.notes)
    assert reply.usage.calls == 1


def test_500_then_success(server: LoopbackServer) -> None:
    err = {"type": "error", "error": {"type": "api_error", "message": "boom"}}
    server.queue(Reply(err, 500), Reply(err, 529), Reply(anthropic_tool_reply(["n1"], False)))
    reply = nav(server).rank(make_request())
    assert reply.ranked_ids == ["n1"] and reply.done is False
    assert len(server.received) == 3


def test_persistent_5xx_raises_llm_error_after_retries(server: LoopbackServer) -> None:
    err = {"type": "error", "error": {"type": "api_error", "message": "down"}}
    server.queue(*[Reply(err, 503) for _ in range(10)])
    with pytest.raises(LLMError, match="after 4 attempts"):
        nav(server).rank(make_request())
    assert len(server.received) == 4  # 1 + max_retries


def test_auth_error_is_not_retried(server: LoopbackServer) -> None:
    err = {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}
    server.queue(Reply(err, 401))
    with pytest.raises(LLMError, match="rejected"):
        nav(server).rank(make_request())
    assert len(server.received) == 1


def test_timeout_then_success(server: LoopbackServer) -> None:
    policy = RetryPolicy(timeout_s=0.3, max_retries=2, base_delay_s=0.001)
    server.queue(
        Reply(anthropic_tool_reply(["n3"], False), delay_s=1.5),
        Reply(anthropic_tool_reply(["n2"], True)),
    )
    reply = nav(server, policy).rank(make_request())
    assert reply.ranked_ids == ["n2"]
    assert any("timeout" in n.lower() for n in reply.notes)


def test_the_call_timeout_bounds_a_trickling_body(server: LoopbackServer) -> None:
    # headers at once, then one byte every 20 ms (~7 s for the body): each socket read is
    # quick, so only a bound on the whole attempt stops it at the 0.3 s call timeout; the
    # attempt is retried, and the answer is the second reply's
    policy = RetryPolicy(timeout_s=0.3, max_retries=2, base_delay_s=0.001)
    server.queue(
        Reply(anthropic_tool_reply(["n3"], False), trickle_s=0.02),
        Reply(anthropic_tool_reply(["n2"], True)),
    )
    reply = nav(server, policy).rank(make_request())
    assert reply.ranked_ids == ["n2"]
    assert any("end of the call's timeout" in n for n in reply.notes)


def test_persistent_timeouts_raise(server: LoopbackServer) -> None:
    # the server would answer every call, but only after 5 s: each attempt must time out at
    # 0.2 s (a late answer would be a success, not an LLMError), and there are exactly
    # 1 + max_retries attempts; no wall-clock bound
    policy = RetryPolicy(timeout_s=0.2, max_retries=1, base_delay_s=0.001)
    server.queue(*[Reply(anthropic_tool_reply(["n1"]), delay_s=5.0) for _ in range(3)])
    navigator = nav(server, policy)
    waits: list[float] = []
    navigator.sleep = waits.append
    with pytest.raises(LLMError, match=r"after 2 attempts: timeout"):
        navigator.rank(make_request())
    assert len(server.received) == 2 and len(waits) == 1


def test_network_error_is_retried_then_raised() -> None:
    srv = LoopbackServer()  # bound but never serving: connections are refused after close
    url = srv.url
    srv.httpd.server_close()
    n = AnthropicNavigator(
        "m", api_key="k", base_url=url, policy=FAST, limiter=ConcurrencyLimiter(1)
    )
    with pytest.raises(LLMError, match="network error"):
        n.rank(make_request())


def test_json_in_text_is_parsed_without_retry(server: LoopbackServer) -> None:
    text = 'Sure! Here is my answer:\n```json\n{"ranked_ids": ["n2", "n3"], "done": false}\n```'
    server.queue(Reply(anthropic_text_reply(text)))
    reply = nav(server).rank(make_request())
    assert reply.ranked_ids == ["n2", "n3"] and reply.done is False
    assert len(server.received) == 1
    assert any("JSON object in the reply text" in n for n in reply.notes)


def test_garbage_then_corrective_retry(server: LoopbackServer) -> None:
    server.queue(
        Reply(anthropic_text_reply("I think docs is relevant.")),
        Reply(anthropic_tool_reply(["n3"], False)),
    )
    reply = nav(server).rank(make_request())
    assert reply.ranked_ids == ["n3"]
    assert len(server.received) == 2
    second = server.received[1].body["messages"]
    assert second[1] == {"role": "assistant", "content": "I think docs is relevant."}
    assert second[2] == {"role": "user", "content": CORRECTION_MESSAGE}
    assert server.received[1].body["tool_choice"] == {"type": "tool", "name": "rank"}
    assert reply.usage.calls == 2 and reply.usage.input_tokens == 22


def test_garbage_twice_gives_empty_ranking(
    server: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.queue(Reply(anthropic_text_reply("no idea")), Reply(anthropic_message([])))
    with caplog.at_level(logging.WARNING, logger="treeseek.llm"):
        reply = nav(server).rank(make_request())
    assert reply.ranked_ids == [] and reply.done is False
    assert len(server.received) == 2
    assert any("empty ranking" in n for n in reply.notes)
    assert "corrective retry" in caplog.text


def test_empty_first_reply_correction_goes_in_the_same_user_turn(server: LoopbackServer) -> None:
    server.queue(Reply(anthropic_message([])), Reply(anthropic_tool_reply(["n1"], False)))
    reply = nav(server).rank(make_request())
    assert reply.ranked_ids == ["n1"]
    msgs = server.received[1].body["messages"]
    assert len(msgs) == 1 and msgs[0]["role"] == "user"
    assert msgs[0]["content"][-1] == {"type": "text", "text": CORRECTION_MESSAGE}


def test_ids_outside_allowed_set_are_dropped_and_counted(server: LoopbackServer) -> None:
    server.queue(Reply(anthropic_tool_reply(["n9", "n2", "zzz", "n2", "n1"], True)))
    reply = nav(server).rank(make_request())
    assert reply.ranked_ids == ["n2", "n1"]
    assert reply.dropped_ids == ["n9", "zzz"]
    assert any("dropped 2" in n for n in reply.notes)


def test_paths_instead_of_ids(server: LoopbackServer) -> None:
    server.queue(
        Reply(
            anthropic_tool_reply(
                ["/repo/django/db/models/query.py", "common.py", "./docs/", "dir1/common.py"], True
            )
        )
    )
    reply = nav(server).rank(make_request(tree_root="/repo"))
    assert reply.ranked_ids == ["n2", "n3", "n4"]
    assert reply.resolved_paths == {
        "/repo/django/db/models/query.py": "n2",
        "./docs/": "n3",
        "dir1/common.py": "n4",
    }
    assert reply.dropped_ids == ["common.py"]  # ambiguous basename: never matched


def test_pick_limit_is_enforced(server: LoopbackServer) -> None:
    server.queue(Reply(anthropic_tool_reply(["n1", "n2", "n3", "n4"], False)))
    reply = nav(server).rank(make_request(pick_limit=2))
    assert reply.ranked_ids == ["n1", "n2"]
    assert any("pick limit" in n for n in reply.notes)


def test_missing_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        AnthropicNavigator("claude-sonnet-4-6", api_key=None)


def test_non_json_body_is_retried(server: LoopbackServer) -> None:
    server.queue(Reply(b"<html>502 from a proxy</html>"), Reply(anthropic_tool_reply(["n1"])))
    reply = nav(server).rank(make_request())
    assert reply.ranked_ids == ["n1"]
    assert any("unreadable response" in n for n in reply.notes)


def test_unexpected_json_shape_is_a_malformed_reply(server: LoopbackServer) -> None:
    server.queue(Reply([1, 2]), Reply({"unexpected": True}))
    reply = nav(server).rank(make_request())
    assert reply.ranked_ids == [] and reply.done is False
    assert len(server.received) == 2  # the first call and the corrective one


def test_non_utf8_file_names_travel_as_replacement_characters(server: LoopbackServer) -> None:
    odd = b"caf\xe9.py".decode("utf-8", "surrogateescape")  # as the tree stores such a name
    server.queue(Reply(anthropic_tool_reply(["n1"])))
    reply = nav(server).rank(make_request(segments=(Segment(f"- path: {odd}"),)))
    assert reply.ranked_ids == ["n1"]
    assert server.received[0].body["system"][0]["text"] == "- path: caf\ufffd.py"
