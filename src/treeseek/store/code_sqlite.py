"""SQLite storage of the code layers: tables keyed by content hash, term counts, vectors.

Layout (the schema is in :mod:`treeseek.store.migrations`, migrations 2, 4, 5 and 6):

- ``code_files``: one row per parsed content (language, parse error, counts).
- ``code_chunks`` + ``code_chunks_fts``: C0 chunk spans; the FTS row (same rowid) holds the
  chunk's code-aware tokens as the code index gave them (space-separated). Chunk text is not
  stored twice: it is sliced from the shared ``contents`` by line span when asked for.
- ``code_symbols`` + ``code_symbols_fts``: the C1 catalog; the FTS row holds tokens of the
  qualified name, signature, decorators and docstring. ``code_symbols.name`` is indexed for
  the exact lookups of query understanding.
- ``code_edges``, ``code_entrypoints``: C2 edges as found in one file, and C3 entrypoints.
- ``code_terms``: the database-wide vocabulary (term -> integer id).
- ``code_file_terms``: the bag of words of each content's file document (its chunk tokens)
  for file-level BM25: the token count and two blobs, the sorted uint32 term ids and their
  uint32 counts (``np.frombuffer``-loadable).
- ``code_part_terms``: the bags of words of each content's chunks and of its symbols'
  documents (:class:`~treeseek.store.code_base.PartTerms`), for chunk and symbol BM25 with
  one tree's statistics.
- ``code_vectors``: float32 vectors per (content hash, path, model, kind) (the embedded text
  includes the path, see :class:`~treeseek.store.code_base.VectorKey`), searched exactly with
  numpy (a tree holds at most tens of thousands of files: a brute-force scan is milliseconds,
  and Python's bundled sqlite3 here cannot load extensions such as sqlite-vec).

The FTS5 tables are kept as the store of the tokenized documents; nothing ranks with FTS5's
own statistics, which are those of every tree in the database.

Rows of a content disappear with the content (trigger on ``contents``), so deleting a tree
prunes its code layers exactly when the store drops the bytes nobody uses any more.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from treeseek.code.model import (
    Chunk,
    ChunkType,
    Edge,
    EdgeType,
    Entrypoint,
    Symbol,
    SymbolKind,
)
from treeseek.code.revisions import newest_revision, stale_paths
from treeseek.errors import StoreError
from treeseek.store._sql import batched, fetch_decoded, is_utf8, qmarks
from treeseek.store.code_base import (
    ChunkSpan,
    CodeFileInfo,
    FileTerms,
    PartLayer,
    PartTermBlobs,
    PartTerms,
    PreparedCode,
    SymbolHead,
    SymbolHit,
    SymbolRow,
    VectorKey,
)
from treeseek.store.failures import translate_failures
from treeseek.store.migrations import last_part_sql
from treeseek.store.rows import (
    CHUNK_COLUMNS,
    CODE_FILE_COLUMNS,
    EDGE_COLUMNS,
    ENTRYPOINT_COLUMNS,
    SYMBOL_COLUMNS,
    Decoded,
    chunks_from_rows,
    code_file_from_row,
    edge_from_row,
    entrypoint_from_row,
    symbol_from_row,
)
from treeseek.store.sqlite_terms import Vocabulary, as_uint32, encode_bag, encode_parts, term_ids
from treeseek.store.vector_search import exact_nearest

ContentReader = Callable[[Sequence[str]], dict[str, bytes]]
Connect = Callable[[], sqlite3.Connection]

_CHUNK_TYPES: dict[str, ChunkType] = {t.value: t for t in ChunkType}
_SYMBOL_KINDS: dict[str, SymbolKind] = {k.value: k for k in SymbolKind}


def _path_bytes(path: str) -> bytes:
    """A path as the store writes it (UTF-8, surrogate escapes: any name round-trips)."""
    return path.encode("utf-8", "surrogateescape")


def _path(raw: bytes) -> str:
    return bytes(raw).decode("utf-8", "surrogateescape")


def _vector_blob(vec: npt.NDArray[np.float32]) -> bytes:
    return np.asarray(vec, dtype=np.float32).tobytes()


def _json_obj(value: dict[str, Any]) -> str:
    return json.dumps(value) if value else "{}"


def _json_list(value: Sequence[str]) -> str:
    return json.dumps(list(value)) if value else "[]"


#: import edges that bind a name of their own: an ``alias`` or JavaScript ``names`` pairs
_BINDS_A_NAME = (
    "type = 'imports' AND (instr(lang_payload, '\"alias\"') > 0"
    " OR instr(lang_payload, '\"names\"') > 0)"
)


@translate_failures(sqlite3.Error)
class SQLiteCodeStore:
    """The code layers in the same SQLite database as the trees (implements ``CodeWriter``,
    and so ``CodeStore``).

    Made by the SQLite store: ``connect`` returns the connection to use (the calling thread's
    for reads, the write transaction's for a tree writer; the schema is migrated);
    ``read_contents`` returns raw bytes by content hash and gives chunks their text.
    """

    def __init__(
        self,
        connect: Connect,
        read_contents: ContentReader,
        *,
        failure: Callable[[Exception], StoreError],
    ) -> None:
        self._connect = connect
        self._failure = failure
        self._read_contents = read_contents
        self._vocabulary = Vocabulary(connect)

    @property
    def _conn(self) -> sqlite3.Connection:
        return self._connect()

    # -- writes ---------------------------------------------------------------------------
    def missing_code(self, hashes: Collection[str]) -> set[str]:
        wanted = list(dict.fromkeys(hashes))
        have: set[str] = set()
        for batch in batched(wanted):
            rows = self._conn.execute(
                f"SELECT content_hash FROM code_files WHERE content_hash IN ({qmarks(len(batch))})",
                batch,
            )
            have.update(r[0] for r in rows)
        return set(wanted) - have

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
            " symbol_count, parser_revision) VALUES (?, ?, ?, ?, ?, ?)",
            (
                content_hash,
                index.language,
                index.parse_error,
                len(index.chunks),
                len(index.symbols),
                prepared.revision,
            ),
        )
        self.put_file_terms(content_hash, prepared.term_counts)
        self._put_part_terms(content_hash, "chunks", prepared.chunk_terms)
        self._put_part_terms(content_hash, "symbols", prepared.symbol_terms)
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
            "code_part_terms",
            "code_chunks",
            "code_symbols",
            "code_edges",
            "code_entrypoints",
            "code_files",
        ):
            conn.execute(f"DELETE FROM {table} WHERE content_hash = ?", (content_hash,))

    def put_file_terms(self, content_hash: str, counts: Mapping[str, int]) -> None:
        ids, tfs = encode_bag(counts, self._vocabulary.ids(counts))
        self._conn.execute(
            "INSERT OR REPLACE INTO code_file_terms(content_hash, length, term_ids, counts)"
            " VALUES (?, ?, ?, ?)",
            (content_hash, int(tfs.sum()), ids.tobytes(), tfs.tobytes()),
        )

    def _put_part_terms(
        self, content_hash: str, layer: PartLayer, parts: Sequence[Mapping[str, int]]
    ) -> None:
        if not parts:
            return
        self._conn.execute(
            "INSERT OR REPLACE INTO code_part_terms(content_hash, layer, lengths, sizes,"
            " term_ids, counts) VALUES (?, ?, ?, ?, ?, ?)",
            (content_hash, layer, *encode_parts(parts, self._vocabulary)),
        )

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
        for batch in batched(list(hashes)):
            for digest, body in self._conn.execute(
                "SELECT c.content_hash, f.body FROM code_chunks AS c"
                " JOIN code_chunks_fts AS f ON f.rowid = c.id"
                f" WHERE c.content_hash IN ({qmarks(len(batch))}) ORDER BY c.content_hash, c.idx",
                batch,
            ):
                out.setdefault(digest, []).append(body)
        return out

    def stale_parses(self, tree: str) -> dict[str, str]:
        newest = newest_revision()
        if newest == 0:
            return {}
        rows = self._conn.execute(
            "SELECT n.content_hash, CAST(n.path AS BLOB), c.language, c.parser_revision"
            " FROM nodes AS n JOIN trees AS t ON t.id = n.tree_id"
            " JOIN code_files AS c ON c.content_hash = n.content_hash"
            " WHERE t.name = ? AND c.parser_revision < ?",
            (tree, newest),
        )
        return stale_paths((r[0], _path(r[1]), r[2], r[3]) for r in rows)

    def files_without_vectors(
        self, tree: str, model: str, kind: str
    ) -> dict[VectorKey, str | None]:
        rows = self._conn.execute(
            "SELECT n.content_hash, CAST(n.path AS BLOB), c.language FROM nodes AS n"
            " JOIN trees AS t ON t.id = n.tree_id"
            " JOIN code_files AS c ON c.content_hash = n.content_hash"
            " WHERE t.name = ? AND NOT EXISTS (SELECT 1 FROM code_vectors AS v"
            " WHERE v.content_hash = n.content_hash AND v.path = n.path"
            " AND v.model = ? AND v.kind = ?)",
            (tree, model, kind),
        )
        return {VectorKey(r[0], _path(r[1])): r[2] for r in rows}

    def heads(self, hashes: Collection[str], size: int) -> dict[str, bytes]:
        data = self._read_contents(list(hashes))
        return {h: raw[:size] for h, raw in data.items()}

    def missing_vectors(self, model: str, kind: str, keys: Collection[VectorKey]) -> set[VectorKey]:
        wanted = list(dict.fromkeys(keys))
        return set(wanted) - set(self._vector_rows(model, kind, wanted, "1"))

    def put_vectors(
        self, model: str, kind: str, items: Sequence[tuple[VectorKey, npt.NDArray[np.float32]]]
    ) -> None:
        self._conn.executemany(
            "INSERT OR REPLACE INTO code_vectors(content_hash, path, model, kind, vec)"
            " VALUES (?, CAST(? AS TEXT), ?, ?, ?)",
            [
                (key.content_hash, _path_bytes(key.path), model, kind, _vector_blob(v))
                for key, v in items
            ],
        )

    def vector_keys(self, kind: str, hashes: Collection[str]) -> list[tuple[str, VectorKey]]:
        out: list[tuple[str, VectorKey]] = []
        for batch in batched(sorted(set(hashes))):
            for digest, raw_path, model in self._conn.execute(
                "SELECT content_hash, CAST(path AS BLOB), model FROM code_vectors"
                f" WHERE content_hash IN ({qmarks(len(batch))}) AND kind = ?",
                (*batch, kind),
            ):
                out.append((model, VectorKey(digest, _path(raw_path))))
        return sorted(out)

    def delete_vectors(self, model: str, kind: str, keys: Collection[VectorKey]) -> None:
        self._conn.executemany(
            "DELETE FROM code_vectors WHERE content_hash = ? AND path = CAST(? AS TEXT)"
            " AND model = ? AND kind = ?",
            [(key.content_hash, _path_bytes(key.path), model, kind) for key in set(keys)],
        )

    def _vector_rows(
        self, model: str, kind: str, keys: Sequence[VectorKey], column: str
    ) -> dict[VectorKey, Any]:
        """``column`` of the stored vectors of ``keys``, by key: the keys' content hashes are
        looked up through the primary key, then the rows of other paths dropped."""
        wanted = set(keys)
        out: dict[VectorKey, Any] = {}
        for batch in batched(sorted({key.content_hash for key in keys})):
            for digest, raw_path, value in self._conn.execute(
                f"SELECT content_hash, CAST(path AS BLOB), {column} FROM code_vectors"
                f" WHERE content_hash IN ({qmarks(len(batch))}) AND model = ? AND kind = ?",
                (*batch, model, kind),
            ):
                key = VectorKey(digest, _path(raw_path))
                if key in wanted:
                    out[key] = value
        return out

    # -- reads ----------------------------------------------------------------------------
    def code_files(self, hashes: Collection[str]) -> dict[str, CodeFileInfo]:
        out: dict[str, CodeFileInfo] = {}
        for batch in batched(list(hashes)):
            for row in self._conn.execute(
                f"SELECT {CODE_FILE_COLUMNS} FROM code_files"
                f" WHERE content_hash IN ({qmarks(len(batch))})",
                batch,
            ):
                out[row[0]] = code_file_from_row(row)
        return out

    def chunks(self, content_hash: str) -> list[Chunk]:
        rows = self._conn.execute(
            f"SELECT {CHUNK_COLUMNS} FROM code_chunks WHERE content_hash = ? ORDER BY idx",
            (content_hash,),
        ).fetchall()
        if not rows:
            return []
        return chunks_from_rows(rows, self._read_contents([content_hash]).get(content_hash, b""))

    def symbols(self, content_hash: str) -> list[Symbol]:
        return self.symbols_of([content_hash]).get(content_hash, [])

    def symbols_of(self, hashes: Collection[str]) -> dict[str, list[Symbol]]:
        out: dict[str, list[Symbol]] = {}
        memo: Decoded = {}
        for batch in batched(list(hashes)):
            for row in self._conn.execute(
                f"SELECT content_hash, {SYMBOL_COLUMNS} FROM code_symbols"
                f" WHERE content_hash IN ({qmarks(len(batch))}) ORDER BY content_hash, ord",
                batch,
            ):
                out.setdefault(row[0], []).append(symbol_from_row(row, 1, memo))
        return out

    def edges(self, content_hash: str) -> list[Edge]:
        return self.edges_of([content_hash]).get(content_hash, [])

    def edges_of(self, hashes: Collection[str]) -> dict[str, list[Edge]]:
        out: dict[str, list[Edge]] = {}
        memo: Decoded = {}
        for batch in batched(list(hashes)):
            for row in self._conn.execute(
                f"SELECT content_hash, {EDGE_COLUMNS} FROM code_edges"
                f" WHERE content_hash IN ({qmarks(len(batch))}) ORDER BY content_hash, ord",
                batch,
            ):
                out.setdefault(row[0], []).append(edge_from_row(row, 1, memo))
        return out

    def import_refs(self, hashes: Collection[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for batch in batched(list(hashes)):
            for digest, ref in self._conn.execute(
                "SELECT content_hash, dst_ref FROM code_edges"
                f" WHERE content_hash IN ({qmarks(len(batch))}) AND type = ?"
                " ORDER BY content_hash, ord",
                (*batch, EdgeType.IMPORTS.value),
            ):
                out.setdefault(digest, []).append(ref)
        return out

    def base_refs(self, hashes: Collection[str]) -> dict[str, list[tuple[str, str]]]:
        return self._edge_pairs("src, dst_ref", "type = 'inherits'", hashes)

    def import_bindings(self, hashes: Collection[str]) -> dict[str, list[tuple[str, str]]]:
        return self._edge_pairs("dst_ref, lang_payload", _BINDS_A_NAME, hashes)

    def _edge_pairs(
        self, columns: str, where: str, hashes: Collection[str]
    ) -> dict[str, list[tuple[str, str]]]:
        out: dict[str, list[tuple[str, str]]] = {}
        for batch in batched(list(hashes)):
            for digest, first, second in self._conn.execute(
                f"SELECT content_hash, {columns} FROM code_edges"
                f" WHERE content_hash IN ({qmarks(len(batch))}) AND {where}"
                " ORDER BY content_hash, ord",
                batch,
            ):
                out.setdefault(digest, []).append((first, second))
        return out

    def entrypoints(self, content_hash: str) -> list[Entrypoint]:
        return [
            entrypoint_from_row(r)
            for r in self._conn.execute(
                f"SELECT {ENTRYPOINT_COLUMNS} FROM code_entrypoints"
                " WHERE content_hash = ? ORDER BY ord",
                (content_hash,),
            )
        ]

    def entrypoints_of(self, hashes: Collection[str]) -> dict[str, list[Entrypoint]]:
        out: dict[str, list[Entrypoint]] = {}
        for batch in batched(list(hashes)):
            for row in self._conn.execute(
                f"SELECT content_hash, {ENTRYPOINT_COLUMNS} FROM code_entrypoints"
                f" WHERE content_hash IN ({qmarks(len(batch))}) ORDER BY content_hash, ord",
                batch,
            ):
                out.setdefault(row[0], []).append(entrypoint_from_row(row[1:]))
        return out

    def file_terms(self, hashes: Collection[str]) -> dict[str, FileTerms]:
        out: dict[str, FileTerms] = {}
        for batch in batched(list(hashes)):
            for digest, length, ids, counts in self._conn.execute(
                "SELECT content_hash, length, term_ids, counts FROM code_file_terms"
                f" WHERE content_hash IN ({qmarks(len(batch))})",
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
        return term_ids(self._conn, terms)

    def part_terms(self, layer: PartLayer, hashes: Collection[str]) -> dict[str, PartTerms]:
        out: dict[str, PartTerms] = {}
        conn = self._conn
        for batch in batched(list(hashes)):
            for digest, lengths, sizes, ids, counts in conn.execute(
                "SELECT content_hash, lengths, sizes, term_ids, counts FROM code_part_terms"
                f" WHERE layer = ? AND content_hash IN ({qmarks(len(batch))})",
                (layer, *batch),
            ):
                out[digest] = PartTerms(
                    digest, as_uint32(lengths), as_uint32(sizes), as_uint32(ids), as_uint32(counts)
                )
        return out

    def part_term_blobs(self, layer: PartLayer, hashes: Collection[str]) -> list[PartTermBlobs]:
        out: list[PartTermBlobs] = []
        conn = self._conn
        for batch in batched(list(hashes)):
            out += fetch_decoded(
                conn,
                "SELECT content_hash, lengths, sizes, term_ids, counts FROM code_part_terms"
                f" WHERE layer = ? AND content_hash IN ({qmarks(len(batch))})",
                (layer, *batch),
            )
        return out

    def chunk_spans(self, hashes: Collection[str]) -> dict[str, list[ChunkSpan]]:
        out: dict[str, list[ChunkSpan]] = {}
        kinds = _CHUNK_TYPES  # a dict lookup: the enum call costs more over a tree's rows
        conn = self._conn
        for batch in batched(list(hashes)):
            for digest, idx, kind, start, end, symbol in conn.execute(
                "SELECT content_hash, idx, type, start_line, end_line, symbol FROM code_chunks"
                f" WHERE content_hash IN ({qmarks(len(batch))}) ORDER BY content_hash, idx",
                batch,
            ):
                out.setdefault(digest, []).append(
                    ChunkSpan(digest, idx, kinds[kind], start, end, symbol)
                )
        return out

    def symbol_heads(self, hashes: Collection[str]) -> dict[str, list[SymbolHead]]:
        out: dict[str, list[SymbolHead]] = {}
        kinds = _SYMBOL_KINDS
        conn = self._conn
        for batch in batched(list(hashes)):
            for digest, qname, name, kind, start, end in fetch_decoded(
                conn,
                "SELECT content_hash, qname, name, kind, start_line, end_line FROM code_symbols"
                f" WHERE content_hash IN ({qmarks(len(batch))}) ORDER BY content_hash, ord",
                batch,
            ):
                out.setdefault(digest, []).append(
                    SymbolHead(digest, qname, name, kinds[kind], start, end)
                )
        return out

    def symbol_rows(self, hashes: Collection[str]) -> list[SymbolRow]:
        out: list[SymbolRow] = []
        conn = self._conn
        for batch in batched(sorted(hashes)):
            out += fetch_decoded(
                conn,
                "SELECT content_hash, qname, name, kind, start_line, end_line FROM code_symbols"
                f" WHERE content_hash IN ({qmarks(len(batch))}) ORDER BY content_hash, ord",
                batch,
            )
        return out

    def symbol_rows_named(self, names: Sequence[str], hashes: Collection[str]) -> list[SymbolRow]:
        # a name that is not UTF-8 cannot be bound, and no stored name is one (symbols are
        # decoded text): it matches nothing
        wanted = [n for n in dict.fromkeys(names) if is_utf8(n)]
        keep = hashes if isinstance(hashes, (set, frozenset)) else set(hashes)
        if not wanted or not keep:
            return []
        found: dict[int, tuple[Any, ...]] = {}
        for batch in batched(wanted):
            marks = qmarks(len(batch))
            for row in fetch_decoded(
                self._conn,
                "SELECT id, content_hash, ord, qname, name, kind, start_line, end_line"
                f" FROM code_symbols WHERE name IN ({marks}) OR qname IN ({marks})",
                (*batch, *batch),
            ):
                if row[1] in keep:
                    found[row[0]] = row
        ordered = sorted(found.values(), key=lambda r: (r[1], r[2], r[0]))
        return [(r[1], r[3], r[4], r[5], r[6], r[7]) for r in ordered]

    def symbols_named(self, names: Sequence[str], hashes: Collection[str]) -> list[SymbolHit]:
        wanted = list(dict.fromkeys(n for n in names if n))
        if not wanted or not hashes:
            return []
        keep = hashes if isinstance(hashes, (set, frozenset)) else set(hashes)
        out: list[SymbolHit] = []
        for batch in batched(wanted):
            rows: list[Any] = self._conn.execute(
                "SELECT content_hash, qname, name, kind, start_line, end_line FROM code_symbols"
                f" WHERE name IN ({qmarks(len(batch))}) OR qname IN ({qmarks(len(batch))})",
                (*batch, *batch),
            ).fetchall()
            out.extend(
                SymbolHit(r[0], r[1], r[2], SymbolKind(r[3]), r[4], r[5], 0.0)
                for r in rows
                if r[0] in keep
            )
        return out

    def symbols_last_named(self, name: str, hashes: Collection[str]) -> list[SymbolHit]:
        if not name or not hashes:
            return []
        keep = hashes if isinstance(hashes, (set, frozenset)) else set(hashes)
        rows: list[Any] = self._conn.execute(
            "SELECT content_hash, qname, name, kind, start_line, end_line FROM code_symbols"
            f" WHERE {last_part_sql('qname')} = ? ORDER BY content_hash, ord",
            (name,),
        ).fetchall()
        return [
            SymbolHit(r[0], r[1], r[2], SymbolKind(r[3]), r[4], r[5], 0.0)
            for r in rows
            if r[0] in keep
        ]

    def calls_named(self, name: str, hashes: Collection[str]) -> set[str]:
        if not hashes:
            return set()
        keep = hashes if isinstance(hashes, (set, frozenset)) else set(hashes)
        rows = self._conn.execute(
            "SELECT DISTINCT content_hash FROM code_edges"
            f" WHERE type = 'calls' AND {last_part_sql('dst_ref')} = ?",
            (name,),
        )
        return {str(r[0]) for r in rows if r[0] in keep}

    def vectors(
        self, model: str, kind: str, keys: Collection[VectorKey]
    ) -> dict[VectorKey, npt.NDArray[np.float32]]:
        rows = self._vector_rows(model, kind, list(keys), "vec")
        return {key: np.frombuffer(blob, dtype=np.float32) for key, blob in rows.items()}

    def vector_kinds(self) -> list[tuple[str, str]]:
        rows = self._conn.execute("SELECT DISTINCT model, kind FROM code_vectors ORDER BY 1, 2")
        return [(str(m), str(k)) for m, k in rows]

    def nearest(
        self,
        model: str,
        kind: str,
        query: npt.NDArray[np.float32],
        k: int,
        keys: Collection[VectorKey] | None = None,
    ) -> list[tuple[VectorKey, float]]:
        """Exact: every vector among ``keys`` scored (see ``CodeStore.nearest``)."""
        if keys is None:
            rows = self._conn.execute(
                "SELECT content_hash, CAST(path AS BLOB), vec FROM code_vectors"
                " WHERE model = ? AND kind = ?",
                (model, kind),
            )
            found = {
                VectorKey(h, _path(p)): np.frombuffer(blob, dtype=np.float32) for h, p, blob in rows
            }
        else:
            found = self.vectors(model, kind, keys)
        dim = int(np.asarray(query).shape[0])
        return exact_nearest({h: v for h, v in found.items() if v.shape[0] == dim}, query, k)
