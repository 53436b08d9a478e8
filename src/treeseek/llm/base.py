"""The LLM seam: one call that ranks candidate ids.

A navigator receives the static, cacheable prompt segments (instructions and rendered tree
blocks), the dynamic query-specific message, and the `rank` tool of the spec, and returns the
tool call's ``ranked_ids`` and ``done`` plus token usage. Real providers (Anthropic,
OpenAI-compatible), a scripted navigator (tests, replays) and the lexical navigator (no LLM)
all implement :class:`Navigator`.

The structured ``query`` and ``candidates`` travel with the request so that navigators that do
not read prompts (lexical, scripted) can answer, and so replies can be validated against the
allowed set without parsing text.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from treeseek.llm.deadline import Deadline

RANK_TOOL: dict[str, Any] = {
    "name": "rank",
    "description": "Rank candidate node ids for the query",
    "input_schema": {
        "type": "object",
        "properties": {
            "ranked_ids": {"type": "array", "items": {"type": "string"}},
            "done": {"type": "boolean"},
        },
        "required": ["ranked_ids"],
    },
}


@dataclass(frozen=True, slots=True)
class Candidate:
    """A candidate as the LLM sees it: the id it may return, its path, and its type."""

    id: str  # the id shown to the LLM (a node id, or a block-local alias such as "n3")
    path: str  # repo-relative path
    type: str  # "directory" | "file"
    #: a node with children the search can open (a directory, or a document section with
    #: subsections: a result and a frontier node at once); not shown to an LLM
    expandable: bool = False


@dataclass(frozen=True, slots=True)
class Segment:
    """A static prompt segment. ``cache=True`` asks the adapter for a cache breakpoint after it."""

    text: str
    cache: bool = True


@dataclass(frozen=True, slots=True)
class RankRequest:
    segments: tuple[Segment, ...]  # static prefix, in order (stable across calls => cache hits)
    message: str  # the dynamic, query-specific user message
    query: str
    candidates: tuple[Candidate, ...]  # exactly the allowed set for this call
    pick_limit: int
    tree_root: str | None = None  # absolute root, to resolve absolute paths an LLM returns
    path_prefix: str | None = None  # the block's rendered `Path prefix`, if any (path resolution)
    #: the query's deadline and per-call timeout (None: the navigator's own timeout, no deadline)
    deadline: Deadline | None = field(default=None, compare=False)

    @property
    def allowed_ids(self) -> frozenset[str]:
        return frozenset(c.id for c in self.candidates)


@dataclass(slots=True)
class Usage:
    """Token usage and latency of one or more calls (adds up with ``+``)."""

    calls: int = 0
    input_tokens: int = 0  # uncached input tokens
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.calls + other.calls,
            self.input_tokens + other.input_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.output_tokens + other.output_tokens,
            self.latency_s + other.latency_s,
        )

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cache_write_tokens + self.cache_read_tokens


def usage_spent(exc: BaseException) -> Usage:
    """The usage of the calls made before ``exc`` ended a rank call or a round (tokens paid
    for, answers unused): a reply that needed a corrective call that then failed, or the
    finished calls of a round another call of which ran into the deadline."""
    spent = getattr(exc, "usage_spent", None)
    return spent if isinstance(spent, Usage) else Usage()


def add_usage_spent(exc: BaseException, usage: Usage) -> None:
    """Record on ``exc`` that ``usage`` was spent before it (see :func:`usage_spent`)."""
    if usage.calls or usage.total_input_tokens or usage.output_tokens:
        exc.usage_spent = usage_spent(exc) + usage  # type: ignore[attr-defined]


@dataclass(slots=True)
class RankReply:
    """A validated rank call: ids are all in the request's allowed set."""

    ranked_ids: list[str]
    done: bool
    usage: Usage = field(default_factory=Usage)
    dropped_ids: list[str] = field(default_factory=list)  # returned but not allowed
    resolved_paths: dict[str, str] = field(default_factory=dict)  # returned path -> id
    notes: list[str] = field(default_factory=list)  # retries, corrections, parse fallbacks


class Navigator(ABC):
    """Answers rank calls. Subclasses implement :meth:`rank`."""

    #: short name reported in results, e.g. "anthropic:claude-sonnet-4-6" or "lexical"
    name: str = "navigator"
    #: whether the provider caches static segments (else they are concatenated, same result)
    supports_cache: bool = False

    @abstractmethod
    def rank(self, request: RankRequest) -> RankReply:
        """Rank ``request.candidates`` for ``request.query``; never raises on a bad reply."""
