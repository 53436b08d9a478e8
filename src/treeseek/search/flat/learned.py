"""Learned fusion of the flat signals: a linear model over per-file features.

The fused ranking (weighted reciprocal rank fusion + exact evidence + penalties) orders the
tree's files; the learned ranking rescores its first ``depth`` files with a linear model over
features of each file that depend only on the question and the tree: per signal its reciprocal
rank and its score relative to the signal's best, the exact evidence by kind, the penalties'
path classes, the fused score itself, and the file's neighbourhood (same directory as the
fused first file or as a file the question names), its place in the import graph around the
question's files (:mod:`treeseek.search.flat.import_graph`), and in hybrid mode the vector
signal's rank and relative cosine (:data:`VECTOR_FEATURES`). The weights are constants
(:mod:`treeseek.search.flat.ltr_weights`: one model for lexical mode, one for hybrid mode, the
lexical one where no hybrid model earned its place), written by ``bench/fit_flat_ltr.py``: the
log of the fused score (relative to the best) plus a few small weights on the signals' relative
scores and the personalized PageRank share, chosen on the SWE-bench dev split and the
multilingual dev half together (a listwise
logistic model over all features, fitted with folds by repository, did not beat the fused
order; README "Learned fusion"). The other columns have weight 0 and serve that fit
(``bench/dump_flat_features.py``). Nothing in a feature names an instance or a repository.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

#: the signals whose ranks and scores become features (in this order)
RANKED_SIGNALS: tuple[str, ...] = ("files", "title", "chunks", "paths", "symbols")
#: the signals whose agreement (``agree.*``, ``best.rr``) is counted: the fused ones
AGREEING_SIGNALS: tuple[str, ...] = ("files", "title", "chunks", "paths")
#: directories of code beside the product: examples, benchmarks, docs, scripts and tools
AUX_DIRS = frozenset(
    {
        "example",
        "examples",
        "sample",
        "samples",
        "demo",
        "demos",
        "bench",
        "benches",
        "benchmark",
        "benchmarks",
        "doc",
        "docs",
        "script",
        "scripts",
        "tool",
        "tools",
        "support",
    }
)
#: the kinds of exact evidence (understanding.py), counted per file
MENTION_KINDS: tuple[str, ...] = ("path", "frame", "module", "symbol", "qname")


def feature_names() -> tuple[str, ...]:
    """The names of the feature columns, in order."""
    names: list[str] = []
    for s in RANKED_SIGNALS:
        names += [f"{s}.rr", f"{s}.rrf", f"{s}.norm"]
    names += ["mentions.log"] + [f"mention.{k}" for k in MENTION_KINDS]
    names += ["fused.norm", "fused.rr", "fused.log_rr"]
    names += ["test", "non_code", "vendored", "aux_dir", "primary", "length.log"]
    names += ["dir.top", "dir.mention", "stem.named", "parent.named"]
    names += ["agree.top3", "agree.top10", "best.rr", "fused.log"]
    names += ["graph.link", "graph.ppr"]
    names += list(TEXT_FEATURES)
    names += list(VECTOR_FEATURES)
    return tuple(names)


#: the text-match columns (:class:`TextMatch`), last of :data:`FEATURES`
TEXT_FEATURES: tuple[str, ...] = (
    "files.cover",
    "terms.cover",
    "chunk.cover",
    "symbols.defined",
    "test.pair",
)
#: the vector signal's columns, last of :data:`FEATURES`: its reciprocal rank, RRF term, cosine
#: over the best cosine, and the cosine's place between the :data:`VECTOR_GAP_RANK`-th nearest
#: file's and the nearest's. All 0 for a file the vector signal did not rank, in lexical mode,
#: and when the vector signal ranked fewer than :data:`VECTOR_GAP_RANK` files
VECTOR_FEATURES: tuple[str, ...] = ("vectors.rr", "vectors.rrf", "vectors.norm", "vectors.gap")
#: ``vectors.gap`` = (cos - cos of this nearest) / (best cos - that), clipped at 0. MiniLM's
#: cosines of a question and the outlines of a large tree are compressed (on django the nearest
#: file at 0.50-0.70, the 30th only 0.07-0.32 below it), so ``vectors.norm`` sits near 1 for
#: every candidate; the gap spreads them over 0..1 by how far a file stands out from the 30
#: nearest (the learned ranking's depth). A tree with fewer files with vectors than this (the
#: ~20 Rust files of a CLI, the ~25 headers and sources of a C++ library) has no such
#: reference: every file is among the "nearest", and its vector columns stay 0 (on the
#: multilingual dev half the columns lost exactly on those trees, README "Learned ranking for
#: the hybrid mode")
VECTOR_GAP_RANK = 30
FEATURES: tuple[str, ...] = feature_names()


@dataclass(frozen=True, slots=True)
class LinearModel:
    """Score = ((x - mean) / scale) . weights; one weight per feature of :data:`FEATURES`."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    #: the mode it was fitted for and ranks ("lexical", "hybrid": vectors took part); the
    #: trace says which ranked (``ranked_by``)
    name: str = "lexical"

    def uses(self, names: Sequence[str]) -> bool:
        """Whether any of the features ``names`` has a non-zero weight."""
        return any(w != 0.0 for f, w in zip(self.features, self.weights, strict=True) if f in names)

    def score(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        if x.shape[1] != len(self.weights):
            raise ValueError(f"{x.shape[1]} features for a model of {len(self.weights)}")
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        return np.asarray(z @ np.asarray(self.weights), dtype=np.float64)


@dataclass(frozen=True, slots=True)
class GraphScore:
    """A candidate in the import graph of the question's files
    (:mod:`treeseek.search.flat.import_graph`)."""

    #: how many of the question's anchor files (the fused first files, the named files) it
    #: imports or is imported by
    links: int
    #: its personalized PageRank over the import links, restarting at the anchors, relative to
    #: the best non-anchor candidate's (0: no link)
    ppr: float


@dataclass(frozen=True, slots=True)
class TextMatch:
    """How much of the question a candidate's stored text covers (query-time, from the
    tree's term postings and symbol names)."""

    #: IDF-weighted share of the question's distinct terms in the file (primary files only)
    file_cover: float = 0.0
    #: the same over the question's most important terms (those sent to chunk BM25)
    terms_cover: float = 0.0
    #: the same over the file's best chunk (the important terms close together)
    chunk_cover: float = 0.0
    #: the identifiers the question names that the file defines as symbols, each counted
    #: 1 / the number of the tree's contents defining it
    defined: float = 0.0
    #: 1 / the fused rank of the file's test counterpart (or, for a test, of the file it
    #: tests: the same stem without ``test``); 0 without one
    pair_rr: float = 0.0


_TEST_AFFIX = re.compile(r"^(?:tests?_)|(?:_tests?|_spec|tests?|spec)$")


def counterpart_stem(path: str) -> str:
    """A file's stem without its test affixes, lowercased (``test_foo.py``, ``foo_test.go``,
    ``FooTest.java``, ``foo.spec.ts`` and ``foo.py`` all give ``foo``)."""
    stem = path.rpartition("/")[2].partition(".")[0].lower()
    return _TEST_AFFIX.sub("", stem) or stem


@dataclass(frozen=True, slots=True)
class Candidate:
    """What the fused ranking knows of one candidate file."""

    path: str
    fused: float  # the fused score
    fused_rank: int  # 1-based
    test: bool
    non_code: bool
    vendored: bool
    #: the file's token count over the mean of the tree's primary files (0: not primary)
    length: float = 0.0


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def query_words(query: str) -> frozenset[str]:
    """The question's identifier-shaped words, lowercased (a file's stem or directory named
    as a word)."""
    return frozenset(w.lower() for w in _WORD.findall(query))


def _dir(path: str) -> str:
    return path.rpartition("/")[0]


def candidate_features(
    candidates: Sequence[Candidate],
    ranks: Mapping[str, Mapping[str, int]],
    scores: Mapping[str, Mapping[str, float]],
    mention_kinds: Mapping[str, Mapping[str, int]],
    mention_evidence: Mapping[str, float],
    *,
    rrf_k: float,
    words: frozenset[str],
    graph: Mapping[str, GraphScore] | None = None,
    text: Mapping[str, TextMatch] | None = None,
) -> npt.NDArray[np.float64]:
    """One row of :data:`FEATURES` per candidate (``ranks``/``scores``: signal -> path ->
    rank/score; ``mention_kinds``: path -> kind -> count; ``mention_evidence``: path -> summed
    evidence weight; ``words``: the question's words, lowercased, see :func:`query_words`;
    ``graph``: path -> the candidate's place in the import graph around the question)."""
    x = np.zeros((len(candidates), len(FEATURES)), dtype=np.float64)
    if not candidates:
        return x
    best = {s: max(scores[s].values(), default=0.0) for s in RANKED_SIGNALS if s in scores}
    vec_rows = _vector_columns(
        candidates, ranks.get("vectors", {}), scores.get("vectors", {}), rrf_k
    )
    top_fused = max(c.fused for c in candidates) or 1.0
    top_dir = _dir(candidates[0].path)
    mention_dirs = {_dir(p) for p in mention_evidence}
    for i, c in enumerate(candidates):
        row: list[float] = []
        for s in RANKED_SIGNALS:
            r = ranks.get(s, {}).get(c.path)
            sc = scores.get(s, {}).get(c.path, 0.0)
            top = best.get(s, 0.0)
            if r is None:
                row += [0.0, 0.0, 0.0]
            else:
                row += [1.0 / r, 1.0 / (rrf_k + r), sc / top if top > 0 else 0.0]
        kinds = mention_kinds.get(c.path, {})
        row.append(math.log1p(mention_evidence.get(c.path, 0.0)))
        row += [math.log1p(kinds.get(k, 0)) for k in MENTION_KINDS]
        row += [c.fused / top_fused, 1.0 / c.fused_rank, 1.0 / math.log2(1 + c.fused_rank)]
        aux = any(seg.lower() in AUX_DIRS for seg in c.path.split("/")[:-1])
        row += [float(c.test), float(c.non_code), float(c.vendored), float(aux)]
        row += [float(c.length > 0), math.log1p(c.length)]
        d = _dir(c.path)
        row += [
            float(i > 0 and d == top_dir),
            float(c.path not in mention_evidence and d in mention_dirs),
        ]
        name = c.path.rpartition("/")[2]
        stem = name.partition(".")[0].lower()
        parent = d.rpartition("/")[2].lower()
        row += [float(stem in words), float(bool(parent) and parent in words)]
        signal_ranks = [r for s in AGREEING_SIGNALS if (r := ranks.get(s, {}).get(c.path))]
        row += [
            float(sum(r <= 3 for r in signal_ranks)),
            float(sum(r <= 10 for r in signal_ranks)),
            1.0 / min(signal_ranks) if signal_ranks else 0.0,
            math.log(max(c.fused / top_fused, 1e-9)),
        ]
        g = graph.get(c.path) if graph is not None else None
        row += [math.log1p(g.links), g.ppr] if g is not None else [0.0, 0.0]
        t = text.get(c.path) if text is not None else None
        t = t if t is not None else TextMatch()
        row += [t.file_cover, t.terms_cover, t.chunk_cover, math.log1p(t.defined), t.pair_rr]
        row += vec_rows[i]
        x[i] = row
    return x


def _vector_columns(
    candidates: Sequence[Candidate],
    ranks: Mapping[str, int],
    scores: Mapping[str, float],
    rrf_k: float,
) -> list[list[float]]:
    """Per candidate the :data:`VECTOR_FEATURES` (all 0 for a file the vector signal did not
    rank: it ranks the tree's nearest files only, and nothing in lexical mode; all 0 for every
    file when it ranked fewer than :data:`VECTOR_GAP_RANK` files)."""
    if len(scores) < VECTOR_GAP_RANK:
        return [[0.0] * len(VECTOR_FEATURES) for _ in candidates]
    ordered = sorted(scores.values(), reverse=True)
    best = ordered[0]
    floor = ordered[VECTOR_GAP_RANK - 1]
    spread = best - floor
    out: list[list[float]] = []
    for c in candidates:
        r = ranks.get(c.path)
        if r is None:
            out.append([0.0] * len(VECTOR_FEATURES))
            continue
        cos = scores[c.path]
        gap = max(0.0, (cos - floor) / spread) if spread > 0 else 1.0
        out.append([1.0 / r, 1.0 / (rrf_k + r), cos / best if best > 0 else 0.0, gap])
    return out


__all__: Sequence[str] = (
    "FEATURES",
    "MENTION_KINDS",
    "RANKED_SIGNALS",
    "TEXT_FEATURES",
    "VECTOR_FEATURES",
    "VECTOR_GAP_RANK",
    "Candidate",
    "GraphScore",
    "LinearModel",
    "TextMatch",
    "candidate_features",
    "counterpart_stem",
    "feature_names",
    "query_words",
)
