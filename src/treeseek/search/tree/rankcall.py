"""One rank call as a retriever sees it: validate the reply against the allowed set.

Navigators already drop ids outside the allowed set; this re-checks (a retriever must never
act on an id it did not offer), maps block-local aliases back to node ids, removes repeats and
cuts the list at the pick limit, recording every correction.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from treeseek.llm.base import Navigator, RankRequest, Usage


@dataclass(slots=True)
class RankOutcome:
    ids: list[str]  # real node ids, allowed, unique, at most pick_limit, in the LLM's order
    done: bool
    usage: Usage
    dropped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    wall_s: float = 0.0


def call_rank(
    navigator: Navigator, request: RankRequest, to_node_id: Mapping[str, str]
) -> RankOutcome:
    """Ask ``navigator`` and return the reply in node ids. ``to_node_id`` maps every allowed
    id shown to the LLM (node id or alias) to its node id."""
    started = time.perf_counter()
    reply = navigator.rank(request)
    wall = time.perf_counter() - started
    ids: list[str] = []
    dropped = list(reply.dropped_ids)
    notes = list(reply.notes)
    seen: set[str] = set()
    for shown in reply.ranked_ids:
        node_id = to_node_id.get(shown)
        if node_id is None:
            dropped.append(shown)
            continue
        if node_id in seen:
            continue
        seen.add(node_id)
        ids.append(node_id)
    if len(ids) > request.pick_limit:
        notes.append(f"{len(ids) - request.pick_limit} ids beyond pick_limit ignored")
        ids = ids[: request.pick_limit]
    for path, node in reply.resolved_paths.items():
        notes.append(f"path {path!r} resolved to {node}")
    usage = reply.usage
    if usage.calls == 0:
        usage = Usage(
            1,
            usage.input_tokens,
            usage.cache_write_tokens,
            usage.cache_read_tokens,
            usage.output_tokens,
            usage.latency_s or wall,
        )
    return RankOutcome(ids, reply.done, usage, dropped, notes, wall)
