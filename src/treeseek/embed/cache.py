"""An embedding cache shared by many databases: a text's vector is embedded once.

A vector is a pure function of (model, kind, embedded text): the kind names the text's
version (e.g. the code index's ``outline-v2``), the text is everything the model reads. So a
file of vectors keyed by (model, kind, sha256 of the text) lets many databases (an evaluation's
one database per commit) share one embedding of each text: a commit embeds only the texts no
earlier commit embedded. The cache never changes a vector: it stores the model's float32 output
as raw little-endian bytes (no pickle) and hands back exactly those bytes. A text embedded in
another batch is not re-embedded, so with a model whose output moves slightly with its batch
(MiniLM: about 1e-7) a cached vector is the one of the batch that first embedded it.

:class:`CachedEmbedder` puts the cache in front of any :class:`~treeseek.embed.base.Embedder`
under one kind; callers see the inner embedder's name and dimension.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from treeseek.embed.base import Embedder

#: digests looked up per SQL statement (below SQLite's bound-parameter limit)
LOOKUP_BATCH = 500
#: how long a writer waits for another process holding the cache file (seconds)
BUSY_TIMEOUT_S = 120.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    kind TEXT NOT NULL,
    text_sha256 BLOB NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, kind, text_sha256)
) WITHOUT ROWID
"""

_VECTOR_DTYPE = np.dtype("<f4")


def text_digest(text: str) -> bytes:
    """The cache key of an embedded text: sha256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class EmbeddingCache:
    """Vectors by (model, kind, text digest) in one SQLite file (opened on first use, so an
    instance can be handed to another process before it is used)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = state["path"]
        self._conn = None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SCHEMA)
            conn.commit()
            self._conn = conn
        return self._conn

    def get(
        self, model: str, kind: str, digests: Iterable[bytes]
    ) -> dict[bytes, npt.NDArray[np.float32]]:
        """The stored vectors of those ``digests`` that have one of (``model``, ``kind``)."""
        wanted = list(dict.fromkeys(digests))
        conn = self._connection()
        found: dict[bytes, npt.NDArray[np.float32]] = {}
        for start in range(0, len(wanted), LOOKUP_BATCH):
            batch = wanted[start : start + LOOKUP_BATCH]
            marks = ",".join("?" * len(batch))
            rows = conn.execute(
                "SELECT text_sha256, dim, vector FROM embeddings"
                f" WHERE model = ? AND kind = ? AND text_sha256 IN ({marks})",
                (model, kind, *batch),
            )
            for digest, dim, blob in rows:
                vec = np.frombuffer(blob, dtype=_VECTOR_DTYPE).astype(np.float32)
                if vec.shape != (dim,):
                    raise ValueError(f"corrupt vector in {self.path}: {len(blob)} bytes, dim {dim}")
                found[bytes(digest)] = vec
        return found

    def put(
        self, model: str, kind: str, items: Iterable[tuple[bytes, npt.NDArray[np.float32]]]
    ) -> None:
        """Store vectors (a digest already stored keeps its first vector)."""
        rows = [
            (model, kind, digest, int(vec.shape[0]), vec.astype(_VECTOR_DTYPE).tobytes())
            for digest, vec in items
        ]
        conn = self._connection()
        with conn:
            conn.executemany("INSERT OR IGNORE INTO embeddings VALUES (?, ?, ?, ?, ?)", rows)

    def count(self) -> int:
        """Vectors stored (all models and kinds)."""
        row = self._connection().execute("SELECT count(*) FROM embeddings").fetchone()
        return int(row[0])

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


@dataclass(frozen=True, slots=True)
class EmbedCacheStats:
    """What a :class:`CachedEmbedder` did: texts asked for, embedded by the model, found in the
    cache, and the seconds spent in the model (a value: the embedder replaces its own, so a
    snapshot taken before some work, subtracted from one after, is that work's share)."""

    texts: int = 0
    embedded: int = 0
    reused: int = 0
    embed_seconds: float = 0.0

    def __add__(self, other: EmbedCacheStats) -> EmbedCacheStats:
        return EmbedCacheStats(
            self.texts + other.texts,
            self.embedded + other.embedded,
            self.reused + other.reused,
            self.embed_seconds + other.embed_seconds,
        )

    def minus(self, other: EmbedCacheStats) -> EmbedCacheStats:
        return EmbedCacheStats(
            self.texts - other.texts,
            self.embedded - other.embedded,
            self.reused - other.reused,
            self.embed_seconds - other.embed_seconds,
        )


class CachedEmbedder(Embedder):
    """``inner`` with ``cache`` in front of it, for texts of one ``kind``."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache, kind: str) -> None:
        self.inner = inner
        self.cache = cache
        self.kind = kind
        self.name = inner.name
        self.dim = inner.dim
        self.stats = EmbedCacheStats()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        digests = [text_digest(t) for t in texts]
        found = self.cache.get(self.name, self.kind, digests)
        missing: dict[bytes, str] = {}
        for digest, text in zip(digests, texts, strict=True):
            if digest not in found:
                missing.setdefault(digest, text)
        seconds = 0.0
        if missing:
            started = time.perf_counter()
            fresh = self.inner.embed(list(missing.values()))
            seconds = time.perf_counter() - started
            new = dict(zip(missing, fresh, strict=True))
            self.cache.put(self.name, self.kind, new.items())
            found.update(new)
        self.stats += EmbedCacheStats(len(texts), len(missing), len(texts) - len(missing), seconds)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, digest in enumerate(digests):
            out[row] = found[digest]
        return out
