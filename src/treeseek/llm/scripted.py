"""ScriptedNavigator: canned answers for tests, and replays of recorded runs.

Answers come from a list (consumed in call order), from a callable ``request -> reply``, or
from a replay file (:mod:`treeseek.llm.replay`, matched by query and candidate paths). Every
answer goes through the same validation as a provider's (allowed ids, path resolution, pick
limit), so a script may name candidates by id or by path. Requests are recorded in
``requests`` (thread-safe: Block calls blocks in parallel).

Running out of answers is not an error by default (an empty ranking with ``done=False`` and a
note, like a provider that returns nothing); ``strict=True`` raises :class:`LLMError` instead.
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treeseek.errors import ConfigError, LLMError
from treeseek.llm._validate import ParsedRank, build_reply
from treeseek.llm.base import Navigator, RankReply, RankRequest, Usage
from treeseek.llm.replay import RecordedCall, read_replay, request_key


@dataclass(frozen=True, slots=True)
class ScriptedReply:
    """One canned answer: candidate ids or paths, best first."""

    ranked_ids: Sequence[str]
    done: bool = False
    usage: Usage | None = None


Script = Sequence[ScriptedReply | Mapping[str, Any]]
Responder = Callable[[RankRequest], ScriptedReply | RankReply]


def _as_reply(item: ScriptedReply | Mapping[str, Any]) -> ScriptedReply:
    if isinstance(item, ScriptedReply):
        return item
    ids = item.get("ranked_ids")
    if not isinstance(ids, list | tuple):
        raise ConfigError(f"scripted reply needs a 'ranked_ids' list, got {item!r}")
    return ScriptedReply([str(i) for i in ids], bool(item.get("done", False)))


class ScriptedNavigator(Navigator):
    def __init__(
        self,
        script: Script | Responder,
        *,
        name: str = "scripted",
        supports_cache: bool = False,
        strict: bool = False,
    ) -> None:
        self.name = name
        self.supports_cache = supports_cache
        self.strict = strict
        self.requests: list[RankRequest] = []
        self._lock = threading.Lock()
        self._responder: Responder | None = None
        self._queue: deque[ScriptedReply] = deque()
        if callable(script):
            self._responder = script
        else:
            self._queue.extend(_as_reply(r) for r in script)
        self._replay: dict[str, deque[RecordedCall]] | None = None

    @classmethod
    def from_replay(cls, path: str | Path, *, strict: bool = False) -> ScriptedNavigator:
        """Answers each request with the reply recorded for the same query and candidates,
        with the recorded usage."""
        calls = read_replay(path)
        by_key: dict[str, deque[RecordedCall]] = defaultdict(deque)
        for call in calls:
            by_key[call.key].append(call)
        recorded = calls[0].navigator if calls and calls[0].navigator else "?"
        nav = cls([], name=f"replay:{recorded}", strict=strict)
        nav._replay = by_key
        return nav

    @property
    def remaining(self) -> int:
        if self._replay is not None:
            return sum(len(q) for q in self._replay.values())
        return len(self._queue)

    def _exhausted(self, request: RankRequest, why: str) -> RankReply:
        if self.strict:
            raise LLMError(f"{self.name}: {why}")
        return RankReply(ranked_ids=[], done=False, usage=Usage(calls=1), notes=[why])

    def rank(self, request: RankRequest) -> RankReply:
        with self._lock:
            self.requests.append(request)
            if self._replay is not None:
                queue = self._replay.get(request_key(request))
                recorded = queue.popleft() if queue else None
                answer: ScriptedReply | RankReply | None = None
            elif self._responder is None:
                recorded = None
                answer = self._queue.popleft() if self._queue else None
        if self._replay is not None:
            if recorded is None:
                return self._exhausted(request, "no recorded call for this query and candidates")
            ids = (
                recorded.ranked_paths if recorded.ranked_paths is not None else recorded.ranked_ids
            )
            parsed = ParsedRank(list(ids), recorded.done)
            return build_reply(request, parsed, usage=recorded.usage + Usage())
        if self._responder is not None:
            answer = self._responder(request)
        if answer is None:
            return self._exhausted(request, "script exhausted")
        if isinstance(answer, RankReply):
            parsed = ParsedRank(list(answer.ranked_ids), answer.done)
            reply = build_reply(request, parsed, usage=answer.usage + Usage())
            reply.notes[:0] = answer.notes
            return reply
        usage = answer.usage + Usage() if answer.usage is not None else Usage(calls=1)
        return build_reply(request, ParsedRank(list(answer.ranked_ids), answer.done), usage=usage)
