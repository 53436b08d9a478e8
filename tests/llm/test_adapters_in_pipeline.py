"""The real adapters inside the real Block retriever, against loopback providers.

A tiny "model" on the server reads the CURRENT BLOCK (the static segment just before the
instructions: the second-last system block / static content part) and answers like a navigator
that knows the target file: the directory leading to it (by alias), or the file itself given as
the displayed, prefix-relative PATH (exercising path resolution).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from llm_wire import LoopbackServer, Reply, anthropic_tool_reply, openai_reply

import treeseek
from treeseek.llm._limits import ConcurrencyLimiter
from treeseek.llm._protocol import RetryPolicy
from treeseek.llm.anthropic import AnthropicNavigator
from treeseek.llm.openai import OpenAINavigator
from treeseek.search.base import QueryOptions
from treeseek.search.strategy import run_query
from treeseek.trees.pathlist import PathListBuilder

TARGET = "pkg/db/models/query.py"
PATHS = [
    "README.md",
    "setup.py",
    "docs/index.md",
    "pkg/__init__.py",
    "pkg/db/__init__.py",
    "pkg/db/models/__init__.py",
    "pkg/db/models/query.py",
    "pkg/db/models/fields.py",
    "pkg/web/views.py",
    "tests/test_query.py",
] + [f"pkg/web/templates/t{i}.html" for i in range(60)]

_ENTRY = re.compile(r"- id: (\S+)\n\s+path: (.*)\n\s+type: (\w+)")


def _answer(block_text: str) -> tuple[list[str], bool]:
    prefix_match = re.search(r"Path prefix: (.*)/\n", block_text)
    prefix = prefix_match.group(1) + "/" if prefix_match else ""
    for alias, shown, _kind in _ENTRY.findall(block_text):
        full = prefix + shown.strip()
        if full == TARGET:
            return [shown.strip()], True  # a path, as displayed
        if TARGET.startswith(full.rstrip("/") + "/"):
            return [alias], False
    return [], False


def _anthropic_model(body: dict[str, Any]) -> Reply:
    current = body["system"][-2]["text"]
    ids, done = _answer(current)
    return Reply(anthropic_tool_reply(ids, done, input_tokens=30, cache_read=500))


def _openai_model(body: dict[str, Any]) -> Reply:
    parts = body["messages"][1]["content"]
    ids, done = _answer(parts[-2]["text"])
    return Reply(openai_reply(json.dumps({"ranked_ids": ids, "done": done}), cached_tokens=64))


@pytest.fixture
def tree(tmp_path: Path):  # type: ignore[no-untyped-def]
    db = treeseek.open(tmp_path / "t.db")
    db.index(PathListBuilder(PATHS), name="t")
    yield db
    db.close()


POLICY = RetryPolicy(timeout_s=5, max_retries=1, base_delay_s=0.001)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_block_retrieval_through_a_real_adapter(
    tree, server: LoopbackServer, provider: str
) -> None:  # type: ignore[no-untyped-def]
    if provider == "anthropic":
        server.responder = _anthropic_model
        nav: Any = AnthropicNavigator(
            "claude-sonnet-4-6", api_key="k", base_url=server.url, policy=POLICY,
            limiter=ConcurrencyLimiter(2), min_cache_tokens=0,  # a tiny tree: no floor
        )  # fmt: skip
    else:
        server.responder = _openai_model
        nav = OpenAINavigator(
            "local", api_key=None, base_url=server.url + "/v1", policy=POLICY,
            limiter=ConcurrencyLimiter(2),
        )  # fmt: skip
    options = QueryOptions(strategy="block", k=1, block_tokens=300)
    result = run_query(tree.store, tree.tree("t"), "slow QuerySet in the ORM", options, nav)
    assert [f.path for f in result.files] == [TARGET]
    assert result.navigator == nav.name
    assert result.usage.calls == len(server.received) >= 3
    # the model named the file by its displayed path; it was resolved, and the trace says so
    notes = [n for rnd in result.trace.rounds for b in rnd.blocks for n in b.notes]
    assert any("resolved" in n and "query.py" in n for n in notes), notes
    if provider == "anthropic":
        assert result.usage.cache_read_tokens == 500 * len(server.received)
        for req in server.received:
            marks = [b for b in req.body["system"] if "cache_control" in b]
            assert 1 <= len(marks) <= 4
            assert req.body["tool_choice"] == {"type": "tool", "name": "rank"}
    else:
        assert result.usage.cache_read_tokens == 64 * len(server.received)
