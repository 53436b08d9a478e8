"""File-level BM25 over a set of file documents, in numpy (the bm25s layout).

Built from the stored term counts of each content (:class:`~treeseek.store.code_base.FileTerms`)
for one tree's files, on :class:`~treeseek.search.flat.bm25.BM25Postings`. Unlike an FTS5
OR-query, its cost grows with the postings of the query's terms, not with the number of terms,
so the whole query can be used (an issue has hundreds of terms, FTS5 could only take its top
few dozen).

Document frequencies and the average length come from the index's own documents: built over
a tree's primary source files, rare and common mean rare and common among those files, not
among the tests, docs and other trees of the database.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from treeseek.search.flat.bm25 import K1, B, BM25Postings
from treeseek.store.code_base import FileTerms


class FileBM25Index(BM25Postings):
    """BM25 (``k1``, ``b``; idf ``log(1 + (N - df + .5) / (df + .5))``) over ``docs``.

    Document ``i`` of :meth:`score`'s result is ``docs[i]`` (its content is ``hashes[i]``).
    """

    def __init__(self, docs: Sequence[FileTerms], *, k1: float = K1, b: float = B) -> None:
        self.hashes: tuple[str, ...] = tuple(d.content_hash for d in docs)
        n = len(docs)
        lengths = np.fromiter((d.length for d in docs), dtype=np.float64, count=n)
        sizes = np.fromiter((len(d.term_ids) for d in docs), dtype=np.int64, count=n)
        if sizes.sum() == 0:
            term_ids = np.zeros(0, dtype=np.uint32)
            counts = np.zeros(0, dtype=np.uint32)
        else:
            term_ids = np.concatenate([d.term_ids for d in docs])
            counts = np.concatenate([d.counts for d in docs])
        super().__init__(lengths, sizes, term_ids, counts, idf="bm25", k1=k1, b=b)


__all__ = ("K1", "B", "FileBM25Index")
