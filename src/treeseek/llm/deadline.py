"""Time limits of a query: a total deadline per query, and a timeout per LLM call.

A :class:`Deadline` starts when a query starts and travels with every rank request
(:attr:`treeseek.llm.base.RankRequest.deadline`). Provider adapters give each HTTP attempt at
most ``min(per-call timeout, time left)``, never sleep a retry backoff past the deadline, and
raise :class:`~treeseek.errors.DeadlineExceeded` when no time is left; Beam and Block check it
between rounds and stop there (see :mod:`treeseek.search.tree.beam`).

Settings, most specific first:

- per query: ``QueryOptions.deadline_s`` / ``db.query(..., deadline_s=)`` / ``treeseek query
  --deadline S``; else ``$TREESEEK_DEADLINE``; else :data:`DEFAULT_DEADLINE_S` (180 s).
  ``0`` means no deadline;
- per call: ``QueryOptions.llm_timeout_s`` / ``--timeout S``; else ``$TREESEEK_LLM_TIMEOUT``;
  else the ``[llm] timeout_s`` config value; else 60 s. Retries: ``$TREESEEK_LLM_RETRIES`` or
  ``[llm] max_retries`` (default 4).

The clock is injectable (tests use a fake one; nothing here reads wall time directly).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping

from treeseek.errors import ConfigError, DeadlineExceeded

#: the total time one query may take unless told otherwise (seconds)
DEFAULT_DEADLINE_S = 180.0
DEADLINE_ENV = "TREESEEK_DEADLINE"
TIMEOUT_ENV = "TREESEEK_LLM_TIMEOUT"
RETRIES_ENV = "TREESEEK_LLM_RETRIES"

Clock = Callable[[], float]
#: the clock of deadlines made without one (a test may replace it with a fake clock)
default_clock: Clock = time.monotonic


def seconds(value: object, what: str, *, allow_zero: bool = True) -> float:
    """A non-negative number of seconds (``0`` allowed when ``allow_zero``), or ConfigError."""
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ConfigError(f"{what} must be a number of seconds, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = "at least 0" if allow_zero else "more than 0"
        raise ConfigError(f"{what} must be {bound} seconds, got {value!r}")
    return float(value)


def env_seconds(env: Mapping[str, str], name: str, *, allow_zero: bool = True) -> float | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number of seconds, got {raw!r}") from None
    return seconds(value, name, allow_zero=allow_zero)


def resolve_deadline_s(
    deadline_s: float | None, env: Mapping[str, str] | None = None
) -> float | None:
    """The total seconds of a query (``None``: no deadline): the value given, else
    ``$TREESEEK_DEADLINE``, else :data:`DEFAULT_DEADLINE_S`; ``0`` means none."""
    if deadline_s is None:
        deadline_s = env_seconds(os.environ if env is None else env, DEADLINE_ENV)
    if deadline_s is None:
        deadline_s = DEFAULT_DEADLINE_S
    value = seconds(deadline_s, "the query deadline")
    return None if value == 0 or math.isinf(value) else value


class Deadline:
    """When a query must be over, and the per-call timeout override of its LLM calls."""

    def __init__(
        self,
        total_s: float | None,
        *,
        call_timeout_s: float | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.total_s = total_s
        self.call_timeout_s = call_timeout_s
        self.clock = clock or default_clock
        self.started = self.clock()
        self.at = None if total_s is None else self.started + total_s

    @classmethod
    def none(cls) -> Deadline:
        return cls(None)

    def remaining(self) -> float:
        """Seconds left (``inf`` without a deadline; never negative)."""
        if self.at is None:
            return math.inf
        return max(0.0, self.at - self.clock())

    def expired(self) -> bool:
        return self.at is not None and self.clock() >= self.at

    def elapsed(self) -> float:
        return self.clock() - self.started

    def describe(self) -> str:
        return "no deadline" if self.total_s is None else f"its {self.total_s:g} s deadline"

    def error(self, doing: str) -> DeadlineExceeded:
        return DeadlineExceeded(
            f"the query reached {self.describe()} ({self.elapsed():.1f} s elapsed) {doing}; "
            f"allow more time with --deadline SECONDS or {DEADLINE_ENV} (0: no deadline)"
        )

    def check(self, doing: str) -> None:
        if self.expired():
            raise self.error(doing)

    def call_timeout(self, default_s: float) -> float:
        """The timeout of one call attempt: the per-call timeout, cut to the time left."""
        base = self.call_timeout_s if self.call_timeout_s is not None else default_s
        return min(base, self.remaining())
