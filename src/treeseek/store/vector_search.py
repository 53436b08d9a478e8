"""Exact cosine nearest neighbours of a query among stored vectors: the one scoring of both
stores' ``nearest``.

SQLite reads a tree's vectors and scores them with :func:`exact_nearest`; PostgreSQL keeps a
tree's vectors as one :class:`VectorMatrix` (cached between queries, see
:mod:`treeseek.store.vector_cache`) and scores it with the same :meth:`VectorMatrix.nearest`,
so both stores return the same keys with bit-identical scores.

Vectors of norm 0 (the embedding of a text without tokens) have no direction: they are never
neighbours, and a query of norm 0 has none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from _typeshed import SupportsRichComparison

#: what vectors are keyed by (a :class:`~treeseek.store.code_base.VectorKey`): ordered, so
#: ties break the same way on every store
K = TypeVar("K", bound="SupportsRichComparison")

#: rows scored at once: a float64 block small enough to stay in the CPU's cache (512 x 384
#: dimensions is 1.5 MB; measured faster than 4,096 rows, with identical results)
SCORE_ROWS = 512


@dataclass(frozen=True)
class VectorMatrix(Generic[K]):
    """Vectors of one dimension, sorted by key, without those of norm 0: ``rows[i]`` is the
    vector of ``keys[i]`` (float32, as stored) and ``norms[i]`` its float64 norm."""

    keys: Sequence[K]
    rows: npt.NDArray[np.float32]
    norms: npt.NDArray[np.float64]

    @classmethod
    def of(cls, vectors: Mapping[K, npt.NDArray[np.float32]]) -> VectorMatrix[K]:
        """The matrix of ``vectors`` (all of one dimension)."""
        keys = sorted(vectors)
        if not keys:
            return cls([], np.zeros((0, 0), dtype=np.float32), np.zeros(0, dtype=np.float64))
        rows = np.stack([np.asarray(vectors[key], dtype=np.float32) for key in keys])
        return cls.from_rows(keys, rows)

    @classmethod
    def from_rows(cls, keys: Sequence[K], rows: npt.NDArray[np.float32]) -> VectorMatrix[K]:
        """The matrix of ``rows`` (one per key, ``keys`` sorted ascending)."""
        rows = np.ascontiguousarray(rows, dtype=np.float32)
        norms = np.empty(rows.shape[0], dtype=np.float64)
        for start in range(0, rows.shape[0], SCORE_ROWS):
            part = rows[start : start + SCORE_ROWS].astype(np.float64)
            norms[start : start + part.shape[0]] = np.sqrt((part * part).sum(axis=1))
        keep = norms > 0.0
        if bool(keep.all()):
            return cls(keys, rows, norms)
        kept = np.flatnonzero(keep)
        return cls([keys[i] for i in kept.tolist()], rows[kept], norms[kept])

    @property
    def nbytes(self) -> int:
        """The memory of the rows and norms (not of the keys)."""
        return int(self.rows.nbytes + self.norms.nbytes)

    def nearest(self, query: npt.NDArray[np.float32], k: int) -> list[tuple[K, float]]:
        """The ``k`` keys most similar to ``query`` by cosine similarity, highest first (ties
        by key), each with its similarity."""
        q = np.asarray(query, dtype=np.float64)
        q_norm = float(np.sqrt((q * q).sum()))
        n = len(self.keys)
        if k <= 0 or q_norm == 0.0 or n == 0 or self.rows.shape[1] != q.shape[0]:
            return []
        unit = q / q_norm
        sims = np.empty(n, dtype=np.float64)
        # row by row (a reduction along each row, not a BLAS product): a vector's score does
        # not depend on which other vectors are scored with it
        for start in range(0, n, SCORE_ROWS):
            # float32 rows times float64 unit: each row widened exactly, then multiplied
            part = self.rows[start : start + SCORE_ROWS] * unit
            sims[start : start + part.shape[0]] = part.sum(axis=1)
        sims /= self.norms
        # the top k: every score at least the k-th largest (ties included), then sorted by
        # score and by position (the keys are sorted: ties by position are ties by key)
        among = np.arange(n)
        if n > k:
            among = np.flatnonzero(sims >= np.partition(sims, n - k)[n - k])
        order = among[np.lexsort((among, -sims[among]))][:k]
        return [(self.keys[i], float(sims[i])) for i in order.tolist()]


def exact_nearest(
    vectors: Mapping[K, npt.NDArray[np.float32]], query: npt.NDArray[np.float32], k: int
) -> list[tuple[K, float]]:
    """The ``k`` keys of ``vectors`` most similar to ``query`` by cosine similarity,
    highest first (ties by key), each with its similarity."""
    if k <= 0 or not vectors:
        return []
    return VectorMatrix.of(vectors).nearest(query, k)
