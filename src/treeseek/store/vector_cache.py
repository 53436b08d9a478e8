"""A bounded, process-level cache of the vector matrices PostgreSQL's ``nearest`` scores.

A matrix (:class:`~treeseek.store.vector_search.VectorMatrix`) holds the vectors of one set
of keys (one tree's files) of one model, kind and dimension. It is stored with a *stamp*: what
the database's vectors looked like when it was read (PostgreSQL: the number of
vector-changing transactions its snapshot saw, see
:meth:`treeseek.store.code_postgres.PostgresCodeStore.nearest`). A lookup names the stamp its
own snapshot sees; an entry of another stamp is stale, dropped and never returned.

Bounded by bytes (rows, norms and an estimate of the keys), least recently used first out;
a matrix larger than the whole bound is not kept. Thread-safe.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from treeseek.store.code_base import VectorKey
from treeseek.store.vector_search import VectorMatrix

#: the default bound of one store's cache: about two 50,000-file trees of 384 dimensions
VECTOR_CACHE_BYTES = 256 * 1024 * 1024
#: the memory of one cached key, estimated: the key (two strings, a 64-character hash and a
#: path), its slot in the key set and in the sorted key list
KEY_BYTES = 320


@dataclass(frozen=True)
class MatrixKey:
    """What a cached matrix holds: ``model``/``kind`` vectors of ``dim`` dimensions of
    ``keys`` (``None``: every stored vector)."""

    model: str
    kind: str
    dim: int
    keys: frozenset[VectorKey] | None


@dataclass(frozen=True)
class _Entry:
    stamp: int
    matrix: VectorMatrix[VectorKey]
    nbytes: int


class VectorCache:
    """Matrices by :class:`MatrixKey`, each valid for one stamp, within ``max_bytes``."""

    def __init__(self, max_bytes: int = VECTOR_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[MatrixKey, _Entry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        """The estimated memory of the cached matrices."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: MatrixKey, stamp: int) -> VectorMatrix[VectorKey] | None:
        """The matrix of ``key`` if it was read at ``stamp``; a stale one is dropped."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry.stamp != stamp:
                self._drop(key)
                return None
            self._entries.move_to_end(key)
            return entry.matrix

    def put(self, key: MatrixKey, stamp: int, matrix: VectorMatrix[VectorKey]) -> None:
        """Keep ``matrix`` (read at ``stamp``), evicting the least recently used ones to stay
        within the bound; one larger than the bound is not kept."""
        keys = len(matrix.keys) if key.keys is None else max(len(key.keys), len(matrix.keys))
        nbytes = matrix.nbytes + KEY_BYTES * keys
        with self._lock:
            if key in self._entries:
                self._drop(key)
            if nbytes > self.max_bytes:
                return
            while self._entries and self._bytes + nbytes > self.max_bytes:
                self._drop(next(iter(self._entries)))
            self._entries[key] = _Entry(stamp, matrix, nbytes)
            self._bytes += nbytes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def _drop(self, key: MatrixKey) -> None:
        self._bytes -= self._entries.pop(key).nbytes
