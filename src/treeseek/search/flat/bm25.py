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

import threading
from collections.abc import Mapping
from typing import Literal, NamedTuple

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


class _Inverted(NamedTuple):
    """The postings grouped by term (see :meth:`BM25Postings.invert`)."""

    terms: npt.NDArray[np.uint32]  # distinct term ids, ascending
    offsets: npt.NDArray[np.int64]  # each term's first posting (and the end)
    df: npt.NDArray[np.int64]  # each term's document frequency
    docs: npt.NDArray[np.int32]  # each posting's document (term order, then document order)
    tf_factor: npt.NDArray[np.float64]  # each posting's term-frequency factor
    idf: npt.NDArray[np.float64]  # each term's IDF


class _Forward(NamedTuple):
    """The postings as given, in document order: what a scan reads before inverting."""

    term_ids: npt.NDArray[np.uint32]
    counts: npt.NDArray[np.integer]
    starts: npt.NDArray[np.int64]  # each document's first posting
    max_id: int  # the largest term id (-1: no postings)


class _Gathered(NamedTuple):
    """The postings of some query terms, grouped by term in the query's order (only the
    terms some document has): what scoring reads, from either layout."""

    found: npt.NDArray[np.intp]  # positions in the query of the terms some document has
    idf: npt.NDArray[np.float64]  # their IDF
    counts: npt.NDArray[np.int64]  # their number of postings (document frequency)
    docs: npt.NDArray[np.int32]  # the postings' documents: term by term, in document order
    tf_factor: npt.NDArray[np.float64]  # the postings' term-frequency factors


class BM25Postings:
    """BM25 (``k1``, ``b``) over documents given as parallel arrays.

    Document ``i`` has ``lengths[i]`` tokens and ``sizes[i]`` distinct terms, whose ids and
    counts are the next ``sizes[i]`` entries of ``term_ids`` / ``counts``. The per-posting
    term-frequency factor ``tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))`` multiplies each
    term's weight.

    Two layouts, one answer. Inverted (the postings sorted by term, factors computed once):
    a read costs the postings of its terms. Building it sorts every posting, seconds on a
    large tree (19 million postings: ~2 s), so the first :data:`SCANS` reads of an index
    scan the postings as given instead (~0.1 s there: one table lookup per posting), and the
    next read inverts (:meth:`invert`; a server's warm-up inverts at once). A scan computes
    the same values with the same operations in the same order, so every result is the same
    to the bit in both layouts.
    """

    #: reads that scan the postings before one inverts them: a command-line query (one
    #: process, one question) reads an index once or twice and never pays the sort
    SCANS = 2

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
        self._idf_kind: Idf = idf
        self._k1 = k1
        per_doc = np.asarray(sizes, np.int64)
        ids = np.asarray(term_ids, dtype=np.uint32)
        starts = np.zeros(self.size, dtype=np.int64)
        if self.size > 1:
            np.cumsum(per_doc[:-1], out=starts[1:])
        self._per_doc = per_doc
        self._forward: _Forward | None = _Forward(
            ids, counts, starts, int(ids.max()) if len(ids) else -1
        )
        total = float(self.lengths.sum())
        self.avgdl = total / self.size if self.size and total > 0 else 1.0
        self._norm: npt.NDArray[np.float64] = k1 * (1.0 - b + b * self.lengths / self.avgdl)
        self._postings = len(ids)
        self._inverted: _Inverted | None = None
        self._scans = 0
        self._lock = threading.Lock()

    # -- the inverted layout ----------------------------------------------------------------
    def invert(self) -> None:
        """Group the postings by term (once; later reads cost their terms' postings)."""
        if self._inverted is not None:
            return
        with self._lock:
            forward = self._forward
            if self._inverted is not None or forward is None:
                return
            k1 = self._k1
            per_doc = self._per_doc
            doc_of = np.repeat(np.arange(self.size, dtype=np.int32), per_doc)
            order, sorted_ids = group_by_id(forward.term_ids)
            starts = np.flatnonzero(np.diff(sorted_ids)) + 1
            if len(sorted_ids):
                starts = np.concatenate(([0], starts))
            offsets = np.append(starts, len(sorted_ids)).astype(np.int64)
            df = np.diff(offsets)
            # computed in document order (sequential reads), then put in term order with one
            # gather: the same operations on the same values as in term order
            tf = np.asarray(forward.counts, dtype=np.float64)
            by_doc = tf * (k1 + 1.0) / (tf + np.repeat(self._norm, per_doc))
            self._inverted = _Inverted(
                sorted_ids[starts], offsets, df, doc_of[order], by_doc[order], self._idf_of(df)
            )
            self._forward = None  # the inverted arrays hold everything a read needs

    @property
    def inverted(self) -> bool:
        """Whether the postings are grouped by term yet (see the class doc)."""
        return self._inverted is not None

    def _layout(self) -> _Inverted:
        self.invert()
        assert self._inverted is not None
        return self._inverted

    @property
    def terms(self) -> npt.NDArray[np.uint32]:
        """The distinct term ids, ascending (inverts the postings)."""
        return self._layout().terms

    @property
    def offsets(self) -> npt.NDArray[np.int64]:
        """Each term's first posting, and the end (inverts the postings)."""
        return self._layout().offsets

    @property
    def df(self) -> npt.NDArray[np.int64]:
        """Each term's document frequency (inverts the postings)."""
        return self._layout().df

    @property
    def docs(self) -> npt.NDArray[np.int32]:
        """Each posting's document, in term order (inverts the postings)."""
        return self._layout().docs

    @property
    def tf_factor(self) -> npt.NDArray[np.float64]:
        """Each posting's term-frequency factor, in term order (inverts the postings)."""
        return self._layout().tf_factor

    @property
    def idf(self) -> npt.NDArray[np.float64]:
        """Each term's IDF (inverts the postings)."""
        return self._layout().idf

    def _idf_of(self, df: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """The IDF of terms with these document frequencies (elementwise: a term's IDF is
        the same computed alone or with every other term)."""
        ratio = (self.size - df + 0.5) / (df + 0.5)
        if self._idf_kind == "fts5":
            raw = np.log(ratio)
            return np.where(raw > 0.0, raw, FTS5_MIN_IDF)
        return np.log(1.0 + ratio)

    # -- reads ---------------------------------------------------------------------------------
    def _scan(self) -> _Forward | None:
        """The forward postings when this read should scan them (None: read inverted)."""
        forward = self._forward
        if forward is None or self._inverted is not None:
            return None
        if self._scans >= self.SCANS:
            self.invert()
            return None
        self._scans += 1
        return forward

    @staticmethod
    def _lookup(
        forward: _Forward, term_ids: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int32], npt.NDArray[np.int64]]:
        """One pass over the postings for ``term_ids``: the postings of those terms (in
        document order), each one's term (the position in ``term_ids`` of its first
        occurrence), and each position's document frequency."""
        n = len(term_ids)
        known = (term_ids >= 0) & (term_ids <= forward.max_id)
        size = max(forward.max_id + 1, 0)
        first = np.full(size, -1, dtype=np.int32)
        wanted = np.zeros(size, dtype=np.bool_)
        where = np.flatnonzero(known)
        distinct, at = np.unique(term_ids[where], return_index=True)
        first[distinct] = where[at].astype(np.int32)  # a repeated id: its first position
        wanted[distinct] = True
        # the pass over every posting gathers a byte each (a quarter of an int32 gather)
        postings = np.flatnonzero(wanted[forward.term_ids])
        terms = first[forward.term_ids[postings]]
        df = np.zeros(n, dtype=np.int64)
        if len(where):
            per_first = np.bincount(terms, minlength=n).astype(np.int64)
            df[where] = per_first[first[term_ids[where]]]
        return postings, terms, df

    def _gather(self, term_ids: npt.NDArray[np.int64]) -> _Gathered:
        """The postings of ``term_ids`` (distinct), grouped by term in their order."""
        forward = self._scan()
        if forward is None:
            inv = self._layout()
            pos = np.minimum(np.searchsorted(inv.terms, term_ids), len(inv.terms) - 1)
            ok = inv.terms[pos] == term_ids
            found = np.flatnonzero(ok)
            pos = pos[ok]
            starts = inv.offsets[pos]
            counts = inv.offsets[pos + 1] - starts
            # posting indices of the terms: for term j, starts[j] .. starts[j] + counts[j]
            total = int(counts.sum())
            first = np.repeat(starts - np.cumsum(counts) + counts, counts)
            postings = first + np.arange(total, dtype=np.int64)
            return _Gathered(
                found, inv.idf[pos], counts, inv.docs[postings], inv.tf_factor[postings]
            )
        postings, terms, df = self._lookup(forward, term_ids)
        found = np.flatnonzero(df > 0)
        # term by term (each term's postings stay in document order), as inverted
        postings = postings[np.argsort(terms, kind="stable")]
        docs = (np.searchsorted(forward.starts, postings, side="right") - 1).astype(np.int32)
        tf = np.asarray(forward.counts[postings], dtype=np.float64)
        k1 = self._k1
        tf_factor = tf * (k1 + 1.0) / (tf + self._norm[docs])
        counts = df[found]
        return _Gathered(found, self._idf_of(counts), counts, docs, tf_factor)

    def doc_freqs(self, term_ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """How many documents contain each term (0 for a term none has; ids < 0 included)."""
        out = np.zeros(len(term_ids), dtype=np.int64)
        if self._postings == 0 or len(term_ids) == 0:
            return out
        forward = self._scan()
        if forward is not None:
            return self._lookup(forward, np.asarray(term_ids, dtype=np.int64))[2]
        inv = self._layout()
        pos = np.minimum(np.searchsorted(inv.terms, term_ids), len(inv.terms) - 1)
        found = inv.terms[pos] == term_ids
        out[found] = inv.df[pos[found]]
        return out

    def score(self, query_term_counts: Mapping[int, int]) -> npt.NDArray[np.float64]:
        """BM25 of every document for a query given as term id -> occurrences in the query
        (each occurrence weighs the term once more). Terms no document has add nothing."""
        return self.score_weights({t: float(n) for t, n in query_term_counts.items()})

    def coverage(self, term_ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """Per document, the IDF-weighted share of the distinct ``term_ids`` the corpus has
        that the document contains (1: all of them; 0 when the corpus has none)."""
        out = np.zeros(self.size, dtype=np.float64)
        if self._postings == 0 or len(term_ids) == 0:
            return out
        got = self._gather(np.unique(term_ids))
        total = float(got.idf.sum())
        if len(got.found) == 0 or total <= 0.0:
            return out
        weights = np.repeat(got.idf, got.counts)
        summed = np.bincount(got.docs, weights=weights, minlength=self.size)
        return np.asarray(np.minimum(summed / total, 1.0), dtype=np.float64)

    def score_weights(self, query_weights: Mapping[int, float]) -> npt.NDArray[np.float64]:
        """BM25 of every document for a query given as term id -> the weight of the term's
        IDF-weighted match (:meth:`score` uses its occurrences in the query)."""
        out = np.zeros(self.size, dtype=np.float64)
        if not query_weights or self._postings == 0:
            return out
        q_ids = np.fromiter(query_weights.keys(), dtype=np.int64, count=len(query_weights))
        q_tf = np.fromiter(query_weights.values(), dtype=np.float64, count=len(query_weights))
        got = self._gather(q_ids)
        if len(got.found) == 0:
            return out
        weights = np.repeat(got.idf * q_tf[got.found], got.counts) * got.tf_factor
        return np.bincount(got.docs, weights=weights, minlength=self.size).astype(
            np.float64, copy=False
        )


__all__ = ("K1", "B", "BM25Postings", "Idf")
