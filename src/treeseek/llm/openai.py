"""The OpenAI-compatible navigator: Chat Completions through the official ``openai`` SDK.

Works with OpenAI and, through ``base_url``, with any server speaking the same API (Ollama,
vLLM, llama.cpp's server, LM Studio).

- Message order is a stable prefix, so automatic prefix caching (OpenAI, vLLM, llama.cpp) hits:
  one fixed system message, then one user message with one text part per static segment (in
  order), then the dynamic message as the last user message.
- The ``rank`` function is the only tool and is forced with
  ``tool_choice={"type": "function", "function": {"name": "rank"}}``.
- Usage: ``prompt_tokens`` minus ``prompt_tokens_details.cached_tokens`` is uncached input,
  ``cached_tokens`` is cache reads (OpenAI charges no cache writes), ``completion_tokens``.
- The SDK's own retries are off (``max_retries=0``): :class:`ProviderNavigator` retries.
"""

from __future__ import annotations

import logging
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
from treeseek.llm.base import RANK_TOOL, RankRequest, Usage

if TYPE_CHECKING:
    import openai

SYSTEM_MESSAGE = (
    "You navigate a source code repository's directory tree to find the files relevant to a "
    "query. Answer only by calling the `rank` tool."
)
RANK_FUNCTION: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": RANK_TOOL["name"],
        "description": RANK_TOOL["description"],
        "parameters": RANK_TOOL["input_schema"],
    },
}
FORCED_TOOL_CHOICE: dict[str, Any] = {"type": "function", "function": {"name": "rank"}}
log = logging.getLogger("treeseek.llm")

#: servers that need no key still make the SDK want one
PLACEHOLDER_KEY = "not-needed"


def _sdk() -> Any:
    """The ``openai`` SDK, imported on first use: it is an optional extra (``llm``)."""
    try:
        import openai
    except ImportError as exc:
        raise ConfigError(
            "the openai navigator needs the OpenAI SDK: pip install 'treeseek[llm]'"
        ) from exc
    return openai


class OpenAINavigator(ProviderNavigator):
    supports_cache = True

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str | None = None,
        max_output_tokens: int = 1024,
        force_tool: bool = True,
        policy: RetryPolicy | None = None,
        limiter: ConcurrencyLimiter | None = None,
        seed: int | None = None,
        limits: ReplyLimits | None = None,
    ) -> None:
        super().__init__(policy=policy, limiter=limiter, seed=seed, limits=limits)
        if not model:
            raise ConfigError("openai navigator needs a model name, e.g. openai:gpt-4.1-mini")
        if base_url is None and not api_key:
            raise ConfigError("openai navigator needs an API key: set OPENAI_API_KEY")
        self.model = model
        self.base_url = base_url
        self.name = f"openai-compatible:{model}@{base_url}" if base_url else f"openai:{model}"
        self.max_output_tokens = max_output_tokens
        self.force_tool = force_tool
        self._sdk = _sdk()
        self._client: openai.OpenAI = self._sdk.OpenAI(
            api_key=api_key or PLACEHOLDER_KEY,
            base_url=base_url,
            max_retries=0,
            timeout=self.policy.timeout_s,
        )

    def build_body(self, request: RankRequest, correction: Correction | None) -> dict[str, Any]:
        """The Chat Completions request body (also what the loopback tests check)."""
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_MESSAGE}]
        if request.segments:
            parts = [{"type": "text", "text": wire_text(s.text)} for s in request.segments]
            messages.append({"role": "user", "content": parts})
        messages.append({"role": "user", "content": wire_text(request.message)})
        if correction is not None:
            if correction.previous_text.strip():
                previous = wire_text(correction.previous_text)
                messages.append({"role": "assistant", "content": previous})
            messages.append({"role": "user", "content": correction.message})
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "tools": [RANK_FUNCTION],
            "tool_choice": FORCED_TOOL_CHOICE if self.force_tool else "auto",
        }
        # OpenAI's own API wants max_completion_tokens (o-series reject max_tokens); the
        # compatible servers understand max_tokens.
        key = "max_tokens" if self.base_url else "max_completion_tokens"
        body[key] = self.max_output_tokens
        return body

    def _send(
        self, request: RankRequest, correction: Correction | None, timeout_s: float
    ) -> RawReply:
        body = self.build_body(request, correction)
        ends_at = self._clock() + timeout_s  # the whole attempt, body included
        try:
            # streamed, so the body is read with a byte cap and parsed by the bounded parser,
            # never by the SDK (a hostile body cannot crash it or exhaust memory)
            with self._client.chat.completions.with_streaming_response.create(
                **body, timeout=timeout_s
            ) as resp:
                data = read_body(
                    resp.iter_bytes(),
                    self.limits,
                    request.deadline,
                    call_ends_at=ends_at,
                    clock=self._clock,
                )
        except self._sdk.BadRequestError as exc:
            if not (self.force_tool and "tool_choice" in str(exc)):
                raise map_sdk_error(exc, self._sdk) from exc
            # some local servers reject a named tool_choice: offer the tool unforced from now
            # on (the text-JSON fallback and the corrective retry cover a model that ignores it)
            log.warning("%s rejected a forced tool_choice (%s); using auto", self.name, exc)
            self.force_tool = False
            return self._send(request, correction, timeout_s)
        except LLMResponseError as exc:
            return RawReply(tool_input=None, text="", usage=Usage(calls=1), problem=str(exc))
        except (self._sdk.OpenAIError, ValueError) as exc:  # ValueError: a body that is not JSON
            raise map_sdk_error(exc, self._sdk) from exc
        try:
            return raw_reply(decode_body(data, self.limits))
        except LLMResponseError as exc:
            return RawReply(tool_input=None, text="", usage=Usage(calls=1), problem=str(exc))


def raw_reply(body: dict[str, Any]) -> RawReply:
    """The rank call, text and usage of a Chat Completions body, read defensively (any field
    may be missing, null or of the wrong type)."""
    u = as_dict(body.get("usage"))
    prompt = as_count(u.get("prompt_tokens"))
    cached = min(prompt, as_count(as_dict(u.get("prompt_tokens_details")).get("cached_tokens")))
    usage = Usage(
        calls=1,
        input_tokens=max(0, prompt - cached),
        cache_read_tokens=cached,
        output_tokens=as_count(u.get("completion_tokens")),
    )
    choices = as_list(body.get("choices"))
    msg = as_dict(as_dict(choices[0]).get("message")) if choices else {}
    tool_input: str | dict[str, Any] | None = None
    for call in as_list(msg.get("tool_calls")):
        fn = as_dict(as_dict(call).get("function"))
        if fn.get("name") == "rank":
            args = fn.get("arguments")
            tool_input = args if isinstance(args, str | dict) else None
            break
    content = msg.get("content")
    if isinstance(content, list):  # some servers send content parts
        content = "\n".join(
            str(p.get("text"))
            for p in content
            if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return RawReply(
        tool_input=tool_input, text=content if isinstance(content, str) else "", usage=usage
    )
