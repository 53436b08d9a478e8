"""Provider price table and cost estimates (USD per million tokens).

Prices are list prices as published by the providers (standard tier, 5-minute cache writes for
Anthropic). OpenAI bills no cache writes: cached prompt tokens are read at the cached rate and
the rest at the input rate, so its cache-write price equals the input price. Models served by
``openai-compatible`` endpoints (Ollama, vLLM, llama.cpp, LM Studio) and the lexical/scripted
navigators cost 0; a replay (``replay:anthropic:...``) is priced as the navigator it recorded,
so replayed runs estimate what the recorded usage would cost. An unknown hosted model has no
estimate (``None``), never a guess.

A model name matches its exact entry or the longest entry it starts with, so dated snapshots
(``claude-sonnet-4-5-20250929``, ``gpt-4.1-2025-04-14``) find their family's price.
"""

from __future__ import annotations

from dataclasses import dataclass

from treeseek.llm.base import Usage


@dataclass(frozen=True, slots=True)
class Price:
    input: float
    cache_write: float
    cache_read: float
    output: float


def _anthropic(inp: float, out: float) -> Price:
    # Anthropic: 5-minute cache writes cost 1.25x input, cache reads 0.1x input
    return Price(inp, inp * 1.25, inp * 0.1, out)


def _openai(inp: float, cached: float, out: float) -> Price:
    return Price(inp, inp, cached, out)


ANTHROPIC_PRICES: dict[str, Price] = {
    "claude-opus-4-6": _anthropic(5.0, 25.0),
    "claude-opus-4-5": _anthropic(5.0, 25.0),
    "claude-opus-4-1": _anthropic(15.0, 75.0),
    "claude-opus-4-0": _anthropic(15.0, 75.0),
    "claude-opus-4": _anthropic(15.0, 75.0),
    "claude-sonnet-4-6": _anthropic(3.0, 15.0),
    "claude-sonnet-4-5": _anthropic(3.0, 15.0),
    "claude-sonnet-4": _anthropic(3.0, 15.0),
    "claude-3-7-sonnet": _anthropic(3.0, 15.0),
    "claude-haiku-4-5": _anthropic(1.0, 5.0),
    "claude-3-5-haiku": _anthropic(0.8, 4.0),
    "claude-3-haiku": _anthropic(0.25, 1.25),
}

OPENAI_PRICES: dict[str, Price] = {
    "gpt-4.1": _openai(2.0, 0.5, 8.0),
    "gpt-4.1-mini": _openai(0.4, 0.1, 1.6),
    "gpt-4.1-nano": _openai(0.1, 0.025, 0.4),
    "gpt-4o": _openai(2.5, 1.25, 10.0),
    "gpt-4o-mini": _openai(0.15, 0.075, 0.6),
    "o4-mini": _openai(1.1, 0.275, 4.4),
    "o3": _openai(2.0, 0.5, 8.0),
    "o3-mini": _openai(1.1, 0.55, 4.4),
    "gpt-5": _openai(1.25, 0.125, 10.0),
    "gpt-5-mini": _openai(0.25, 0.025, 2.0),
    "gpt-5-nano": _openai(0.05, 0.005, 0.4),
}

FREE = Price(0.0, 0.0, 0.0, 0.0)
_FREE_PROVIDERS = ("openai-compatible", "lexical", "scripted", "local")


def _lookup(table: dict[str, Price], model: str) -> Price | None:
    if model in table:
        return table[model]
    best = max((k for k in table if model.startswith(k + "-")), key=len, default=None)
    return table[best] if best is not None else None


def price_for(model_spec: str) -> Price | None:
    """The price of ``provider:model`` (a navigator name), or ``None`` if unknown."""
    provider, _, model = model_spec.partition(":")
    if provider == "replay":  # a replay is priced as the run it recorded ("replay:anthropic:...")
        return price_for(model) if model and model != "?" else FREE
    if provider in _FREE_PROVIDERS:
        return FREE
    if provider == "anthropic":
        return _lookup(ANTHROPIC_PRICES, model)
    if provider == "openai":
        return _lookup(OPENAI_PRICES, model)
    return None


def estimate_cost(model_spec: str, usage: Usage) -> float | None:
    """USD for ``usage`` at the price of ``model_spec`` (a navigator name), or ``None``."""
    price = price_for(model_spec)
    if price is None:
        return None
    total = (
        usage.input_tokens * price.input
        + usage.cache_write_tokens * price.cache_write
        + usage.cache_read_tokens * price.cache_read
        + usage.output_tokens * price.output
    )
    return total / 1_000_000
