"""The ``traverse`` strategy: flat retrieval, then a code-graph walk from its top files.

The flat retriever (:mod:`treeseek.search.flat.flat`, used through its public ``rank``) ranks the
tree's files. Its top ``seed_files`` become the seeds of a :func:`~treeseek.search.graph.traverse.
traverse` walk under the code-graph policy: each seed file, plus the symbols its evidence names
(exact mentions, stack frames, matching symbols, the best chunk's symbol), scored by the file's
flat score. The walk follows imports, calls, inherits and containment in both directions, up
to ``max_depth`` edges and ``node_budget`` committed nodes.

Fusion: flat's top ``protect_head`` files (by default the seed files) keep flat's order at the
head of the answer (the walk adds files, it never demotes flat's best). Below them, a file the
walk reaches gets ``walk_weight`` times the best walk score of its nodes, in units of the top
flat score (times flat's test penalty for a test file), *added* to its own flat score (zero
when it is not among flat's top k). A walk score is the seed's normalized score decayed per
edge (see :class:`~treeseek.search.graph.traverse.CodeGraphPolicy`), so a walked file enters below
the seed that reached it, and a file both found lexically and connected to the seeds rises.
Walked files carry their provenance in ``evidence.walk``
(:class:`~treeseek.search.base.WalkEvidence`).

Flat stays the default strategy; this one is opt-in until it beats flat on the eval set. A tree
without a code index (nothing parsed: no symbols, no imports) gets the flat ranking, with a
note in the trace.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from treeseek.code.conventions import is_test_path
from treeseek.code.graph import CONTAINS
from treeseek.code.model import EdgeType
from treeseek.llm.base import Usage
from treeseek.search.base import (
    Evidence,
    FileHit,
    QueryOptions,
    Result,
    Retriever,
    SearchContext,
    WalkEvidence,
)
from treeseek.search.flat.flat import FlatRetriever
from treeseek.search.graph.traverse import SearchHit, code_graph_policy, traverse
from treeseek.search.graph.tree_graph import TREE_GRAPH, cached_tree_graph
from treeseek.search.results import attach_contents
from treeseek.search.trace import Trace
from treeseek.search.treeview import TreeView
from treeseek.trees.model import node_id_for_path

#: mention kinds whose symbol names an exact place in the code (not a bare common word)
_EXACT_MENTIONS = frozenset({"frame", "qname", "path", "module", "symbol"})


def _edge_weights() -> dict[str, float]:
    # moving between a file and its own symbols costs little (it is the same file); calls and
    # inheritance are the relations an issue's fix usually crosses; an import is weaker
    return {
        EdgeType.CALLS.value: 0.7,
        EdgeType.INHERITS.value: 0.8,
        EdgeType.IMPORTS.value: 0.5,
        CONTAINS: 0.9,
    }


@dataclass(frozen=True, slots=True)
class WalkConfig:
    """Seeds, walk bounds and fusion weight of the ``traverse`` strategy."""

    seed_files: int = 5  # flat's top files that seed the walk
    #: flat's top files whose order the walk never changes (0: walked files may enter
    #: between the seeds, by score)
    protect_head: int = 5
    max_depth: int = 2  # edges from a seed
    node_budget: int = 200  # nodes (files and symbols) committed per walk
    fanout: int = 16  # neighbours read per node, per edge kind and direction
    decay: float = 0.8  # per edge, times the edge kind's weight
    lexical: float = 0.3  # bonus for a node whose name shares the query's words
    walk_weight: float = 0.5  # a walked file's score: this times its walk score, in top-flat units
    edge_weights: dict[str, float] = field(default_factory=_edge_weights)


@dataclass(frozen=True, slots=True)
class WalkedFile:
    """The best way the walk reached one file."""

    path: str
    score: float  # walk score (a seed's is its flat score over the top one)
    node: str  # the file or symbol node reached
    seed: str
    walk_depth: int
    relation: str  # the last edge's kind
    direction: str  # "out": followed forwards; "in": backwards (callers, importers, ...)

    def evidence(self) -> WalkEvidence:
        return WalkEvidence(
            seed=self.seed,
            walk_depth=self.walk_depth,
            relation=self.relation,
            direction=self.direction,
            node=self.node,
            walk_score=round(self.score, 4),
        )


def seed_symbols(hit: FileHit) -> list[str]:
    """Symbols a flat hit's evidence names exactly: mentioned symbols and stack frames,
    matching symbols, and the best chunk's symbol (qualified names within the file)."""
    names: list[str] = []
    for m in hit.evidence.mentions:
        if m.kind in _EXACT_MENTIONS and m.symbol:
            names.append(m.symbol)
    names.extend(hit.evidence.symbols)
    chunk = hit.evidence.chunk
    if chunk is not None and chunk.symbol:
        names.append(chunk.symbol)
    return list(dict.fromkeys(names))


def walked_files(hits: Sequence[SearchHit], seed_paths: set[str]) -> dict[str, WalkedFile]:
    """Each file the walk reached beyond the seed files, by its best node."""
    best: dict[str, WalkedFile] = {}
    for h in hits:
        depth = int(h.metadata.get("walk_depth", 0))
        if depth == 0 or h.path in seed_paths:
            continue
        known = best.get(h.path)
        if known is None or h.score > known.score:
            best[h.path] = WalkedFile(
                path=h.path,
                score=h.score,
                node=h.node_id,
                seed=str(h.metadata.get("seed", "")),
                walk_depth=depth,
                relation=str(h.metadata.get("via", "")),
                direction=str(h.metadata.get("direction", "")),
            )
    return best


class GraphWalkRetriever(Retriever):
    """Flat retrieval, re-ranked with the files a code-graph walk reaches from its top hits."""

    name = "traverse"

    def __init__(
        self,
        config: WalkConfig | None = None,
        *,
        flat: FlatRetriever | None = None,
    ) -> None:
        self.config = config or WalkConfig()
        self.flat = flat or FlatRetriever()

    def retrieve(self, ctx: SearchContext, query: str, options: QueryOptions) -> Result:
        cfg = self.config
        started = time.perf_counter()
        # flat ranks exactly k files: asking for more costs flat's chunk evidence per file
        # (measured: 65 s of a 125 s query for 30 files on a django tree under load)
        ranking = self.flat.rank(ctx, query, options.k)
        flat_hits = ranking.hits
        t_graph = time.perf_counter()
        built = ctx.caches.peek(TREE_GRAPH, ctx.tree) is None
        loaded = cached_tree_graph(ctx.caches, ctx.store, ctx.tree)
        graph = loaded.graph
        params: dict[str, Any] = {
            "flat": ranking.trace_params(),
            "graph_s": round(time.perf_counter() - t_graph, 4),
            "graph_built": built,
        }
        if not flat_hits or not (graph.symbols or graph.out[EdgeType.IMPORTS.value]):
            note = (
                "no code index for this tree: flat ranking"
                if flat_hits
                else "flat retrieval found nothing to walk from"
            )
            return self._result(ctx, flat_hits[: options.k], options, params, note, started)
        t_walk = time.perf_counter()
        seeds_hits = flat_hits[: cfg.seed_files]
        seeds: list[tuple[str, float]] = []
        for h in seeds_hits:
            score = float(h.score or 0.0)
            seeds.append((h.path, score))
            seeds.extend((f"{h.path}::{name}", score) for name in seed_symbols(h))
        policy = code_graph_policy(
            seeds,
            decay=cfg.decay,
            lexical=cfg.lexical,
            edge_weights=cfg.edge_weights,
            fanout=cfg.fanout,
        )
        walk = traverse(
            query,
            graph,
            policy=policy,
            max_depth=cfg.max_depth,
            node_budget=cfg.node_budget,
            k=cfg.node_budget,
        )
        walked = walked_files(walk, {h.path for h in seeds_hits})
        fused = self._fuse(flat_hits, walked, ctx)
        params.update(
            seeds=len(seeds),
            walk_nodes=len(walk),
            walked_files=len(walked),
            walk_s=round(time.perf_counter() - t_walk, 4),
            max_depth=cfg.max_depth,
            node_budget=cfg.node_budget,
            walk_weight=cfg.walk_weight,
        )
        top = fused[: options.k]
        entered = sum(1 for h in top if h.evidence.walk is not None and not h.evidence.why)
        note = f"{len(top)} files: flat + walk ({entered} reached only by the walk)"
        return self._result(ctx, top, options, params, note, started)

    def _fuse(
        self, flat_hits: list[FileHit], walked: dict[str, WalkedFile], ctx: SearchContext
    ) -> list[FileHit]:
        top = float(flat_hits[0].score or 0.0) or 1.0
        weight = self.config.walk_weight * top
        test_penalty = self.flat.config.test_penalty  # walked tests weigh what flat's do
        out: list[FileHit] = []
        seen: set[str] = set()
        for h in flat_hits:
            seen.add(h.path)
            w = walked.get(h.path)
            if w is None:
                out.append(h)
                continue
            evidence = replace(h.evidence, walk=w.evidence())
            score = float(h.score or 0.0) + weight * w.score * _prior(h.path, test_penalty)
            out.append(
                FileHit(
                    node_id=h.node_id,
                    path=h.path,
                    score=round(score, 6),
                    content_status=h.content_status,
                    evidence=evidence,
                )
            )
        view = TreeView(ctx.store, ctx.tree.name)
        new = [w for w in walked.values() if w.path not in seen]
        nodes = {n.path: n for n in view.nodes([node_id_for_path(w.path) for w in new])}
        for w in new:
            node = nodes.get(w.path)
            if node is None:  # a graph file the tree no longer has
                continue
            out.append(
                FileHit(
                    node_id=node.id,
                    path=w.path,
                    score=round(weight * w.score * _prior(w.path, test_penalty), 6),
                    content_status=str(node.content_status),
                    evidence=Evidence(walk=w.evidence()),
                )
            )
        head = out[: self.config.protect_head]
        rest = sorted(out[len(head) :], key=lambda h: (-(h.score or 0.0), h.path))
        return head + rest

    def _result(
        self,
        ctx: SearchContext,
        hits: list[FileHit],
        options: QueryOptions,
        params: dict[str, Any],
        note: str,
        started: float,
    ) -> Result:
        files = attach_contents(ctx.store, ctx.tree.name, hits, options)
        trace = Trace(strategy=self.name, navigator="none")
        trace.params.update(params)
        trace.paths.update({h.node_id: h.path for h in files})
        trace.stop_reason = note
        trace.wall_s = round(time.perf_counter() - started, 4)
        return Result(
            files=files,
            strategy=self.name,
            navigator="none",
            trace=trace,
            usage=Usage(),
            cost_usd=0.0,
        )


def _prior(path: str, test_penalty: float) -> float:
    return test_penalty if is_test_path(path) else 1.0
