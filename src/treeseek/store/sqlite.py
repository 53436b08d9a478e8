"""The embedded SQLite store.

Connections: one per thread (created on first use), all in WAL mode with foreign keys on and a
busy timeout, so readers in other threads and processes keep reading the last committed version
while a writer works, and never see half a tree.

Writes: :meth:`SQLiteStore.write_tree` opens ``BEGIN IMMEDIATE`` on the calling thread's
connection and yields a :class:`SQLiteTreeWriter`; the block commits on success and rolls back on
an exception. A killed process leaves an uncommitted WAL tail that SQLite discards on the next
open, so the previous version stays intact.

Derived layers (the code index) live in the same file: their tables are migrations
(:mod:`treeseek.store.migrations`), their reads and writes a class of this package that
:meth:`SQLiteStore.code` (reads, the calling thread's connection) and
:meth:`SQLiteTreeWriter.code` (writes, the transaction's connection, so derived rows commit or
roll back with the tree) hand out.

Paths that are not valid UTF-8 (surrogate-escaped names from the filesystem) are stored as their
raw bytes in the TEXT column (``CAST(? AS TEXT)``) and decoded back with ``surrogateescape``, so
byte-wise ordering and subtree range reads work for them like for any other path.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sqlite3
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from treeseek.errors import (
    CorruptDatabase,
    NodeNotFound,
    ReadOnlyDatabase,
    SchemaError,
    StoreError,
    TreeNotFound,
)
from treeseek.store._sql import batched, fetch_decoded, qmarks
from treeseek.store.base import FileState
from treeseek.store.check import StoreCheck, check_sqlite
from treeseek.store.code_sqlite import SQLiteCodeStore
from treeseek.store.failures import (
    SQLITE_CANTOPEN,
    SQLITE_READONLY,
    primary_code,
    sqlite_failure,
    translate_failures,
)
from treeseek.store.migrations import (
    MIGRATIONS,
    NODE_INDEXES,
    Migration,
    split_statements,
    tree_tables,
)
from treeseek.store.rows import NODE_COLUMNS as _NODE_COLUMNS
from treeseek.store.rows import TREE_COLUMNS as _TREE_COLUMNS
from treeseek.store.rows import node_from_row, tree_info_from_row
from treeseek.trees.model import (
    ROOT_PATH,
    ContentStatus,
    Node,
    NodeType,
    PathOnlyNodes,
    TreeInfo,
    TreeSource,
)

BUSY_TIMEOUT_MS = 30_000
COMPRESSION_LEVEL = 6
PAGE_SIZE = 16384
#: a write of a new tree with at least this many nodes may rebuild the node indexes in bulk
BULK_ROWS = 20_000
CACHE_KIB = 64 * 1024

_TYPE_TEXT = {t: t.value for t in NodeType}
_STATUS_TEXT = {s: s.value for s in ContentStatus}


def _text_param(value: str) -> str | bytes:
    """A str SQLite accepts: surrogate-escaped names travel as raw bytes (see module doc)."""
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogateescape")
    return value


def _decode_text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _row_to_node(row: Sequence[Any]) -> Node:
    return node_from_row(row, row[1])


def _row_to_info(row: Sequence[Any]) -> TreeInfo:
    return tree_info_from_row(row, row[2])


def _node_path(node: Node) -> str:
    return node.path


def _prefix_range(path: str) -> tuple[str, str]:
    """Bounds of the paths strictly under ``path``: ``'a/b/' <= p < 'a/b0'`` ('0' follows '/')."""
    return path + "/", path + "0"


@translate_failures(sqlite3.Error)
class SQLiteTreeWriter:
    """One atomic write of one tree (see :class:`treeseek.store.base.TreeWriter`)."""

    def __init__(
        self, store: SQLiteStore, connection: sqlite3.Connection, tree_id: int, *, fresh: bool
    ) -> None:
        self._store = store
        #: the tree was created by this write and has no rows yet (no existence checks needed)
        self._fresh = fresh
        #: the transaction's connection: derived-layer writers in this package may use it
        self.connection = connection
        #: the tree's row id, for derived tables keyed by (tree_id, ...)
        self.tree_id = tree_id
        self._maybe_orphaned: set[str] = set()
        self._code: SQLiteCodeStore | None = None

    def code(self) -> SQLiteCodeStore:
        """The code layers' writes in this transaction (one object per write, so the
        vocabulary it has read serves every file of the write)."""
        if self._code is None:
            connection = self.connection
            self._code = SQLiteCodeStore(
                lambda: connection, self._store.contents, failure=self._store._failure
            )
        return self._code

    # -- contents ------------------------------------------------------------------------
    def _failure(self, exc: Exception) -> StoreError:
        return self._store._failure(exc)

    def put_contents(self, items: Iterable[tuple[str, bytes]]) -> None:
        pending = dict(items)
        if not pending:
            return
        present = self._store._existing_hashes(self.connection, list(pending))
        rows = [
            (digest, len(data), zlib.compress(data, COMPRESSION_LEVEL))
            for digest, data in pending.items()
            if digest not in present
        ]
        self.connection.executemany(
            "INSERT OR IGNORE INTO contents(hash, size, data) VALUES (?, ?, ?)", rows
        )

    # -- nodes ---------------------------------------------------------------------------
    def upsert_nodes(self, nodes: Iterable[Node], signatures: Mapping[str, str]) -> None:
        # path order: the path index (and mostly the others) then grow at their ends, which
        # makes bulk writes several times cheaper than random order
        node_list = sorted(nodes, key=_node_path)
        if not node_list:
            return
        existing = set() if self._fresh else self._existing_ids([n.id for n in node_list])
        tid = self.tree_id
        inserts: list[tuple[Any, ...]] = []
        updates: list[tuple[Any, ...]] = []
        # plain str values: binding an enum member goes through sqlite3's adapter lookup
        type_text, status_text = _TYPE_TEXT, _STATUS_TEXT
        for n in node_list:
            path = n.path
            values = (
                path if path.isascii() else _text_param(path),
                type_text[n.type],
                n.parent_id,
                n.depth,
                n.order,
                n.child_count,
                n.size,
                n.content_hash,
                status_text[n.content_status],
                _text_param(signatures.get(n.id) or "") or None,
            )
            if n.id in existing:
                updates.append((*values, tid, n.id))
            else:
                inserts.append((tid, n.id, *values))
        bulk = self._fresh and self._worth_rebuilding_indexes(len(inserts))
        try:
            if bulk:
                for name in NODE_INDEXES:
                    self.connection.execute(f"DROP INDEX IF EXISTS {name}")
            # a plain INSERT is about twice as fast as INSERT ... ON CONFLICT DO UPDATE
            self.connection.executemany(
                "INSERT INTO nodes(tree_id, node_id, path, type, parent_id, depth, ord,"
                " child_count, size, content_hash, content_status, signature)"
                " VALUES (?, ?, CAST(? AS TEXT), ?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS TEXT))",
                inserts,
            )
            self.connection.executemany(
                "UPDATE nodes SET path = CAST(? AS TEXT), type = ?, parent_id = ?, depth = ?,"
                " ord = ?, child_count = ?, size = ?, content_hash = ?, content_status = ?,"
                " signature = CAST(? AS TEXT) WHERE tree_id = ? AND node_id = ?",
                updates,
            )
            if bulk:
                for sql in NODE_INDEXES.values():
                    self.connection.execute(sql)
        except sqlite3.IntegrityError as exc:
            raise StoreError(
                f"cannot write nodes: {exc}; two paths map to one node id or a content is"
                " missing. Rename one of the colliding paths and re-index."
            ) from exc

    def insert_path_only(self, nodes: PathOnlyNodes) -> None:
        if (
            not self._fresh
            and self.connection.execute(
                "SELECT 1 FROM nodes WHERE tree_id = ? LIMIT 1", (self.tree_id,)
            ).fetchone()
        ):
            raise StoreError(
                "insert_path_only writes a new tree, but this tree already has nodes;"
                " use upsert_nodes (the general indexer) for an existing tree"
            )
        dirs, files = nodes.dirs, nodes.files
        bulk = self._worth_rebuilding_indexes(len(dirs) + len(files))
        try:
            if bulk:
                for name in NODE_INDEXES:
                    self.connection.execute(f"DROP INDEX IF EXISTS {name}")
            for columns, node_type, status in (
                (dirs, NodeType.DIRECTORY, ContentStatus.NONE),
                (files, NodeType.FILE, ContentStatus.ABSENT),
            ):
                paths: Sequence[str | bytes] = columns.paths
                if not all(map(str.isascii, columns.paths)):
                    paths = [_text_param(p) for p in columns.paths]
                # the tree, type and content status are constants of the statement (an integer
                # and enum values, never user input): fewer values to bind per row
                self.connection.executemany(
                    "INSERT INTO nodes(tree_id, node_id, path, type, parent_id, depth, ord,"
                    " child_count, size, content_hash, content_status, signature) VALUES"
                    f" ({int(self.tree_id)}, ?, CAST(? AS TEXT), '{node_type.value}', ?, ?, ?,"
                    f" ?, NULL, NULL, '{status.value}', NULL)",
                    zip(
                        columns.ids,
                        paths,
                        columns.parent_ids,
                        columns.depths,
                        columns.orders,
                        columns.child_counts,
                        strict=True,
                    ),
                )
            if bulk:
                for sql in NODE_INDEXES.values():
                    self.connection.execute(sql)
        except sqlite3.IntegrityError as exc:
            raise StoreError(
                f"cannot write nodes: {exc}; two paths map to one node id. Rename one of the"
                " colliding paths and re-index."
            ) from exc

    def _worth_rebuilding_indexes(self, new_rows: int) -> bool:
        """Whether dropping and rebuilding the node indexes beats updating them row by row:
        only for a big write that at least doubles the table (rebuilding covers all trees)."""
        if new_rows < BULK_ROWS:
            return False
        try:
            row = self.connection.execute("SELECT max(rowid) FROM nodes").fetchone()
        except sqlite3.OperationalError:  # a WITHOUT ROWID table from an early version
            return False
        return new_rows >= int(row[0] or 0)

    def _existing_ids(self, node_ids: Sequence[str]) -> set[str]:
        """Which of ``node_ids`` this tree has (their old contents may become orphans)."""
        found: set[str] = set()
        for chunk in batched(node_ids):
            rows = self.connection.execute(
                "SELECT node_id, content_hash FROM nodes WHERE tree_id = ?"
                f" AND node_id IN ({qmarks(len(chunk))})",
                (self.tree_id, *chunk),
            )
            for node_id, content_hash in rows:
                found.add(node_id)
                if content_hash is not None:
                    self._maybe_orphaned.add(content_hash)
        return found

    def delete_nodes(self, node_ids: Iterable[str]) -> None:
        ids = list(node_ids)
        if not ids:
            return
        self._remember_old_hashes(ids)
        for chunk in batched(ids):
            self.connection.execute(
                f"DELETE FROM nodes WHERE tree_id = ? AND node_id IN ({qmarks(len(chunk))})",
                (self.tree_id, *chunk),
            )

    def copy_from(self, source: str) -> None:
        """Replace this tree's nodes (and derived rows) by those of tree ``source``.

        Runs inside this write, so "copy a base, then apply the differences" stays atomic.
        """
        source_id = self._store._tree_id(self.connection, source)
        if source_id == self.tree_id:
            return
        self._remember_all_hashes()
        self._fresh = False
        for table in reversed(self._store.tree_tables):
            self.connection.execute(f"DELETE FROM {table} WHERE tree_id = ?", (self.tree_id,))
        for table in self._store.tree_tables:
            columns = self._store._columns(self.connection, table)
            select = ", ".join("?" if c == "tree_id" else c for c in columns)
            self.connection.execute(
                f"INSERT INTO {table} ({', '.join(columns)})"
                f" SELECT {select} FROM {table} WHERE tree_id = ?",
                (*([self.tree_id] * columns.count("tree_id")), source_id),
            )

    def set_info(self, info: TreeInfo) -> None:
        self.connection.execute(
            "UPDATE trees SET source = ?, root = ?, node_count = ?, file_count = ?,"
            " dir_count = ?, max_depth = ?, built_at = ?, updated_at = ? WHERE id = ?",
            (
                info.source.value,
                _text_param(info.root),
                info.node_count,
                info.file_count,
                info.dir_count,
                info.max_depth,
                info.built_at.isoformat(),
                info.updated_at.isoformat(),
                self.tree_id,
            ),
        )

    # -- internals -----------------------------------------------------------------------
    def _remember_old_hashes(self, node_ids: Sequence[str]) -> None:
        for chunk in batched(node_ids):
            rows = self.connection.execute(
                "SELECT content_hash FROM nodes WHERE tree_id = ? AND content_hash IS NOT NULL"
                f" AND node_id IN ({qmarks(len(chunk))})",
                (self.tree_id, *chunk),
            )
            self._maybe_orphaned.update(r[0] for r in rows)

    def _remember_all_hashes(self) -> None:
        rows = self.connection.execute(
            "SELECT DISTINCT content_hash FROM nodes WHERE tree_id = ?"
            " AND content_hash IS NOT NULL",
            (self.tree_id,),
        )
        self._maybe_orphaned.update(r[0] for r in rows)

    def _finish(self) -> None:
        self._store._delete_orphans(self.connection, self._maybe_orphaned)


@translate_failures(sqlite3.Error)
class SQLiteStore:
    """Trees, nodes and contents in one SQLite file (see :class:`treeseek.store.base.Store`).

    A database this process cannot write (a file without write permission, a read-only
    directory or mount) is opened read-only (``mode=ro``; ``immutable`` when its WAL index
    cannot be created): every read works, a write raises
    :class:`~treeseek.errors.ReadOnlyDatabase`, and :attr:`read_only` says why. A database
    found damaged (:class:`~treeseek.errors.CorruptDatabase`) is marked by a side file
    (``<db>-corrupt``): no write touches it until ``treeseek db check`` finds it intact.
    """

    def __init__(self, path: str | Path, *, migrations: list[Migration] | None = None) -> None:
        self.path = Path(path)
        self._migrations = MIGRATIONS if migrations is None else migrations
        self.tree_tables = tree_tables(self._migrations)
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        self._columns_cache: dict[str, list[str]] = {}
        self._code = SQLiteCodeStore(self._conn, self.contents, failure=self._failure)
        #: why this database is opened read-only (None: read-write); the URI query then
        self.read_only: str | None = None
        self._ro_query = ""
        if self.path.exists():
            self._choose_read_only()
        else:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"cannot create the database directory {self.path.parent}: {exc.strerror};"
                    " pass --db (or set TREESEEK_DB) to a writable location"
                ) from exc
        self._migrate(self._conn())

    def _choose_read_only(self) -> None:
        """Read-only when the file or (for a WAL index not there yet) its directory cannot
        be written; ``immutable`` when not even a read-only WAL index can be made."""
        directory = self.path.parent
        shm = Path(f"{self.path}-shm")
        mounted_ro = _read_only_mount(directory)
        file_ok = os.access(self.path, os.W_OK)
        if file_ok and os.access(directory, os.W_OK) and not mounted_ro:
            return
        if not file_ok or mounted_ro:
            self.read_only = "the file is read-only"
        else:
            self.read_only = "its directory is read-only"
        if shm.exists() and os.access(shm, os.W_OK) and not mounted_ro:
            self._ro_query = "mode=ro"
        else:
            self._ro_query = "mode=ro&immutable=1"
            self.read_only += " (opened immutable: changes not yet checkpointed are not seen)"

    def _failure(self, exc: Exception) -> StoreError:
        """The one-line error of ``exc`` (:func:`~treeseek.store.failures.sqlite_failure`);
        a damaged file is marked so that no later write touches it."""
        if isinstance(exc, StoreError):
            return exc
        if not isinstance(exc, sqlite3.Error):
            return StoreError(f"the database {self.path} failed: {exc}")
        error = sqlite_failure(exc, self.path)
        if isinstance(error, CorruptDatabase):
            self._mark_corrupt(str(exc))
        if isinstance(error, ReadOnlyDatabase) and self.read_only is None:
            self.read_only = "writing failed"
        return error

    @property
    def corrupt_marker(self) -> Path:
        """The side file that marks this database as found damaged."""
        return Path(f"{self.path}-corrupt")

    def _mark_corrupt(self, detail: str) -> None:
        # a read-only directory keeps no mark: the error itself still says what to do
        with contextlib.suppress(OSError):
            self.corrupt_marker.write_text(
                f"{datetime.now(UTC).isoformat()} {detail}\n", encoding="utf-8"
            )

    def _check_writable(self) -> None:
        """Raise before a write into a read-only or known-damaged database."""
        if self.read_only is not None:
            raise ReadOnlyDatabase(
                f"the database {self.path} is read-only ({self.read_only}); reading works,"
                " writing needs write permission on the file and its directory"
            )
        if self.corrupt_marker.exists():
            found = self.corrupt_marker.read_text(encoding="utf-8", errors="replace").strip()
            raise CorruptDatabase(
                f"the database {self.path} was found damaged ({found[:200]}); treeseek does not"
                f" write into it: run `treeseek db check --db {self.path}` (it clears the mark"
                " when the file is intact), or restore it from a backup or delete it and index"
                " again"
            )

    # -- connections ---------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if self._closed:
            raise StoreError(f"the database {self.path} is closed")
        conn = None
        try:
            if self._ro_query:
                uri = f"{self.path.resolve().as_uri()}?{self._ro_query}"
                conn = sqlite3.connect(
                    uri, uri=True, isolation_level=None, check_same_thread=False, timeout=30
                )
            else:
                conn = sqlite3.connect(
                    self.path, isolation_level=None, check_same_thread=False, timeout=30
                )
            conn.text_factory = _decode_text
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            conn.execute("PRAGMA foreign_keys = ON")
            if self._ro_query:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                mode = "wal"
            else:
                # only effective on a new, empty file: bigger pages make bulk inserts cheaper
                conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.DatabaseError as exc:
            if conn is not None:
                conn.close()
            retry = primary_code(exc) in (SQLITE_READONLY, SQLITE_CANTOPEN)
            if retry and not self._ro_query and self.path.exists():
                # a read-only mount or file os.access did not see (root, say): read-only
                self.read_only = f"writing failed: {exc}"
                self._ro_query = "mode=ro&immutable=1"
                return self._conn()
            raise self._failure(exc) from exc
        if str(mode).lower() != "wal":
            raise StoreError(f"cannot switch {self.path} to WAL mode (got {mode!r})")
        self._local.conn = conn
        with self._lock:
            self._all.append(conn)
        return conn

    def check(self, *, full: bool = False) -> StoreCheck:
        """:func:`~treeseek.store.check.check_sqlite` of this file."""
        known = self._migrations[-1].version if self._migrations else 0
        return check_sqlite(self.path, full=full, schema_version=known)

    def code(self) -> SQLiteCodeStore:
        """The code layers of this database (reads on the calling thread's connection)."""
        return self._code

    def jobs(self) -> None:
        """None: a SQLite database is served by one process, which keeps its jobs."""
        return None

    def local_files(self) -> list[Path]:
        """The database file and its WAL, shared-memory, journal and damage-mark side files."""
        suffixes = ("", "-wal", "-shm", "-journal", "-corrupt")
        return [Path(f"{self.path}{suffix}") for suffix in suffixes]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()

    # -- schema --------------------------------------------------------------------------
    @property
    def schema_version(self) -> int:
        return self._version(self._conn())

    @staticmethod
    def _version(conn: sqlite3.Connection) -> int:
        row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
        return int(row[0] or 0)

    def _migrate(self, conn: sqlite3.Connection) -> None:
        try:
            exists = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
            ).fetchone()
            if exists is None and self.read_only is None:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY,"
                    " description TEXT NOT NULL, applied_at TEXT NOT NULL)"
                )
        except sqlite3.DatabaseError as exc:
            code = primary_code(exc)
            if code is not None and code not in (SQLITE_READONLY, SQLITE_CANTOPEN):
                raise self._failure(exc) from exc
            raise StoreError(
                f"cannot use the database {self.path}: {exc}; is it a treeseek database?"
                " Pass --db (or set TREESEEK_DB) to another file"
            ) from exc
        if exists is None and self.read_only is not None:
            raise StoreError(
                f"{self.path} is not a treeseek database (and it is read-only:"
                f" {self.read_only}); pass --db (or set TREESEEK_DB) to another file"
            )
        known = self._migrations[-1].version if self._migrations else 0
        current = self._version(conn)
        if current < known and self.read_only is not None:
            raise SchemaError(
                f"the database {self.path} has schema version {current} and needs migrating to"
                f" {known}, but it is read-only ({self.read_only}); open it once writable or"
                " use a copy"
            )
        if current > known:
            raise SchemaError(
                f"the database {self.path} has schema version {current}, newer than this"
                f" treeseek knows ({known}); upgrade treeseek or use another --db"
            )
        for migration in self._migrations:
            if migration.version <= current:
                continue
            conn.execute("BEGIN IMMEDIATE")
            try:
                # another process may have migrated while we waited for the lock
                if self._version(conn) >= migration.version:
                    conn.execute("COMMIT")
                    continue
                for statement in split_statements(migration.sql):
                    conn.execute(statement)
                if migration.run is not None:
                    migration.run(conn)
                conn.execute(
                    "INSERT INTO schema_version(version, description, applied_at) VALUES (?,?,?)",
                    (migration.version, migration.description, datetime.now(UTC).isoformat()),
                )
                conn.execute("COMMIT")
            except Exception as exc:
                conn.execute("ROLLBACK")
                raise SchemaError(
                    f"migration {migration.version} ({migration.description}) failed on"
                    f" {self.path}: {exc}; the database is unchanged at version"
                    f" {self._version(conn)}"
                ) from exc

    def _columns(self, conn: sqlite3.Connection, table: str) -> list[str]:
        if table not in self._columns_cache:
            rows = conn.execute(f"PRAGMA table_info({table})").fetchall()
            self._columns_cache[table] = [r[1] for r in rows]
        return self._columns_cache[table]

    # -- trees ---------------------------------------------------------------------------
    def _tree_id(self, conn: sqlite3.Connection, name: str) -> int:
        row = conn.execute("SELECT id FROM trees WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise TreeNotFound(name)
        return int(row[0])

    def trees(self) -> list[TreeInfo]:
        rows = self._conn().execute(f"SELECT {_TREE_COLUMNS} FROM trees ORDER BY name")
        return [_row_to_info(r) for r in rows]

    def tree(self, name: str) -> TreeInfo:
        row = (
            self._conn()
            .execute(f"SELECT {_TREE_COLUMNS} FROM trees WHERE name = ?", (name,))
            .fetchone()
        )
        if row is None:
            raise TreeNotFound(name)
        return _row_to_info(row)

    def has_tree(self, name: str) -> bool:
        row = self._conn().execute("SELECT 1 FROM trees WHERE name = ?", (name,)).fetchone()
        return row is not None

    def delete_tree(self, name: str) -> None:
        conn = self._conn()
        with self._transaction(conn):
            tree_id = self._tree_id(conn, name)
            hashes = {
                r[0]
                for r in conn.execute(
                    "SELECT DISTINCT content_hash FROM nodes WHERE tree_id = ?"
                    " AND content_hash IS NOT NULL",
                    (tree_id,),
                )
            }
            conn.execute("DELETE FROM trees WHERE id = ?", (tree_id,))
            self._delete_orphans(conn, hashes)

    def copy_tree(self, source: str, target: str) -> None:
        info = self.tree(source)
        with self.write_tree(target) as writer:
            writer.copy_from(source)
            now = datetime.now(UTC)
            writer.set_info(dataclasses.replace(info, name=target, built_at=now, updated_at=now))

    @contextmanager
    def _transaction(self, conn: sqlite3.Connection) -> Iterator[None]:
        if conn.in_transaction:
            raise StoreError("nested write: a write transaction is already open on this thread")
        self._check_writable()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreError(
                f"the database {self.path} is busy ({exc}); another indexer holds the write"
                " lock, wait for it to finish and retry"
            ) from exc
        try:
            yield
        except BaseException:
            if conn.in_transaction:  # SQLite may have rolled back already (a full disk)
                conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every read in the block sees one committed version (a deferred read transaction
        on this thread's connection; in WAL mode writers go on meanwhile). Reentrant; do not
        write inside it."""
        conn = self._conn()
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN")
        try:
            yield
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")

    @contextmanager
    def write_tree(self, name: str) -> Iterator[SQLiteTreeWriter]:
        conn = self._conn()
        with self._transaction(conn):
            row = conn.execute("SELECT id FROM trees WHERE name = ?", (name,)).fetchone()
            if row is None:
                now = datetime.now(UTC).isoformat()
                cursor = conn.execute(
                    "INSERT INTO trees(name, source, root, built_at, updated_at)"
                    " VALUES (?, ?, '', ?, ?)",
                    (name, TreeSource.FILESYSTEM.value, now, now),
                )
                tree_id = int(cursor.lastrowid or 0)
            else:
                tree_id = int(row[0])
            writer = SQLiteTreeWriter(self, conn, tree_id, fresh=row is None)
            yield writer
            writer._finish()

    # -- nodes ---------------------------------------------------------------------------
    def root(self, tree: str) -> Node:
        found = self.node_by_path(tree, ROOT_PATH)
        if found is None:
            raise NodeNotFound(f"tree {tree!r} has no root node; re-index it")
        return found

    def node(self, tree: str, node_id: str) -> Node:
        conn = self._conn()
        tree_id = self._tree_id(conn, tree)
        if not node_id.isascii():  # ids are ASCII; anything else cannot be one
            raise NodeNotFound(f"no node with id {node_id!r} in tree {tree!r}")
        row = conn.execute(
            f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tree_id = ? AND node_id = ?",
            (tree_id, node_id),
        ).fetchone()
        if row is None:
            raise NodeNotFound(f"no node with id {node_id!r} in tree {tree!r}")
        return _row_to_node(row)

    def nodes(self, tree: str, node_ids: Sequence[str]) -> list[Node]:
        conn = self._conn()
        tree_id = self._tree_id(conn, tree)
        found: dict[str, Node] = {}
        for chunk in batched(list(dict.fromkeys(node_ids))):
            rows = conn.execute(
                f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tree_id = ?"
                f" AND node_id IN ({qmarks(len(chunk))})",
                (tree_id, *chunk),
            )
            for row in rows:
                found[row[0]] = _row_to_node(row)
        return [found[i] for i in node_ids if i in found]

    def node_by_path(self, tree: str, path: str) -> Node | None:
        conn = self._conn()
        tree_id = self._tree_id(conn, tree)
        row = conn.execute(
            f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tree_id = ? AND path = CAST(? AS TEXT)",
            (tree_id, _text_param(path)),
        ).fetchone()
        return None if row is None else _row_to_node(row)

    def nodes_by_paths(self, tree: str, paths: Sequence[str]) -> dict[str, Node]:
        conn = self._conn()
        tree_id = self._tree_id(conn, tree)
        found: dict[str, Node] = {}
        for chunk in batched(list(dict.fromkeys(paths))):
            rows = conn.execute(
                f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tree_id = ? AND path IN ("
                + ",".join("CAST(? AS TEXT)" for _ in chunk)
                + ")",
                (tree_id, *(_text_param(p) for p in chunk)),
            )
            for row in rows:
                node = _row_to_node(row)
                found[node.path] = node
        return found

    def children(self, tree: str, node_id: str) -> list[Node]:
        rows = self._conn().execute(
            f"SELECT {_NODE_COLUMNS} FROM nodes"
            " WHERE tree_id = (SELECT id FROM trees WHERE name = ?) AND parent_id = ?"
            " ORDER BY ord",
            (tree, node_id),
        )
        result = [_row_to_node(r) for r in rows]
        if not result and not self.has_tree(tree):
            raise TreeNotFound(tree)
        return result

    def children_many(self, tree: str, node_ids: Sequence[str]) -> dict[str, list[Node]]:
        conn = self._conn()
        tree_id = self._tree_id(conn, tree)
        result: dict[str, list[Node]] = {i: [] for i in node_ids}
        for chunk in batched(list(result)):
            rows = conn.execute(
                f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tree_id = ?"
                f" AND parent_id IN ({qmarks(len(chunk))}) ORDER BY parent_id, ord",
                (tree_id, *chunk),
            )
            for row in rows:
                result[row[3]].append(_row_to_node(row))
        return result

    def subtree(self, tree: str, path: str = "") -> Iterator[Node]:
        conn = self._conn()
        tree_id = self._tree_id(conn, tree)
        if path == ROOT_PATH:
            rows = fetch_decoded(
                conn,
                f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tree_id = ? ORDER BY path",
                (tree_id,),
            )
        else:
            low, high = _prefix_range(path)
            rows = fetch_decoded(
                conn,
                f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tree_id = ? AND"
                " (path = CAST(? AS TEXT) OR"
                " (path >= CAST(? AS TEXT) AND path < CAST(? AS TEXT))) ORDER BY path",
                (tree_id, _text_param(path), _text_param(low), _text_param(high)),
            )
        return (_row_to_node(r) for r in rows)

    def file_nodes(self, tree: str) -> list[Node]:
        conn = self._conn()
        tree_id = self._tree_id(conn, tree)
        rows = fetch_decoded(
            conn,
            f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tree_id = ? AND type = ? ORDER BY path",
            (tree_id, NodeType.FILE.value),
        )
        return [_row_to_node(r) for r in rows]

    def file_states(self, tree: str) -> dict[str, FileState]:
        conn = self._conn()
        tree_id = self._tree_id(conn, tree)
        rows = fetch_decoded(
            conn,
            "SELECT node_id, path, signature, content_hash FROM nodes"
            " WHERE tree_id = ? AND type = ?",
            (tree_id, NodeType.FILE.value),
        )
        return {r[1]: FileState(r[0], r[1], r[2] or "", r[3]) for r in rows}

    def file_signatures(self, tree: str) -> dict[str, str]:
        conn = self._conn()
        tree_id = self._tree_id(conn, tree)
        # the read of file_states (the same index, so the same order), two columns
        rows = fetch_decoded(
            conn,
            "SELECT path, signature FROM nodes WHERE tree_id = ? AND type = ?",
            (tree_id, NodeType.FILE.value),
        )
        return {path: signature or "" for path, signature in rows}

    def directory_paths(self, tree: str) -> list[str]:
        conn = self._conn()
        tree_id = self._tree_id(conn, tree)
        rows = fetch_decoded(
            conn,
            "SELECT path FROM nodes WHERE tree_id = ? AND type = ? ORDER BY path",
            (tree_id, NodeType.DIRECTORY.value),
        )
        return [r[0] for r in rows]

    # -- contents ------------------------------------------------------------------------
    def content(self, tree: str, node_id: str) -> bytes | None:
        conn = self._conn()
        tree_id = self._tree_id(conn, tree)
        row = conn.execute(
            "SELECT c.data, n.content_hash FROM nodes n LEFT JOIN contents c"
            " ON c.hash = n.content_hash WHERE n.tree_id = ? AND n.node_id = ?",
            (tree_id, node_id),
        ).fetchone()
        if row is None:
            raise NodeNotFound(f"no node with id {node_id!r} in tree {tree!r}")
        if row[0] is None:
            return None
        return zlib.decompress(row[0])

    def contents(self, hashes: Sequence[str]) -> dict[str, bytes]:
        conn = self._conn()
        result: dict[str, bytes] = {}
        for chunk in batched(list(dict.fromkeys(hashes))):
            rows = conn.execute(
                f"SELECT hash, data FROM contents WHERE hash IN ({qmarks(len(chunk))})",
                tuple(chunk),
            )
            for digest, data in rows:
                result[digest] = zlib.decompress(data)
        return result

    def content_count(self) -> int:
        """How many distinct contents are stored (all trees)."""
        return int(self._conn().execute("SELECT count(*) FROM contents").fetchone()[0])

    # -- internals -----------------------------------------------------------------------
    def _existing_hashes(self, conn: sqlite3.Connection, hashes: Sequence[str]) -> set[str]:
        present: set[str] = set()
        for chunk in batched(hashes):
            rows = conn.execute(
                f"SELECT hash FROM contents WHERE hash IN ({qmarks(len(chunk))})",
                tuple(chunk),
            )
            present.update(r[0] for r in rows)
        return present

    def _delete_orphans(self, conn: sqlite3.Connection, hashes: Iterable[str]) -> None:
        candidates = list(hashes)
        for chunk in batched(candidates):
            conn.execute(
                f"DELETE FROM contents WHERE hash IN ({qmarks(len(chunk))})"
                " AND NOT EXISTS (SELECT 1 FROM nodes WHERE nodes.content_hash = contents.hash)",
                tuple(chunk),
            )


def _read_only_mount(directory: Path) -> bool:
    """Whether ``directory`` is on a file system mounted read-only."""
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        return False
