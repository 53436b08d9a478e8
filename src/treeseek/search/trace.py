"""Traces: what each round of a retriever saw and decided, in the spec's vocabulary.

All ids are real node ids (block-local aliases are mapped back); :attr:`Trace.paths` maps every
id that appears in the trace to its repo-relative path, so a reader never needs the store.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from treeseek.llm.base import Usage

#: ``Trace.stop_reason`` of a tree search stopped by the query's deadline
DEADLINE_STOP = "deadline reached"


@dataclass(slots=True)
class BlockTrace:
    """One LLM call over one block (Block) or over the candidate set (Beam)."""

    candidate_set: list[str]  # node ids shown (block-local pool)
    ranked_ids: list[str]  # node ids the LLM returned, in its order (aliases mapped back)
    done: bool
    tokens: int = 0  # rendered block tokens
    usage: Usage = field(default_factory=Usage)
    dropped_ids: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    index: int = 0  # position among the round's blocks
    pick_limit: int = 0
    path_prefix: str | None = None  # the block's rendered `Path prefix`, if any
    aliases: dict[str, str] = field(default_factory=dict)  # alias (n1..nK) -> node id
    cached_segments: list[str] = field(default_factory=list)  # window labels sent before it
    static_tokens: int = 0  # tokens of the static segments sent with the call
    message_tokens: int = 0  # tokens of the dynamic message


@dataclass(slots=True)
class RoundTrace:
    round: int
    frontier: list[str]  # frontier node ids at the start of the round
    blocks: list[BlockTrace]
    merged_ids: list[str]  # order-preserving unique merge of the blocks' ranked ids
    ordered_ids: list[str]  # after ConstrainedPathOrder (== merged_ids without a ranker)
    top_candidate_ids: list[str]  # the maintained result set after this round
    next_frontier: list[str]
    pick_limit: int
    done_before_override: bool
    done_after_override: bool
    ranker: str | None = None  # ranker that ordered this round, None if it declined/absent
    overhead_s: float = 0.0  # time spent outside LLM calls
    llm_s: float = 0.0  # wall time of the round's (parallel) LLM calls
    usage: Usage = field(default_factory=Usage)
    visible_count: int = 0  # |X|: candidates materialized this round
    cache_window: list[str] = field(default_factory=list)  # window labels after the round
    cache_entered: list[str] = field(default_factory=list)  # labels appended this round


@dataclass(slots=True)
class Trace:
    strategy: str
    navigator: str
    rounds: list[RoundTrace] = field(default_factory=list)
    events: list[str] = field(default_factory=list)  # free-form notes (path resolution, ...)
    paths: dict[str, str] = field(default_factory=dict)  # node id -> path, for every id above
    stop_reason: str = ""  # why the loop ended ("k files collected", "done", ...)
    params: dict[str, Any] = field(default_factory=dict)  # b, k, p, tau, ranker, cache ...
    usage: Usage = field(default_factory=Usage)
    wall_s: float = 0.0
    #: the calls of a round the deadline cut (paid for, their answers unused): in ``usage``
    cut_usage: Usage = field(default_factory=Usage)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
