"""The traverse operator: query-time graph walks under a pluggable :class:`WalkPolicy`.

One loop — score the frontier → select → commit → expand → test stop — serves recursive
retrieval, beam walks and code-graph walks. The *policy* owns the graph semantics; the
*operator* owns the loop and its safety, split as the spec says:

* safety ("will it stop?") is structural and enforced here, whatever the policy does: a
  visited set keyed on ``policy.node_id``, a depth cap, and a node budget live in
  :class:`WalkState`; every iterable a policy returns is read through a bounded slice, and a
  policy's ``select`` can only pick among the frontier the operator scored (a node it invents
  is ignored, so it cannot reset a depth). A policy whose ``expand`` cycles or never ends and
  whose ``stop`` never fires still terminates after at most ``node_budget`` commits.
* sufficiency ("should it stop?") is the policy's ``stop`` (default: never, run to budget).

``store`` is handed to the policy verbatim and never inspected here. Hits carry JSON-clean walk
provenance: ``metadata["walk_depth"]`` and ``metadata["seed"]``.

:func:`code_graph_policy` walks a :class:`~treeseek.code.graph.CodeGraph` from file/symbol
seeds (e.g. the flat retriever's top hits) along imports, calls, inherits and containment.
Flat retrieval stays the default; a policy earns promotion only by beating it on the eval set.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from treeseek.code.graph import CONTAINS, CodeGraph
from treeseek.code.model import EdgeType, split_symbol_id
from treeseek.errors import ConfigError
from treeseek.text.tokens import code_tokens

DFLT_MAX_DEPTH = 2
DFLT_NODE_BUDGET = 64
DFLT_K = 10
#: the frontier never holds more than this many nodes per unit of node budget
FRONTIER_FACTOR = 8


@dataclass(slots=True)
class SearchHit:
    """A committed node of a walk, as a result."""

    node_id: str
    path: str
    score: float
    symbol: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class WalkState:
    """The operator-owned state of one :func:`traverse` call — the safety home.

    ``visited`` (committed node ids), ``budget`` and ``max_depth`` are enforced by the
    operator; ``results`` are the emitted hits; ``cache`` is scratch space for the policy.
    """

    query: str
    max_depth: int
    budget: int
    visited: set[Hashable] = field(default_factory=set)
    results: list[SearchHit] = field(default_factory=list)
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def remaining(self) -> int:
        return self.budget - len(self.visited)


@dataclass(frozen=True, slots=True)
class WalkStep:
    """Where a frontier node was reached: its depth, its seed, and its parent's score."""

    depth: int
    seed: str
    parent_score: float | None = None


@dataclass(frozen=True, slots=True)
class Scored:
    node: Any
    node_id: Hashable
    score: float
    step: WalkStep


class WalkPolicy(ABC):
    """The pluggable strategy of a walk — graph semantics, not safety."""

    @abstractmethod
    def seed(self, query: str, store: Any, state: WalkState) -> Iterable[Any]:
        """The initial frontier."""

    @abstractmethod
    def score(self, node: Any, step: WalkStep, store: Any, state: WalkState) -> float:
        """How good ``node`` is for the query (higher is better)."""

    def select(self, scored: Sequence[Scored], state: WalkState) -> Sequence[Scored]:
        """Which scored frontier nodes to commit and expand this step (default: all,
        best-first)."""
        return sorted(scored, key=lambda s: -s.score)

    @abstractmethod
    def expand(self, node: Any, store: Any, state: WalkState) -> Iterable[Any]:
        """The neighbours of ``node``."""

    @abstractmethod
    def node_id(self, node: Any) -> Hashable:
        """The visited-set key of ``node``."""

    def stop(self, state: WalkState) -> bool:
        """Sufficiency: stop early (default: never; the budget ends the walk)."""
        return False

    @abstractmethod
    def to_hit(self, node: Any, scored: Scored, store: Any, state: WalkState) -> SearchHit | None:
        """``node`` as a result, or None for a router-only node."""


def traverse(
    query: str,
    store: Any,
    *,
    policy: WalkPolicy,
    max_depth: int = DFLT_MAX_DEPTH,
    node_budget: int = DFLT_NODE_BUDGET,
    k: int = DFLT_K,
) -> list[SearchHit]:
    """Walk ``store`` from ``query`` under ``policy``; the committed hits, best-first, top-k."""
    if max_depth < 0 or node_budget < 0 or k < 0:
        raise ConfigError(
            f"traverse needs max_depth, node_budget and k >= 0 "
            f"(got {max_depth}, {node_budget}, {k})"
        )
    state = WalkState(query=query, max_depth=max_depth, budget=node_budget)
    cap = max(1, node_budget) * FRONTIER_FACTOR
    frontier: list[tuple[Any, WalkStep]] = []
    for node in islice(policy.seed(query, store, state), cap):
        frontier.append((node, WalkStep(depth=0, seed=str(policy.node_id(node)))))
    while frontier and state.remaining > 0:
        by_id: dict[Hashable, Scored] = {}
        for node, step in frontier:
            nid = policy.node_id(node)
            if nid in state.visited:
                continue
            scored = Scored(node, nid, _finite(policy.score(node, step, store, state)), step)
            if nid not in by_id or scored.score > by_id[nid].score:  # best way in wins
                by_id[nid] = scored
        if not by_id:
            break
        chosen = _own(policy.select(list(by_id.values()), state), by_id, state.remaining)
        frontier = []
        for item in chosen:
            if state.remaining <= 0:
                break
            state.visited.add(item.node_id)
            hit = policy.to_hit(item.node, item, store, state)
            if hit is not None:
                hit.metadata["walk_depth"] = item.step.depth
                hit.metadata["seed"] = item.step.seed
                state.results.append(hit)
            if policy.stop(state):
                return _top(state.results, k)
            if item.step.depth >= max_depth:
                continue
            child_step = WalkStep(item.step.depth + 1, item.step.seed, item.score)
            for child in islice(policy.expand(item.node, store, state), cap):
                if len(frontier) >= cap:
                    break
                if policy.node_id(child) not in state.visited:
                    frontier.append((child, child_step))
    return _top(state.results, k)


def _finite(score: float) -> float:
    score = float(score)
    return score if math.isfinite(score) else -math.inf


def _own(chosen: Iterable[Scored], by_id: Mapping[Hashable, Scored], limit: int) -> list[Scored]:
    """The operator's own records of what the policy chose: unknown or repeated ids are
    dropped, and at most ``limit`` items are read from the policy's iterable."""
    out: list[Scored] = []
    seen: set[Hashable] = set()
    for item in islice(chosen, max(limit, 0) * FRONTIER_FACTOR + 1):
        nid = getattr(item, "node_id", None)
        if nid is None or nid in seen or nid not in by_id:
            continue
        seen.add(nid)
        out.append(by_id[nid])
        if len(out) >= limit:
            break
    return out


def _top(results: list[SearchHit], k: int) -> list[SearchHit]:
    return sorted(results, key=lambda h: -h.score)[:k]


# --- the code-graph policy --------------------------------------------------------------------

#: how much of a parent's score flows along each kind of edge
DFLT_EDGE_WEIGHTS: dict[str, float] = {
    EdgeType.CALLS.value: 0.7,
    EdgeType.INHERITS.value: 0.8,
    EdgeType.IMPORTS.value: 0.5,
    CONTAINS: 0.6,
}


@dataclass(slots=True)
class CodeGraphPolicy(WalkPolicy):
    """Seeds on given files/symbols (node ids, paths or dotted names, with scores) and walks
    imports, calls, inherits and containment in both directions.

    A node's score is its parent's score times ``decay`` times the edge kind's weight, plus
    ``lexical`` times the share of the query's tokens found in the node's name. Seeds keep
    their given scores (normalized so the best is 1). Nodes are ``(node_id, edge_kind,
    direction)``: the edge that reached the node and whether it was followed forwards
    (``"out"``: the parent calls/imports/inherits/contains the node) or backwards (``"in"``).
    """

    seeds: Sequence[tuple[str, float]]
    decay: float = 0.8
    lexical: float = 0.3
    edge_weights: Mapping[str, float] = field(default_factory=lambda: dict(DFLT_EDGE_WEIGHTS))
    fanout: int = 32  # neighbours read per expanded node, per direction and kind
    beam: int | None = None  # commit at most this many per step (None: all)

    def seed(self, query: str, store: Any, state: WalkState) -> Iterable[Any]:
        graph = _graph(store)
        top = max((s for _, s in self.seeds), default=1.0) or 1.0
        scores: dict[str, float] = {}
        for name, score in self.seeds:
            node = graph.node(name)
            if node is not None and node not in scores:
                scores[node] = score / top
        state.cache["seed_scores"] = scores
        state.cache["query_tokens"] = set(code_tokens(query))
        return [(node, "seed", "") for node in scores]

    def score(self, node: Any, step: WalkStep, store: Any, state: WalkState) -> float:
        node_id, kind, _ = node
        if step.parent_score is None:
            base = float(state.cache["seed_scores"].get(node_id, 0.0))
        else:
            base = step.parent_score * self.decay * self.edge_weights.get(kind, 0.0)
        return base + self.lexical * _overlap(node_id, state.cache["query_tokens"])

    def select(self, scored: Sequence[Scored], state: WalkState) -> Sequence[Scored]:
        ranked = sorted(scored, key=lambda s: (-s.score, str(s.node_id)))
        return ranked if self.beam is None else ranked[: self.beam]

    def expand(self, node: Any, store: Any, state: WalkState) -> Iterable[Any]:
        graph = _graph(store)
        node_id = node[0]
        for kind in self.edge_weights:
            if self.edge_weights[kind] <= 0:
                continue
            for direction in ("out", "in"):
                table = graph.out if direction == "out" else graph.into
                neighbours = sorted(table[kind].get(node_id, ()))[: self.fanout]
                for n in neighbours:
                    yield (n, kind, direction)

    def node_id(self, node: Any) -> Hashable:
        return str(node[0])

    def to_hit(self, node: Any, scored: Scored, store: Any, state: WalkState) -> SearchHit | None:
        path, qname = split_symbol_id(node[0])
        return SearchHit(
            node_id=node[0],
            path=path,
            score=scored.score,
            symbol=qname,
            metadata={"via": node[1], "direction": node[2]} if node[2] else {"via": node[1]},
        )


def code_graph_policy(seeds: Sequence[tuple[str, float]], **options: Any) -> CodeGraphPolicy:
    """The code-graph :class:`WalkPolicy`; ``store`` must be a :class:`CodeGraph`.

    >>> hits = traverse(q, graph, policy=code_graph_policy([("pkg/mod.py", 3.2)]))
    """
    return CodeGraphPolicy(seeds=list(seeds), **options)


def files_from_hits(hits: Iterable[SearchHit]) -> list[tuple[str, float]]:
    """File-level view of walk hits: each file with its best node's score, best first."""
    best: dict[str, float] = {}
    for h in hits:
        if h.score > best.get(h.path, -math.inf):
            best[h.path] = h.score
    return sorted(best.items(), key=lambda item: (-item[1], item[0]))


def _graph(store: Any) -> CodeGraph:
    if not isinstance(store, CodeGraph):
        raise ConfigError(f"the code-graph policy walks a CodeGraph, not {type(store).__name__}")
    return store


def _overlap(node_id: str, query_tokens: set[str]) -> float:
    if not query_tokens:
        return 0.0
    path, qname = split_symbol_id(node_id)
    name = qname.rsplit(".", 1)[-1] if qname else path.rsplit("/", 1)[-1]
    tokens = set(code_tokens(name))
    return len(tokens & query_tokens) / len(tokens) if tokens else 0.0
