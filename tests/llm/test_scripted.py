"""ScriptedNavigator (lists, callables, replays) and the recording wrapper."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from llm_wire import make_request

from treeseek.errors import ConfigError, LLMError
from treeseek.llm.base import Candidate, RankReply, RankRequest, Usage
from treeseek.llm.lexical import LexicalNavigator
from treeseek.llm.replay import RecordingNavigator, read_replay, request_key
from treeseek.llm.scripted import ScriptedNavigator, ScriptedReply


def test_list_script_is_consumed_in_order_and_validated() -> None:
    nav = ScriptedNavigator(
        [
            ScriptedReply(["n1", "n9"], done=False),
            {"ranked_ids": ["django/db/models/query.py"], "done": True},
        ]
    )
    r1 = nav.rank(make_request())
    assert r1.ranked_ids == ["n1"] and r1.dropped_ids == ["n9"] and not r1.done
    r2 = nav.rank(make_request())
    assert r2.ranked_ids == ["n2"] and r2.done and r2.resolved_paths
    assert r1.usage.calls == 1
    r3 = nav.rank(make_request())
    assert r3.ranked_ids == [] and not r3.done and "script exhausted" in r3.notes
    assert len(nav.requests) == 3 and nav.remaining == 0


def test_strict_script_raises_when_exhausted() -> None:
    nav = ScriptedNavigator([], strict=True)
    with pytest.raises(LLMError, match="exhausted"):
        nav.rank(make_request())


def test_callable_script_sees_the_request() -> None:
    def answer(req: RankRequest) -> ScriptedReply:
        files = [c.id for c in req.candidates if c.type == "file"]
        return ScriptedReply(files, done=True, usage=Usage(calls=1, input_tokens=5))

    nav = ScriptedNavigator(answer, name="oracle")
    reply = nav.rank(make_request(pick_limit=2))
    assert reply.ranked_ids == ["n2", "n4"]  # pick limit applies
    assert reply.usage.input_tokens == 5
    assert nav.name == "oracle"


def test_callable_may_return_a_rank_reply() -> None:
    nav = ScriptedNavigator(lambda r: RankReply(["n3", "bogus"], False, notes=["from callable"]))
    reply = nav.rank(make_request())
    assert reply.ranked_ids == ["n3"] and reply.dropped_ids == ["bogus"]
    assert reply.notes[0] == "from callable"


def test_bad_script_entry_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="ranked_ids"):
        ScriptedNavigator([{"ids": ["n1"]}])


def _req(query: str, paths: list[str], alias_base: int = 1) -> RankRequest:
    cands = tuple(
        Candidate(f"n{i + alias_base}", p, "file" if "." in p else "directory")
        for i, p in enumerate(paths)
    )
    return RankRequest((), query, query, cands, pick_limit=3)


def test_record_then_replay_matches_by_query_and_candidates(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    recorder = RecordingNavigator(LexicalNavigator(), log)
    a = _req("query set", ["django", "docs", "query_set.py"])
    b = _req("docs index", ["docs/index.md", "docs/conf.py"])
    ra = recorder.rank(a)
    rb = recorder.rank(b)
    calls = read_replay(log)
    assert [c.key for c in calls] == [request_key(a), request_key(b)]
    assert calls[0].navigator == "lexical" and calls[0].ranked_paths == ["query_set.py"]

    replay = ScriptedNavigator.from_replay(log)
    assert replay.name == "replay:lexical"
    # answered out of order, with different aliases: matched by content, mapped by path
    b2 = _req("docs index", ["docs/index.md", "docs/conf.py"], alias_base=10)
    out_b = replay.rank(b2)
    assert out_b.ranked_ids == [f"n{int(i[1:]) + 9}" for i in rb.ranked_ids]
    out_a = replay.rank(a)
    assert out_a.ranked_ids == ra.ranked_ids and out_a.done == ra.done
    assert out_a.usage.calls == 1
    miss = replay.rank(_req("other", ["x"]))
    assert miss.ranked_ids == [] and "no recorded call" in miss.notes[0]


def test_replay_reports_recorded_usage(tmp_path: Path) -> None:
    req = make_request()
    line = {
        "key": request_key(req),
        "ranked_ids": ["n2"],
        "done": True,
        "usage": {"calls": 1, "input_tokens": 40, "cache_read_tokens": 900, "output_tokens": 12},
        "navigator": "anthropic:claude-sonnet-4-6",
    }
    f = tmp_path / "r.jsonl"
    f.write_text(json.dumps(line) + "\n\n")
    nav = ScriptedNavigator.from_replay(f)
    reply = nav.rank(req)
    assert reply.ranked_ids == ["n2"] and reply.done
    assert reply.usage.cache_read_tokens == 900 and reply.usage.input_tokens == 40


@pytest.mark.parametrize("content", ["not json\n", '["a list"]\n', '{"done": true}\n'])
def test_bad_replay_file_is_a_config_error(tmp_path: Path, content: str) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text(content)
    with pytest.raises(ConfigError, match=r"bad\.jsonl:1"):
        ScriptedNavigator.from_replay(f)
    with pytest.raises(ConfigError, match="cannot read"):
        ScriptedNavigator.from_replay(tmp_path / "missing.jsonl")


def test_scripted_is_thread_safe() -> None:
    nav = ScriptedNavigator([ScriptedReply(["n1"]) for _ in range(50)])
    threads = [threading.Thread(target=nav.rank, args=(make_request(),)) for _ in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(nav.requests) == 50 and nav.remaining == 0


def test_recording_survives_non_utf8_names(tmp_path: Path) -> None:
    odd = b"caf\xe9.py".decode("utf-8", "surrogateescape")
    log = tmp_path / "calls.jsonl"
    req = _req("cafe", [odd, "menu.py"])
    RecordingNavigator(ScriptedNavigator([ScriptedReply([odd], True)]), log).rank(req)
    replayed = ScriptedNavigator.from_replay(log).rank(req)
    assert replayed.ranked_ids == ["n1"] and replayed.done


def test_a_replay_line_without_the_recorded_fields_names_them(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl"
    f.write_text('{"key": "k"}\n')
    with pytest.raises(ConfigError) as caught:
        read_replay(f)
    assert str(caught.value) == (f"{f}:1: not a recorded rank call: no 'ranked_ids', 'done'"), (
        "the missing fields, not a Python signature"
    )
