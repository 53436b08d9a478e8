"""Merging block-local rankings (spec Algorithms 4-5).

``unique_preserve_block_order`` drops ids already returned by an earlier block (or earlier in
the same block), ``flatten`` concatenates the groups: that is ``merged_ids``, a merge and not a
ranking. ``constrained_path_order`` optionally interleaves the groups by a path score, but only
the current head of each group may be taken at each step, so the relative order inside every
block's list never changes. Without a scorer, or when the scorer declines, it is ``flatten``.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: scores paths for a query; ``None`` means "decline" (no path evidence in the query)
PathScore = Callable[[str, Sequence[str]], "list[float] | None"]


def unique_preserve_block_order(groups: Sequence[Sequence[str]]) -> list[list[str]]:
    seen: set[str] = set()
    out: list[list[str]] = []
    for group in groups:
        kept: list[str] = []
        for node_id in group:
            if node_id not in seen:
                seen.add(node_id)
                kept.append(node_id)
        out.append(kept)
    return out


def flatten(groups: Sequence[Sequence[str]]) -> list[str]:
    return [node_id for group in groups for node_id in group]


@dataclass(frozen=True, slots=True)
class Ordered:
    ids: list[str]
    ranked: bool  # True when the scorer ran; False when it declined or there was none


def constrained_path_order(
    groups: Sequence[Sequence[str]],
    query: str,
    paths: dict[str, str],
    score: PathScore | None,
) -> Ordered:
    """CONSTRAINEDPATHORDER(G, q): k-way merge of the groups by the score of their heads.

    Ties go to the earlier group, so equal scores reproduce block order. ``paths`` maps every
    id in ``groups`` to its repo-relative path (the scorer is path-only).
    """
    merged = flatten(groups)
    if score is None or len(groups) < 2 or not merged:
        return Ordered(merged, False)
    scores = score(query, [paths[i] for i in merged])
    if scores is None:
        return Ordered(merged, False)
    by_id = dict(zip(merged, scores, strict=True))
    heap: list[tuple[float, int, int]] = []  # (-score of head, group index, position)
    for g, group in enumerate(groups):
        if group:
            heap.append((-by_id[group[0]], g, 0))
    heapq.heapify(heap)
    out: list[str] = []
    while heap:
        _, g, pos = heapq.heappop(heap)
        out.append(groups[g][pos])
        if pos + 1 < len(groups[g]):
            heapq.heappush(heap, (-by_id[groups[g][pos + 1]], g, pos + 1))
    return Ordered(out, True)
