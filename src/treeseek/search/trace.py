"""Traces: what each round of a retriever saw and decided, in the spec's vocabulary."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from treeseek.llm.base import Usage


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


@dataclass(slots=True)
class RoundTrace:
    round: int
    frontier: list[str]  # frontier paths at the start of the round
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


@dataclass(slots=True)
class Trace:
    strategy: str
    navigator: str
    rounds: list[RoundTrace] = field(default_factory=list)
    events: list[str] = field(default_factory=list)  # free-form notes (path resolution, ...)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
