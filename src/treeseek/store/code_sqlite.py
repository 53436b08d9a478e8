"""SQLite storage of the code layers: tables keyed by content hash, FTS5 indexes, vectors.

Layout (see :data:`CODE_SCHEMA_SQL`, applied as one migration):

- ``code_files``: one row per parsed content (language, parse error, counts).
- ``code_chunks`` + ``code_chunks_fts``: C0 chunk spans; the FTS row (same rowid) holds the
  chunk's code-aware tokens (:func:`treeseek.text.tokens.fts_document`). Chunk text is not
  stored twice: it is sliced from the shared ``contents`` by line span when asked for.
- ``code_symbols`` + ``code_symbols_fts``: the C1 catalog; the FTS row holds tokens of the
  qualified name, signature, decorators and docstring. ``code_symbols.name`` is indexed for
  the exact lookups of query understanding.
- ``code_edges``, ``code_entrypoints``: C2 edges as found in one file, and C3 entrypoints.
- ``code_terms`` + ``code_file_terms``: the bag of words of each content's file document
  (its chunk token strings) for file-level BM25 (:mod:`treeseek.search.flat.file_bm25`): a
  database-wide vocabulary (term -> integer id) and per content the token count and two
  blobs, the sorted uint32 term ids and their uint32 counts (``np.frombuffer``-loadable).
- ``code_vectors``: float32 vectors per (content hash, model, kind), searched exactly with
  numpy (a tree holds at most tens of thousands of files: a brute-force scan is milliseconds,
  and Python's bundled sqlite3 here cannot load extensions such as sqlite-vec).

Rows of a content disappear with the content (trigger on ``contents``), so deleting a tree
prunes its code layers exactly when the store drops the bytes nobody uses any more.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Callable, Collection, Iterator, KeysView, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np
import numpy.typing as npt

from treeseek.code.model import (
    Chunk,
    ChunkType,
    Edge,
    EdgeType,
    Entrypoint,
    FileCodeIndex,
    Symbol,
    SymbolKind,
)
from treeseek.errors import StoreError
from treeseek.store.code_base import ChunkHit, CodeFileInfo, FileTerms, PreparedCode, SymbolHit
from treeseek.text.tokens import fts_document

CODE_SCHEMA_SQL = """
CREATE TABLE code_files (
    content_hash  TEXT PRIMARY KEY,
    language      TEXT,
    parse_error   TEXT,
    chunk_count   INTEGER NOT NULL,
    symbol_count  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE code_chunks (
    id            INTEGER PRIMARY KEY,
    content_hash  TEXT NOT NULL,
    idx           INTEGER NOT NULL,
    type          TEXT NOT NULL,
    start_line    INTEGER NOT NULL,
    end_line      INTEGER NOT NULL,
    symbol        TEXT
);
CREATE INDEX code_chunks_by_content ON code_chunks(content_hash, idx);
CREATE VIRTUAL TABLE code_chunks_fts USING fts5(body, tokenize = "unicode61 tokenchars '_'");
CREATE VIRTUAL TABLE code_chunks_vocab USING fts5vocab(code_chunks_fts, 'row');

CREATE TABLE code_symbols (
    id            INTEGER PRIMARY KEY,
    content_hash  TEXT NOT NULL,
    ord           INTEGER NOT NULL,
    qname         TEXT NOT NULL,
    name          TEXT NOT NULL,
    kind          TEXT NOT NULL,
    start_line    INTEGER NOT NULL,
    end_line      INTEGER NOT NULL,
    signature     TEXT NOT NULL,
    decorators    TEXT NOT NULL,
    docstring     TEXT,
    parent        TEXT,
    is_entry      INTEGER NOT NULL,
    lang_payload  TEXT NOT NULL
);
CREATE INDEX code_symbols_by_content ON code_symbols(content_hash, ord);
CREATE INDEX code_symbols_by_name ON code_symbols(name);
CREATE INDEX code_symbols_by_qname ON code_symbols(qname);
CREATE VIRTUAL TABLE code_symbols_fts USING fts5(body, tokenize = "unicode61 tokenchars '_'");

CREATE TABLE code_edges (
    content_hash  TEXT NOT NULL,
    ord           INTEGER NOT NULL,
    type          TEXT NOT NULL,
    src           TEXT NOT NULL,
    dst_ref       TEXT NOT NULL,
    line          INTEGER NOT NULL,
    lang_payload  TEXT NOT NULL,
    PRIMARY KEY (content_hash, ord)
) WITHOUT ROWID;

CREATE TABLE code_entrypoints (
    content_hash      TEXT NOT NULL,
    ord               INTEGER NOT NULL,
    entry_type        TEXT NOT NULL,
    framework         TEXT NOT NULL,
    route_or_command  TEXT NOT NULL,
    handler           TEXT,
    line              INTEGER NOT NULL,
    lang_payload      TEXT NOT NULL,
    PRIMARY KEY (content_hash, ord)
) WITHOUT ROWID;

CREATE TABLE code_vectors (
    content_hash  TEXT NOT NULL,
    model         TEXT NOT NULL,
    kind          TEXT NOT NULL,
    vec           BLOB NOT NULL,
    PRIMARY KEY (content_hash, model, kind)
) WITHOUT ROWID;

CREATE TRIGGER code_prune_with_content AFTER DELETE ON contents
BEGIN
    DELETE FROM code_chunks_fts
        WHERE rowid IN (SELECT id FROM code_chunks WHERE content_hash = OLD.hash);
    DELETE FROM code_chunks WHERE content_hash = OLD.hash;
    DELETE FROM code_symbols_fts
        WHERE rowid IN (SELECT id FROM code_symbols WHERE content_hash = OLD.hash);
    DELETE FROM code_symbols WHERE content_hash = OLD.hash;
    DELETE FROM code_edges WHERE content_hash = OLD.hash;
    DELETE FROM code_entrypoints WHERE content_hash = OLD.hash;
    DELETE FROM code_vectors WHERE content_hash = OLD.hash;
    DELETE FROM code_files WHERE content_hash = OLD.hash;
END;
"""

#: Migration 4: per-content term counts for file-level BM25 in numpy (FTS5 is slow on the
#: long OR-queries an issue makes, so it could only see a query's top terms); the FTS5 file
#: documents of migration 3 it replaces are dropped. Rows are filled by the index hook,
#: including for contents parsed before this migration (see ``contents_without_terms``).
CODE_FILE_TERMS_SQL = """
CREATE TABLE code_terms (
    id    INTEGER PRIMARY KEY,
    term  TEXT NOT NULL UNIQUE
);

CREATE TABLE code_file_terms (
    content_hash  TEXT PRIMARY KEY,
    length        INTEGER NOT NULL,
    term_ids      BLOB NOT NULL,
    counts        BLOB NOT NULL
);

CREATE TRIGGER code_file_terms_prune_with_content AFTER DELETE ON contents
BEGIN
    DELETE FROM code_file_terms WHERE content_hash = OLD.hash;
END;

DROP TRIGGER code_docs_prune_with_content;
DROP TABLE code_docs_vocab;
DROP TABLE code_docs_fts;
DROP TABLE code_docs;
"""

#: a symbol's docstring is cut to this many characters in its FTS document
_DOCSTRING_CHARS = 600
#: files whose new terms are looked up one query each before the whole vocabulary is read
_VOCABULARY_LOOKUPS = 64
#: batch size of ``IN (...)`` parameter lists (SQLite's default limit is 32766; stay modest)
_BATCH = 900

ContentReader = Callable[[Sequence[str]], dict[str, bytes]]


_CHUNK_TYPES: dict[str, ChunkType] = {t.value: t for t in ChunkType}


def _batches(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _BATCH):
        yield items[start : start + _BATCH]


def _fts_query(terms: Sequence[str]) -> str:
    """An FTS5 OR-query of already-tokenized terms (each quoted: no operator injection)."""
    quoted = ['"' + t.replace('"', '""') + '"' for t in terms if t]
    return " OR ".join(quoted)


def _as_set(hashes: Collection[str]) -> AbstractSet[str]:
    if isinstance(hashes, (set, frozenset)):
        return hashes
    if isinstance(hashes, KeysView):
        return hashes
    return set(hashes)


def _json_obj(value: dict[str, Any]) -> str:
    return json.dumps(value) if value else "{}"


def _json_list(value: Sequence[str]) -> str:
    return json.dumps(list(value)) if value else "[]"


def _symbol_document(symbol: Symbol) -> str:
    doc = (symbol.docstring or "")[:_DOCSTRING_CHARS]
    return fts_document(
        " ".join((symbol.qname, symbol.signature, " ".join(symbol.decorators), doc))
    )


def document_term_counts(chunk_bodies: Sequence[str]) -> dict[str, int]:
    """Token counts of a file document given as its chunks' FTS token strings.

    A token string is :func:`~treeseek.text.tokens.code_tokens` of the chunk text joined
    by spaces (tokens never contain one), so splitting it recovers exactly those tokens.
    """
    counts: Counter[str] = Counter()
    for body in chunk_bodies:
        counts.update(body.split())
    return dict(counts)


def prepare_code(index: FileCodeIndex) -> PreparedCode:
    """The FTS token strings of a file's chunks (with their symbol's name) and symbols, and
    the term counts of the file document they make together."""
    bodies = tuple(
        fts_document(c.text if c.symbol is None else c.symbol + "\n" + c.text) for c in index.chunks
    )
    return PreparedCode(
        index=index,
        chunk_bodies=bodies,
        symbol_bodies=tuple(_symbol_document(s) for s in index.symbols),
        term_counts=document_term_counts(bodies),
    )


class SQLiteCodeStore:
    """The code layers in the same SQLite database as the trees (implements ``CodeStore``).

    ``conn`` is the store's connection (the schema must be migrated); ``read_contents``
    returns raw bytes by content hash and is used to give chunks their text.
    """

    def __init__(self, conn: sqlite3.Connection, read_contents: ContentReader) -> None:
        self._conn = conn
        self._read_contents = read_contents
        self._term_cache: dict[str, int] = {}
        self._vocabulary_lookups = 0
        self._vocabulary_loaded = False  # the whole vocabulary is in ``_term_cache``

    # -- writes ---------------------------------------------------------------------------
    def missing_code(self, hashes: Collection[str]) -> set[str]:
        wanted = list(dict.fromkeys(hashes))
        have: set[str] = set()
        for batch in _batches(wanted):
            marks = ",".join("?" * len(batch))
            rows = self._conn.execute(
                f"SELECT content_hash FROM code_files WHERE content_hash IN ({marks})", batch
            )
            have.update(r[0] for r in rows)
        return set(wanted) - have

    def put_code(self, content_hash: str, index: FileCodeIndex) -> None:
        self.put_prepared(content_hash, prepare_code(index))

    def put_prepared(self, content_hash: str, prepared: PreparedCode) -> None:
        index = prepared.index
        conn = self._conn
        exists = conn.execute(
            "SELECT 1 FROM code_files WHERE content_hash = ?", (content_hash,)
        ).fetchone()
        if exists:
            self._delete_code(content_hash)
        conn.execute(
            "INSERT INTO code_files(content_hash, language, parse_error, chunk_count,"
            " symbol_count) VALUES (?, ?, ?, ?, ?)",
            (
                content_hash,
                index.language,
                index.parse_error,
                len(index.chunks),
                len(index.symbols),
            ),
        )
        self.put_file_terms(content_hash, prepared.term_counts)
        # rowids are assigned here so chunk/symbol rows and their FTS rows go in two batched
        # statements each (the write transaction holds the only writer lock)
        if index.chunks:
            first = self._next_id("code_chunks")
            conn.executemany(
                "INSERT INTO code_chunks(id, content_hash, idx, type, start_line, end_line,"
                " symbol) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        first + i,
                        content_hash,
                        c.index,
                        str(c.type),
                        c.start_line,
                        c.end_line,
                        c.symbol,
                    )
                    for i, c in enumerate(index.chunks)
                ],
            )
            conn.executemany(
                "INSERT INTO code_chunks_fts(rowid, body) VALUES (?, ?)",
                [(first + i, body) for i, body in enumerate(prepared.chunk_bodies)],
            )
        if index.symbols:
            first = self._next_id("code_symbols")
            conn.executemany(
                "INSERT INTO code_symbols(id, content_hash, ord, qname, name, kind, start_line,"
                " end_line, signature, decorators, docstring, parent, is_entry, lang_payload)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        first + i,
                        content_hash,
                        i,
                        s.qname,
                        s.name,
                        str(s.kind),
                        s.start_line,
                        s.end_line,
                        s.signature,
                        _json_list(s.decorators),
                        s.docstring,
                        s.parent,
                        int(s.is_entry_candidate),
                        _json_obj(s.lang_payload),
                    )
                    for i, s in enumerate(index.symbols)
                ],
            )
            conn.executemany(
                "INSERT INTO code_symbols_fts(rowid, body) VALUES (?, ?)",
                [(first + i, body) for i, body in enumerate(prepared.symbol_bodies)],
            )
        if index.edges:
            conn.executemany(
                "INSERT INTO code_edges(content_hash, ord, type, src, dst_ref, line,"
                " lang_payload) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        content_hash,
                        i,
                        str(e.type),
                        e.src,
                        e.dst_ref,
                        e.line,
                        _json_obj(e.lang_payload),
                    )
                    for i, e in enumerate(index.edges)
                ],
            )
        if index.entrypoints:
            conn.executemany(
                "INSERT INTO code_entrypoints(content_hash, ord, entry_type, framework,"
                " route_or_command, handler, line, lang_payload)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        content_hash,
                        i,
                        e.entry_type,
                        e.framework,
                        e.route_or_command,
                        e.handler,
                        e.line,
                        _json_obj(e.lang_payload),
                    )
                    for i, e in enumerate(index.entrypoints)
                ],
            )

    def _next_id(self, table: str) -> int:
        row = self._conn.execute(f"SELECT coalesce(max(id), 0) + 1 FROM {table}").fetchone()
        return int(row[0])

    def _delete_code(self, content_hash: str) -> None:
        conn = self._conn
        conn.execute(
            "DELETE FROM code_chunks_fts WHERE rowid IN"
            " (SELECT id FROM code_chunks WHERE content_hash = ?)",
            (content_hash,),
        )
        conn.execute(
            "DELETE FROM code_symbols_fts WHERE rowid IN"
            " (SELECT id FROM code_symbols WHERE content_hash = ?)",
            (content_hash,),
        )
        for table in (
            "code_file_terms",
            "code_chunks",
            "code_symbols",
            "code_edges",
            "code_entrypoints",
            "code_files",
        ):
            conn.execute(f"DELETE FROM {table} WHERE content_hash = ?", (content_hash,))

    def put_file_terms(self, content_hash: str, counts: Mapping[str, int]) -> None:
        known = self._vocabulary(counts)
        ids = np.array([known[t] for t in counts], dtype=np.uint32)
        tfs = np.array(list(counts.values()), dtype=np.uint32)
        order = np.argsort(ids)
        self._conn.execute(
            "INSERT OR REPLACE INTO code_file_terms(content_hash, length, term_ids, counts)"
            " VALUES (?, ?, ?, ?)",
            (content_hash, int(tfs.sum()), ids[order].tobytes(), tfs[order].tobytes()),
        )

    def _vocabulary(self, terms: Collection[str]) -> dict[str, int]:
        """The term ids known so far, after adding ``terms`` to the vocabulary. Ids are
        remembered for this store object's lifetime (one write transaction in the index
        hook): most of a file's terms are terms an earlier file already had. A few files
        look their new terms up; past :data:`_VOCABULARY_LOOKUPS` files the whole vocabulary
        is read once (a django index: ~0.1 s instead of ~0.4 s of lookups that miss)."""
        known = self._term_cache
        unseen = [t for t in terms if t not in known]
        if unseen:
            if not self._vocabulary_loaded:
                self._vocabulary_lookups += 1
                if self._vocabulary_lookups > _VOCABULARY_LOOKUPS:
                    known.update(self._conn.execute("SELECT term, id FROM code_terms"))
                    self._vocabulary_loaded = True
                else:
                    known.update(self.term_ids(unseen))
            new = [t for t in unseen if t not in known]
            if new:
                first = self._next_id("code_terms")
                rows = [(first + i, t) for i, t in enumerate(new)]
                self._conn.executemany("INSERT INTO code_terms(id, term) VALUES (?, ?)", rows)
                known.update((t, i) for i, t in rows)
        return known

    def contents_without_terms(self, tree: str) -> set[str]:
        rows = self._conn.execute(
            "SELECT DISTINCT n.content_hash FROM nodes AS n"
            " JOIN trees AS t ON t.id = n.tree_id"
            " JOIN code_files AS c ON c.content_hash = n.content_hash"
            " WHERE t.name = ? AND NOT EXISTS"
            " (SELECT 1 FROM code_file_terms AS f WHERE f.content_hash = n.content_hash)",
            (tree,),
        )
        return {r[0] for r in rows}

    def chunk_documents(self, hashes: Collection[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for batch in _batches(list(hashes)):
            marks = ",".join("?" * len(batch))
            for digest, body in self._conn.execute(
                "SELECT c.content_hash, f.body FROM code_chunks AS c"
                " JOIN code_chunks_fts AS f ON f.rowid = c.id"
                f" WHERE c.content_hash IN ({marks}) ORDER BY c.content_hash, c.idx",
                batch,
            ):
                out.setdefault(digest, []).append(body)
        return out

    def contents_without_vectors(
        self, tree: str, model: str, kind: str
    ) -> dict[str, tuple[str, str | None]]:
        rows = self._conn.execute(
            "SELECT n.content_hash, MIN(n.path), c.language FROM nodes AS n"
            " JOIN trees AS t ON t.id = n.tree_id"
            " JOIN code_files AS c ON c.content_hash = n.content_hash"
            " WHERE t.name = ? AND NOT EXISTS (SELECT 1 FROM code_vectors AS v"
            " WHERE v.content_hash = n.content_hash AND v.model = ? AND v.kind = ?)"
            " GROUP BY n.content_hash",
            (tree, model, kind),
        )
        return {r[0]: (r[1], r[2]) for r in rows}

    def heads(self, hashes: Collection[str], size: int) -> dict[str, str]:
        data = self._read_contents(list(hashes))
        return {h: raw[:size].decode("utf-8", "replace") for h, raw in data.items()}

    def missing_vectors(self, model: str, kind: str, hashes: Collection[str]) -> set[str]:
        wanted = list(dict.fromkeys(hashes))
        have: set[str] = set()
        for batch in _batches(wanted):
            marks = ",".join("?" * len(batch))
            rows = self._conn.execute(
                "SELECT content_hash FROM code_vectors WHERE model = ? AND kind = ?"
                f" AND content_hash IN ({marks})",
                (model, kind, *batch),
            )
            have.update(r[0] for r in rows)
        return set(wanted) - have

    def put_vectors(
        self, model: str, kind: str, items: Sequence[tuple[str, npt.NDArray[np.float32]]]
    ) -> None:
        self._conn.executemany(
            "INSERT OR REPLACE INTO code_vectors(content_hash, model, kind, vec)"
            " VALUES (?, ?, ?, ?)",
            [(h, model, kind, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items],
        )

    # -- reads ----------------------------------------------------------------------------
    def code_files(self, hashes: Collection[str]) -> dict[str, CodeFileInfo]:
        out: dict[str, CodeFileInfo] = {}
        for batch in _batches(list(hashes)):
            marks = ",".join("?" * len(batch))
            for row in self._conn.execute(
                "SELECT content_hash, language, parse_error, chunk_count, symbol_count"
                f" FROM code_files WHERE content_hash IN ({marks})",
                batch,
            ):
                out[row[0]] = CodeFileInfo(row[0], row[1], row[2], row[3], row[4])
        return out

    def chunks(self, content_hash: str) -> list[Chunk]:
        rows = self._conn.execute(
            "SELECT idx, type, start_line, end_line, symbol FROM code_chunks"
            " WHERE content_hash = ? ORDER BY idx",
            (content_hash,),
        ).fetchall()
        if not rows:
            return []
        data = self._read_contents([content_hash]).get(content_hash, b"")
        lines = data.decode("utf-8", "replace").splitlines()
        return [
            Chunk(
                index=r[0],
                type=ChunkType(r[1]),
                start_line=r[2],
                end_line=r[3],
                text="\n".join(lines[r[2] - 1 : r[3]]),
                symbol=r[4],
            )
            for r in rows
        ]

    def symbols(self, content_hash: str) -> list[Symbol]:
        return self.symbols_of([content_hash]).get(content_hash, [])

    def symbols_of(self, hashes: Collection[str]) -> dict[str, list[Symbol]]:
        out: dict[str, list[Symbol]] = {}
        for batch in _batches(list(hashes)):
            marks = ",".join("?" * len(batch))
            for row in self._conn.execute(
                "SELECT content_hash, qname, name, kind, start_line, end_line, signature,"
                " decorators, docstring, parent, is_entry, lang_payload FROM code_symbols"
                f" WHERE content_hash IN ({marks}) ORDER BY content_hash, ord",
                batch,
            ):
                out.setdefault(row[0], []).append(
                    Symbol(
                        qname=row[1],
                        name=row[2],
                        kind=SymbolKind(row[3]),
                        start_line=row[4],
                        end_line=row[5],
                        signature=row[6],
                        decorators=tuple(json.loads(row[7])),
                        docstring=row[8],
                        parent=row[9],
                        is_entry_candidate=bool(row[10]),
                        lang_payload=json.loads(row[11]),
                    )
                )
        return out

    def edges(self, content_hash: str) -> list[Edge]:
        return [
            Edge(
                type=EdgeType(r[0]),
                src=r[1],
                dst_ref=r[2],
                line=r[3],
                lang_payload=json.loads(r[4]),
            )
            for r in self._conn.execute(
                "SELECT type, src, dst_ref, line, lang_payload FROM code_edges"
                " WHERE content_hash = ? ORDER BY ord",
                (content_hash,),
            )
        ]

    def entrypoints(self, content_hash: str) -> list[Entrypoint]:
        return [
            Entrypoint(
                entry_type=r[0],
                framework=r[1],
                route_or_command=r[2],
                handler=r[3],
                line=r[4],
                lang_payload=json.loads(r[5]),
            )
            for r in self._conn.execute(
                "SELECT entry_type, framework, route_or_command, handler, line, lang_payload"
                " FROM code_entrypoints WHERE content_hash = ? ORDER BY ord",
                (content_hash,),
            )
        ]

    def chunk_doc_count(self) -> int:
        row = self._conn.execute("SELECT count(*) FROM code_chunks").fetchone()
        return int(row[0])

    def chunk_term_doc_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        return self._per_term("code_chunks_vocab", "doc", terms)

    def _per_term(self, table: str, column: str, terms: Collection[str]) -> dict[str, int]:
        """``column`` of each of ``terms`` in ``table`` (keyed by ``term``), batched."""
        out: dict[str, int] = {}
        for batch in _batches(list(dict.fromkeys(terms))):
            marks = ",".join("?" * len(batch))
            for term, value in self._conn.execute(
                f"SELECT term, {column} FROM {table} WHERE term IN ({marks})", batch
            ):
                out[term] = int(value)
        return out

    def search_chunks(
        self, terms: Sequence[str], hashes: Collection[str], limit: int
    ) -> list[ChunkHit]:
        keep = _as_set(hashes)
        rows = self._search(
            "SELECT c.content_hash, c.idx, c.type, c.start_line, c.end_line, c.symbol, f.rank"
            " FROM code_chunks_fts AS f JOIN code_chunks AS c ON c.id = f.rowid"
            " WHERE code_chunks_fts MATCH ? ORDER BY f.rank LIMIT ?",
            terms,
            keep,
            limit,
        )
        kinds = _CHUNK_TYPES  # a dict lookup: the enum call costs ~10 ms over a query's rows
        return [ChunkHit(r[0], r[1], kinds[r[2]], r[3], r[4], r[5], -float(r[6])) for r in rows]

    def file_terms(self, hashes: Collection[str]) -> dict[str, FileTerms]:
        out: dict[str, FileTerms] = {}
        for batch in _batches(list(hashes)):
            marks = ",".join("?" * len(batch))
            for digest, length, ids, counts in self._conn.execute(
                "SELECT content_hash, length, term_ids, counts FROM code_file_terms"
                f" WHERE content_hash IN ({marks})",
                batch,
            ):
                out[digest] = FileTerms(
                    digest,
                    int(length),
                    np.frombuffer(ids, dtype=np.uint32),
                    np.frombuffer(counts, dtype=np.uint32),
                )
        return out

    def term_ids(self, terms: Collection[str]) -> dict[str, int]:
        return self._per_term("code_terms", "id", terms)

    def search_chunks_in(
        self, terms: Sequence[str], hashes: Sequence[str], per_file: int = 1
    ) -> list[ChunkHit]:
        """The best ``per_file`` chunks of each content in ``hashes`` (evidence for a few
        files already ranked): a search restricted to those contents' chunk rows."""
        match = _fts_query(terms)
        out: list[ChunkHit] = []
        for digest in dict.fromkeys(hashes):
            try:
                rows = self._conn.execute(
                    "SELECT c.content_hash, c.idx, c.type, c.start_line, c.end_line, c.symbol,"
                    " f.rank FROM code_chunks_fts AS f JOIN code_chunks AS c ON c.id = f.rowid"
                    " WHERE code_chunks_fts MATCH ? AND f.rowid IN"
                    " (SELECT id FROM code_chunks WHERE content_hash = ?)"
                    " ORDER BY f.rank LIMIT ?",
                    (match, digest, per_file),
                ).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"full-text search failed: {exc}") from exc
            out.extend(
                ChunkHit(r[0], r[1], ChunkType(r[2]), r[3], r[4], r[5], -float(r[6])) for r in rows
            )
        return out

    def search_symbols(
        self, terms: Sequence[str], hashes: Collection[str], limit: int
    ) -> list[SymbolHit]:
        keep = _as_set(hashes)
        rows = self._search(
            "SELECT s.content_hash, s.qname, s.name, s.kind, s.start_line, s.end_line, f.rank"
            " FROM code_symbols_fts AS f JOIN code_symbols AS s ON s.id = f.rowid"
            " WHERE code_symbols_fts MATCH ? ORDER BY f.rank LIMIT ?",
            terms,
            keep,
            limit,
        )
        return [
            SymbolHit(r[0], r[1], r[2], SymbolKind(r[3]), r[4], r[5], -float(r[6])) for r in rows
        ]

    def _search(
        self, sql: str, terms: Sequence[str], keep: AbstractSet[str], limit: int
    ) -> list[Any]:
        """Run an FTS query and keep rows whose content is in ``keep``.

        The index holds each distinct content once, shared by all trees, so only contents of
        the other versions of changed files are filtered out here; the query over-fetches
        (doubling while short, up to four times the limit) instead of joining a per-query
        table of the tree's hashes, which costs more than the search itself.
        """
        match = _fts_query(terms)
        if not match or not keep:
            return []
        fetch = limit + limit // 2
        while True:
            try:
                rows = self._conn.execute(sql, (match, fetch)).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"full-text search failed: {exc}") from exc
            kept = [r for r in rows if r[0] in keep]
            if len(kept) >= limit or len(rows) < fetch or fetch >= 4 * limit:
                return kept[:limit]
            fetch *= 2

    def symbols_named(self, names: Sequence[str], hashes: Collection[str]) -> list[SymbolHit]:
        wanted = list(dict.fromkeys(n for n in names if n))
        if not wanted or not hashes:
            return []
        keep = _as_set(hashes)
        out: list[SymbolHit] = []
        for batch in _batches(wanted):
            marks = ",".join("?" * len(batch))
            rows: list[Any] = self._conn.execute(
                "SELECT content_hash, qname, name, kind, start_line, end_line FROM code_symbols"
                f" WHERE name IN ({marks}) OR qname IN ({marks})",
                (*batch, *batch),
            ).fetchall()
            out.extend(
                SymbolHit(r[0], r[1], r[2], SymbolKind(r[3]), r[4], r[5], 0.0)
                for r in rows
                if r[0] in keep
            )
        return out

    def vectors(
        self, model: str, kind: str, hashes: Collection[str]
    ) -> dict[str, npt.NDArray[np.float32]]:
        out: dict[str, npt.NDArray[np.float32]] = {}
        for batch in _batches(list(hashes)):
            marks = ",".join("?" * len(batch))
            for h, blob in self._conn.execute(
                "SELECT content_hash, vec FROM code_vectors WHERE model = ? AND kind = ?"
                f" AND content_hash IN ({marks})",
                (model, kind, *batch),
            ):
                out[h] = np.frombuffer(blob, dtype=np.float32)
        return out


def code_store_for(store: object) -> SQLiteCodeStore:
    """The code-layer store living in the same database as ``store``.

    Raises :class:`StoreError` for a store that is not the SQLite store (the code layers are
    tables of that database).
    """
    from treeseek.store.sqlite import SQLiteStore, SQLiteTreeWriter

    if isinstance(store, SQLiteStore):
        # the calling thread's connection: reads see the last committed version of every tree
        return SQLiteCodeStore(store._conn(), store.contents)
    if isinstance(store, SQLiteTreeWriter):
        # inside a write: the transaction's own connection, so rows commit with the tree
        return SQLiteCodeStore(store.connection, store._store.contents)
    raise StoreError(f"the code index needs the SQLite store; got {type(store).__name__}")
