"""The OpenAI-compatible adapter against a real loopback server speaking Chat Completions."""

from __future__ import annotations

import threading

import pytest
from llm_wire import LoopbackServer, Reply, make_request, openai_reply, rank_args

from treeseek.errors import ConfigError, LLMError
from treeseek.llm._limits import ConcurrencyLimiter
from treeseek.llm._protocol import CORRECTION_MESSAGE, RetryPolicy
from treeseek.llm.base import RANK_TOOL, Segment
from treeseek.llm.openai import SYSTEM_MESSAGE, OpenAINavigator

FAST = RetryPolicy(timeout_s=2.0, max_retries=3, base_delay_s=0.001, max_delay_s=0.01)


def nav(
    server: LoopbackServer,
    policy: RetryPolicy = FAST,
    limiter: ConcurrencyLimiter | None = None,
    api_key: str | None = None,
) -> OpenAINavigator:
    return OpenAINavigator(
        "qwen2.5-coder",
        api_key=api_key,
        base_url=server.url + "/v1",
        policy=policy,
        limiter=limiter or ConcurrencyLimiter(4),
        seed=1,
    )


def test_tool_call_cached_usage_and_stable_prefix(server: LoopbackServer) -> None:
    server.queue(
        Reply(
            openai_reply(
                rank_args(["n2", "n1"], True),
                prompt_tokens=1000,
                cached_tokens=768,
                completion_tokens=15,
            )
        )
    )
    segs = (Segment("INSTRUCTIONS"), Segment("BLOCK 1", cache=False), Segment("BLOCK 2"))
    n = nav(server, api_key="local-key")
    assert n.name.startswith("openai-compatible:qwen2.5-coder@http://127.0.0.1")
    reply = n.rank(make_request(segments=segs))
    assert reply.ranked_ids == ["n2", "n1"] and reply.done is True
    u = reply.usage
    assert (u.calls, u.input_tokens, u.cache_read_tokens) == (1, 232, 768)
    assert (u.cache_write_tokens, u.output_tokens) == (0, 15)

    [req] = server.received
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer local-key"
    body = req.body
    assert body["model"] == "qwen2.5-coder"
    assert body["tool_choice"] == {"type": "function", "function": {"name": "rank"}}
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "rank",
                "description": RANK_TOOL["description"],
                "parameters": RANK_TOOL["input_schema"],
            },
        }
    ]
    assert body["messages"] == [
        {"role": "system", "content": SYSTEM_MESSAGE},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "INSTRUCTIONS"},
                {"type": "text", "text": "BLOCK 1"},
                {"type": "text", "text": "BLOCK 2"},
            ],
        },
        {"role": "user", "content": make_request().message},
    ]
    assert body["max_tokens"] == 1024  # compatible servers understand max_tokens


def test_prefix_is_identical_across_calls_with_the_same_segments(server: LoopbackServer) -> None:
    server.queue(Reply(openai_reply(rank_args(["n1"]))), Reply(openai_reply(rank_args(["n2"]))))
    segs = (Segment("INSTRUCTIONS"), Segment("BLOCK"))
    n = nav(server)
    n.rank(make_request(segments=segs))
    n.rank(make_request(segments=segs, pick_limit=1))
    a, b = (r.body["messages"] for r in server.received)
    assert a[:-1] == b[:-1]


def test_missing_usage_details_and_no_key_for_local_servers(server: LoopbackServer) -> None:
    server.queue(Reply(openai_reply(rank_args(["n1"], False), cached_tokens=None)))
    reply = nav(server).rank(make_request())
    assert reply.usage.cache_read_tokens == 0 and reply.usage.input_tokens == 100
    assert server.received[0].headers["authorization"] == "Bearer not-needed"


def test_official_api_needs_a_key_and_uses_max_completion_tokens(server: LoopbackServer) -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAINavigator("gpt-4.1-mini", api_key=None)
    n = OpenAINavigator("gpt-4.1-mini", api_key="k", limiter=ConcurrencyLimiter(1))
    assert n.name == "openai:gpt-4.1-mini"
    body = n.build_body(make_request(), None)
    assert body["max_completion_tokens"] == 1024 and "max_tokens" not in body


def test_429_then_success(server: LoopbackServer) -> None:
    err = {
        "error": {
            "message": "Rate limit reached",
            "type": "requests",
            "code": "rate_limit_exceeded",
        }
    }
    server.queue(Reply(err, 429, {"retry-after-ms": "250"}), Reply(openai_reply(rank_args(["n4"]))))
    navigator = nav(server)
    waits: list[float] = []
    navigator.sleep = waits.append  # a fake clock: record the wait instead of sleeping
    reply = navigator.rank(make_request())
    assert waits == [pytest.approx(0.25)]  # retry-after-ms wins over the tiny backoff
    assert reply.ranked_ids == ["n4"]
    assert len(server.received) == 2


def test_500_then_success(server: LoopbackServer) -> None:
    err = {"error": {"message": "internal", "type": "server_error"}}
    server.queue(Reply(err, 500), Reply(err, 502), Reply(openai_reply(rank_args(["n1"]))))
    reply = nav(server).rank(make_request())
    assert reply.ranked_ids == ["n1"]
    assert len(server.received) == 3
    assert sum("retrying" in n for n in reply.notes) == 2


def test_bad_request_is_not_retried(server: LoopbackServer) -> None:
    server.queue(
        Reply({"error": {"message": "model not found", "type": "invalid_request_error"}}, 404)
    )
    with pytest.raises(LLMError, match="model not found"):
        nav(server).rank(make_request())
    assert len(server.received) == 1


def test_timeout_then_success(server: LoopbackServer) -> None:
    policy = RetryPolicy(timeout_s=0.3, max_retries=2, base_delay_s=0.001)
    server.queue(
        Reply(openai_reply(rank_args(["n3"])), delay_s=1.5),
        Reply(openai_reply(rank_args(["n2"]))),
    )
    reply = nav(server, policy).rank(make_request())
    assert reply.ranked_ids == ["n2"]
    assert any("timeout" in n.lower() for n in reply.notes)


def test_the_call_timeout_bounds_a_trickling_body(server: LoopbackServer) -> None:
    # each socket read is quick (a byte every 20 ms): only a bound on the whole attempt
    # stops it at the call timeout, without a query deadline
    policy = RetryPolicy(timeout_s=0.3, max_retries=2, base_delay_s=0.001)
    server.queue(
        Reply(openai_reply(rank_args(["n3"])), trickle_s=0.02),
        Reply(openai_reply(rank_args(["n2"]))),
    )
    reply = nav(server, policy).rank(make_request())
    assert reply.ranked_ids == ["n2"]
    assert any("end of the call's timeout" in n for n in reply.notes)


def test_invalid_arguments_json_falls_back_to_text_json(server: LoopbackServer) -> None:
    server.queue(
        Reply(openai_reply("{ranked_ids: [n1", content='{"ranked_ids": ["n3"], "done": "false"}'))
    )
    reply = nav(server).rank(make_request())
    assert reply.ranked_ids == ["n3"] and reply.done is False
    assert len(server.received) == 1
    assert any("unusable input" in n for n in reply.notes)


def test_text_only_reply_with_wrapped_json(server: LoopbackServer) -> None:
    text = 'Calling tool: {"name": "rank", "arguments": {"ranked_ids": ["n1", 7], "done": true}}'
    server.queue(Reply(openai_reply(None, content=text)))
    reply = nav(server).rank(make_request())
    assert reply.ranked_ids == ["n1"] and reply.done is True
    assert reply.dropped_ids == ["7"]


def test_garbage_then_corrective_retry(server: LoopbackServer) -> None:
    server.queue(
        Reply(openai_reply(None, content="Let me think...")), Reply(openai_reply(rank_args(["n5"])))
    )
    reply = nav(server).rank(make_request())
    assert reply.ranked_ids == ["n5"]
    msgs = server.received[1].body["messages"]
    assert msgs[-2] == {"role": "assistant", "content": "Let me think..."}
    assert msgs[-1] == {"role": "user", "content": CORRECTION_MESSAGE}
    assert server.received[0].body["messages"] == msgs[:-2]


def test_garbage_twice_gives_empty_ranking(server: LoopbackServer) -> None:
    empty = openai_reply(None, content="")
    empty["choices"] = []
    server.queue(Reply(openai_reply(None, content="nope")), Reply(empty))
    reply = nav(server).rank(make_request())
    assert reply.ranked_ids == [] and reply.done is False
    assert reply.usage.calls == 2


def test_paths_and_outside_ids(server: LoopbackServer) -> None:
    args = rank_args(["models/query.py", "n9", "common.py", "C:\\repo\\docs"], False)
    server.queue(Reply(openai_reply(args)))
    req = make_request(tree_root="C:\\repo", path_prefix="django/db")
    reply = nav(server).rank(req)
    assert reply.ranked_ids == ["n2", "n3"]
    assert reply.dropped_ids == ["n9", "common.py"]


def test_concurrency_limit_is_shared_by_parallel_calls(server: LoopbackServer) -> None:
    limiter = ConcurrencyLimiter(2)
    server.queue(*[Reply(openai_reply(rank_args(["n1"])), delay_s=0.15) for _ in range(6)])
    navs = [nav(server, limiter=limiter) for _ in range(2)]  # two navigators, one limiter
    replies = []

    def call(i: int) -> None:
        replies.append(navs[i % 2].rank(make_request()))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(replies) == 6 and all(r.ranked_ids == ["n1"] for r in replies)
    assert server.peak_in_flight == 2
    assert limiter.peak == 2 and limiter.active == 0


def test_non_json_body_is_retried_then_raised(server: LoopbackServer) -> None:
    server.queue(*[Reply(b"<html>bad gateway</html>") for _ in range(4)])
    with pytest.raises(LLMError, match="unreadable response"):
        nav(server).rank(make_request())
    assert len(server.received) == 4


def test_server_rejecting_forced_tool_choice_gets_auto(server: LoopbackServer) -> None:
    err = {
        "error": {
            "message": "tool_choice param only supports 'auto'",
            "type": "invalid_request_error",
        }
    }
    server.queue(
        Reply(err, 400),
        Reply(openai_reply(rank_args(["n2"]))),
        Reply(openai_reply(rank_args(["n3"]))),
    )
    n = nav(server)
    assert n.rank(make_request()).ranked_ids == ["n2"]
    assert n.rank(make_request()).ranked_ids == ["n3"]
    choices = [r.body["tool_choice"] for r in server.received]
    assert choices == [{"type": "function", "function": {"name": "rank"}}, "auto", "auto"]


def test_non_utf8_file_names_travel_as_replacement_characters(server: LoopbackServer) -> None:
    odd = b"caf\xe9.py".decode("utf-8", "surrogateescape")
    server.queue(Reply(openai_reply(rank_args(["n1"]))))
    reply = nav(server).rank(make_request(segments=(Segment(f"- path: {odd}"),)))
    assert reply.ranked_ids == ["n1"]
    assert server.received[0].body["messages"][1]["content"][0]["text"] == "- path: caf\ufffd.py"
