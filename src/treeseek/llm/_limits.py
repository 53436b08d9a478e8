"""A process-wide limit on concurrent provider calls, shared by parallel block calls.

Every provider adapter takes a slot around each HTTP call (not around backoff sleeps), so a
Block round that fans out to many blocks never has more than ``limit`` requests in flight,
whatever the number of threads. The limit is set from ``TREESEEK_LLM_CONCURRENCY`` (default 4)
and can be changed at run time with :func:`set_concurrency_limit`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from treeseek.errors import ConfigError

DEFAULT_CONCURRENCY = 4
ENV_VAR = "TREESEEK_LLM_CONCURRENCY"


class ConcurrencyLimiter:
    """A counting limiter whose limit can change while calls are in flight."""

    def __init__(self, limit: int = DEFAULT_CONCURRENCY) -> None:
        self._cond = threading.Condition()
        self._active = 0
        self.peak = 0  # highest number of concurrent slots seen (diagnostics, tests)
        self._limit = _check(limit)

    @property
    def limit(self) -> int:
        return self._limit

    @property
    def active(self) -> int:
        return self._active

    def set_limit(self, limit: int) -> None:
        with self._cond:
            self._limit = _check(limit)
            self._cond.notify_all()

    @contextmanager
    def slot(self, timeout: float | None = None) -> Iterator[None]:
        """Hold one slot; ``TimeoutError`` when none frees up within ``timeout`` seconds."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._active < self._limit, timeout):
                raise TimeoutError(f"no LLM call slot free within {timeout:.1f}s")
            self._active += 1
            self.peak = max(self.peak, self._active)
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                self._cond.notify()


def _check(limit: int) -> int:
    if not isinstance(limit, int) or limit < 1:
        raise ConfigError(f"LLM concurrency limit must be a positive integer, got {limit!r}")
    return limit


def _from_env() -> int:
    raw = os.environ.get(ENV_VAR, "").strip()
    if not raw:
        return DEFAULT_CONCURRENCY
    try:
        return _check(int(raw))
    except ValueError:
        raise ConfigError(f"{ENV_VAR} must be a positive integer, got {raw!r}") from None


_shared: ConcurrencyLimiter | None = None
_shared_lock = threading.Lock()


def shared_limiter() -> ConcurrencyLimiter:
    """The process-wide limiter every adapter uses unless given its own."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ConcurrencyLimiter(_from_env())
        return _shared


def set_concurrency_limit(limit: int) -> None:
    """Change the process-wide limit (e.g. from a ``--llm-concurrency`` option)."""
    shared_limiter().set_limit(limit)
