"""The code-index store protocol: the C0-C3 layers and vectors, as typed reads and writes.

Everything parsed from a file's bytes is keyed by the file's CONTENT HASH, not by tree or
path: one parse serves every tree (and every git commit) holding the same bytes, which is what
makes indexing a series of commits cheap. Readers restrict results to a tree by the set of
content hashes the tree's file nodes carry. No SQL lives outside ``treeseek.store``; the
SQLite implementation is :class:`treeseek.store.code_sqlite.SQLiteCodeStore`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from treeseek.code.model import (
    Chunk,
    ChunkType,
    Edge,
    Entrypoint,
    FileCodeIndex,
    Symbol,
    SymbolKind,
)


@dataclass(frozen=True, slots=True)
class ChunkHit:
    """A C0 chunk matched by full-text search. ``score``: BM25, higher is better."""

    content_hash: str
    index: int
    type: ChunkType
    start_line: int
    end_line: int
    symbol: str | None
    score: float


@dataclass(frozen=True, slots=True)
class SymbolHit:
    """A C1 symbol matched by full-text search or by exact name. ``score``: higher is better."""

    content_hash: str
    qname: str
    name: str
    kind: SymbolKind
    start_line: int
    end_line: int
    score: float


@dataclass(frozen=True, slots=True)
class PreparedCode:
    """A file's layers plus the FTS token strings of its chunks and symbols and the term
    counts of its file document, computed where the file was parsed (a worker process), so
    the writer only inserts rows."""

    index: FileCodeIndex
    chunk_bodies: tuple[str, ...]
    symbol_bodies: tuple[str, ...]
    #: how often each token occurs in the file document (all chunk bodies, see FileTerms)
    term_counts: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class FileTerms:
    """The bag of words of one content's file document, for file-level BM25.

    The document is the concatenation of the content's chunk texts (each with its symbol's
    name, cut at the chunk size cap), tokenized by :func:`treeseek.text.tokens.code_tokens`.
    Terms are integer ids of the database-wide vocabulary (:meth:`CodeStore.term_ids`).
    """

    content_hash: str
    length: int  # tokens in the document (the sum of ``counts``)
    term_ids: npt.NDArray[np.uint32]  # distinct term ids, ascending
    counts: npt.NDArray[np.uint32]  # occurrences of each term, aligned with ``term_ids``


@dataclass(frozen=True, slots=True)
class CodeFileInfo:
    """What was recorded about one parsed content."""

    content_hash: str
    language: str | None
    parse_error: str | None
    chunk_count: int
    symbol_count: int


@runtime_checkable
class CodeWriter(Protocol):
    """Writes of the code layers; used inside a tree's write transaction."""

    def missing_code(self, hashes: Collection[str]) -> set[str]:
        """The hashes among ``hashes`` that have no stored code index yet."""

    def put_code(self, content_hash: str, index: FileCodeIndex) -> None:
        """Store one file's layers (replacing any previous ones for that hash)."""

    def put_prepared(self, content_hash: str, prepared: PreparedCode) -> None:
        """:meth:`put_code` with the FTS token strings (and file term counts) already
        computed."""

    def put_file_terms(self, content_hash: str, counts: Mapping[str, int]) -> None:
        """Store (replace) the term counts of one content's file document; new terms get
        vocabulary ids."""

    def contents_without_terms(self, tree: str) -> set[str]:
        """Parsed contents of ``tree`` that have no file term row (a database written before
        the file-term layer existed): what re-indexing backfills."""

    def chunk_documents(self, hashes: Collection[str]) -> dict[str, list[str]]:
        """The stored FTS token strings of each content's chunks, in chunk order (contents
        without chunks are absent)."""

    def contents_without_vectors(
        self, tree: str, model: str, kind: str
    ) -> dict[str, tuple[str, str | None]]:
        """Parsed contents of ``tree`` with no vector of ``model`` and ``kind``, each with one
        path holding it and its language: what turning vectors on for a tree backfills."""

    def heads(self, hashes: Collection[str], size: int) -> dict[str, str]:
        """The first ``size`` bytes of each content, decoded as UTF-8 (replacing errors);
        contents not stored are absent."""

    def missing_vectors(self, model: str, kind: str, hashes: Collection[str]) -> set[str]: ...

    def put_vectors(
        self, model: str, kind: str, items: Sequence[tuple[str, npt.NDArray[np.float32]]]
    ) -> None:
        """Store (content_hash, vector) pairs of one model and one kind of embedded text."""


@runtime_checkable
class CodeStore(CodeWriter, Protocol):
    """Reads of the code layers (and the writes of :class:`CodeWriter`)."""

    def code_files(self, hashes: Collection[str]) -> dict[str, CodeFileInfo]: ...

    def chunks(self, content_hash: str) -> list[Chunk]:
        """The chunks of one content, in chunk order, with their text."""

    def symbols(self, content_hash: str) -> list[Symbol]: ...

    def symbols_of(self, hashes: Collection[str]) -> dict[str, list[Symbol]]:
        """Batched :meth:`symbols` (hashes without symbols are absent)."""

    def edges(self, content_hash: str) -> list[Edge]: ...

    def entrypoints(self, content_hash: str) -> list[Entrypoint]: ...

    def chunk_doc_count(self) -> int:
        """How many chunks the full-text index holds (all trees)."""

    def chunk_term_doc_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks contain each term (terms not indexed are absent)."""

    def search_chunks(
        self, terms: Sequence[str], hashes: Collection[str], limit: int
    ) -> list[ChunkHit]:
        """Chunks matching any of ``terms`` by BM25, restricted to contents in ``hashes``."""

    def file_terms(self, hashes: Collection[str]) -> dict[str, FileTerms]:
        """The file term rows of ``hashes`` (contents without one are absent)."""

    def term_ids(self, terms: Collection[str]) -> dict[str, int]:
        """Vocabulary ids of ``terms`` (terms no file contains are absent)."""

    def search_chunks_in(
        self, terms: Sequence[str], hashes: Sequence[str], per_file: int = 1
    ) -> list[ChunkHit]:
        """The best ``per_file`` chunks of each of a few contents (evidence)."""

    def search_symbols(
        self, terms: Sequence[str], hashes: Collection[str], limit: int
    ) -> list[SymbolHit]:
        """Symbols matching any of ``terms`` by BM25, restricted to contents in ``hashes``."""

    def symbols_named(self, names: Sequence[str], hashes: Collection[str]) -> list[SymbolHit]:
        """Symbols whose name or qualified name equals one of ``names`` exactly (score 0)."""

    def vectors(
        self, model: str, kind: str, hashes: Collection[str]
    ) -> dict[str, npt.NDArray[np.float32]]: ...
