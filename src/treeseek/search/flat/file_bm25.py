"""File-level BM25 over a set of file documents, in numpy (the bm25s layout).

Built from the stored term counts of each content (:class:`~treeseek.store.code_base.FileTerms`)
for one tree's files: the postings of all documents sorted by term id, with each term's offset
into them, so a query gathers its terms' postings with a few array operations and sums them
per document with ``np.bincount``. Unlike an FTS5 OR-query, its cost grows with the postings
of the query's terms, not with the number of terms, so the whole query can be used (an issue
has hundreds of terms, FTS5 could only take its top few dozen).

Document frequencies and the average length come from the index's own documents: built over
a tree's primary source files, rare and common mean rare and common among those files, not
among the tests, docs and other trees of the database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from treeseek.store.code_base import FileTerms

#: the usual BM25 constants (term-frequency saturation, length normalization)
K1 = 1.2
B = 0.75


class FileBM25Index:
    """BM25 (``k1``, ``b``; idf ``log(1 + (N - df + .5) / (df + .5))``) over ``docs``.

    Document ``i`` of :meth:`score`'s result is ``docs[i]``. The per-posting term-frequency
    factor ``tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))`` is computed once here, so a
    query only multiplies it by its terms' weights.
    """

    def __init__(self, docs: Sequence[FileTerms], *, k1: float = K1, b: float = B) -> None:
        self.hashes: tuple[str, ...] = tuple(d.content_hash for d in docs)
        self.size = len(docs)
        lengths = np.fromiter((d.length for d in docs), dtype=np.float64, count=self.size)
        self.lengths: npt.NDArray[np.float64] = lengths
        sizes = np.fromiter((len(d.term_ids) for d in docs), dtype=np.int64, count=self.size)
        if sizes.sum() == 0:
            term_ids = np.zeros(0, dtype=np.uint32)
            tfs = np.zeros(0, dtype=np.float64)
        else:
            term_ids = np.concatenate([d.term_ids for d in docs])
            tfs = np.concatenate([d.counts for d in docs]).astype(np.float64)
        doc_of = np.repeat(np.arange(self.size, dtype=np.int32), sizes)
        order = np.argsort(term_ids, kind="stable")
        sorted_ids = term_ids[order]
        #: distinct term ids (ascending), their first posting and their document frequency
        self.terms: npt.NDArray[np.uint32]
        self.terms, starts, df = np.unique(sorted_ids, return_index=True, return_counts=True)
        self.offsets: npt.NDArray[np.int64] = np.append(starts, len(sorted_ids)).astype(np.int64)
        self.df: npt.NDArray[np.int64] = df.astype(np.int64)
        self.docs: npt.NDArray[np.int32] = doc_of[order]
        avgdl = float(lengths.mean()) if self.size and lengths.mean() > 0 else 1.0
        norm = k1 * (1.0 - b + b * lengths / avgdl)
        tf = tfs[order]
        self.tf_factor: npt.NDArray[np.float64] = tf * (k1 + 1.0) / (tf + norm[self.docs])
        self.idf: npt.NDArray[np.float64] = np.log(
            1.0 + (self.size - self.df + 0.5) / (self.df + 0.5)
        )

    def score(self, query_term_counts: Mapping[int, int]) -> npt.NDArray[np.float64]:
        """BM25 of every document for a query given as term id -> occurrences in the query
        (each occurrence weighs the term once more). Terms no document has add nothing."""
        out = np.zeros(self.size, dtype=np.float64)
        if not query_term_counts or len(self.terms) == 0:
            return out
        q_ids = np.fromiter(query_term_counts.keys(), dtype=np.int64, count=len(query_term_counts))
        q_tf = np.fromiter(
            query_term_counts.values(), dtype=np.float64, count=len(query_term_counts)
        )
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


__all__ = ("K1", "B", "FileBM25Index")
