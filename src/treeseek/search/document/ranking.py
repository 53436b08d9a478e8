"""The flat ranking of a document tree's sections: a linear scorer over lexical features,
refined by boosted trees (:mod:`~treeseek.search.document.trees`).

Candidates are the :data:`SUBTREE_DEPTH` best sections by subtree BM25 and the
:data:`OWN_DEPTH` best by own-text BM25 (release notes' scores scaled by
:data:`RELEASE_NOTES_FACTOR` first). Each candidate gets the features of :data:`WEIGHTS`, all
from the tree and the question only:

* the section's evidence: its subtree and own-text BM25 (over the best of the query, and as
  reciprocal ranks ``20 / (20 + rank)``), the share of the question's IDF mass its own text
  has, whether its title has no terms;
* its document's: the best BM25 of the document's top sections' subtrees (over the best
  document's) and the share of the question's IDF mass the document has;
* its place: top section or not, its level, its parent's subtree and own scores, its best
  child's subtree score;
* its names, each as the question's IDF mass they hold: title words (over the title's
  own IDF mass), reference labels (reST ``.. _label:``, which restate what authors link the
  section as) and the document's path words (``howto/deployment/checklist``);
* interactions of being a top section with the path words, the labels and the document score.

The score is the dot product with :data:`WEIGHTS`, learned by a listwise softmax (L-BFGS,
L2 1e-3) on the development split of the cross-reference benchmark (``bench/docs_xref``,
723 questions; 5-fold cross-validation by citing document gave section recall@1/@5 0.202/0.430,
MRR 0.298, against 0.155/0.368/0.245 for the previous reciprocal-rank fusion of subtree,
own-text and document ranks). Nothing here names a documentation set: the weights are general
parameters of lexical evidence, and a tree without labels (Markdown) simply has that feature 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from treeseek.errors import ConfigError
from treeseek.search.document.trees import (
    LINEAR_COLUMN,
    TREE_WEIGHT,
    BoostedTrees,
    section_trees,
)

#: sections read from the subtree and own-text BM25 rankings as candidates
SUBTREE_DEPTH = 300
OWN_DEPTH = 100
#: a query for ``k`` sections sends the linear scorer's best ``max(TREE_CANDIDATES,
#: TREE_CANDIDATES_PER_RESULT * k)`` candidates through the boosted trees, not all (about
#: 300): on the benchmark's dev split the first ``k`` were those of the full scoring for every
#: question at k = 1, 5, 10, 20 and 30 (75 for k = 10 already moved 2 of 723)
TREE_CANDIDATES = 100
TREE_CANDIDATES_PER_RESULT = 10
#: release notes' BM25 is multiplied by this before anything else
RELEASE_NOTES_FACTOR = 0.3
#: the constant of the reciprocal-rank features
RANK_K = 20.0
#: ``log(subtree score share + LOG_FLOOR)``
LOG_FLOOR = 1e-3
#: a level counts up to this depth (``min(level, MAX_LEVEL) / MAX_LEVEL``)
MAX_LEVEL = 5

WEIGHTS: dict[str, float] = {
    "subtree": 0.8514,
    "log_subtree": 0.7443,
    "own": 1.9435,
    "subtree_rank": 1.8759,
    "own_rank": 1.6849,
    "document": 1.6456,
    "document_coverage": 0.2866,
    "own_coverage": -0.7016,
    "top": 2.1045,
    "level": -0.4658,
    "no_title": -1.0294,
    "title_coverage": -0.0200,
    "labels": 6.4103,
    "path": -0.2805,
    "release_notes": 0.8980,
    "parent_subtree": 0.0997,
    "parent_own": 1.2498,
    "best_child_subtree": 0.6322,
    "top_path": 2.8772,
    "top_labels": -0.5839,
    "top_document": -0.8904,
}
_W = np.array(list(WEIGHTS.values()))

#: the weights of a tree with section vectors: :data:`WEIGHTS`' features, then the semantic
#: ones (:data:`SEMANTIC_FEATURES`), fitted together
VECTOR_WEIGHTS: dict[str, float] = {
    "subtree": 1.4437,
    "log_subtree": 0.3592,
    "own": 0.5668,
    "subtree_rank": 1.8198,
    "own_rank": 1.2209,
    "document": 1.0354,
    "document_coverage": 0.4300,
    "own_coverage": -0.2386,
    "top": 1.9439,
    "level": -0.6439,
    "no_title": -0.9165,
    "title_coverage": -0.5811,
    "labels": 6.3723,
    "path": -1.6165,
    "release_notes": -0.7988,
    "parent_subtree": 0.0763,
    "parent_own": 0.9704,
    "best_child_subtree": -0.3118,
    "top_path": 2.2728,
    "top_labels": -0.6254,
    "top_document": -0.7117,
    "cosine": 6.4134,
    "best_child_cosine": 1.1765,
}
#: the chosen ones on dev (5-fold CV by citing document; also tried: the cosine minus the best
#: section's, its reciprocal rank, the document's vector's cosine, the best cosine in the
#: document, the best descendant's, the parent's, all eight together: bench/docs_xref/README.md)
SEMANTIC_FEATURES = ("cosine", "best_child_cosine")
_VW = np.array(list(VECTOR_WEIGHTS.values()))


@dataclass(frozen=True, slots=True)
class SemanticScores:
    """The question's cosine to every section's vector, in the corpus's section order."""

    section: npt.NDArray[np.float64]


@dataclass(slots=True)
class SectionFeatures:
    """Per-section facts the features read, in the corpus's section order (built once)."""

    top: npt.NDArray[np.bool_]  # a top section (no parent section)
    level: npt.NDArray[np.float64]  # min(level, MAX_LEVEL) / MAX_LEVEL, the preamble as 1
    release_notes: npt.NDArray[np.bool_]
    document: npt.NDArray[np.int64]  # index of the section's document
    parent: npt.NDArray[np.int64]  # index of the parent section, -1 for a top section
    children: list[npt.NDArray[np.int64]]
    own_terms: list[frozenset[str]]
    document_terms: list[frozenset[str]]  # by document index
    title_terms: list[frozenset[str]]
    title_mass: list[float]  # the IDF mass of the title's terms
    label_terms: list[frozenset[str]]
    path_terms: list[frozenset[str]]  # the document path's words


def score_candidates(
    facts: SectionFeatures,
    idf: dict[str, float],
    subtree: npt.NDArray[np.float64],
    own: npt.NDArray[np.float64],
    semantic: SemanticScores | None = None,
    refined: int | None = None,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    """The candidates (section indices) and their scores, for a question whose terms (known
    to the tree) have the IDFs ``idf`` and whose BM25 over every section's subtree and own text
    are ``subtree`` and ``own``; with ``semantic`` (a tree with section vectors) scored by
    :data:`VECTOR_WEIGHTS`, else by :data:`WEIGHTS`, each refined by its boosted trees
    (:mod:`~treeseek.search.document.trees`: the linear score plus :data:`TREE_WEIGHT` times
    the trees' output over the features and the linear score).

    With ``refined``, only the ``refined`` best by the linear score (ties: candidate order)
    go through the trees, with exactly the scores above; every other candidate scores its
    linear score plus :data:`TREE_WEIGHT` times the lowest tree output among those, kept
    below the lowest of their scores. So the first ``refined`` of the ranking are those
    candidates in their full order, the rest follow in linear order, and the ranking agrees
    with the full one on every prefix of the full ranking made of those candidates."""
    candidates, features = candidate_features(facts, idf, subtree, own, semantic)
    linear = features @ (_W if semantic is None else _VW)
    trees = stacked_trees("lexical" if semantic is None else "vectors")
    if refined is None or refined >= len(linear):
        out = trees.predict(np.hstack([features, linear[:, None]]))
        return candidates, linear + TREE_WEIGHT * out
    best = np.argsort(-linear, kind="stable")[: max(refined, 0)]
    if len(best) == 0:
        return candidates, linear
    out = trees.predict(np.hstack([features[best], linear[best, None]]))
    scores = linear + TREE_WEIGHT * float(out.min())
    top = linear[best] + TREE_WEIGHT * out
    scores = np.minimum(scores, np.nextafter(float(top.min()), -np.inf))
    scores[best] = top
    return candidates, scores


def refined_candidates(k: int) -> int:
    """How many candidates a query for ``k`` sections scores with the boosted trees (see
    :data:`TREE_CANDIDATES`)."""
    return max(TREE_CANDIDATES, TREE_CANDIDATES_PER_RESULT * k)


def stacked_trees(name: str) -> BoostedTrees:
    """The packaged trees ``name`` (``lexical`` or ``vectors``), checked to read the features
    of :data:`WEIGHTS` (or :data:`VECTOR_WEIGHTS`) and then the linear score."""
    expected = (*(WEIGHTS if name == "lexical" else VECTOR_WEIGHTS), LINEAR_COLUMN)
    trees = section_trees().get(name)
    if trees is None or trees.features != expected:
        raise ConfigError(f"section trees: no {name!r} model over this scorer's features")
    return trees


def candidate_features(
    facts: SectionFeatures,
    idf: dict[str, float],
    subtree: npt.NDArray[np.float64],
    own: npt.NDArray[np.float64],
    semantic: SemanticScores | None = None,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    """The candidates and their features (one row each, columns in :data:`WEIGHTS` order,
    then, with ``semantic``, :data:`SEMANTIC_FEATURES`)."""
    subtree = np.where(facts.release_notes, subtree * RELEASE_NOTES_FACTOR, subtree)
    own = np.where(facts.release_notes, own * RELEASE_NOTES_FACTOR, own)
    by_subtree = _ranked(subtree)
    width = len(WEIGHTS) + (len(SEMANTIC_FEATURES) if semantic is not None else 0)
    if len(by_subtree) == 0:
        return by_subtree, np.zeros((0, width))
    by_own = _ranked(own)
    n = len(subtree)
    subtree_rank = np.full(n, np.inf)
    subtree_rank[by_subtree] = np.arange(1, len(by_subtree) + 1)
    own_rank = np.full(n, np.inf)
    own_rank[by_own] = np.arange(1, len(by_own) + 1)
    doc_score = np.zeros(len(facts.document_terms))
    tops = by_subtree[facts.top[by_subtree]]
    np.maximum.at(doc_score, facts.document[tops], subtree[tops])
    best_subtree = float(subtree.max())
    best_own = max(float(own.max()), 1e-9)
    best_doc = max(float(doc_score.max()), 1e-9)
    mass = sum(idf.values()) or 1.0

    def held(words: frozenset[str]) -> float:
        return sum(v for t, v in idf.items() if t in words)

    def share(words: frozenset[str]) -> float:
        return held(words) / mass

    candidates = np.unique(np.concatenate([by_subtree[:SUBTREE_DEPTH], by_own[:OWN_DEPTH]]))
    rows = []
    for i in candidates:
        doc = facts.document[i]
        parent = facts.parent[i]
        kids = facts.children[i]
        top = float(facts.top[i])
        sub = subtree[i] / best_subtree
        doc_share = doc_score[doc] / best_doc
        labels = share(facts.label_terms[i])
        path = share(facts.path_terms[i])
        title = held(facts.title_terms[i])
        rows.append(
            [
                sub,
                math.log(sub + LOG_FLOOR),
                own[i] / best_own,
                RANK_K / (RANK_K + subtree_rank[i]),
                RANK_K / (RANK_K + own_rank[i]),
                doc_share,
                share(facts.document_terms[doc]),
                share(facts.own_terms[i]),
                top,
                facts.level[i],
                float(not facts.title_terms[i]),
                title / facts.title_mass[i] if facts.title_mass[i] > 0 else 0.0,
                labels,
                path,
                float(facts.release_notes[i]),
                subtree[parent] / best_subtree if parent >= 0 else 0.0,
                own[parent] / best_own if parent >= 0 else 0.0,
                float(subtree[kids].max()) / best_subtree if len(kids) else 0.0,
                top * path,
                top * labels,
                top * doc_share,
            ]
        )
    lexical = np.array(rows, dtype=np.float64)
    if semantic is None:
        return candidates, lexical
    return candidates, np.hstack([lexical, _semantic_features(facts, semantic, candidates)])


def _semantic_features(
    facts: SectionFeatures, semantic: SemanticScores, candidates: npt.NDArray[np.intp]
) -> npt.NDArray[np.float64]:
    """The :data:`SEMANTIC_FEATURES` of ``candidates``: the section's cosine and its best
    child's (0 without children)."""
    cos = semantic.section
    rows = [
        [cos[i], float(cos[facts.children[i]].max()) if len(facts.children[i]) else 0.0]
        for i in candidates
    ]
    return np.array(rows, dtype=np.float64).reshape(len(candidates), len(SEMANTIC_FEATURES))


def _ranked(scores: npt.NDArray[np.float64]) -> npt.NDArray[np.intp]:
    """Indices with a positive score, best first (ties: index order)."""
    found = np.flatnonzero(scores > 0)
    return found[np.lexsort((found, -scores[found]))]
