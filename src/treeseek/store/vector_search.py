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
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from _typeshed import SupportsRichComparison

#: what vectors are keyed by (a :class:`~treeseek.store.code_base.VectorKey`): ordered, so
#: ties break the same way on every store
K = TypeVar("K", bound="SupportsRichComparison")


def exact_nearest(
    vectors: Mapping[K, npt.NDArray[np.float32]], query: npt.NDArray[np.float32], k: int
) -> list[tuple[K, float]]:
    """The ``k`` keys of ``vectors`` most similar to ``query`` by cosine similarity,
    highest first (ties by key), each with its similarity."""
    q = np.asarray(query, dtype=np.float64)
    q_norm = float(np.sqrt((q * q).sum()))
    if k <= 0 or q_norm == 0.0 or not vectors:
        return []
    keys = sorted(vectors)
    mat = np.stack([np.asarray(vectors[key], dtype=np.float64) for key in keys])
    # row by row (a reduction along each row, not a BLAS product): a vector's score does not
    # depend on which other vectors are scored with it
    norms = np.sqrt((mat * mat).sum(axis=1))
    keep = norms > 0.0
    sims = (mat * (q / q_norm)).sum(axis=1) / np.where(keep, norms, 1.0)
    scored = [(key, float(s)) for key, s, ok in zip(keys, sims.tolist(), keep, strict=True) if ok]
    scored.sort(key=lambda ks: (-ks[1], ks[0]))
    return scored[:k]
