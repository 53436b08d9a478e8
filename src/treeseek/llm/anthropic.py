"""The Anthropic navigator: Messages API through the official ``anthropic`` SDK.

- The static segments are the ``system`` blocks, in order; segments with ``cache=True`` get a
  ``cache_control: {"type": "ephemeral"}`` breakpoint (a breakpoint caches everything before
  it: tools, then system blocks in order) when it can pay off: Anthropic silently caches no
  prefix shorter than the model's minimum (1,024 tokens for Sonnet 4.x/Opus 4-4.1, 2,048 for
  Haiku 3/3.5, 4,096 for Haiku 4.5 and Opus 4.5/4.6: "Minimum cacheable prompt length" in the
  prompt-caching docs), so a segment whose prefix (tools included) is shorter gets none, and
  at most 4 breakpoints are allowed per request: the LAST four eligible get them, so the
  longest prefix is written. Earlier prefixes written by earlier calls are still read: the
  provider looks back up to 20 blocks from a breakpoint for a cached prefix.
- The dynamic message is the one user turn; the ``rank`` tool is forced with
  ``tool_choice={"type": "tool", "name": "rank"}``.
- Usage: ``input_tokens`` (uncached), ``cache_creation_input_tokens``,
  ``cache_read_input_tokens``, ``output_tokens``.
- The SDK's own retries are off (``max_retries=0``): :class:`ProviderNavigator` retries.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from treeseek.errors import ConfigError, LLMResponseError
from treeseek.llm._limits import ConcurrencyLimiter
from treeseek.llm._protocol import (
    Correction,
    ProviderNavigator,
    RawReply,
    RetryPolicy,
    as_count,
    as_dict,
    as_list,
    decode_body,
    map_sdk_error,
    read_body,
    wire_text,
)
from treeseek.llm._validate import ReplyLimits
from treeseek.llm.base import RANK_TOOL, RankRequest, Segment, Usage
from treeseek.llm.tokens import count_tokens

if TYPE_CHECKING:
    import anthropic

MAX_CACHE_BREAKPOINTS = 4
DEFAULT_MODEL = "claude-sonnet-4-6"
FORCED_TOOL_CHOICE: dict[str, str] = {"type": "tool", "name": "rank"}
#: the smallest cacheable prefix of models not listed in MIN_CACHE_TOKENS_BY_MODEL
DEFAULT_MIN_CACHE_TOKENS = 1024
#: model-name prefix -> minimum cacheable prefix in tokens (Anthropic prompt-caching docs)
MIN_CACHE_TOKENS_BY_MODEL: tuple[tuple[str, int], ...] = (
    ("claude-opus-4-6", 4096),
    ("claude-opus-4-5", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
)
#: tokens of the tool definition, which precedes the system blocks in the cached prefix
TOOL_TOKENS = count_tokens(json.dumps([RANK_TOOL]))


def _sdk() -> Any:
    """The ``anthropic`` SDK, imported on first use: it is an optional extra (``llm``)."""
    try:
        import anthropic
    except ImportError as exc:
        raise ConfigError(
            "the anthropic navigator needs the Anthropic SDK: pip install 'treeseek[llm]'"
        ) from exc
    return anthropic


def min_cache_tokens_for(model: str) -> int:
    """The minimum cacheable prefix of ``model`` (1,024 unless the docs list it higher)."""
    for prefix, tokens in MIN_CACHE_TOKENS_BY_MODEL:
        if model.startswith(prefix):
            return tokens
    return DEFAULT_MIN_CACHE_TOKENS


def cache_breakpoints(
    segments: Sequence[Segment],
    *,
    min_tokens: int = DEFAULT_MIN_CACHE_TOKENS,
    preceding_tokens: int = TOOL_TOKENS,
    count: Callable[[str], int] = count_tokens,
    limit: int = MAX_CACHE_BREAKPOINTS,
) -> list[int]:
    """Indices of the segments that get a breakpoint, ascending.

    A segment qualifies when it asks for caching and its prefix (``preceding_tokens`` plus the
    segments up to and including it) reaches ``min_tokens``; of those, the last ``limit``.
    """
    eligible: list[int] = []
    prefix = preceding_tokens
    for i, seg in enumerate(segments):
        prefix += count(seg.text)
        if seg.cache and prefix >= min_tokens:
            eligible.append(i)
    return eligible[-limit:] if limit > 0 else []


def system_blocks(
    segments: tuple[Segment, ...], min_tokens: int = DEFAULT_MIN_CACHE_TOKENS
) -> list[dict[str, Any]]:
    """System text blocks, with breakpoints where :func:`cache_breakpoints` puts them."""
    marked = set(cache_breakpoints(segments, min_tokens=min_tokens))
    blocks: list[dict[str, Any]] = []
    for i, seg in enumerate(segments):
        block: dict[str, Any] = {"type": "text", "text": wire_text(seg.text)}
        if i in marked:
            block["cache_control"] = {"type": "ephemeral"}
        blocks.append(block)
    return blocks


def user_messages(message: str, correction: Correction | None) -> list[dict[str, Any]]:
    message = wire_text(message)
    if correction is None:
        return [{"role": "user", "content": message}]
    if correction.previous_text.strip():
        return [
            {"role": "user", "content": message},
            {"role": "assistant", "content": wire_text(correction.previous_text)},
            {"role": "user", "content": correction.message},
        ]
    parts = [{"type": "text", "text": message}, {"type": "text", "text": correction.message}]
    return [{"role": "user", "content": parts}]


class AnthropicNavigator(ProviderNavigator):
    supports_cache = True

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None,
        base_url: str | None = None,
        max_output_tokens: int = 1024,
        policy: RetryPolicy | None = None,
        limiter: ConcurrencyLimiter | None = None,
        seed: int | None = None,
        min_cache_tokens: int | None = None,
        limits: ReplyLimits | None = None,
    ) -> None:
        super().__init__(policy=policy, limiter=limiter, seed=seed, limits=limits)
        if not model:
            raise ConfigError(
                "anthropic navigator needs a model name, e.g. anthropic:claude-sonnet-4-6"
            )
        #: prefixes shorter than this get no breakpoint (the provider would not cache them)
        self.min_cache_tokens = (
            min_cache_tokens if min_cache_tokens is not None else min_cache_tokens_for(model)
        )
        if not api_key:
            raise ConfigError("anthropic navigator needs an API key: set ANTHROPIC_API_KEY")
        self.model = model
        self.name = f"anthropic:{model}"
        self.max_output_tokens = max_output_tokens
        self._sdk = _sdk()
        self._client: anthropic.Anthropic = self._sdk.Anthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=self.policy.timeout_s,
        )

    def build_body(self, request: RankRequest, correction: Correction | None) -> dict[str, Any]:
        """The Messages API request body (also what the loopback tests check)."""
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_output_tokens,
            "tools": [RANK_TOOL],
            "tool_choice": FORCED_TOOL_CHOICE,
            "messages": user_messages(request.message, correction),
        }
        if request.segments:
            body["system"] = system_blocks(request.segments, self.min_cache_tokens)
        return body

    def _send(
        self, request: RankRequest, correction: Correction | None, timeout_s: float
    ) -> RawReply:
        body = self.build_body(request, correction)
        ends_at = self._clock() + timeout_s  # the whole attempt, body included
        try:
            # streamed, so the body is read with a byte cap and parsed by the bounded parser,
            # never by the SDK (a tool input nested 100,000 deep cannot crash it)
            with self._client.messages.with_streaming_response.create(
                **body, timeout=timeout_s
            ) as resp:
                data = read_body(
                    resp.iter_bytes(),
                    self.limits,
                    request.deadline,
                    call_ends_at=ends_at,
                    clock=self._clock,
                )
        except LLMResponseError as exc:
            return RawReply(tool_input=None, text="", usage=Usage(calls=1), problem=str(exc))
        except (self._sdk.AnthropicError, ValueError) as exc:  # ValueError: a body that is not JSON
            raise map_sdk_error(exc, self._sdk) from exc
        try:
            return raw_reply(decode_body(data, self.limits))
        except LLMResponseError as exc:
            return RawReply(tool_input=None, text="", usage=Usage(calls=1), problem=str(exc))


def raw_reply(body: dict[str, Any]) -> RawReply:
    """The rank call, text and usage of a Messages API body, read defensively (any field may
    be missing, null or of the wrong type)."""
    tool_input: dict[str, Any] | str | None = None
    texts: list[str] = []
    for block in as_list(body.get("content")):  # none: handled as "no tool call"
        block = as_dict(block)
        kind = block.get("type")
        if kind == "tool_use" and block.get("name") == "rank" and tool_input is None:
            raw_input = block.get("input")
            tool_input = raw_input if isinstance(raw_input, dict | str) else None
        elif kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
    u = as_dict(body.get("usage"))
    usage = Usage(
        calls=1,
        input_tokens=as_count(u.get("input_tokens")),
        cache_write_tokens=as_count(u.get("cache_creation_input_tokens")),
        cache_read_tokens=as_count(u.get("cache_read_input_tokens")),
        output_tokens=as_count(u.get("output_tokens")),
    )
    return RawReply(tool_input=tool_input, text="\n".join(texts), usage=usage)
