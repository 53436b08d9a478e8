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

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from treeseek.store.code_sqlite import CODE_FILE_TERMS_SQL, CODE_SCHEMA_SQL


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
        sql=CODE_SCHEMA_SQL,
    ),
    Migration(
        version=3,
        description="code layers: one full-text document per file content",
        sql=_V3_CODE_FILE_DOCS,
    ),
    Migration(
        version=4,
        description="code layers: per-content term counts for file BM25, replacing FTS file docs",
        sql=CODE_FILE_TERMS_SQL,
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
