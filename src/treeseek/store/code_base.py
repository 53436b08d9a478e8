"""The code-index store protocol: the C0-C3 layers and vectors, as typed reads and writes.

Everything parsed from a file's bytes is keyed by the file's CONTENT HASH, not by tree or
path: one parse serves every tree (and every git commit) holding the same bytes, which is what
makes indexing a series of commits cheap. Vectors are the exception: the text a file's vector
embeds begins with the file's path, so a vector is keyed by (content hash, path)
(:class:`VectorKey`), the pair its text is a function of. Readers restrict results to a tree
by the content hashes (for vectors, the keys) of the tree's file nodes. No SQL lives outside
``treeseek.store``; a store hands out its code store with :meth:`treeseek.store.base.Store.code`
(reads) and :meth:`treeseek.store.base.TreeWriter.code` (writes, inside the tree's
transaction).

Nothing here ranks: full-text statistics (document counts, document frequencies, average
lengths) must be those of one tree, and contents are shared by trees, so a store keeps term
counts (:class:`FileTerms`, :class:`PartTerms`) and the search layer computes BM25 with the
statistics of the tree it searches. Everything written is already tokenized by the code index
(:mod:`treeseek.index.code_hook`): a store never tokenizes.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol, runtime_checkable

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
from treeseek.code.revisions import parser_revision

#: the layers of a content's parts that have term counts: its chunks (C0), in chunk order, and
#: its symbols' documents (C1: qualified name, signature, decorators, docstring), in symbol order
PartLayer = Literal["chunks", "symbols"]
CHUNK_PARTS: PartLayer = "chunks"
SYMBOL_PARTS: PartLayer = "symbols"


class VectorKey(NamedTuple):
    """What a stored vector is of: one content at one path. The embedded text (an outline,
    :func:`treeseek.index.code_hook.file_outline`) is a function of the content and the path,
    so two trees holding the same content at the same path share the vector, and the same
    content at another path has a vector of its own."""

    content_hash: str
    path: str


@dataclass(frozen=True, slots=True)
class ChunkSpan:
    """Where one C0 chunk is (no text): what a ranked chunk shows as evidence."""

    content_hash: str
    index: int
    type: ChunkType
    start_line: int
    end_line: int
    symbol: str | None


@dataclass(frozen=True, slots=True)
class SymbolHit:
    """A C1 symbol found by exact name. ``score``: higher is better (0 for exact names)."""

    content_hash: str
    qname: str
    name: str
    kind: SymbolKind
    start_line: int
    end_line: int
    score: float


class SymbolHead(NamedTuple):
    """A C1 symbol's name and place, as :meth:`CodeStore.symbol_heads` reads a whole tree's.

    A named tuple, not a dataclass: a large tree has hundreds of thousands of symbols, and a
    frozen dataclass costs ten times a tuple to make (1.3 against 0.3 s for 400,000).
    """

    content_hash: str
    qname: str
    name: str
    kind: SymbolKind
    start_line: int
    end_line: int

    def hit(self, score: float = 0.0) -> SymbolHit:
        """This symbol as a name hit."""
        return SymbolHit(
            self.content_hash,
            self.qname,
            self.name,
            self.kind,
            self.start_line,
            self.end_line,
            score,
        )


#: a content's part term row as stored: ``(content hash, lengths, sizes, term_ids, counts)``,
#: each array as its bytes (uint32, machine order: what :class:`PartTerms` views)
PartTermBlobs = tuple[str, bytes, bytes, bytes, bytes]

#: a symbol as :meth:`CodeStore.symbol_rows` reads it: ``(content hash, qualified name, name,
#: kind value, start line, end line)``, a plain row (no object of its own per symbol)
SymbolRow = tuple[str, str, str, str, int, int]


@dataclass(frozen=True, slots=True)
class PreparedCode:
    """A file's layers, already tokenized where the file was parsed (a worker process), so
    the writer only inserts rows.

    ``chunk_bodies`` / ``symbol_bodies``: each part's tokens joined by single spaces (the
    stored full-text documents); ``chunk_terms`` / ``symbol_terms``: each part's token counts
    (the same tokens); ``term_counts``: the token counts of the file document (all chunks).
    """

    index: FileCodeIndex
    chunk_bodies: tuple[str, ...]
    symbol_bodies: tuple[str, ...]
    chunk_terms: tuple[Mapping[str, int], ...]
    symbol_terms: tuple[Mapping[str, int], ...]
    #: how often each token occurs in the file document (all chunk bodies, see FileTerms)
    term_counts: Mapping[str, int]
    #: the parser revision that made ``index``: None for this process's parser (a copy from
    #: another database keeps the revision its rows were made at)
    parser_revision: int | None = None

    @property
    def revision(self) -> int:
        """The parser revision to store with these rows."""
        if self.parser_revision is not None:
            return self.parser_revision
        return parser_revision(self.index.language)


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
class PartTerms:
    """The bags of words of one content's parts (its chunks, or its symbols), in part order.

    Part ``i`` has ``lengths[i]`` tokens and ``sizes[i]`` distinct terms; its term ids
    (ascending) and counts are the next ``sizes[i]`` entries of ``term_ids`` / ``counts``
    after those of parts ``0..i-1``. Term ids are those of :meth:`CodeStore.term_ids`.
    """

    content_hash: str
    lengths: npt.NDArray[np.uint32]
    sizes: npt.NDArray[np.uint32]
    term_ids: npt.NDArray[np.uint32]
    counts: npt.NDArray[np.uint32]

    def __len__(self) -> int:
        return len(self.lengths)


@dataclass(frozen=True, slots=True)
class CodeFileInfo:
    """What was recorded about one parsed content."""

    content_hash: str
    language: str | None
    parse_error: str | None
    chunk_count: int
    symbol_count: int
    #: the parser revision that made the rows (:mod:`treeseek.code.revisions`)
    parser_revision: int = 0


@runtime_checkable
class CodeStore(Protocol):
    """Reads of the code layers (:meth:`treeseek.store.base.Store.code`)."""

    def code_files(self, hashes: Collection[str]) -> dict[str, CodeFileInfo]: ...

    def chunks(self, content_hash: str) -> list[Chunk]:
        """The chunks of one content, in chunk order, with their text."""

    def chunk_spans(self, hashes: Collection[str]) -> dict[str, list[ChunkSpan]]:
        """Batched chunk positions without text, in chunk order (hashes without chunks are
        absent)."""

    def chunk_documents(self, hashes: Collection[str]) -> dict[str, list[str]]:
        """The stored full-text documents (space-separated tokens) of each content's chunks,
        in chunk order (contents without chunks are absent)."""

    def symbols(self, content_hash: str) -> list[Symbol]: ...

    def symbols_of(self, hashes: Collection[str]) -> dict[str, list[Symbol]]:
        """Batched :meth:`symbols` (hashes without symbols are absent)."""

    def symbols_named(self, names: Sequence[str], hashes: Collection[str]) -> list[SymbolHit]:
        """Symbols whose name or qualified name equals one of ``names`` exactly (score 0),
        restricted to contents in ``hashes``."""

    def symbols_last_named(self, name: str, hashes: Collection[str]) -> list[SymbolHit]:
        """Symbols whose qualified name's last dotted part is ``name`` (``App.run`` for
        ``run``), restricted to contents in ``hashes``, by content and symbol order: where a
        short name's matches are (an indexed lookup, not a scan)."""

    def calls_named(self, name: str, hashes: Collection[str]) -> set[str]:
        """The contents among ``hashes`` with a call edge whose callee's last dotted part is
        ``name`` (``self.app.register_blueprint`` for ``register_blueprint``): the files that
        may call a symbol of that name (an indexed lookup, not a scan)."""

    def symbol_heads(self, hashes: Collection[str]) -> dict[str, list[SymbolHead]]:
        """Each content's symbols (qualified name, name, kind, lines) in symbol order,
        without signatures or docstrings: a tree's symbol catalog in one read (contents
        without symbols are absent)."""

    def symbol_rows(self, hashes: Collection[str]) -> list[SymbolRow]:
        """What :meth:`symbol_heads` reads, as plain rows (:data:`SymbolRow`), each content's
        in symbol order: a whole tree's symbols in one read without an object per symbol
        (:class:`~treeseek.search.flat.parts.SymbolCatalog`)."""

    def symbol_rows_named(self, names: Sequence[str], hashes: Collection[str]) -> list[SymbolRow]:
        """The rows of :meth:`symbol_rows` (of contents in ``hashes``) whose name or qualified
        name is one of ``names``, each symbol once, by content hash, then symbol order: a
        few names looked up by the name indexes, without reading a tree's every symbol."""

    def edges(self, content_hash: str) -> list[Edge]: ...

    def edges_of(self, hashes: Collection[str]) -> dict[str, list[Edge]]:
        """Batched :meth:`edges`, each content's in edge order (hashes without edges are
        absent): a whole tree's in one read, not one read per file."""

    def import_refs(self, hashes: Collection[str]) -> dict[str, list[str]]:
        """Each content's import edges as written (``dst_ref``), in edge order, without the
        other edges or payloads: what query-time import resolution reads (contents without
        imports are absent)."""

    def base_refs(self, hashes: Collection[str]) -> dict[str, list[tuple[str, str]]]:
        """Each content's inherits edges as written, ``(class, base)`` (``src``,
        ``dst_ref``), in edge order, without payloads (contents without bases are absent):
        what a subclasses query scans for the files that can name a class."""

    def import_bindings(self, hashes: Collection[str]) -> dict[str, list[tuple[str, str]]]:
        """Each content's import edges that bind a name of their own (an ``alias``, or
        JavaScript ``names`` pairs), ``(dst_ref, lang_payload)`` with the payload's JSON text
        undecoded, in edge order (contents without such imports are absent)."""

    def entrypoints(self, content_hash: str) -> list[Entrypoint]: ...

    def stale_parses(self, tree: str) -> dict[str, str]:
        """The contents of ``tree`` whose code rows an older parser made
        (:func:`treeseek.code.revisions.is_stale`), each with the path to parse it as: its
        first path in ``tree`` that is not a data file."""

    def entrypoints_of(self, hashes: Collection[str]) -> dict[str, list[Entrypoint]]:
        """Batched :meth:`entrypoints` (hashes without entrypoints are absent)."""

    def term_ids(self, terms: Collection[str]) -> dict[str, int]:
        """Vocabulary ids of ``terms`` (terms no content has are absent)."""

    def file_terms(self, hashes: Collection[str]) -> dict[str, FileTerms]:
        """The file term rows of ``hashes`` (contents without one are absent)."""

    def part_terms(self, layer: PartLayer, hashes: Collection[str]) -> dict[str, PartTerms]:
        """The part term rows of ``layer`` of ``hashes`` (contents without parts are
        absent)."""

    def part_term_blobs(self, layer: PartLayer, hashes: Collection[str]) -> list[PartTermBlobs]:
        """:meth:`part_terms` as stored (:data:`PartTermBlobs`), in no particular order: a
        whole tree's rows joined into one array per column with one copy, rather than an
        array per row and column (~100,000 small arrays on a large tree)."""

    def vectors(
        self, model: str, kind: str, keys: Collection[VectorKey]
    ) -> dict[VectorKey, npt.NDArray[np.float32]]:
        """The stored vectors of ``keys`` (keys without one are absent)."""

    def vector_kinds(self) -> list[tuple[str, str]]:
        """The (model, kind) pairs that have stored vectors (what a copy of a database
        carries over)."""

    def nearest(
        self,
        model: str,
        kind: str,
        query: npt.NDArray[np.float32],
        k: int,
        keys: Collection[VectorKey] | None = None,
    ) -> list[tuple[VectorKey, float]]:
        """The ``k`` files (among ``keys``, e.g. one tree's; all when ``None``) whose
        ``model``/``kind`` vectors are most similar to ``query`` by cosine similarity, highest
        first, scored by :func:`treeseek.store.vector_search.exact_nearest`'s scoring: every
        vector among ``keys`` is scored (exact on both stores, whatever else the database
        holds)."""


@runtime_checkable
class CodeWriter(CodeStore, Protocol):
    """Writes of the code layers inside a tree's write transaction
    (:meth:`treeseek.store.base.TreeWriter.code`); its reads see the transaction's rows."""

    def missing_code(self, hashes: Collection[str]) -> set[str]:
        """The hashes among ``hashes`` that have no stored code index yet."""

    def put_prepared(self, content_hash: str, prepared: PreparedCode) -> None:
        """Store one file's layers, tokens and term counts (replacing any previous ones for
        that hash)."""

    def put_file_terms(self, content_hash: str, counts: Mapping[str, int]) -> None:
        """Store (replace) the term counts of one content's file document; new terms get
        vocabulary ids."""

    def contents_without_terms(self, tree: str) -> set[str]:
        """Parsed contents of ``tree`` that have no file term row (a database written before
        the file-term layer existed): what re-indexing backfills."""

    def files_without_vectors(
        self, tree: str, model: str, kind: str
    ) -> dict[VectorKey, str | None]:
        """The parsed files of ``tree`` (content, path) with no vector of ``model`` and
        ``kind``, each with the language its content was parsed as: what the index hook embeds
        (new files, files at a new path, a tree indexed before vectors were turned on)."""

    def heads(self, hashes: Collection[str], size: int) -> dict[str, bytes]:
        """The first ``size`` bytes of each content; contents not stored are absent."""

    def missing_vectors(
        self, model: str, kind: str, keys: Collection[VectorKey]
    ) -> set[VectorKey]: ...

    def put_vectors(
        self, model: str, kind: str, items: Sequence[tuple[VectorKey, npt.NDArray[np.float32]]]
    ) -> None:
        """Store (key, vector) pairs of one model and one kind of embedded text."""

    def vector_keys(self, kind: str, hashes: Collection[str]) -> list[tuple[str, VectorKey]]:
        """``(model, key)`` of every stored vector of ``kind`` of the contents ``hashes``, at
        any path, of any model and tree: what a parse of those contents again may outdate."""

    def delete_vectors(self, model: str, kind: str, keys: Collection[VectorKey]) -> None:
        """Delete the stored ``model``/``kind`` vectors of ``keys`` (keys without one: no-op)."""
