"""Term counts in SQLite: the database-wide vocabulary and the blob layout of bags of words.

A bag of words is stored as two little-endian ``uint32`` blobs, the document's distinct term
ids in ascending order and their counts (``np.frombuffer``-loadable). A content's *parts*
(its chunks, or its symbols' documents) are stored together in one row: per part its length
(tokens) and its number of distinct terms, then the parts' term ids and counts one after the
other (see :class:`treeseek.store.code_base.PartTerms`).

Used by the code store's writes and by the migration that backfills part terms, so it imports
nothing else of this package but the SQL helpers.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from treeseek.store._sql import batched, qmarks

#: terms whose ids are looked up one batch at a time before the whole vocabulary is read
_VOCABULARY_LOOKUPS = 64

Connect = Callable[[], sqlite3.Connection]


class TermIds(Protocol):
    """A write's vocabulary (this module's :class:`Vocabulary`, or another backend's)."""

    def ids(self, terms: Iterable[str]) -> Mapping[str, int]:
        """The ids known so far, after adding ``terms`` to the vocabulary."""
        ...


def term_ids(conn: sqlite3.Connection, terms: Collection[str]) -> dict[str, int]:
    """Vocabulary ids of ``terms`` (terms never stored are absent)."""
    out: dict[str, int] = {}
    for batch in batched(list(dict.fromkeys(terms))):
        for term, value in conn.execute(
            f"SELECT term, id FROM code_terms WHERE term IN ({qmarks(len(batch))})", batch
        ):
            out[term] = int(value)
    return out


class Vocabulary:
    """Term ids of one write, adding new terms to ``code_terms``.

    Ids are remembered for this object's lifetime (one write transaction): most of a file's
    terms are terms an earlier file already had. The first :data:`_VOCABULARY_LOOKUPS` calls
    look their new terms up; after that the whole vocabulary is read once (a django index:
    ~0.1 s instead of ~0.4 s of lookups that miss).
    """

    def __init__(self, connect: Connect) -> None:
        self._connect = connect
        self._known: dict[str, int] = {}
        self._lookups = 0
        self._loaded = False

    def ids(self, terms: Iterable[str]) -> dict[str, int]:
        """The ids known so far, after adding ``terms`` to the vocabulary."""
        known = self._known
        unseen = list(dict.fromkeys(t for t in terms if t not in known))
        if not unseen:
            return known
        conn = self._connect()
        if not self._loaded:
            self._lookups += 1
            if self._lookups > _VOCABULARY_LOOKUPS:
                known.update(conn.execute("SELECT term, id FROM code_terms"))
                self._loaded = True
            else:
                known.update(term_ids(conn, unseen))
        new = [t for t in unseen if t not in known]
        if new:
            row = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM code_terms").fetchone()
            rows = [(int(row[0]) + i, t) for i, t in enumerate(new)]
            conn.executemany("INSERT INTO code_terms(id, term) VALUES (?, ?)", rows)
            known.update((t, i) for i, t in rows)
        return known


def encode_bag(
    counts: Mapping[str, int], known: Mapping[str, int]
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]]:
    """One bag of words as (ascending term ids, their counts); every term must be known."""
    ids = np.fromiter((known[t] for t in counts), dtype=np.uint32, count=len(counts))
    tfs = np.fromiter(counts.values(), dtype=np.uint32, count=len(counts))
    order = np.argsort(ids, kind="stable")
    return ids[order], tfs[order]


def encode_parts(
    parts: Sequence[Mapping[str, int]], vocabulary: TermIds
) -> tuple[bytes, bytes, bytes, bytes]:
    """The blobs of a content's parts: lengths, sizes, term ids, counts."""
    known = vocabulary.ids(set().union(*parts) if parts else ())
    ids: list[int] = []
    tfs: list[int] = []
    sizes: list[int] = []
    for part in parts:
        sizes.append(len(part))
        ids.extend(map(known.__getitem__, part))
        tfs.extend(part.values())
    id_array = np.array(ids, dtype=np.uint32)
    tf_array = np.array(tfs, dtype=np.uint32)
    size_array = np.array(sizes, dtype=np.uint32)
    part_of = np.repeat(np.arange(len(parts), dtype=np.int64), size_array.astype(np.int64))
    order = np.lexsort((id_array, part_of))  # by part, then ascending term id within it
    lengths = np.bincount(part_of, weights=tf_array, minlength=len(parts)).astype(np.uint32)
    return (
        lengths.tobytes(),
        size_array.tobytes(),
        id_array[order].tobytes(),
        tf_array[order].tobytes(),
    )


def as_uint32(blob: bytes) -> npt.NDArray[np.uint32]:
    return np.frombuffer(blob, dtype=np.uint32)
