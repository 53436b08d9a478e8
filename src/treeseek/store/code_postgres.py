"""PostgreSQL storage of the code layers: the same rows and term-count blobs as SQLite's.

Tables (:data:`treeseek.store.migrations.POSTGRES_MIGRATIONS`) mirror
:mod:`treeseek.store.code_sqlite`, with the chunk and symbol documents as plain columns (no
FTS: nothing ranks with a database-wide index) and vectors, per (content hash, path), in a
pgvector column, searched exactly per tree (:meth:`PostgresCodeStore.nearest`).

A writer (:meth:`treeseek.store.postgres.PostgresTreeWriter.code`) buffers the rows of
:meth:`PostgresCodeStore.put_prepared` and writes them with ``COPY`` in batches (one round trip
per table, not per file); every read of the writer flushes first, so it sees its own rows. Two
writers of different trees parsing the same content concurrently: the first to insert the
``code_files`` row owns it, the other skips that content's rows (they are the same rows).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, cast

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
from treeseek.store._sql import is_utf8
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
from treeseek.store.migrations import POSTGRES_CODE_TABLES, last_part_sql
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
from treeseek.store.sqlite_terms import as_uint32, encode_bag, encode_parts
from treeseek.store.vector_cache import MatrixKey, VectorCache
from treeseek.store.vector_search import VectorMatrix, exact_nearest

if TYPE_CHECKING:
    import psycopg

Connect = Callable[[], AbstractContextManager["psycopg.Connection[Any]"]]
ContentReader = Callable[[Sequence[str]], dict[str, bytes]]

#: files whose rows a writer buffers before it writes them
FLUSH_FILES = 500

_CHUNK_TYPES: dict[str, ChunkType] = {t.value: t for t in ChunkType}
_SYMBOL_KINDS: dict[str, SymbolKind] = {k.value: k for k in SymbolKind}

_TERMS_SQL = """
WITH wanted AS (SELECT DISTINCT unnest(%s::text[]) COLLATE "C" AS term),
ins AS (
    INSERT INTO code_terms(term)
    SELECT w.term FROM wanted AS w
    WHERE NOT EXISTS (SELECT 1 FROM code_terms AS c WHERE c.term = w.term)
    ORDER BY w.term
    ON CONFLICT (term) DO NOTHING
    RETURNING term, id
)
SELECT term, id FROM ins
UNION ALL
SELECT c.term, c.id FROM code_terms AS c JOIN wanted AS w ON w.term = c.term
"""


def _json_obj(value: dict[str, Any]) -> str:
    return json.dumps(value) if value else "{}"


def _json_list(value: Sequence[str]) -> str:
    return json.dumps(list(value)) if value else "[]"


#: import edges that bind a name of their own: an ``alias`` or JavaScript ``names`` pairs
_BINDS_A_NAME = (
    "type = 'imports' AND (strpos(lang_payload, '\"alias\"') > 0"
    " OR strpos(lang_payload, '\"names\"') > 0)"
)


class _Vocabulary:
    """Term ids of one write, adding new terms to ``code_terms`` (one statement per batch)."""

    def __init__(self, connect: Connect) -> None:
        self._connect = connect
        self._known: dict[str, int] = {}
        self._lookups = 0
        self._loaded = False

    def ids(self, terms: Iterable[str]) -> dict[str, int]:
        known = self._known
        unseen = list(dict.fromkeys(t for t in terms if t not in known))
        if not unseen:
            return known
        with self._connect() as conn:
            if not self._loaded:
                self._lookups += 1
                if self._lookups > 64:  # most terms of a big write are known: read them all
                    known.update(conn.execute("SELECT term, id FROM code_terms").fetchall())
                    self._loaded = True
                    unseen = [t for t in unseen if t not in known]
            if unseen:
                known.update(conn.execute(_TERMS_SQL, (unseen,)).fetchall())
                missing = [t for t in unseen if t not in known]
                if missing:  # inserted by a concurrent writer after this statement began
                    known.update(
                        conn.execute(
                            "SELECT term, id FROM code_terms WHERE term = ANY(%s)", (missing,)
                        ).fetchall()
                    )
        return known


def term_ids(conn: psycopg.Connection[Any], terms: Collection[str]) -> dict[str, int]:
    rows = conn.execute(
        "SELECT term, id FROM code_terms WHERE term = ANY(%s)", (list(dict.fromkeys(terms)),)
    ).fetchall()
    return {t: int(i) for t, i in rows}


class PostgresCodeStore:
    """The code layers in the PostgreSQL database (implements ``CodeWriter``).

    ``connect`` lends a connection (the pool's for reads, the write transaction's for a
    writer); ``read_contents`` returns raw bytes by content hash; ``writer``: buffer writes;
    ``cache``: where :meth:`nearest` keeps trees' vectors between queries (a reader's; none
    for a writer, whose transaction sees its own rows).
    """

    def __init__(
        self,
        connect: Connect,
        read_contents: ContentReader,
        *,
        writer: bool,
        cache: VectorCache | None = None,
    ) -> None:
        self._connect = connect
        self._read_contents = read_contents
        self._writer = writer
        self._cache = None if writer else cache
        self._vocabulary = _Vocabulary(connect)
        self._pending: dict[str, tuple[PreparedCode, Mapping[str, int] | None]] = {}
        self._file_terms: dict[str, tuple[int, bytes, bytes]] = {}
        self._part_rows: dict[tuple[str, str], tuple[str, str, bytes, bytes, bytes, bytes]] = {}

    def _read(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        if self._writer:
            self.flush()
        return self._connect()

    # -- writes ---------------------------------------------------------------------------
    def missing_code(self, hashes: Collection[str]) -> set[str]:
        wanted = list(dict.fromkeys(hashes))
        with self._read() as conn:
            rows = conn.execute(
                "SELECT content_hash FROM code_files WHERE content_hash = ANY(%s)", (wanted,)
            ).fetchall()
        return set(wanted) - {r[0] for r in rows}

    def put_prepared(self, content_hash: str, prepared: PreparedCode) -> None:
        # term ids now (the vocabulary is shared by the write), rows at the next flush
        ids, tfs = encode_bag(prepared.term_counts, self._vocabulary.ids(prepared.term_counts))
        self._file_terms[content_hash] = (int(tfs.sum()), ids.tobytes(), tfs.tobytes())
        for layer, parts in (("chunks", prepared.chunk_terms), ("symbols", prepared.symbol_terms)):
            self._part_rows.pop((content_hash, layer), None)
            if parts:
                self._part_rows[content_hash, layer] = (
                    content_hash,
                    layer,
                    *encode_parts(parts, self._vocabulary),
                )
        self._pending[content_hash] = (prepared, None)
        if len(self._pending) >= FLUSH_FILES:
            self.flush()

    def put_file_terms(self, content_hash: str, counts: Mapping[str, int]) -> None:
        ids, tfs = encode_bag(counts, self._vocabulary.ids(counts))
        with self._read() as conn:
            conn.execute(
                "INSERT INTO code_file_terms(content_hash, length, term_ids, counts)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (content_hash) DO UPDATE SET"
                " length = EXCLUDED.length, term_ids = EXCLUDED.term_ids,"
                " counts = EXCLUDED.counts",
                (content_hash, int(tfs.sum()), ids.tobytes(), tfs.tobytes()),
            )

    def flush(self) -> None:
        """Write the buffered rows (a writer's reads and its commit call this)."""
        if not self._pending:
            return
        pending, file_terms, part_rows = self._pending, self._file_terms, self._part_rows
        self._pending, self._file_terms, self._part_rows = {}, {}, {}
        hashes = list(pending)
        with self._connect() as conn, conn.cursor() as cur:
            for table in POSTGRES_CODE_TABLES:  # replace what was stored for these contents
                cur.execute(f"DELETE FROM {table} WHERE content_hash = ANY(%s)", (hashes,))
            infos = [
                (
                    h,
                    p.index.language,
                    p.index.parse_error,
                    len(p.index.chunks),
                    len(p.index.symbols),
                    p.revision,
                )
                for h, (p, _) in pending.items()
            ]
            cur.execute(
                "INSERT INTO code_files(content_hash, language, parse_error, chunk_count,"
                " symbol_count, parser_revision) SELECT * FROM unnest(%s::text[], %s::text[],"
                " %s::text[], %s::int[], %s::int[], %s::int[]) ON CONFLICT (content_hash)"
                " DO NOTHING RETURNING content_hash",
                [list(column) for column in zip(*infos, strict=True)],
            )
            owned = {r[0] for r in cur.fetchall()}
            with cur.copy(
                "COPY code_chunks(content_hash, idx, type, start_line, end_line, symbol, body)"
                " FROM STDIN"
            ) as copy:
                for h in hashes:
                    if h in owned:
                        p = pending[h][0]
                        for c, body in zip(p.index.chunks, p.chunk_bodies, strict=True):
                            copy.write_row(
                                (h, c.index, str(c.type), c.start_line, c.end_line, c.symbol, body)
                            )
            with cur.copy(
                "COPY code_symbols(content_hash, ord, qname, name, kind, start_line, end_line,"
                " signature, decorators, docstring, parent, is_entry, lang_payload, body)"
                " FROM STDIN"
            ) as copy:
                for h in hashes:
                    if h in owned:
                        p = pending[h][0]
                        for i, (s, body) in enumerate(
                            zip(p.index.symbols, p.symbol_bodies, strict=True)
                        ):
                            copy.write_row(
                                (
                                    h,
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
                                    s.is_entry_candidate,
                                    _json_obj(s.lang_payload),
                                    body,
                                )
                            )
            with cur.copy(
                "COPY code_edges(content_hash, ord, type, src, dst_ref, line, lang_payload)"
                " FROM STDIN"
            ) as copy:
                for h in hashes:
                    if h in owned:
                        for i, e in enumerate(pending[h][0].index.edges):
                            copy.write_row(
                                (
                                    h,
                                    i,
                                    str(e.type),
                                    e.src,
                                    e.dst_ref,
                                    e.line,
                                    _json_obj(e.lang_payload),
                                )
                            )
            with cur.copy(
                "COPY code_entrypoints(content_hash, ord, entry_type, framework,"
                " route_or_command, handler, line, lang_payload) FROM STDIN"
            ) as copy:
                for h in hashes:
                    if h in owned:
                        for i, ep in enumerate(pending[h][0].index.entrypoints):
                            copy.write_row(
                                (
                                    h,
                                    i,
                                    ep.entry_type,
                                    ep.framework,
                                    ep.route_or_command,
                                    ep.handler,
                                    ep.line,
                                    _json_obj(ep.lang_payload),
                                )
                            )
            with cur.copy(
                "COPY code_file_terms(content_hash, length, term_ids, counts) FROM STDIN"
            ) as copy:
                for h, (length, ids, tfs) in file_terms.items():
                    if h in owned:
                        copy.write_row((h, length, ids, tfs))
            with cur.copy(
                "COPY code_part_terms(content_hash, layer, lengths, sizes, term_ids, counts)"
                " FROM STDIN"
            ) as copy:
                for row in part_rows.values():
                    if row[0] in owned:
                        copy.write_row(row)

    def contents_without_terms(self, tree: str) -> set[str]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT DISTINCT n.content_hash FROM nodes AS n"
                " JOIN trees AS t ON t.id = n.tree_id"
                " JOIN code_files AS c ON c.content_hash = n.content_hash"
                " WHERE t.name = %s AND NOT EXISTS"
                " (SELECT 1 FROM code_file_terms AS f WHERE f.content_hash = n.content_hash)",
                (tree,),
            ).fetchall()
        return {r[0] for r in rows}

    def stale_parses(self, tree: str) -> dict[str, str]:
        newest = newest_revision()
        if newest == 0:
            return {}
        with self._read() as conn:
            rows = conn.execute(
                "SELECT n.content_hash, n.path, c.language, c.parser_revision FROM nodes AS n"
                " JOIN trees AS t ON t.id = n.tree_id"
                " JOIN code_files AS c ON c.content_hash = n.content_hash"
                " WHERE t.name = %s AND c.parser_revision < %s",
                (tree, newest),
            ).fetchall()
        return stale_paths((r[0], _path(r[1]), r[2], r[3]) for r in rows)

    def files_without_vectors(
        self, tree: str, model: str, kind: str
    ) -> dict[VectorKey, str | None]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT n.content_hash, n.path, c.language FROM nodes AS n"
                " JOIN trees AS t ON t.id = n.tree_id"
                " JOIN code_files AS c ON c.content_hash = n.content_hash"
                " WHERE t.name = %s AND NOT EXISTS (SELECT 1 FROM code_vectors AS v"
                " WHERE v.content_hash = n.content_hash AND v.path = n.path"
                " AND v.model = %s AND v.kind = %s)",
                (tree, model, kind),
            ).fetchall()
        return {VectorKey(r[0], _path(r[1])): r[2] for r in rows}

    def heads(self, hashes: Collection[str], size: int) -> dict[str, bytes]:
        data = self._read_contents(list(hashes))
        return {h: raw[:size] for h, raw in data.items()}

    def missing_vectors(self, model: str, kind: str, keys: Collection[VectorKey]) -> set[VectorKey]:
        wanted = list(dict.fromkeys(keys))
        hashes, paths = _key_arrays(wanted)
        with self._read() as conn:
            rows = conn.execute(
                "SELECT v.content_hash, v.path FROM code_vectors AS v"
                " JOIN unnest(%s::text[], %s::bytea[]) AS w(content_hash, path)"
                " ON v.content_hash = w.content_hash AND v.path = w.path"
                " WHERE v.model = %s AND v.kind = %s",
                (hashes, paths, model, kind),
            ).fetchall()
        return set(wanted) - {VectorKey(r[0], _path(r[1])) for r in rows}

    def put_vectors(
        self, model: str, kind: str, items: Sequence[tuple[VectorKey, npt.NDArray[np.float32]]]
    ) -> None:
        if not items:
            return
        from pgvector import Vector

        rows = [
            (
                key.content_hash,
                _path_bytes(key.path),
                model,
                kind,
                Vector(np.asarray(v, dtype=np.float32)),
            )
            for key, v in items
        ]
        with self._read() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO code_vectors(content_hash, path, model, kind, vec)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (content_hash, path, model, kind)"
                " DO UPDATE SET vec = EXCLUDED.vec",
                rows,
            )

    def vector_keys(self, kind: str, hashes: Collection[str]) -> list[tuple[str, VectorKey]]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT content_hash, path, model FROM code_vectors"
                " WHERE content_hash = ANY(%s) AND kind = %s",
                (sorted(set(hashes)), kind),
            ).fetchall()
        return sorted((r[2], VectorKey(r[0], _path(r[1]))) for r in rows)

    def delete_vectors(self, model: str, kind: str, keys: Collection[VectorKey]) -> None:
        if not keys:
            return
        hashes, paths = _key_arrays(list(dict.fromkeys(keys)))
        with self._read() as conn:
            conn.execute(
                "DELETE FROM code_vectors AS v USING unnest(%s::text[], %s::bytea[])"
                " AS w(content_hash, path) WHERE v.content_hash = w.content_hash"
                " AND v.path = w.path AND v.model = %s AND v.kind = %s",
                (hashes, paths, model, kind),
            )

    # -- reads ----------------------------------------------------------------------------
    def code_files(self, hashes: Collection[str]) -> dict[str, CodeFileInfo]:
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {CODE_FILE_COLUMNS} FROM code_files WHERE content_hash = ANY(%s)",
                (list(hashes),),
            ).fetchall()
        return {r[0]: code_file_from_row(r) for r in rows}

    def chunks(self, content_hash: str) -> list[Chunk]:
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {CHUNK_COLUMNS} FROM code_chunks WHERE content_hash = %s ORDER BY idx",
                (content_hash,),
            ).fetchall()
        if not rows:
            return []
        return chunks_from_rows(rows, self._read_contents([content_hash]).get(content_hash, b""))

    def chunk_documents(self, hashes: Collection[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        with self._read() as conn:
            rows = conn.execute(
                "SELECT content_hash, body FROM code_chunks WHERE content_hash = ANY(%s)"
                " ORDER BY content_hash, idx",
                (list(hashes),),
            ).fetchall()
        for digest, body in rows:
            out.setdefault(digest, []).append(body)
        return out

    def symbols(self, content_hash: str) -> list[Symbol]:
        return self.symbols_of([content_hash]).get(content_hash, [])

    def symbols_of(self, hashes: Collection[str]) -> dict[str, list[Symbol]]:
        out: dict[str, list[Symbol]] = {}
        memo: Decoded = {}
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT content_hash, {SYMBOL_COLUMNS} FROM code_symbols"
                " WHERE content_hash = ANY(%s) ORDER BY content_hash, ord",
                (list(hashes),),
            ).fetchall()
        for row in rows:
            out.setdefault(row[0], []).append(symbol_from_row(row, 1, memo))
        return out

    def edges(self, content_hash: str) -> list[Edge]:
        return self.edges_of([content_hash]).get(content_hash, [])

    def edges_of(self, hashes: Collection[str]) -> dict[str, list[Edge]]:
        out: dict[str, list[Edge]] = {}
        memo: Decoded = {}
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT content_hash, {EDGE_COLUMNS} FROM code_edges"
                " WHERE content_hash = ANY(%s) ORDER BY content_hash, ord",
                (list(hashes),),
            ).fetchall()
        for row in rows:
            out.setdefault(row[0], []).append(edge_from_row(row, 1, memo))
        return out

    def import_refs(self, hashes: Collection[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        with self._read() as conn:
            rows = conn.execute(
                "SELECT content_hash, dst_ref FROM code_edges"
                " WHERE content_hash = ANY(%s) AND type = %s ORDER BY content_hash, ord",
                (list(hashes), EdgeType.IMPORTS.value),
            ).fetchall()
        for digest, ref in rows:
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
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT content_hash, {columns} FROM code_edges"
                f" WHERE content_hash = ANY(%s) AND {where} ORDER BY content_hash, ord",
                (list(hashes),),
            ).fetchall()
        for digest, first, second in rows:
            out.setdefault(digest, []).append((first, second))
        return out

    def entrypoints(self, content_hash: str) -> list[Entrypoint]:
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {ENTRYPOINT_COLUMNS} FROM code_entrypoints"
                " WHERE content_hash = %s ORDER BY ord",
                (content_hash,),
            ).fetchall()
        return [entrypoint_from_row(r) for r in rows]

    def entrypoints_of(self, hashes: Collection[str]) -> dict[str, list[Entrypoint]]:
        out: dict[str, list[Entrypoint]] = {}
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT content_hash, {ENTRYPOINT_COLUMNS} FROM code_entrypoints"
                " WHERE content_hash = ANY(%s) ORDER BY content_hash, ord",
                (list(hashes),),
            ).fetchall()
        for row in rows:
            out.setdefault(row[0], []).append(entrypoint_from_row(row[1:]))
        return out

    def term_ids(self, terms: Collection[str]) -> dict[str, int]:
        with self._read() as conn:
            return term_ids(conn, terms)

    def file_terms(self, hashes: Collection[str]) -> dict[str, FileTerms]:
        with self._read() as conn, conn.cursor(binary=True) as cur:
            rows = cur.execute(
                "SELECT content_hash, length, term_ids, counts FROM code_file_terms"
                " WHERE content_hash = ANY(%s)",
                (list(hashes),),
            ).fetchall()
        return {
            digest: FileTerms(digest, int(length), as_uint32(ids), as_uint32(counts))
            for digest, length, ids, counts in rows
        }

    def part_terms(self, layer: PartLayer, hashes: Collection[str]) -> dict[str, PartTerms]:
        with self._read() as conn, conn.cursor(binary=True) as cur:
            rows = cur.execute(
                "SELECT content_hash, lengths, sizes, term_ids, counts FROM code_part_terms"
                " WHERE layer = %s AND content_hash = ANY(%s)",
                (layer, list(hashes)),
            ).fetchall()
        return {
            digest: PartTerms(
                digest, as_uint32(lengths), as_uint32(sizes), as_uint32(ids), as_uint32(counts)
            )
            for digest, lengths, sizes, ids, counts in rows
        }

    def part_term_blobs(self, layer: PartLayer, hashes: Collection[str]) -> list[PartTermBlobs]:
        with self._read() as conn, conn.cursor(binary=True) as cur:
            rows = cur.execute(
                "SELECT content_hash, lengths, sizes, term_ids, counts FROM code_part_terms"
                " WHERE layer = %s AND content_hash = ANY(%s)",
                (layer, list(hashes)),
            ).fetchall()
        return cast("list[PartTermBlobs]", rows)  # plain tuples; bytea reads as bytes

    def chunk_spans(self, hashes: Collection[str]) -> dict[str, list[ChunkSpan]]:
        out: dict[str, list[ChunkSpan]] = {}
        kinds = _CHUNK_TYPES
        with self._read() as conn, conn.cursor(binary=True) as cur:
            rows = cur.execute(
                "SELECT content_hash, idx, type, start_line, end_line, symbol FROM code_chunks"
                " WHERE content_hash = ANY(%s) ORDER BY content_hash, idx",
                (list(hashes),),
            ).fetchall()
        for digest, idx, kind, start, end, symbol in rows:
            out.setdefault(digest, []).append(
                ChunkSpan(digest, idx, kinds[kind], start, end, symbol)
            )
        return out

    def symbol_heads(self, hashes: Collection[str]) -> dict[str, list[SymbolHead]]:
        out: dict[str, list[SymbolHead]] = {}
        kinds = _SYMBOL_KINDS
        with self._read() as conn, conn.cursor(binary=True) as cur:
            rows = cur.execute(
                "SELECT content_hash, qname, name, kind, start_line, end_line FROM code_symbols"
                " WHERE content_hash = ANY(%s) ORDER BY content_hash, ord",
                (list(hashes),),
            ).fetchall()
        for digest, qname, name, kind, start, end in rows:
            out.setdefault(digest, []).append(
                SymbolHead(digest, qname, name, kinds[kind], start, end)
            )
        return out

    def symbol_rows(self, hashes: Collection[str]) -> list[SymbolRow]:
        with self._read() as conn, conn.cursor(binary=True) as cur:
            rows = cur.execute(
                "SELECT content_hash, qname, name, kind, start_line, end_line FROM code_symbols"
                " WHERE content_hash = ANY(%s) ORDER BY content_hash, ord",
                (list(hashes),),
            ).fetchall()
        return cast("list[SymbolRow]", rows)  # plain tuples (the default row factory)

    def symbol_rows_named(self, names: Sequence[str], hashes: Collection[str]) -> list[SymbolRow]:
        # a name that is not UTF-8 cannot be sent, and no stored name is one: it matches nothing
        wanted = [n for n in dict.fromkeys(names) if is_utf8(n)]
        keep = hashes if isinstance(hashes, (set, frozenset)) else set(hashes)
        if not wanted or not keep:
            return []
        with self._read() as conn:
            rows = conn.execute(
                "SELECT content_hash, qname, name, kind, start_line, end_line FROM code_symbols"
                " WHERE name = ANY(%s) OR qname = ANY(%s) ORDER BY content_hash, ord",
                (wanted, wanted),
            ).fetchall()
        return [cast("SymbolRow", r) for r in rows if r[0] in keep]

    def symbols_named(self, names: Sequence[str], hashes: Collection[str]) -> list[SymbolHit]:
        wanted = list(dict.fromkeys(n for n in names if n))
        if not wanted or not hashes:
            return []
        keep = hashes if isinstance(hashes, (set, frozenset)) else set(hashes)
        with self._read() as conn:
            rows = conn.execute(
                "SELECT content_hash, qname, name, kind, start_line, end_line FROM code_symbols"
                " WHERE name = ANY(%s) OR qname = ANY(%s) ORDER BY content_hash, ord",
                (wanted, wanted),
            ).fetchall()
        return [
            SymbolHit(r[0], r[1], r[2], SymbolKind(r[3]), r[4], r[5], 0.0)
            for r in rows
            if r[0] in keep
        ]

    def symbols_last_named(self, name: str, hashes: Collection[str]) -> list[SymbolHit]:
        if not name or not hashes:
            return []
        keep = hashes if isinstance(hashes, (set, frozenset)) else set(hashes)
        with self._read() as conn:
            rows = conn.execute(
                "SELECT content_hash, qname, name, kind, start_line, end_line FROM code_symbols"
                f" WHERE {last_part_sql('qname')} = %s ORDER BY content_hash, ord",
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
        with self._read() as conn:
            rows = conn.execute(
                "SELECT DISTINCT content_hash FROM code_edges"
                f" WHERE type = 'calls' AND {last_part_sql('dst_ref')} = %s",
                (name,),
            ).fetchall()
        return {str(r[0]) for r in rows if r[0] in keep}

    def vectors(
        self, model: str, kind: str, keys: Collection[VectorKey]
    ) -> dict[VectorKey, npt.NDArray[np.float32]]:
        hashes, paths = _key_arrays(list(dict.fromkeys(keys)))
        with self._read() as conn, conn.cursor(binary=True) as cur:
            rows = cur.execute(
                "SELECT v.content_hash, v.path, v.vec FROM code_vectors AS v"
                " JOIN unnest(%s::text[], %s::bytea[]) AS w(content_hash, path)"
                " ON v.content_hash = w.content_hash AND v.path = w.path"
                " WHERE v.model = %s AND v.kind = %s",
                (hashes, paths, model, kind),
            ).fetchall()
        return {VectorKey(h, _path(p)): _as_float32(v) for h, p, v in rows}

    def vector_kinds(self) -> list[tuple[str, str]]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT DISTINCT model, kind FROM code_vectors ORDER BY 1, 2"
            ).fetchall()
        return [(str(m), str(k)) for m, k in rows]

    def nearest(
        self,
        model: str,
        kind: str,
        query: npt.NDArray[np.float32],
        k: int,
        keys: Collection[VectorKey] | None = None,
    ) -> list[tuple[VectorKey, float]]:
        """The ``k`` files among ``keys`` nearest ``query`` (see ``CodeStore.nearest``):
        exactly SQLite's answer, whatever else the database holds.

        Every vector among ``keys`` (one tree's files; ``None``: all) is scored in this
        process by :meth:`VectorMatrix.nearest`, the scoring of SQLite's
        :func:`exact_nearest`. A reader keeps the matrix of a key set in its
        :class:`VectorCache` (:meth:`_matrix`), so a long-lived process reads a tree's
        vectors once per change of the database's vectors; ``keys`` of at most ``k`` files
        are all of the answer, read and scored without the cache.
        """
        q = np.asarray(query, dtype=np.float32)
        if k <= 0 or not np.any(q):
            return []
        dim = int(q.shape[0])
        wanted = None if keys is None else frozenset(keys)
        if wanted is not None and len(wanted) <= k:
            found = self.vectors(model, kind, wanted)
            return exact_nearest({h: v for h, v in found.items() if v.shape[0] == dim}, q, k)
        return self._matrix(model, kind, dim, wanted).nearest(q, k)

    def _matrix(
        self, model: str, kind: str, dim: int, keys: frozenset[VectorKey] | None
    ) -> VectorMatrix[VectorKey]:
        """The ``dim``-dimensional ``model``/``kind`` vectors of ``keys``, from the cache when
        it holds them as this read's snapshot sees them.

        What the snapshot sees of the vectors is told by its *stamp*: the number of
        transactions that changed such vectors it sees, the sum of ``n`` over the rows of
        ``code_vector_changes`` for (model, kind) it sees, written by triggers in those
        transactions (PostgreSQL migrations 5 and 6: a writer folds the committed rows into
        its own, keeping their count, so the table stays small). Snapshots see nested sets of
        committed transactions, so two snapshots that count as many see the same ones, hence
        the same vectors: an entry read at another stamp is stale. The stamp and the vectors
        are read in one ``REPEATABLE READ`` snapshot (the caller's, or a transaction opened
        here); inside a transaction that may write (a writer's) the vectors are read and
        scored without the cache."""
        import psycopg.pq

        cache = self._cache
        with self._read() as conn:
            idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            if cache is None:
                return self._load(conn, model, kind, dim, keys)
            with conn.transaction():
                if idle:
                    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                row = conn.execute(
                    "SELECT coalesce(sum(n), 0), current_setting('transaction_read_only'),"
                    " current_setting('transaction_isolation') FROM code_vector_changes"
                    " WHERE model = %s AND kind = %s",
                    (model, kind),
                ).fetchone()
                assert row is not None
                stamp, read_only, isolation = int(row[0]), row[1], row[2]
                if read_only != "on" or isolation not in ("repeatable read", "serializable"):
                    return self._load(conn, model, kind, dim, keys)
                key = MatrixKey(model, kind, dim, keys)
                matrix = cache.get(key, stamp)
                if matrix is None:
                    matrix = self._load(conn, model, kind, dim, keys)
                    cache.put(key, stamp, matrix)
                return matrix

    @staticmethod
    def _load(
        conn: psycopg.Connection[Any],
        model: str,
        kind: str,
        dim: int,
        keys: frozenset[VectorKey] | None,
    ) -> VectorMatrix[VectorKey]:
        """The ``dim``-dimensional ``model``/``kind`` vectors of ``keys`` (all when
        ``None``) as a matrix: the keys' rows by primary key, one lookup per key (the
        ``LIMIT`` keeps the planner from hashing the whole table instead: the cost is the
        tree's, not the database's), each vector in pgvector's binary form (``vector_send``:
        a 4-byte header, then big-endian float32s) decoded at once."""
        with conn.cursor(binary=True) as cur:
            if keys is None:
                rows = cur.execute(
                    "SELECT content_hash, path, vector_send(vec) FROM code_vectors"
                    " WHERE model = %s AND kind = %s AND vector_dims(vec) = %s",
                    (model, kind, dim),
                ).fetchall()
                found = sorted((VectorKey(h, _path(p)), bytes(raw)) for h, p, raw in rows)
            else:
                ordered = sorted(keys)
                hashes, paths = _key_arrays(ordered)
                rows = cur.execute(
                    "SELECT w.i, vector_send(v.vec)"
                    " FROM unnest(%s::text[], %s::bytea[]) WITH ORDINALITY AS w(content_hash,"
                    " path, i) CROSS JOIN LATERAL (SELECT c.vec FROM code_vectors AS c"
                    " WHERE c.content_hash = w.content_hash AND c.path = w.path"
                    " AND c.model = %s AND c.kind = %s LIMIT 1) AS v"
                    " WHERE vector_dims(v.vec) = %s ORDER BY w.i",
                    (hashes, paths, model, kind, dim),
                    prepare=False,
                ).fetchall()
                found = [(ordered[i - 1], bytes(raw)) for i, raw in rows]
        if not found:
            return VectorMatrix.from_rows([], np.zeros((0, dim), dtype=np.float32))
        layout = np.dtype([("header", ">i4"), ("vec", ">f4", (dim,))])
        data = np.frombuffer(b"".join(raw for _, raw in found), dtype=layout)
        return VectorMatrix.from_rows([key for key, _ in found], data["vec"].astype(np.float32))


def _path_bytes(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def _path(raw: Any) -> str:
    return bytes(raw).decode("utf-8", "surrogateescape")


def _key_arrays(keys: Sequence[VectorKey]) -> tuple[list[str], list[bytes]]:
    """The content hashes and the paths of ``keys``, as two aligned arrays (for ``unnest``)."""
    return [key.content_hash for key in keys], [_path_bytes(key.path) for key in keys]


def _as_float32(value: Any) -> npt.NDArray[np.float32]:
    if isinstance(value, np.ndarray):
        return value.astype(np.float32, copy=False)
    return np.asarray(value.to_numpy(), dtype=np.float32)
