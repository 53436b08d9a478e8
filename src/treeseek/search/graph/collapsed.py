"""The collapsed-tree (summary-routing) walk policy of the traverse spec.

``collapsed_tree_policy()`` seeds on the ``seed_k`` best *summary* surfaces (kinds in
``summary_kinds``) and descends to each routed artifact's *leaf* surfaces (kinds in
``leaf_kinds``), which are the results, scored by their similarity to the query. A summary
surface is a router (routes, is not itself a result) only when its artifact has leaf surfaces;
a leaf-less summary is emitted directly, so a corpus of single-surface artifacts degrades to
flat-over-summaries instead of returning nothing. The walk runs under :func:`traverse`, which
enforces the visited set, the depth cap and the node budget.

The ``store`` the operator hands over is a :class:`Corpus`: ``search`` to seed, ``leaves``
(the ledger) to expand, ``similarity`` to score. Which similarity is the corpus's business:
the spec's shipped policy is pure-vector (cosine to the query); a document tree's corpus uses
the cosine of TF-IDF vectors (:mod:`treeseek.search.document.corpus`), no model needed.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from treeseek.search.graph.traverse import (
    DFLT_MAX_DEPTH,
    Scored,
    SearchHit,
    WalkPolicy,
    WalkState,
    WalkStep,
)

#: default summary/router surface kinds a collapsed-tree walk seeds on
DFLT_SUMMARY_KINDS: tuple[str, ...] = ("description", "synopsis", "capability", "document")
#: default leaf surface kinds a collapsed-tree walk descends to (the results)
DFLT_LEAF_KINDS: tuple[str, ...] = ("chunk", "readme_chunk")
#: default number of summary surfaces a collapsed-tree walk routes from
DFLT_SEED_K = 10

__all__ = [
    "DFLT_LEAF_KINDS",
    "DFLT_MAX_DEPTH",
    "DFLT_SEED_K",
    "DFLT_SUMMARY_KINDS",
    "CollapsedTreePolicy",
    "Corpus",
    "Surface",
    "collapsed_tree_policy",
]


@dataclass(frozen=True, slots=True)
class Surface:
    """One searchable surface of an artifact: its summary, or one of its leaf chunks."""

    id: str  # unique among the corpus's surfaces (the visited-set key)
    kind: str
    artifact: str  # what the surface describes (a document, a section)
    node_id: str  # the stored node a hit points at
    path: str


class Corpus(Protocol):
    def search(self, query: str, kinds: Collection[str], k: int) -> Sequence[Surface]:
        """The ``k`` surfaces of the given kinds most similar to ``query``, best first."""

    def leaves(self, artifact: str, kinds: Collection[str]) -> Sequence[Surface]:
        """The surfaces of the given kinds that belong to ``artifact`` (its ledger)."""

    def similarity(self, query: str, surface: Surface) -> float:
        """How similar ``surface`` is to ``query`` (higher is better)."""


@dataclass(frozen=True, slots=True)
class CollapsedTreePolicy(WalkPolicy):
    summary_kinds: tuple[str, ...] = DFLT_SUMMARY_KINDS
    leaf_kinds: tuple[str, ...] = DFLT_LEAF_KINDS
    seed_k: int = DFLT_SEED_K

    def seed(self, query: str, store: Any, state: WalkState) -> Iterable[Any]:
        corpus: Corpus = store
        return corpus.search(query, self.summary_kinds, self.seed_k)

    def score(self, node: Any, step: WalkStep, store: Any, state: WalkState) -> float:
        corpus: Corpus = store
        return corpus.similarity(state.query, node)

    def expand(self, node: Any, store: Any, state: WalkState) -> Iterable[Any]:
        if node.kind not in self.summary_kinds:
            return ()
        corpus: Corpus = store
        return corpus.leaves(node.artifact, self.leaf_kinds)

    def node_id(self, node: Any) -> Hashable:
        return str(node.id)

    def to_hit(self, node: Any, scored: Scored, store: Any, state: WalkState) -> SearchHit | None:
        corpus: Corpus = store
        if node.kind in self.summary_kinds and corpus.leaves(node.artifact, self.leaf_kinds):
            return None  # a router: its leaves are the results
        return SearchHit(
            node_id=node.node_id,
            path=node.path,
            score=scored.score,
            metadata={"kind": node.kind, "artifact": node.artifact},
        )


def collapsed_tree_policy(
    *,
    summary_kinds: Iterable[str] = DFLT_SUMMARY_KINDS,
    leaf_kinds: Iterable[str] = DFLT_LEAF_KINDS,
    seed_k: int = DFLT_SEED_K,
) -> WalkPolicy:
    """The summary-routing / collapsed-tree :class:`WalkPolicy` (see the module docstring).

    >>> hits = traverse(q, corpus, policy=collapsed_tree_policy())  # doctest: +SKIP
    """
    return CollapsedTreePolicy(tuple(summary_kinds), tuple(leaf_kinds), seed_k)
