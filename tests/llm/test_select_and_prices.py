"""Navigator selection from specs/env/config, and the price table."""

from __future__ import annotations

from pathlib import Path

import pytest

from treeseek.errors import ConfigError
from treeseek.llm._limits import shared_limiter
from treeseek.llm.anthropic import AnthropicNavigator
from treeseek.llm.base import Usage
from treeseek.llm.lexical import LexicalNavigator
from treeseek.llm.openai import OpenAINavigator
from treeseek.llm.prices import estimate_cost, price_for
from treeseek.llm.replay import RecordingNavigator
from treeseek.llm.scripted import ScriptedNavigator
from treeseek.llm.select import navigator_from_spec


def test_default_is_lexical_without_keys() -> None:
    nav = navigator_from_spec(None, env={})
    assert isinstance(nav, LexicalNavigator) and nav.name == "lexical"
    assert isinstance(navigator_from_spec("", env={"ANTHROPIC_API_KEY": "  "}), LexicalNavigator)


def test_anthropic_key_selects_anthropic_with_default_model() -> None:
    nav = navigator_from_spec(None, env={"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "o"})
    assert isinstance(nav, AnthropicNavigator) and nav.name == "anthropic:claude-sonnet-4-6"
    nav = navigator_from_spec(None, env={"OPENAI_API_KEY": "o"})
    assert isinstance(nav, OpenAINavigator) and nav.name == "openai:gpt-4.1-mini"


def test_treeseek_llm_env_and_explicit_spec_precedence() -> None:
    env = {"TREESEEK_LLM": "lexical", "ANTHROPIC_API_KEY": "k"}
    assert isinstance(navigator_from_spec(None, env=env), LexicalNavigator)
    nav = navigator_from_spec("anthropic:claude-haiku-4-5", env=env)
    assert nav.name == "anthropic:claude-haiku-4-5"
    cfg_nav = navigator_from_spec(
        None, env={"OPENAI_API_KEY": "o"}, config={"spec": "openai:gpt-4o"}
    )
    assert cfg_nav.name == "openai:gpt-4o"


def test_openai_compatible_spec() -> None:
    nav = navigator_from_spec(
        "openai-compatible:qwen2.5-coder:7b@http://localhost:11434/v1/", env={}
    )
    assert isinstance(nav, OpenAINavigator)
    assert nav.model == "qwen2.5-coder:7b" and nav.base_url == "http://localhost:11434/v1"
    assert nav.name == "openai-compatible:qwen2.5-coder:7b@http://localhost:11434/v1"


def test_config_sets_policy_and_concurrency() -> None:
    before = shared_limiter().limit
    try:
        nav = navigator_from_spec(
            "openai:gpt-4.1",
            env={"OPENAI_API_KEY": "o"},
            config={"timeout_s": 5, "max_retries": 1, "concurrency": 7},
        )
        assert isinstance(nav, OpenAINavigator)
        assert nav.policy.timeout_s == 5.0 and nav.policy.max_retries == 1
        assert shared_limiter().limit == 7
    finally:
        shared_limiter().set_limit(before)


def test_record_env_wraps_the_navigator(tmp_path: Path) -> None:
    out = tmp_path / "rec" / "calls.jsonl"
    nav = navigator_from_spec("lexical", env={"TREESEEK_LLM_RECORD": str(out)})
    assert isinstance(nav, RecordingNavigator) and nav.name == "lexical"
    assert out.exists()
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(ConfigError, match="cannot write replay file"):
        navigator_from_spec("lexical", env={"TREESEEK_LLM_RECORD": str(blocked / "x.jsonl")})


def test_scripted_replay_spec(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl"
    f.write_text('{"key": "abc", "ranked_ids": [], "done": false}\n')
    assert isinstance(navigator_from_spec(f"scripted:{f}", env={}), ScriptedNavigator)


@pytest.mark.parametrize(
    ("spec", "env", "message"),
    [
        ("anthropic:claude-sonnet-4-6", {}, "ANTHROPIC_API_KEY"),
        ("openai", {}, "OPENAI_API_KEY"),
        ("openai-compatible:llama", {}, "MODEL@URL"),
        ("openai-compatible:llama@localhost:8080", {}, "MODEL@URL"),
        ("openai-compatible:@http://x", {}, "MODEL@URL"),
        ("gemini:pro", {}, "unknown LLM provider 'gemini'"),
        ("lexical:bm25", {}, "takes no model"),
        ("scripted:", {}, "needs a replay file"),
        ("scripted:/nonexistent/file.jsonl", {}, "cannot read replay file"),
    ],
)
def test_bad_specs_are_config_errors(spec: str, env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        navigator_from_spec(spec, env=env)


def test_bad_config_values() -> None:
    with pytest.raises(ConfigError, match="timeout_s"):
        navigator_from_spec("openai", env={"OPENAI_API_KEY": "o"}, config={"timeout_s": "soon"})
    with pytest.raises(ConfigError, match="concurrency"):
        navigator_from_spec("lexical", env={}, config={"concurrency": 0})


def test_prices_and_cost() -> None:
    u = Usage(calls=2, input_tokens=1_000_000, cache_write_tokens=1_000_000,
              cache_read_tokens=1_000_000, output_tokens=1_000_000)  # fmt: skip
    assert estimate_cost("anthropic:claude-sonnet-4-6", u) == pytest.approx(3 + 3.75 + 0.3 + 15)
    assert estimate_cost("anthropic:claude-haiku-4-5-20251001", u) == pytest.approx(
        1 + 1.25 + 0.1 + 5
    )
    assert estimate_cost("openai:gpt-4.1-mini-2025-04-14", u) == pytest.approx(
        0.4 + 0.4 + 0.1 + 1.6
    )
    assert estimate_cost("openai:gpt-4o", u) == pytest.approx(2.5 + 2.5 + 1.25 + 10)
    assert estimate_cost("openai:gpt-4o-mini", Usage(input_tokens=2000)) == pytest.approx(0.0003)
    assert estimate_cost("openai-compatible:llama@http://x", u) == 0.0
    assert estimate_cost("lexical", u) == 0.0
    assert estimate_cost("openai:some-future-model", u) is None
    assert estimate_cost("mystery:x", u) is None
    assert price_for("openai:o4-mini") is not None
    assert price_for("replay:anthropic:claude-sonnet-4-6") == price_for(
        "anthropic:claude-sonnet-4-6"
    )
    assert estimate_cost("replay:lexical", u) == 0.0
    assert estimate_cost("replay:?", u) == 0.0
