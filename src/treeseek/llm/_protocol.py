"""The common base of provider adapters: retries, deadlines, the concurrency slot, reply reading.

An adapter implements only :meth:`ProviderNavigator._send` (build the provider request, make
one HTTP call through the official SDK with the given timeout, read the body with
:func:`read_body` and :func:`decode_body`, return a :class:`RawReply`) and maps the SDK's
errors with :func:`map_sdk_error`. :meth:`ProviderNavigator.rank` then

1. calls ``_send`` inside a slot of the shared concurrency limiter, each attempt with
   ``min(per-call timeout, time left before the query's deadline)``, retrying transient
   failures (429, 408/409/425, 5xx, network errors, timeouts) with exponential backoff and
   jitter, honouring ``Retry-After``/``retry-after-ms``; a permanent failure (400, 401, 403,
   404, ...) or transient ones past ``max_retries`` raise :class:`~treeseek.errors.LLMError`;
   a retry that would start after the deadline raises
   :class:`~treeseek.errors.DeadlineExceeded` at once instead of sleeping;
2. reads the ``rank`` tool call, or failing that a JSON object in the reply text, with the one
   bounded reply parser (:mod:`treeseek.llm._validate`: size cap, nesting cap, linear time);
3. if neither is usable, makes ONE corrective call (an extra user message asking for the
   ``rank`` tool, with at most :data:`MAX_PREVIOUS_CHARS` of the bad reply) and, if that fails
   too, returns an empty ranking with ``done=False``;
4. validates ids against the allowed set (dropping and counting the rest, resolving paths).

A malformed, oversized or deeply nested reply never raises; every correction lands in
``RankReply.notes`` and the log. Time is read from injectable ``clock``/``sleep`` functions.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import random
import re
import time
from abc import abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from treeseek.errors import ConfigError, DeadlineExceeded, LLMError, LLMResponseError
from treeseek.llm._limits import ConcurrencyLimiter, shared_limiter
from treeseek.llm._validate import (
    DEFAULT_LIMITS,
    ParsedRank,
    ReplyLimits,
    build_reply,
    json_depth,
    preview,
    read_text,
    read_tool_input,
)
from treeseek.llm.base import Navigator, RankReply, RankRequest, Usage, add_usage_spent
from treeseek.llm.deadline import Clock, Deadline

log = logging.getLogger("treeseek.llm")

CORRECTION_MESSAGE = (
    "Your previous reply did not call the `rank` tool. Call the `rank` tool now, with "
    "ranked_ids (only ids from the selectable list, best first) and done (true or false). "
    "Do not answer in text."
)

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
#: how much of an unusable reply is sent back in the corrective call
MAX_PREVIOUS_CHARS = 2000


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
    problem: str | None = None  # why the body could not be read at all (too large, too deep)


@dataclass(frozen=True, slots=True)
class Correction:
    """The corrective turn: what the model said last time and the instruction to call rank."""

    previous_text: str
    message: str = CORRECTION_MESSAGE


_SURROGATE = re.compile("[\ud800-\udfff]")


def wire_text(text: str) -> str:
    """``text`` as valid Unicode for a JSON request body.

    Tree paths keep undecodable bytes of non-UTF-8 file names as surrogate escapes; those
    cannot be encoded, so they travel as U+FFFD. Candidates keep their ids, so ranking is
    unaffected (only a model answering with such a path, not an id, cannot be resolved).
    """
    if text.isascii():
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a lone surrogate that is no escaped byte (e.g. in a question)
        return _SURROGATE.sub("\ufffd", text)


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


def read_body(
    chunks: Iterable[bytes],
    limits: ReplyLimits,
    deadline: Deadline | None = None,
    *,
    call_ends_at: float | None = None,
    clock: Clock = time.monotonic,
) -> bytes:
    """A response body read chunk by chunk: LLMResponseError past ``limits.max_bytes`` (the
    rest is never read), a transient timeout when the query's deadline, or the call's own end
    (``call_ends_at`` on ``clock``: when the attempt started plus its timeout), passes while it
    arrives, a transient network error when the connection breaks.

    The HTTP library's timeout bounds each socket read, not the whole body: a server trickling
    a byte every few seconds would otherwise hold one attempt for as long as the body lasts
    (up to the size cap), past its per-call timeout, and without end when there is no deadline.
    """
    buf = bytearray()
    try:
        for chunk in chunks:
            buf += chunk
            if len(buf) > limits.max_bytes:
                raise LLMResponseError(f"reply body over the {limits.max_bytes}-byte cap")
            if deadline is not None and deadline.expired():
                raise TransientProviderError("timeout: the deadline passed while reading the reply")
            if call_ends_at is not None and clock() >= call_ends_at:
                raise TransientProviderError(
                    "timeout: the reply was still arriving at the end of the call's timeout"
                )
    except (LLMResponseError, TransientProviderError):
        raise
    except Exception as exc:  # the SDK's HTTP library's read errors (httpx or httpx2)
        kind = "timeout" if "timeout" in type(exc).__name__.lower() else "network error"
        raise TransientProviderError(f"{kind} while reading the reply: {exc!r}"[:300]) from exc
    return bytes(buf)


def decode_body(data: bytes, limits: ReplyLimits) -> dict[str, Any]:
    """A provider's JSON body, decoded only after the size and nesting checks.

    Too large or too deep: LLMResponseError (an unusable reply). Not JSON at all (an HTML
    error page from a proxy): a transient error, retried. Not an object: LLMResponseError.
    """
    if len(data) > limits.max_bytes:
        raise LLMResponseError(f"reply body over the {limits.max_bytes}-byte cap")
    text = data.decode("utf-8", "replace")
    depth = json_depth(text)
    if depth > limits.max_depth:
        raise LLMResponseError(f"reply body nested {depth} deep, over the {limits.max_depth} limit")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise TransientProviderError(f"unreadable response: {str(exc)[:200]}") from None
    if not isinstance(value, dict):
        raise LLMResponseError(f"reply body is not a JSON object: {preview(value)}")
    return value


def as_count(value: object) -> int:
    """A token count from a reply (anything else, negative or absurd: 0)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, float) and math.isfinite(value):
        value = int(value)
    if isinstance(value, int) and 0 <= value < 10**12:
        return value
    return 0


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


class ProviderNavigator(Navigator):
    """Base of adapters for real providers. Subclasses implement :meth:`_send`."""

    def __init__(
        self,
        *,
        policy: RetryPolicy | None = None,
        limiter: ConcurrencyLimiter | None = None,
        seed: int | None = None,
        limits: ReplyLimits | None = None,
        clock: Clock = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.policy = policy or RetryPolicy()
        self.limiter = limiter or shared_limiter()
        self.limits = limits or DEFAULT_LIMITS
        self._rng = random.Random(seed)
        self._clock = clock
        #: waits between attempts (tests replace it with a fake clock that records the waits)
        self.sleep: Callable[[float], None] = sleep

    @abstractmethod
    def _send(
        self, request: RankRequest, correction: Correction | None, timeout_s: float
    ) -> RawReply:
        """One provider call of at most ``timeout_s``; raise the errors of this module."""

    def _call(
        self, request: RankRequest, correction: Correction | None, notes: list[str]
    ) -> RawReply:
        deadline = request.deadline or Deadline(None, clock=self._clock)
        attempts = self.policy.max_retries + 1
        for attempt in range(attempts):
            deadline.check(f"before {self.name} answered")
            timeout = deadline.call_timeout(self.policy.timeout_s)
            left = deadline.remaining()
            try:
                with self.limiter.slot(None if math.isinf(left) else left):
                    return self._send(request, correction, timeout)
            except TimeoutError as exc:  # no concurrency slot before the deadline
                raise deadline.error(f"waiting for a free {self.name} call slot") from exc
            except PermanentProviderError as exc:
                raise LLMError(f"{self.name}: the provider rejected the request: {exc}") from exc
            except TransientProviderError as exc:
                if deadline.expired():  # the attempt was cut by the query's deadline
                    raise deadline.error(
                        f"while waiting for {self.name} ({exc.reason}; attempt {attempt + 1})"
                    ) from exc
                if attempt + 1 >= attempts:
                    raise LLMError(
                        f"{self.name}: provider still failing after {attempts} attempts: "
                        f"{exc.reason}"
                    ) from exc
                wait = self.policy.delay(attempt, exc.retry_after, self._rng)
                if wait >= deadline.remaining():
                    raise deadline.error(
                        f"while {self.name} kept failing ({exc.reason}; {attempt + 1} "
                        f"attempt(s), the next would start in {wait:.1f} s)"
                    ) from exc
                note = f"attempt {attempt + 1} failed ({exc.reason}); retrying in {wait:.2f}s"
                notes.append(note)
                log.warning("%s: %s", self.name, note)
                self.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _parse(self, raw: RawReply, notes: list[str]) -> ParsedRank | None:
        if raw.problem is not None:
            notes.append(f"unusable reply: {raw.problem}")
            return None
        if raw.tool_input is not None:
            try:
                return read_tool_input(raw.tool_input, self.limits)
            except LLMResponseError as exc:
                notes.append(
                    f"rank tool call with unusable input ({exc}): {preview(raw.tool_input)}"
                )
        if raw.text:
            try:
                parsed = read_text(raw.text, self.limits)
            except LLMResponseError as exc:
                notes.append(str(exc))
                return None
            notes.append("no usable rank tool call; parsed the JSON object in the reply text")
            return parsed
        return None

    @staticmethod
    def _previous(raw: RawReply) -> str:
        """What the model said, for the corrective call (bounded)."""
        if raw.text:
            return raw.text[:MAX_PREVIOUS_CHARS]
        if isinstance(raw.tool_input, str):
            return raw.tool_input[:MAX_PREVIOUS_CHARS]
        if raw.tool_input is not None:
            return preview(raw.tool_input, MAX_PREVIOUS_CHARS)
        return ""

    def rank(self, request: RankRequest) -> RankReply:
        started = time.perf_counter()
        notes: list[str] = []
        usage = Usage()
        raw = self._call(request, None, notes)
        usage = usage + raw.usage
        parsed = self._parse(raw, notes)
        if parsed is None:
            notes.append("reply had no rank tool call and no JSON rank object; corrective retry")
            log.warning("%s: malformed reply %s; corrective retry", self.name, preview(raw.text))
            try:
                raw = self._call(request, Correction(self._previous(raw)), notes)
            except (LLMError, DeadlineExceeded) as exc:  # the first reply was paid for
                add_usage_spent(exc, usage)
                raise
            usage = usage + raw.usage
            parsed = self._parse(raw, notes)
        usage.latency_s = time.perf_counter() - started
        if parsed is None:
            notes.append("corrective retry failed too; empty ranking, done=false")
            log.warning("%s: corrective retry failed; empty ranking", self.name)
            return RankReply(ranked_ids=[], done=False, usage=usage, notes=notes)
        return build_reply(request, parsed, usage=usage, notes=notes, limits=self.limits)
