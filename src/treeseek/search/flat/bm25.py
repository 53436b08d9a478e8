"""BM25 over stored term counts, in numpy (the bm25s layout), with one corpus's statistics.

A :class:`BM25Postings` is built from the bags of words of a set of documents (a tree's files,
chunks or symbol documents): the postings of all documents sorted by term id, with each term's
offset into them, so a query gathers its terms' postings with a few array operations and sums
them per document with ``np.bincount``. Its cost grows with the postings of the query's terms,
not with the number of terms or with anything outside the corpus.

Document count, document frequencies and the average length are those of the documents given,
and nothing else: built over one tree's documents, a tree's scores never depend on the other
trees of its database.

Two IDF variants:

- ``"bm25"`` (Lucene's, always positive): ``log(1 + (N - df + .5) / (df + .5))``;
- ``"fts5"`` (SQLite FTS5's ``bm25()``): ``log((N - df + .5) / (df + .5))``, and ``1e-6``
  where that is not positive, so a chunk index scores exactly as FTS5's ``bm25()`` did over
  the same documents (it sums over the phrases of an OR-query, so a repeated query term
  counts again: query term counts are weights here too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import numpy as np
import numpy.typing as npt

#: the usual BM25 constants (term-frequency saturation, length normalization), also FTS5's
K1 = 1.2
B = 0.75
#: FTS5's floor for a term in more than half of the documents
FTS5_MIN_IDF = 1e-6

Idf = Literal["bm25", "fts5"]


def group_by_id(
    ids: npt.NDArray[np.uint32],
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.uint32]]:
    """The stable order of ``ids`` (``np.argsort(ids, kind="stable")``) and the ids in it.

    One sort of 64-bit keys ``id << 32 | position``: the keys are unique, so any sort gives
    the stable order, and the sorted ids come out of the keys without a gather. numpy sorts
    32-bit keys stably by timsort; this is as fast on the 1.5 million postings of a django
    tree's chunks and about twice as fast on the 19 million of a 50,000-file tree's (1.1
    against 2.1 s), where two 16-bit radix passes were no faster than timsort.
    """
    n = len(ids)
    if n >= 1 << 32:  # positions no longer fit beside the id
        order = np.argsort(ids, kind="stable")
        return order, ids[order]
    keys = (ids.astype(np.uint64) << np.uint64(32)) | np.arange(n, dtype=np.uint64)
    keys.sort()
    return (keys & np.uint64(0xFFFFFFFF)).astype(np.intp), (keys >> np.uint64(32)).astype(np.uint32)


class BM25Postings:
    """BM25 (``k1``, ``b``) over documents given as parallel arrays.

    Document ``i`` has ``lengths[i]`` tokens and ``sizes[i]`` distinct terms, whose ids and
    counts are the next ``sizes[i]`` entries of ``term_ids`` / ``counts``. The per-posting
    term-frequency factor ``tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))`` is computed once
    here, so a query only multiplies it by its terms' weights.
    """

    def __init__(
        self,
        lengths: npt.NDArray[np.integer] | npt.NDArray[np.floating],
        sizes: npt.NDArray[np.integer],
        term_ids: npt.NDArray[np.uint32],
        counts: npt.NDArray[np.integer],
        *,
        idf: Idf = "bm25",
        k1: float = K1,
        b: float = B,
    ) -> None:
        self.size = len(lengths)
        self.lengths: npt.NDArray[np.float64] = np.asarray(lengths, dtype=np.float64)
        per_doc = np.asarray(sizes, np.int64)
        doc_of = np.repeat(np.arange(self.size, dtype=np.int32), per_doc)
        order, sorted_ids = group_by_id(np.asarray(term_ids, dtype=np.uint32))
        starts = np.flatnonzero(np.diff(sorted_ids)) + 1
        if len(sorted_ids):
            starts = np.concatenate(([0], starts))
        #: distinct term ids (ascending), their first posting and their document frequency
        self.terms: npt.NDArray[np.uint32] = sorted_ids[starts]
        self.offsets: npt.NDArray[np.int64] = np.append(starts, len(sorted_ids)).astype(np.int64)
        self.df: npt.NDArray[np.int64] = np.diff(self.offsets)
        self.docs: npt.NDArray[np.int32] = doc_of[order]
        total = float(self.lengths.sum())
        self.avgdl = total / self.size if self.size and total > 0 else 1.0
        norm = k1 * (1.0 - b + b * self.lengths / self.avgdl)
        # computed in document order (sequential reads), then put in term order with one
        # gather: the same operations on the same values as in term order
        tf = np.asarray(counts, dtype=np.float64)
        by_doc = tf * (k1 + 1.0) / (tf + np.repeat(norm, per_doc))
        self.tf_factor: npt.NDArray[np.float64] = by_doc[order]
        ratio = (self.size - self.df + 0.5) / (self.df + 0.5)
        if idf == "fts5":
            raw = np.log(ratio)
            self.idf: npt.NDArray[np.float64] = np.where(raw > 0.0, raw, FTS5_MIN_IDF)
        else:
            self.idf = np.log(1.0 + ratio)

    def doc_freqs(self, term_ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """How many documents contain each term (0 for a term none has; ids < 0 included)."""
        out = np.zeros(len(term_ids), dtype=np.int64)
        if len(self.terms) == 0 or len(term_ids) == 0:
            return out
        pos = np.minimum(np.searchsorted(self.terms, term_ids), len(self.terms) - 1)
        found = self.terms[pos] == term_ids
        out[found] = self.df[pos[found]]
        return out

    def score(self, query_term_counts: Mapping[int, int]) -> npt.NDArray[np.float64]:
        """BM25 of every document for a query given as term id -> occurrences in the query
        (each occurrence weighs the term once more). Terms no document has add nothing."""
        return self.score_weights({t: float(n) for t, n in query_term_counts.items()})

    def coverage(self, term_ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """Per document, the IDF-weighted share of the distinct ``term_ids`` the corpus has
        that the document contains (1: all of them; 0 when the corpus has none)."""
        out = np.zeros(self.size, dtype=np.float64)
        if len(self.terms) == 0 or len(term_ids) == 0:
            return out
        q_ids = np.unique(term_ids)
        pos = np.minimum(np.searchsorted(self.terms, q_ids), len(self.terms) - 1)
        pos = pos[self.terms[pos] == q_ids]
        total = float(self.idf[pos].sum())
        if len(pos) == 0 or total <= 0.0:
            return out
        starts = self.offsets[pos]
        counts = self.offsets[pos + 1] - starts
        first = np.repeat(starts - np.cumsum(counts) + counts, counts)
        postings = first + np.arange(int(counts.sum()), dtype=np.int64)
        weights = np.repeat(self.idf[pos], counts)
        got = np.bincount(self.docs[postings], weights=weights, minlength=self.size)
        return np.asarray(np.minimum(got / total, 1.0), dtype=np.float64)

    def score_weights(self, query_weights: Mapping[int, float]) -> npt.NDArray[np.float64]:
        """BM25 of every document for a query given as term id -> the weight of the term's
        IDF-weighted match (:meth:`score` uses its occurrences in the query)."""
        out = np.zeros(self.size, dtype=np.float64)
        if not query_weights or len(self.terms) == 0:
            return out
        q_ids = np.fromiter(query_weights.keys(), dtype=np.int64, count=len(query_weights))
        q_tf = np.fromiter(query_weights.values(), dtype=np.float64, count=len(query_weights))
        pos = np.searchsorted(self.terms, q_ids)
        pos_ok = np.minimum(pos, len(self.terms) - 1)
        found = self.terms[pos_ok] == q_ids
        pos, q_tf = pos_ok[found], q_tf[found]
        if len(pos) == 0:
            return out
        starts = self.offsets[pos]
        counts = self.offsets[pos + 1] - starts
        # posting indices of all query terms: for term j, starts[j] .. starts[j] + counts[j]
        total = int(counts.sum())
        first = np.repeat(starts - np.cumsum(counts) + counts, counts)
        postings = first + np.arange(total, dtype=np.int64)
        weights = np.repeat(self.idf[pos] * q_tf, counts) * self.tf_factor[postings]
        return np.bincount(self.docs[postings], weights=weights, minlength=self.size).astype(
            np.float64, copy=False
        )


__all__ = ("K1", "B", "BM25Postings", "Idf")
