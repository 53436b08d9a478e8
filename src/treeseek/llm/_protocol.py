"""The common base of provider adapters: retries, the concurrency slot, reply validation.

An adapter implements only :meth:`ProviderNavigator._send` (build the provider request, make
one HTTP call through the official SDK, return a :class:`RawReply`) and maps the SDK's errors
with :func:`map_sdk_error`. :meth:`ProviderNavigator.rank` then

1. calls ``_send`` inside a slot of the shared concurrency limiter, with the per-call timeout,
   retrying transient failures (429, 408/409/425, 5xx, network errors, timeouts) with
   exponential backoff and jitter, honouring ``Retry-After``/``retry-after-ms``; a permanent
   failure (400, 401, 403, 404, ...) or transient ones past ``max_retries`` raise
   :class:`~treeseek.errors.LLMError`;
2. reads the ``rank`` tool call, or failing that a JSON object in the reply text;
3. if neither is usable, makes ONE corrective call (an extra user message asking for the
   ``rank`` tool) and, if that fails too, returns an empty ranking with ``done=False``;
4. validates ids against the allowed set (dropping and counting the rest, resolving paths).

A malformed reply never raises; every correction lands in ``RankReply.notes`` and the log.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from treeseek.errors import ConfigError, LLMError
from treeseek.llm._limits import ConcurrencyLimiter, shared_limiter
from treeseek.llm._validate import ParsedRank, build_reply, find_rank_json, parse_rank_payload
from treeseek.llm.base import Navigator, RankReply, RankRequest, Usage

log = logging.getLogger("treeseek.llm")

CORRECTION_MESSAGE = (
    "Your previous reply did not call the `rank` tool. Call the `rank` tool now, with "
    "ranked_ids (only ids from the selectable list, best first) and done (true or false). "
    "Do not answer in text."
)

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Per-call timeout and retry schedule: ``base * 2**attempt`` capped at ``max_delay``,
    times a random factor in ``[1 - jitter, 1 + jitter]``; a provider's Retry-After wins when
    it asks for longer (up to ``max_retry_after_s``)."""

    timeout_s: float = 60.0
    max_retries: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    jitter: float = 0.25
    max_retry_after_s: float = 120.0

    def __post_init__(self) -> None:
        if self.timeout_s <= 0 or self.max_retries < 0 or self.base_delay_s < 0:
            raise ConfigError(f"invalid LLM retry policy: {self}")
        if not 0.0 <= self.jitter < 1.0:
            raise ConfigError(f"retry jitter must be in [0, 1), got {self.jitter}")

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        backoff = min(self.max_delay_s, self.base_delay_s * (2.0**attempt))
        backoff *= 1.0 + rng.uniform(-self.jitter, self.jitter)
        if retry_after is not None:
            return max(backoff, min(retry_after, self.max_retry_after_s))
        return backoff


class TransientProviderError(Exception):
    """A failure worth retrying (rate limit, overload, 5xx, network, timeout)."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class PermanentProviderError(Exception):
    """A failure retrying cannot fix (bad key, unknown model, rejected request)."""


@dataclass(slots=True)
class RawReply:
    """One provider answer before validation."""

    tool_input: Mapping[str, Any] | str | None  # the rank tool's input: dict or JSON text
    text: str  # free text the model wrote, if any
    usage: Usage


@dataclass(frozen=True, slots=True)
class Correction:
    """The corrective turn: what the model said last time and the instruction to call rank."""

    previous_text: str
    message: str = CORRECTION_MESSAGE


def wire_text(text: str) -> str:
    """``text`` as valid Unicode for a JSON request body.

    Tree paths keep undecodable bytes of non-UTF-8 file names as surrogate escapes; those
    cannot be encoded, so they travel as U+FFFD. Candidates keep their ids, so ranking is
    unaffected (only a model answering with such a path, not an id, cannot be resolved).
    """
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def classify_status(status: int, headers: Mapping[str, str] | None, detail: str) -> Exception:
    if status in RETRYABLE_STATUS or status >= 500:
        return TransientProviderError(f"HTTP {status}: {detail}", parse_retry_after(headers))
    return PermanentProviderError(f"HTTP {status}: {detail}")


def map_sdk_error(exc: Exception, sdk: Any) -> Exception:
    """Map an anthropic/openai SDK exception (same class layout in both) to ours.

    Also takes the ``ValueError`` an SDK raises on a body that is not JSON (an HTML error
    page from a proxy): transient.
    """
    if not isinstance(exc, sdk.APIError):
        return TransientProviderError(f"unreadable response: {exc}")
    if isinstance(exc, sdk.APITimeoutError):
        return TransientProviderError(f"timeout: {exc}")
    if isinstance(exc, sdk.APIConnectionError):
        return TransientProviderError(f"network error: {exc}")
    if isinstance(exc, sdk.APIStatusError):
        headers = dict(exc.response.headers) if exc.response is not None else None
        return classify_status(int(exc.status_code), headers, str(exc.message)[:300])
    # e.g. a response the SDK cannot validate: worth another try, an LLMError after retries
    return TransientProviderError(f"unreadable response: {exc}")


class ProviderNavigator(Navigator):
    """Base of adapters for real providers. Subclasses implement :meth:`_send`."""

    def __init__(
        self,
        *,
        policy: RetryPolicy | None = None,
        limiter: ConcurrencyLimiter | None = None,
        seed: int | None = None,
    ) -> None:
        self.policy = policy or RetryPolicy()
        self.limiter = limiter or shared_limiter()
        self._rng = random.Random(seed)
        #: waits between attempts (tests replace it with a fake clock that records the waits)
        self.sleep: Callable[[float], None] = time.sleep

    @abstractmethod
    def _send(self, request: RankRequest, correction: Correction | None) -> RawReply:
        """One provider call with ``self.policy.timeout_s``; raise the errors of this module."""

    def _call(
        self, request: RankRequest, correction: Correction | None, notes: list[str]
    ) -> RawReply:
        attempts = self.policy.max_retries + 1
        for attempt in range(attempts):
            try:
                with self.limiter.slot():
                    return self._send(request, correction)
            except PermanentProviderError as exc:
                raise LLMError(f"{self.name}: the provider rejected the request: {exc}") from exc
            except TransientProviderError as exc:
                if attempt + 1 >= attempts:
                    raise LLMError(
                        f"{self.name}: provider still failing after {attempts} attempts: "
                        f"{exc.reason}"
                    ) from exc
                wait = self.policy.delay(attempt, exc.retry_after, self._rng)
                note = f"attempt {attempt + 1} failed ({exc.reason}); retrying in {wait:.2f}s"
                notes.append(note)
                log.warning("%s: %s", self.name, note)
                self.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _parse(raw: RawReply, notes: list[str]) -> ParsedRank | None:
        if raw.tool_input is not None:
            parsed = parse_rank_payload(raw.tool_input)
            if parsed is not None:
                return parsed
            notes.append(f"rank tool call with unusable input: {str(raw.tool_input)[:200]!r}")
        if raw.text:
            parsed = find_rank_json(raw.text)
            if parsed is not None:
                notes.append("no usable rank tool call; parsed the JSON object in the reply text")
                return parsed
        return None

    def rank(self, request: RankRequest) -> RankReply:
        started = time.perf_counter()
        notes: list[str] = []
        usage = Usage()
        raw = self._call(request, None, notes)
        usage = usage + raw.usage
        parsed = self._parse(raw, notes)
        if parsed is None:
            notes.append("reply had no rank tool call and no JSON rank object; corrective retry")
            log.warning("%s: malformed reply %r; corrective retry", self.name, raw.text[:200])
            previous = raw.text or (str(raw.tool_input) if raw.tool_input is not None else "")
            raw = self._call(request, Correction(previous), notes)
            usage = usage + raw.usage
            parsed = self._parse(raw, notes)
        usage.latency_s = time.perf_counter() - started
        if parsed is None:
            notes.append("corrective retry failed too; empty ranking, done=false")
            log.warning("%s: corrective retry failed; empty ranking", self.name)
            return RankReply(ranked_ids=[], done=False, usage=usage, notes=notes)
        return build_reply(request, parsed, usage=usage, notes=notes)
