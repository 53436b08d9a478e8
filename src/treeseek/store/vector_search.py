"""Exact cosine nearest neighbours of a query among stored vectors: the one scoring of both
stores' ``nearest``.

SQLite scores every vector of a tree with it; PostgreSQL asks its HNSW index for the
candidates and scores them with it too, so when the index finds the same contents (it is
approximate) both stores return the same contents with bit-identical scores.

Vectors of norm 0 (the embedding of a text without tokens) have no direction: they are never
neighbours (pgvector's cosine HNSW index does not hold them either), and a query of norm 0
has none.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt


def exact_nearest(
    vectors: Mapping[str, npt.NDArray[np.float32]], query: npt.NDArray[np.float32], k: int
) -> list[tuple[str, float]]:
    """The ``k`` contents of ``vectors`` most similar to ``query`` by cosine similarity,
    highest first (ties by content hash), each with its similarity."""
    q = np.asarray(query, dtype=np.float64)
    q_norm = float(np.sqrt((q * q).sum()))
    if k <= 0 or q_norm == 0.0 or not vectors:
        return []
    hashes = sorted(vectors)
    mat = np.stack([np.asarray(vectors[h], dtype=np.float64) for h in hashes])
    # row by row (a reduction along each row, not a BLAS product): a vector's score does not
    # depend on which other vectors are scored with it
    norms = np.sqrt((mat * mat).sum(axis=1))
    keep = norms > 0.0
    sims = (mat * (q / q_norm)).sum(axis=1) / np.where(keep, norms, 1.0)
    scored = [(h, float(s)) for h, s, ok in zip(hashes, sims.tolist(), keep, strict=True) if ok]
    scored.sort(key=lambda hs: (-hs[1], hs[0]))
    return scored[:k]
