"""The SQLite schema, as an ordered, append-only list of migrations.

How to add tables (e.g. the code index):

1. Append a :class:`Migration` to :data:`MIGRATIONS` with the next version number
   (``MIGRATIONS[-1].version + 1``). Never edit or reorder a migration that has been committed:
   databases in the wild have already applied it.
2. Per-tree tables must reference their tree so that deleting a tree removes their rows:
   ``tree_id INTEGER NOT NULL REFERENCES trees(id) ON DELETE CASCADE``, and rows attached to one
   node should also reference it: ``FOREIGN KEY (tree_id, node_id) REFERENCES nodes(tree_id,
   node_id) ON DELETE CASCADE`` (re-indexing deletes removed nodes; an upserted node keeps its
   row, so derived rows of a changed file must be replaced by the index hook).
3. If :meth:`~treeseek.store.sqlite.SQLiteStore.copy_tree` should copy the table too (it should,
   for anything derived from the tree), list it in the migration's ``tree_tables``. The copy
   duplicates every column, replacing ``tree_id``; so such a table must be keyed by
   ``(tree_id, ...)``, never by a database-wide autoincrement id.

Each migration runs in its own transaction together with the version bump, so a failed
migration leaves the database at the previous version.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from treeseek.store.sqlite_terms import Vocabulary, encode_parts


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    description: str
    #: SQL statements separated by ``;`` (triggers with ``BEGIN ... END;`` are fine)
    sql: str = ""
    #: optional Python step, run after ``sql`` inside the same transaction
    run: Callable[[sqlite3.Connection], None] | None = None
    #: per-tree tables this migration creates that copy_tree must duplicate
    tree_tables: tuple[str, ...] = ()


#: the secondary indexes of ``nodes``, by name. The store drops and rebuilds them around a bulk
#: write (building an index once is several times cheaper than 300k random inserts), so a
#: migration that changes them must update this mapping too.
NODE_INDEXES: dict[str, str] = {
    # node-by-path, and subtree reads as a materialized-path range: 'a/' <= path < 'a0'
    "nodes_by_path": "CREATE UNIQUE INDEX nodes_by_path ON nodes(tree_id, path)",
    # children-of, already in stored sibling order
    "nodes_by_parent": "CREATE INDEX nodes_by_parent ON nodes(tree_id, parent_id, ord)",
}

_V1_TREES_NODES_CONTENTS = (
    """
CREATE TABLE trees (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    source      TEXT NOT NULL,
    root        TEXT NOT NULL,
    node_count  INTEGER NOT NULL DEFAULT 0,
    file_count  INTEGER NOT NULL DEFAULT 0,
    dir_count   INTEGER NOT NULL DEFAULT 0,
    max_depth   INTEGER NOT NULL DEFAULT 0,
    built_at    TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

-- file contents shared by all trees: zlib-compressed, keyed by the sha256 of the raw bytes
CREATE TABLE contents (
    hash  TEXT PRIMARY KEY,
    size  INTEGER NOT NULL,
    data  BLOB NOT NULL
) WITHOUT ROWID;

CREATE TABLE nodes (
    tree_id         INTEGER NOT NULL REFERENCES trees(id) ON DELETE CASCADE,
    node_id         TEXT NOT NULL,
    path            TEXT NOT NULL,
    type            TEXT NOT NULL,
    parent_id       TEXT,
    depth           INTEGER NOT NULL,
    ord             INTEGER NOT NULL,
    child_count     INTEGER NOT NULL DEFAULT 0,
    size            INTEGER,
    content_hash    TEXT REFERENCES contents(hash),
    content_status  TEXT NOT NULL,
    signature       TEXT,
    PRIMARY KEY (tree_id, node_id)
);
"""
    + "".join(f"{sql};\n" for sql in NODE_INDEXES.values())
    + """
-- orphaned-content checks
CREATE INDEX nodes_by_content ON nodes(content_hash) WHERE content_hash IS NOT NULL;

-- node ids derive from the path: the same id with another path is a collision, never a merge
CREATE TRIGGER nodes_id_collision BEFORE UPDATE OF path ON nodes
WHEN NEW.path <> OLD.path
BEGIN
    SELECT RAISE(ABORT, 'node id collision: two paths share one node id');
END;
"""
)

#: Migration 2: the code layers (C0-C3) and vectors, keyed by content hash (see
#: :mod:`treeseek.store.code_sqlite` for what each table holds).
_V2_CODE_LAYERS = """
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

#: Migration 3 (history: migration 4 replaced it with term counts and drops these tables):
#: one FTS5 document per content for file-level BM25, backfilled from the chunk documents.
_V3_CODE_FILE_DOCS = """
CREATE TABLE code_docs (
    id            INTEGER PRIMARY KEY,
    content_hash  TEXT NOT NULL UNIQUE
);
CREATE VIRTUAL TABLE code_docs_fts USING fts5(body, tokenize = "unicode61 tokenchars '_'");
CREATE VIRTUAL TABLE code_docs_vocab USING fts5vocab(code_docs_fts, 'row');

INSERT INTO code_docs(content_hash) SELECT content_hash FROM code_files ORDER BY content_hash;
INSERT INTO code_docs_fts(rowid, body)
    SELECT d.id, (SELECT group_concat(f.body, ' ') FROM code_chunks AS c
                  JOIN code_chunks_fts AS f ON f.rowid = c.id
                  WHERE c.content_hash = d.content_hash)
    FROM code_docs AS d;

CREATE TRIGGER code_docs_prune_with_content AFTER DELETE ON contents
BEGIN
    DELETE FROM code_docs_fts
        WHERE rowid IN (SELECT id FROM code_docs WHERE content_hash = OLD.hash);
    DELETE FROM code_docs WHERE content_hash = OLD.hash;
END;
"""

#: Migration 4: per-content term counts for file-level BM25 in numpy (FTS5 is slow on the
#: long OR-queries an issue makes, so it could only see a query's top terms); the FTS5 file
#: documents of migration 3 it replaces are dropped. Rows are filled by the index hook,
#: including for contents parsed before this migration (see ``contents_without_terms``).
_V4_CODE_FILE_TERMS = """
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


#: Migration 5: the term counts of each content's parts (its chunks; its symbols' documents),
#: so BM25 over chunks and symbols runs with one tree's statistics (document count, document
#: frequencies, average length) instead of the FTS5 index's, which every tree of the database
#: shares. One row per (content, layer); see :mod:`treeseek.store.sqlite_terms` for the blobs.
_V5_CODE_PART_TERMS = """
CREATE TABLE code_part_terms (
    content_hash  TEXT NOT NULL,
    layer         TEXT NOT NULL,
    lengths       BLOB NOT NULL,
    sizes         BLOB NOT NULL,
    term_ids      BLOB NOT NULL,
    counts        BLOB NOT NULL,
    PRIMARY KEY (content_hash, layer)
);

CREATE TRIGGER code_part_terms_prune_with_content AFTER DELETE ON contents
BEGIN
    DELETE FROM code_part_terms WHERE content_hash = OLD.hash;
END;
"""

#: (layer, rows table, FTS table, order column) of the part layers migration 5 backfills
_PART_SOURCES = (
    ("chunks", "code_chunks", "code_chunks_fts", "idx"),
    ("symbols", "code_symbols", "code_symbols_fts", "ord"),
)


def _grouped_documents(
    conn: sqlite3.Connection, table: str, fts: str, order: str
) -> Iterator[tuple[str, list[str]]]:
    """(content hash, its parts' documents in part order) for every content of ``table``."""
    rows = conn.execute(
        f"SELECT c.content_hash, f.body FROM {table} AS c JOIN {fts} AS f ON f.rowid = c.id"
        f" ORDER BY c.content_hash, c.{order}"
    ).fetchall()
    for digest, group in itertools.groupby(rows, key=lambda r: str(r[0])):
        yield digest, [str(r[1]) for r in group]


def _backfill_part_terms(conn: sqlite3.Connection) -> None:
    """Part term counts of every content parsed before migration 5, from the stored FTS
    documents (space-separated tokens: the same tokens a fresh index counts)."""
    vocabulary = Vocabulary(lambda: conn)
    for layer, table, fts, order in _PART_SOURCES:
        conn.executemany(
            "INSERT OR REPLACE INTO code_part_terms(content_hash, layer, lengths, sizes,"
            " term_ids, counts) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (digest, layer, *encode_parts([Counter(d.split()) for d in docs], vocabulary))
                for digest, docs in _grouped_documents(conn, table, fts, order)
            ],
        )


#: Migration 6: vectors per (content, path). A file's vector embeds its outline, which begins
#: with the file's path, so a vector keyed by content alone was the vector of whichever path
#: first held the content: another tree holding the content at another path reused it, and its
#: ranking depended on what else the database held. Which path a stored vector was computed
#: from is not recorded, so no old row can be verified: they are dropped, and re-indexing with
#: vectors on embeds what each tree lacks (``files_without_vectors``).
_V6_VECTORS_BY_PATH = """
DROP TABLE code_vectors;
CREATE TABLE code_vectors (
    content_hash  TEXT NOT NULL,
    path          TEXT NOT NULL,
    model         TEXT NOT NULL,
    kind          TEXT NOT NULL,
    vec           BLOB NOT NULL,
    PRIMARY KEY (content_hash, path, model, kind)
) WITHOUT ROWID;
"""


#: the last dotted part of a text column (``a.b.save`` -> ``save``; no dot: the whole text), in
#: SQL both SQLite and PostgreSQL evaluate alike and can index: ``rtrim`` drops the trailing
#: characters that are not dots, leaving the text up to its last dot, whose length is where the
#: last part starts. Queries must spell it exactly so for the index to serve them.
def last_part_sql(column: str) -> str:
    return f"substr({column}, length(rtrim({column}, replace({column}, '.', ''))) + 1)"


#: Migration 7 (and PostgreSQL migration 7): the names a graph query looks up first. The
#: callers of a symbol are the call edges whose callee's last name is the symbol's name
#: (``self.app.register_blueprint`` -> ``register_blueprint``), and a short symbol name is a
#: suffix of qualified names (``App.register_blueprint``): both by the last dotted part, indexed
#: so a query reads the few files that can matter instead of the whole tree.
_V7_GRAPH_NAMES = f"""
CREATE INDEX IF NOT EXISTS code_edges_calls_by_name ON code_edges({last_part_sql("dst_ref")})
    WHERE type = 'calls';
CREATE INDEX IF NOT EXISTS code_symbols_by_last ON code_symbols({last_part_sql("qname")});
"""

#: the revision of the parser that made a content's code rows (``treeseek.code.revisions``):
#: rows made before revisions existed are revision 0 (PostgreSQL; SQLite: ``_add_parser_revision``)
_V8_PARSER_REVISION = """
ALTER TABLE code_files ADD COLUMN IF NOT EXISTS parser_revision INTEGER NOT NULL DEFAULT 0;
"""


def _add_parser_revision(conn: sqlite3.Connection) -> None:
    """``_V8_PARSER_REVISION`` for SQLite, whose ``ADD COLUMN`` has no ``IF NOT EXISTS``."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(code_files)")}
    if "parser_revision" not in columns:
        conn.execute("ALTER TABLE code_files ADD COLUMN parser_revision INTEGER NOT NULL DEFAULT 0")


#: every migration, in order; append only
MIGRATIONS: list[Migration] = [
    Migration(
        version=1,
        description="trees, nodes and shared contents",
        sql=_V1_TREES_NODES_CONTENTS,
        tree_tables=("nodes",),
    ),
    Migration(
        version=2,
        description="code layers (C0-C3) and vectors, keyed by content hash",
        sql=_V2_CODE_LAYERS,
    ),
    Migration(
        version=3,
        description="code layers: one full-text document per file content",
        sql=_V3_CODE_FILE_DOCS,
    ),
    Migration(
        version=4,
        description="code layers: per-content term counts for file BM25, replacing FTS file docs",
        sql=_V4_CODE_FILE_TERMS,
    ),
    Migration(
        version=5,
        description="code layers: per-content term counts of chunks and symbols (per-tree BM25)",
        sql=_V5_CODE_PART_TERMS,
        run=_backfill_part_terms,
    ),
    Migration(
        version=6,
        description="vectors per (content, path): the embedded text includes the path",
        sql=_V6_VECTORS_BY_PATH,
    ),
    Migration(
        version=7,
        description="code layers: call edges by callee name, symbols by last name (graph)",
        sql=_V7_GRAPH_NAMES,
    ),
    Migration(
        version=8,
        description="code layers: the parser revision of each parsed content",
        run=_add_parser_revision,
    ),
]


def split_statements(sql: str) -> list[str]:
    """Split a script into complete statements (keeps trigger bodies whole).

    ``executescript`` would commit the surrounding transaction, so migrations run statement
    by statement instead.
    """
    statements: list[str] = []
    pending = ""
    for line in sql.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                statements.append(pending.strip())
            pending = ""
    if _has_code(pending):
        if not sqlite3.complete_statement(pending + ";"):
            raise ValueError(f"incomplete SQL statement in migration: {pending.strip()[:80]!r}")
        statements.append(pending.strip())
    return statements


def _has_code(sql: str) -> bool:
    """Whether ``sql`` holds more than whitespace and ``--`` comments."""
    return any(line.split("--", 1)[0].strip() for line in sql.splitlines())


def tree_tables(migrations: list[Migration]) -> tuple[str, ...]:
    """The per-tree tables copy_tree duplicates, in creation order."""
    return tuple(table for m in migrations for table in m.tree_tables)


# -- PostgreSQL -----------------------------------------------------------------------------
#
# The PostgreSQL store (:mod:`treeseek.store.postgres`) has its own list, versioned the same
# way (append only; each migration runs in one transaction with its version row, under an
# advisory lock so concurrent openers migrate once). Its first version is the SQLite schema's
# current shape: trees, nodes, shared contents, the code layers as term counts, and vectors in
# a pgvector column. Paths, roots and signatures are ``bytea`` (UTF-8 with surrogate escapes),
# so non-UTF-8 names round-trip and byte-wise order and materialized-path range reads match
# SQLite's. The chunk and symbol documents (space-separated tokens) are plain columns: nothing
# ranks with a full-text index. Vector search scans a tree's vectors exactly (migration 5
# dropped the HNSW indexes earlier versions created per model, kind and dimension) and logs
# every vector-changing transaction, so a process may cache a tree's vectors between queries.


@dataclass(frozen=True, slots=True)
class PostgresMigration:
    version: int
    description: str
    #: statements run as one script (no parameters)
    sql: str = ""
    #: optional Python step (a psycopg connection), run after ``sql`` in the same transaction
    run: Callable[[object], None] | None = None


_PG_V1_SCHEMA = """
CREATE TABLE trees (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    source      TEXT NOT NULL,
    root        BYTEA NOT NULL,
    node_count  INTEGER NOT NULL DEFAULT 0,
    file_count  INTEGER NOT NULL DEFAULT 0,
    dir_count   INTEGER NOT NULL DEFAULT 0,
    max_depth   INTEGER NOT NULL DEFAULT 0,
    built_at    TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

-- file contents shared by all trees: zlib-compressed (so not compressed again), keyed by the
-- sha256 of the raw bytes
CREATE TABLE contents (
    hash  TEXT COLLATE "C" PRIMARY KEY,
    size  BIGINT NOT NULL,
    data  BYTEA NOT NULL
);
ALTER TABLE contents ALTER COLUMN data SET STORAGE EXTERNAL;

CREATE TABLE nodes (
    tree_id         BIGINT NOT NULL REFERENCES trees(id) ON DELETE CASCADE,
    node_id         TEXT COLLATE "C" NOT NULL,
    path            BYTEA NOT NULL,
    type            TEXT NOT NULL,
    parent_id       TEXT COLLATE "C",
    depth           INTEGER NOT NULL,
    ord             INTEGER NOT NULL,
    child_count     INTEGER NOT NULL DEFAULT 0,
    size            BIGINT,
    content_hash    TEXT COLLATE "C" REFERENCES contents(hash),
    content_status  TEXT NOT NULL,
    signature       BYTEA,
    PRIMARY KEY (tree_id, node_id)
);
-- node-by-path, and subtree reads as a materialized-path range: 'a/' <= path < 'a0'
CREATE UNIQUE INDEX nodes_by_path ON nodes(tree_id, path);
-- children-of, already in stored sibling order
CREATE INDEX nodes_by_parent ON nodes(tree_id, parent_id, ord);
-- orphaned-content checks
CREATE INDEX nodes_by_content ON nodes(content_hash) WHERE content_hash IS NOT NULL;

-- node ids derive from the path: the same id with another path is a collision, never a merge
CREATE FUNCTION nodes_id_collision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'node id collision: two paths share one node id';
END;
$$;
CREATE TRIGGER nodes_id_collision BEFORE UPDATE OF path ON nodes
FOR EACH ROW WHEN (NEW.path <> OLD.path) EXECUTE FUNCTION nodes_id_collision();

CREATE TABLE code_files (
    content_hash  TEXT COLLATE "C" PRIMARY KEY,
    language      TEXT,
    parse_error   TEXT,
    chunk_count   INTEGER NOT NULL,
    symbol_count  INTEGER NOT NULL
);

-- C0 chunks; body: the chunk's code-aware tokens, space-separated (the stored document)
CREATE TABLE code_chunks (
    content_hash  TEXT COLLATE "C" NOT NULL,
    idx           INTEGER NOT NULL,
    type          TEXT NOT NULL,
    start_line    INTEGER NOT NULL,
    end_line      INTEGER NOT NULL,
    symbol        TEXT,
    body          TEXT NOT NULL,
    PRIMARY KEY (content_hash, idx)
);

CREATE TABLE code_symbols (
    content_hash  TEXT COLLATE "C" NOT NULL,
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
    is_entry      BOOLEAN NOT NULL,
    lang_payload  TEXT NOT NULL,
    body          TEXT NOT NULL,
    PRIMARY KEY (content_hash, ord)
);
CREATE INDEX code_symbols_by_name ON code_symbols(name);
CREATE INDEX code_symbols_by_qname ON code_symbols(qname);

CREATE TABLE code_edges (
    content_hash  TEXT COLLATE "C" NOT NULL,
    ord           INTEGER NOT NULL,
    type          TEXT NOT NULL,
    src           TEXT NOT NULL,
    dst_ref       TEXT NOT NULL,
    line          INTEGER NOT NULL,
    lang_payload  TEXT NOT NULL,
    PRIMARY KEY (content_hash, ord)
);

CREATE TABLE code_entrypoints (
    content_hash      TEXT COLLATE "C" NOT NULL,
    ord               INTEGER NOT NULL,
    entry_type        TEXT NOT NULL,
    framework         TEXT NOT NULL,
    route_or_command  TEXT NOT NULL,
    handler           TEXT,
    line              INTEGER NOT NULL,
    lang_payload      TEXT NOT NULL,
    PRIMARY KEY (content_hash, ord)
);

-- the database-wide vocabulary of the term counts (ids are uint32 in the blobs)
CREATE TABLE code_terms (
    id    INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    term  TEXT COLLATE "C" NOT NULL UNIQUE
);

-- the blobs of treeseek.store.sqlite_terms, byte for byte
CREATE TABLE code_file_terms (
    content_hash  TEXT COLLATE "C" PRIMARY KEY,
    length        INTEGER NOT NULL,
    term_ids      BYTEA NOT NULL,
    counts        BYTEA NOT NULL
);

CREATE TABLE code_part_terms (
    content_hash  TEXT COLLATE "C" NOT NULL,
    layer         TEXT NOT NULL,
    lengths       BYTEA NOT NULL,
    sizes         BYTEA NOT NULL,
    term_ids      BYTEA NOT NULL,
    counts        BYTEA NOT NULL,
    PRIMARY KEY (content_hash, layer)
);

-- float32 vectors (pgvector's float4 elements: the numpy values, exactly); any dimension, so
-- the HNSW indexes are partial expression indexes per model and kind
CREATE TABLE code_vectors (
    content_hash  TEXT COLLATE "C" NOT NULL,
    model         TEXT NOT NULL,
    kind          TEXT NOT NULL,
    vec           vector NOT NULL,
    PRIMARY KEY (content_hash, model, kind)
);

-- rows of a content disappear with the content
CREATE FUNCTION code_prune_with_content() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM code_chunks WHERE content_hash = OLD.hash;
    DELETE FROM code_symbols WHERE content_hash = OLD.hash;
    DELETE FROM code_edges WHERE content_hash = OLD.hash;
    DELETE FROM code_entrypoints WHERE content_hash = OLD.hash;
    DELETE FROM code_vectors WHERE content_hash = OLD.hash;
    DELETE FROM code_file_terms WHERE content_hash = OLD.hash;
    DELETE FROM code_part_terms WHERE content_hash = OLD.hash;
    DELETE FROM code_files WHERE content_hash = OLD.hash;
    RETURN OLD;
END;
$$;
CREATE TRIGGER code_prune_with_content AFTER DELETE ON contents
FOR EACH ROW EXECUTE FUNCTION code_prune_with_content();
"""

#: PostgreSQL migration 2: vectors per (content, path), for the reason of SQLite's migration 6
#: (old rows dropped, with their HNSW indexes; the first write of a model creates its index)
_PG_V2_VECTORS_BY_PATH = """
DROP TABLE code_vectors;
CREATE TABLE code_vectors (
    content_hash  TEXT COLLATE "C" NOT NULL,
    path          BYTEA NOT NULL,
    model         TEXT NOT NULL,
    kind          TEXT NOT NULL,
    vec           vector NOT NULL,
    PRIMARY KEY (content_hash, path, model, kind)
);
"""

#: PostgreSQL migration 3: index jobs' status (:mod:`treeseek.store.jobs`), so that every
#: worker process of one server answers for a job any of them runs. ``seq``: arrival order.
_PG_V3_INDEX_JOBS = """
CREATE TABLE index_jobs (
    id        TEXT PRIMARY KEY,
    seq       BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    tree      TEXT NOT NULL,
    source    TEXT NOT NULL,
    rev       TEXT,
    state     TEXT NOT NULL,
    phase     TEXT NOT NULL,
    done      BIGINT NOT NULL,
    total     BIGINT,
    error     TEXT,
    report    TEXT,
    created   DOUBLE PRECISION NOT NULL,
    finished  DOUBLE PRECISION
);
"""

#: PostgreSQL migration 4: when the process running a job last said it is alive
#: (:mod:`treeseek.store.jobs`), in the database's clock, so a job whose worker died is seen
#: as failed instead of running forever.
_PG_V4_JOB_HEARTBEAT = """
ALTER TABLE index_jobs ADD COLUMN heartbeat TIMESTAMPTZ NOT NULL DEFAULT now();
"""

#: PostgreSQL migration 5: vector search is exact (a tree's vectors scored in the process, as
#: SQLite does), so the HNSW indexes go (approximate, and the graph held every tree's vectors:
#: one tree's neighbours depended on the others); ``code_vector_changes`` gets one row per
#: transaction that changes vectors of a (model, kind), written by statement triggers in that
#: transaction, so the rows a snapshot sees change exactly when the vectors it sees do (what
#: keeps :mod:`treeseek.store.vector_cache` from serving a stale tree). Vectors written before
#: count as one change; a TRUNCATE is a change of every logged (model, kind). Append only: a
#: reader compares counts of these rows, so deleting one could make two versions count alike
#: (migration 6 folds the rows instead, each counting the transactions it stands for).
_PG_V5_EXACT_VECTORS = r"""
DO $$
DECLARE
    name text;
BEGIN
    FOR name IN
        SELECT indexname FROM pg_indexes
        WHERE schemaname = current_schema() AND tablename = 'code_vectors'
        AND indexname LIKE 'code\_vectors\_hnsw\_%'
    LOOP
        EXECUTE format('DROP INDEX %I', name);
    END LOOP;
END;
$$;

CREATE TABLE code_vector_changes (
    model  TEXT NOT NULL,
    kind   TEXT NOT NULL,
    xid    xid8 NOT NULL,
    PRIMARY KEY (model, kind, xid)
);

INSERT INTO code_vector_changes(model, kind, xid)
SELECT DISTINCT model, kind, pg_current_xact_id() FROM code_vectors;

CREATE FUNCTION code_vectors_log_new() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO code_vector_changes(model, kind, xid)
    SELECT DISTINCT model, kind, pg_current_xact_id() FROM new_rows
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;

CREATE FUNCTION code_vectors_log_old() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO code_vector_changes(model, kind, xid)
    SELECT DISTINCT model, kind, pg_current_xact_id() FROM old_rows
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;

CREATE FUNCTION code_vectors_log_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO code_vector_changes(model, kind, xid)
    SELECT DISTINCT model, kind, pg_current_xact_id() FROM code_vector_changes
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;

CREATE TRIGGER code_vectors_inserted AFTER INSERT ON code_vectors
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION code_vectors_log_new();
CREATE TRIGGER code_vectors_updated_to AFTER UPDATE ON code_vectors
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION code_vectors_log_new();
CREATE TRIGGER code_vectors_updated_from AFTER UPDATE ON code_vectors
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION code_vectors_log_old();
CREATE TRIGGER code_vectors_deleted AFTER DELETE ON code_vectors
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION code_vectors_log_old();
CREATE TRIGGER code_vectors_truncated AFTER TRUNCATE ON code_vectors
FOR EACH STATEMENT EXECUTE FUNCTION code_vectors_log_all();
"""

#: PostgreSQL migration 6: ``code_vector_changes`` stays small. A row stands for ``n``
#: vector-changing transactions (before: one row, one transaction, forever: a shared index
#: re-indexed on every push grew a row per re-index). The first change of a (model, kind) in a
#: READ COMMITTED transaction folds every committed row of that (model, kind) that no other
#: transaction holds into its own row (``DELETE`` of the rows it locks with ``SKIP LOCKED``,
#: their ``n`` added to its own): after a re-index the (model, kind) has one row, plus one per
#: concurrent writer. A reader's stamp is ``sum(n)`` over the rows its snapshot sees: the
#: number of vector-changing transactions it sees, whether folded or not, because a fold
#: commits at once (deleted rows and the row that counts them) and only folds rows its own
#: statement saw committed, which every snapshot that sees the fold sees too; snapshots see
#: nested sets of transactions, so equal sums mean the same set. A row is folded by one
#: transaction only (the row lock; ``SKIP LOCKED``: a writer never waits for another). A
#: REPEATABLE READ or SERIALIZABLE writer only adds its row (locking a row another
#: transaction deleted would fail it). The rows of before each count as one change and are
#: folded here, one row per (model, kind).
_PG_V6_FOLDED_VECTOR_CHANGES = """
ALTER TABLE code_vector_changes ADD COLUMN n BIGINT NOT NULL DEFAULT 1;

WITH gone AS (DELETE FROM code_vector_changes RETURNING model, kind, n)
INSERT INTO code_vector_changes(model, kind, xid, n)
SELECT model, kind, pg_current_xact_id(), sum(n) FROM gone GROUP BY model, kind;

CREATE FUNCTION code_vectors_log_change(m text, k text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    me xid8 := pg_current_xact_id();
BEGIN
    IF EXISTS (
        SELECT 1 FROM code_vector_changes WHERE model = m AND kind = k AND xid = me
    ) THEN
        RETURN;
    END IF;
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        INSERT INTO code_vector_changes(model, kind, xid, n) VALUES (m, k, me, 1);
        RETURN;
    END IF;
    WITH gone AS (
        DELETE FROM code_vector_changes
        WHERE (model, kind, xid) IN (
            SELECT model, kind, xid FROM code_vector_changes
            WHERE model = m AND kind = k AND xid <> me
            FOR UPDATE SKIP LOCKED
        )
        RETURNING n
    )
    INSERT INTO code_vector_changes(model, kind, xid, n)
    SELECT m, k, me, 1 + coalesce(sum(n), 0) FROM gone;
END;
$$;

CREATE OR REPLACE FUNCTION code_vectors_log_new() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM code_vectors_log_change(model, kind)
    FROM (SELECT DISTINCT model, kind FROM new_rows) AS c;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION code_vectors_log_old() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM code_vectors_log_change(model, kind)
    FROM (SELECT DISTINCT model, kind FROM old_rows) AS c;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION code_vectors_log_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM code_vectors_log_change(model, kind)
    FROM (SELECT DISTINCT model, kind FROM code_vector_changes) AS c;
    RETURN NULL;
END;
$$;
"""

#: every PostgreSQL migration, in order; append only
POSTGRES_MIGRATIONS: list[PostgresMigration] = [
    PostgresMigration(
        version=1,
        description="trees, nodes, shared contents, code layers (term counts), pgvector vectors",
        sql=_PG_V1_SCHEMA,
    ),
    PostgresMigration(
        version=2,
        description="vectors per (content, path): the embedded text includes the path",
        sql=_PG_V2_VECTORS_BY_PATH,
    ),
    PostgresMigration(
        version=3,
        description="index jobs' status, shared by the worker processes of a server",
        sql=_PG_V3_INDEX_JOBS,
    ),
    PostgresMigration(
        version=4,
        description="index jobs: a heartbeat, so a job whose worker died reads as failed",
        sql=_PG_V4_JOB_HEARTBEAT,
    ),
    PostgresMigration(
        version=5,
        description="exact vector search: HNSW indexes dropped, vector changes logged",
        sql=_PG_V5_EXACT_VECTORS,
    ),
    PostgresMigration(
        version=6,
        description="vector changes folded: one row per (model, kind) and concurrent writer",
        sql=_PG_V6_FOLDED_VECTOR_CHANGES,
    ),
    PostgresMigration(
        version=7,
        description="code layers: call edges by callee name, symbols by last name (graph)",
        sql=_V7_GRAPH_NAMES,
    ),
    PostgresMigration(
        version=8,
        description="code layers: the parser revision of each parsed content",
        sql=_V8_PARSER_REVISION,
    ),
]

#: the per-content tables of the code layers, children first (deleted before ``code_files``)
POSTGRES_CODE_TABLES = (
    "code_chunks",
    "code_symbols",
    "code_edges",
    "code_entrypoints",
    "code_file_terms",
    "code_part_terms",
    "code_files",
)
