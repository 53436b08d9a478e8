"""The shared store: PostgreSQL (15+) with pgvector, behind the same protocols as SQLite.

For a team's server: many processes (indexers, CI jobs, HTTP workers) on one database of many
trees. ``open_store("postgresql://user@host/db")`` opens it; the extra ``treeseek[postgres]``
provides psycopg 3, its connection pool and the ``pgvector`` package.

Connections: one pool per process (psycopg_pool; a forked child makes its own, and every
worker process of ``treeseek serve --workers N`` opens its own store), autocommit connections
for reads, a statement timeout on every connection (:class:`Timeouts`: 60 s for reads, 30 min
inside a write, or ``$TREESEEK_PG_STATEMENT_TIMEOUT`` / ``$TREESEEK_PG_WRITE_TIMEOUT`` in
seconds); a statement that runs longer is cancelled by the server and raises
:class:`~treeseek.errors.StatementTimeout`.

Writes: :meth:`PostgresStore.write_tree` takes one pooled connection, opens a transaction and
a transaction-scoped advisory lock on the tree's name, so two writers of one tree run one after
the other while writers of different trees run in parallel; the block commits on success and
rolls back on an exception. Readers see the last committed version (MVCC), never half a tree;
a killed writer's connection closes and PostgreSQL rolls its transaction back.

The layout (:data:`treeseek.store.migrations.POSTGRES_MIGRATIONS`) mirrors the SQLite one, so
both stores return the same rows and the same term-count blobs: one retrieval core, two stores.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treeseek.errors import (
    ConfigError,
    NodeNotFound,
    SchemaError,
    StatementTimeout,
    StoreError,
    TreeNotFound,
)
from treeseek.store.base import FileState
from treeseek.store.check import INVARIANTS, StoreCheck
from treeseek.store.code_postgres import PostgresCodeStore
from treeseek.store.migrations import POSTGRES_MIGRATIONS, PostgresMigration
from treeseek.store.postgres_jobs import PostgresJobBoard
from treeseek.store.rows import NODE_COLUMNS as _NODE_COLUMNS
from treeseek.store.rows import TREE_COLUMNS as _TREE_COLUMNS
from treeseek.store.rows import node_from_row, tree_info_from_row
from treeseek.store.vector_cache import VECTOR_CACHE_BYTES, VectorCache
from treeseek.trees.model import (
    ROOT_PATH,
    ContentStatus,
    Node,
    NodeType,
    PathOnlyNodes,
    TreeInfo,
    TreeSource,
)

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

log = logging.getLogger(__name__)

COMPRESSION_LEVEL = 6
#: every statement of a reader; a writer's transaction raises it (big COPYs, lock waits)
READ_STATEMENT_TIMEOUT_MS = 60_000
WRITE_STATEMENT_TIMEOUT_MS = 30 * 60_000
#: the environment variables that set them, in seconds
READ_TIMEOUT_ENV = "TREESEEK_PG_STATEMENT_TIMEOUT"
WRITE_TIMEOUT_ENV = "TREESEEK_PG_WRITE_TIMEOUT"
#: the advisory-lock namespace of tree writes (the second key is hashtext(tree name))
TREE_LOCK_NAMESPACE = 0x7EE5
#: the advisory-lock key that serializes migrations of one database
MIGRATION_LOCK_KEY = 0x7EE5_0001
POOL_MAX_ENV = "TREESEEK_PG_POOL_MAX"
#: connections of a process's pool unless ``$TREESEEK_PG_POOL_MAX`` says otherwise
POOL_MAX = 8
#: seconds a read waits for a pooled connection before asking whether the server is there
#: at all (a server gone away answers at once, not after the whole wait), and in all
POOL_FIRST_WAIT_S = 3.0
POOL_WAIT_S = 60.0
#: PostgreSQL's statement_timeout is an int of milliseconds
MAX_TIMEOUT_MS = 2**31 - 1

_INSTALL = "pip install 'treeseek[postgres]'"


def _require_driver() -> None:
    try:
        import pgvector.psycopg  # noqa: F401
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            f"a postgresql:// database needs the postgres extra ({exc.name} is missing): {_INSTALL}"
        ) from exc


def _b(value: str) -> bytes:
    """A path as stored: UTF-8 bytes, surrogate escapes back to their raw bytes."""
    return value.encode("utf-8", "surrogateescape")


def _s(raw: bytes | memoryview) -> str:
    return bytes(raw).decode("utf-8", "surrogateescape")


def _row_to_node(row: Sequence[Any]) -> Node:
    return node_from_row(row, _s(row[1]))


def _row_to_info(row: Sequence[Any]) -> TreeInfo:
    return tree_info_from_row(row, _s(row[2]))


def _prefix_range(path: str) -> tuple[bytes, bytes]:
    """Bounds of the paths strictly under ``path``: ``'a/b/' <= p < 'a/b0'`` ('0' follows '/')."""
    return _b(path + "/"), _b(path + "0")


def redact(url: str) -> str:
    """``url`` without its password (for messages): the userinfo's ``user:password@`` and a
    ``password=`` query parameter both show ``***``."""
    scheme, sep, rest = url.partition("://")
    userinfo, at, host = rest.rpartition("@")
    if at and ":" in userinfo:
        rest = f"{userinfo.split(':', 1)[0]}:***@{host}"
    rest = _PASSWORD_PARAM.sub(r"\1***", rest)
    return f"{scheme}{sep}{rest}"


#: a ``password=`` parameter of a URL's query string (libpq accepts the password there too)
_PASSWORD_PARAM = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Timeouts:
    """PostgreSQL statement timeouts in milliseconds (0: none): of every read statement, and
    of every statement inside a write transaction."""

    read_ms: int = READ_STATEMENT_TIMEOUT_MS
    write_ms: int = WRITE_STATEMENT_TIMEOUT_MS

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Timeouts:
        """The defaults, or ``$TREESEEK_PG_STATEMENT_TIMEOUT`` / ``$TREESEEK_PG_WRITE_TIMEOUT``
        (seconds) when set."""
        env = os.environ if environ is None else environ
        return cls(
            read_ms=_env_ms(env, READ_TIMEOUT_ENV, READ_STATEMENT_TIMEOUT_MS),
            write_ms=_env_ms(env, WRITE_TIMEOUT_ENV, WRITE_STATEMENT_TIMEOUT_MS),
        )


def _env_ms(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds * 1000 <= MAX_TIMEOUT_MS:  # NaN and inf fail too
        raise ConfigError(
            f"${name} must be a number of seconds from 0 (no limit) to"
            f" {MAX_TIMEOUT_MS // 1000:,}, got {raw!r}"
        )
    return round(seconds * 1000)


def pool_max(environ: Mapping[str, str] | None = None) -> int:
    """The pool's size limit: ``$TREESEEK_PG_POOL_MAX`` (a whole number >= 1), else 8."""
    env = os.environ if environ is None else environ
    raw = env.get(POOL_MAX_ENV, "").strip()
    if not raw:
        return POOL_MAX
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(
            f"${POOL_MAX_ENV} must be a whole number of connections >= 1, got {raw!r}"
        )
    return value


class PostgresTreeWriter:
    """One atomic write of one tree (see :class:`treeseek.store.base.TreeWriter`)."""

    def __init__(
        self,
        store: PostgresStore,
        connection: psycopg.Connection[Any],
        tree_id: int,
        *,
        fresh: bool,
    ) -> None:
        self._store = store
        self._fresh = fresh
        self.connection = connection
        self.tree_id = tree_id
        self._maybe_orphaned: set[str] = set()
        self._code: PostgresCodeStore | None = None

    def code(self) -> PostgresCodeStore:
        if self._code is None:
            connection = self.connection
            self._code = PostgresCodeStore(
                _single(connection), self._store.contents_on(connection), writer=True
            )
        return self._code

    def _flush_code(self) -> None:
        if self._code is not None:
            self._code.flush()

    # -- contents ------------------------------------------------------------------------
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
        if rows:
            with self.connection.cursor() as cur:
                cur.executemany(
                    "INSERT INTO contents(hash, size, data) VALUES (%s, %s, %s)"
                    " ON CONFLICT (hash) DO NOTHING",
                    rows,
                )

    # -- nodes ---------------------------------------------------------------------------
    def upsert_nodes(self, nodes: Iterable[Node], signatures: Mapping[str, str]) -> None:
        import psycopg

        node_list = sorted(nodes, key=lambda n: n.path)
        if not node_list:
            return
        existing = set() if self._fresh else self._existing_ids([n.id for n in node_list])
        tid = self.tree_id
        inserts: list[tuple[Any, ...]] = []
        updates: list[tuple[Any, ...]] = []
        for n in node_list:
            signature = signatures.get(n.id) or ""
            values = (
                _b(n.path),
                n.type.value,
                n.parent_id,
                n.depth,
                n.order,
                n.child_count,
                n.size,
                n.content_hash,
                n.content_status.value,
                _b(signature) if signature else None,
            )
            if n.id in existing:
                updates.append((*values, tid, n.id))
            else:
                inserts.append((tid, n.id, *values))
        try:
            with self.connection.transaction(), self.connection.cursor() as cur:
                if inserts:
                    with cur.copy(
                        "COPY nodes(tree_id, node_id, path, type, parent_id, depth, ord,"
                        " child_count, size, content_hash, content_status, signature)"
                        " FROM STDIN"
                    ) as copy:
                        for row in inserts:
                            copy.write_row(row)
                if updates:
                    cur.executemany(
                        "UPDATE nodes SET path = %s, type = %s, parent_id = %s, depth = %s,"
                        " ord = %s, child_count = %s, size = %s, content_hash = %s,"
                        " content_status = %s, signature = %s"
                        " WHERE tree_id = %s AND node_id = %s",
                        updates,
                    )
        except (psycopg.errors.IntegrityError, psycopg.errors.RaiseException) as exc:
            raise StoreError(
                f"cannot write nodes: {exc}; two paths map to one node id or a content is"
                " missing. Rename one of the colliding paths and re-index."
            ) from exc

    def insert_path_only(self, nodes: PathOnlyNodes) -> None:
        import psycopg

        if (
            not self._fresh
            and self.connection.execute(
                "SELECT 1 FROM nodes WHERE tree_id = %s LIMIT 1", (self.tree_id,)
            ).fetchone()
        ):
            raise StoreError(
                "insert_path_only writes a new tree, but this tree already has nodes;"
                " use upsert_nodes (the general indexer) for an existing tree"
            )
        tid = self.tree_id
        try:
            with (
                self.connection.transaction(),
                self.connection.cursor() as cur,
                cur.copy(
                    "COPY nodes(tree_id, node_id, path, type, parent_id, depth, ord,"
                    " child_count, content_status) FROM STDIN"
                ) as copy,
            ):
                for columns, node_type, status in (
                    (nodes.dirs, NodeType.DIRECTORY.value, ContentStatus.NONE.value),
                    (nodes.files, NodeType.FILE.value, ContentStatus.ABSENT.value),
                ):
                    for row in zip(
                        columns.ids,
                        columns.paths,
                        columns.parent_ids,
                        columns.depths,
                        columns.orders,
                        columns.child_counts,
                        strict=True,
                    ):
                        copy.write_row((tid, row[0], _b(row[1]), node_type, *row[2:], status))
        except psycopg.errors.IntegrityError as exc:
            raise StoreError(
                f"cannot write nodes: {exc}; two paths map to one node id. Rename one of the"
                " colliding paths and re-index."
            ) from exc

    def _existing_ids(self, node_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        rows = self.connection.execute(
            "SELECT node_id, content_hash FROM nodes WHERE tree_id = %s AND node_id = ANY(%s)",
            (self.tree_id, list(node_ids)),
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
        rows = self.connection.execute(
            "DELETE FROM nodes WHERE tree_id = %s AND node_id = ANY(%s) RETURNING content_hash",
            (self.tree_id, ids),
        )
        self._maybe_orphaned.update(r[0] for r in rows if r[0] is not None)

    def copy_from(self, source: str) -> None:
        source_id = self._store._tree_id(self.connection, source)
        if source_id == self.tree_id:
            return
        self._fresh = False
        rows = self.connection.execute(
            "DELETE FROM nodes WHERE tree_id = %s RETURNING content_hash", (self.tree_id,)
        )
        self._maybe_orphaned.update(r[0] for r in rows if r[0] is not None)
        self.connection.execute(
            "INSERT INTO nodes(tree_id, node_id, path, type, parent_id, depth, ord, child_count,"
            " size, content_hash, content_status, signature)"
            " SELECT %s, node_id, path, type, parent_id, depth, ord, child_count, size,"
            " content_hash, content_status, signature FROM nodes WHERE tree_id = %s",
            (self.tree_id, source_id),
        )

    def set_info(self, info: TreeInfo) -> None:
        self.connection.execute(
            "UPDATE trees SET source = %s, root = %s, node_count = %s, file_count = %s,"
            " dir_count = %s, max_depth = %s, built_at = %s, updated_at = %s WHERE id = %s",
            (
                info.source.value,
                _b(info.root),
                info.node_count,
                info.file_count,
                info.dir_count,
                info.max_depth,
                info.built_at.isoformat(),
                info.updated_at.isoformat(),
                self.tree_id,
            ),
        )

    def _finish(self) -> None:
        self._flush_code()
        self._store._delete_orphans(self.connection, self._maybe_orphaned)


def _single(connection: psycopg.Connection[Any]) -> Any:
    """A connection provider that always lends ``connection`` (a writer's transaction)."""

    @contextmanager
    def lend() -> Iterator[psycopg.Connection[Any]]:
        yield connection

    return lend


class PostgresStore:
    """Trees, nodes, contents and code layers in one PostgreSQL database with pgvector (see
    :class:`treeseek.store.base.Store`)."""

    def __init__(
        self,
        url: str,
        *,
        migrations: list[PostgresMigration] | None = None,
        migrate: bool = True,
        timeouts: Timeouts | None = None,
    ) -> None:
        _require_driver()
        self.url = url
        self.timeouts = Timeouts.from_env() if timeouts is None else timeouts
        self._migrations = POSTGRES_MIGRATIONS if migrations is None else migrations
        self._pool_pid = -1
        self._pool_obj: ConnectionPool[Any] | None = None
        self._pool_lock = threading.Lock()
        self._closed = False
        self._writing = threading.local()
        #: per thread: the connection of an open :meth:`snapshot` (a read-only transaction)
        self._reading = threading.local()
        #: a PostgreSQL store is never opened read-only (the server's grants decide)
        self.read_only: str | None = None
        if migrate:
            self.migrate()
        #: the trees' vector matrices of :meth:`PostgresCodeStore.nearest`, kept between
        #: queries (bounded; checked against the database's vector changes at every query)
        self.vector_cache = VectorCache(VECTOR_CACHE_BYTES)
        self._code = PostgresCodeStore(
            self._connection, self.contents, writer=False, cache=self.vector_cache
        )

    # -- connections ---------------------------------------------------------------------
    def _connect_direct(self) -> psycopg.Connection[Any]:
        import psycopg

        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=30)
        except psycopg.Error as exc:
            raise self._unreachable(exc) from exc
        conn.execute(f"SET statement_timeout = {self.timeouts.read_ms}")
        return conn

    def _unreachable(self, exc: Exception) -> StoreError:
        reason = " ".join(str(exc).split())  # libpq's "\n\tIs the server running ...": one line
        return StoreError(
            f"cannot connect to {redact(self.url)}: {reason}; is the server running and the URL"
            " right? Pass --db (or set TREESEEK_DB)"
        )

    def _check_reachable(self) -> None:
        """StoreError at once when a new connection to the server fails (it went away)."""
        import psycopg

        try:
            psycopg.connect(self.url, connect_timeout=5).close()
        except psycopg.Error as exc:
            raise self._unreachable(exc) from exc

    @property
    def _pool(self) -> ConnectionPool[Any]:
        pid = os.getpid()
        pool = self._pool_obj
        if pool is not None and self._pool_pid == pid:
            return pool
        with self._pool_lock:
            if self._closed:
                raise StoreError(f"the database {redact(self.url)} is closed")
            if self._pool_obj is None or self._pool_pid != pid:
                # a forked child never touches its parent's connections: a pool of its own
                from psycopg_pool import ConnectionPool

                read_ms = self.timeouts.read_ms

                def configure(conn: psycopg.Connection[Any]) -> None:
                    from pgvector.psycopg import register_vector

                    # the type lookup first: under a tiny limit it timed out, so no connection
                    # was ever made and every read waited 60 s for the pool ("couldn't get a
                    # connection") instead of raising StatementTimeout
                    register_vector(conn)
                    conn.execute(f"SET statement_timeout = {read_ms}")

                # the pool reports each failed reconnection and discarded connection on its
                # logger; with no logging set up Python printed them all on stderr (dozens of
                # lines while a server is down): an application that sets up logging sees them
                pool_log = logging.getLogger("psycopg.pool")
                if not pool_log.handlers:
                    pool_log.addHandler(logging.NullHandler())
                self._pool_obj = ConnectionPool(
                    self.url,
                    min_size=1,
                    max_size=max(pool_max(), 2),
                    kwargs={"autocommit": True},
                    configure=configure,
                    # a connection the server dropped (a restart, an idle timeout) is replaced
                    # when taken, not handed to a read that then fails: one round trip a read
                    check=ConnectionPool.check_connection,
                    open=True,
                    name="treeseek",
                )
                self._pool_pid = pid
            return self._pool_obj

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection for one read: the pool's, or on a thread inside a write the write's
        own (so the writing thread reads its own rows, as with SQLite)."""
        writer: PostgresTreeWriter | None = getattr(self._writing, "writer", None)
        if writer is not None:
            writer._flush_code()
            yield writer.connection
            return
        snapshot: psycopg.Connection[Any] | None = getattr(self._reading, "conn", None)
        if snapshot is not None:
            yield snapshot
            return
        with self._pool_connection() as conn:
            yield conn

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every read of this thread in the block sees one committed version: one pooled
        connection in a ``REPEATABLE READ READ ONLY`` transaction (MVCC: writers go on and
        commit meanwhile). Reentrant; inside a write of this thread it reads the write's rows."""
        if getattr(self._writing, "writer", None) is not None or getattr(
            self._reading, "conn", None
        ):
            yield
            return
        with self._connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            self._reading.conn = conn
            try:
                yield
            finally:
                self._reading.conn = None

    def check(self, *, full: bool = False) -> StoreCheck:
        """The connection, the schema version, pgvector and the cross-table invariants
        (:data:`~treeseek.store.check.INVARIANTS`) in one read-only snapshot (the server
        checksums its pages itself; ``full`` changes nothing). A server not reached and a
        schema of another version are StoreErrors (not checked), not problems (damage)."""
        import psycopg

        report = StoreCheck(redact(self.url))
        known = self._migrations[-1].version if self._migrations else 0
        version = known
        try:
            with self.snapshot(), self._connection() as conn:
                report.checks.append("connection")
                version = self._version(conn)
                report.checks.append(f"schema version {version}")
                if version == known:
                    self._check_contents(conn, report)
        except (psycopg.Error, StoreError) as exc:
            if "connection" not in report.checks:
                # not reached (down, a wrong URL or password): not checked, not damaged
                if isinstance(exc, StoreError):
                    raise
                raise StoreError(
                    f"cannot connect to {redact(self.url)} to check it: {str(exc).strip()[:300]}"
                ) from exc
            report.problems.append(f"{type(exc).__name__}: {str(exc).strip()[:300]}")
        if version < known:
            raise StoreError(
                f"cannot check {redact(self.url)}: its schema version {version} is older than"
                f" this treeseek's ({known}); run `treeseek db migrate` first"
            )
        if version > known:
            raise StoreError(
                f"cannot check {redact(self.url)}: its schema version {version} is newer than"
                f" this treeseek knows ({known}); check it with the treeseek that wrote it"
                " (upgrade)"
            )
        return report

    @staticmethod
    def _check_contents(conn: psycopg.Connection[Any], report: StoreCheck) -> None:
        has_vector = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
        report.checks.append("pgvector")
        if has_vector is None:
            report.problems.append("the vector extension is not installed")
        for what, sql in INVARIANTS:
            report.checks.append(what)
            row = conn.execute(sql).fetchone()
            if row is not None and int(row[0]):
                report.problems.append(f"{int(row[0])} {what}")

    def _timed_out(self, exc: Exception) -> StoreError:
        if "statement timeout" not in str(exc):
            return StoreError(f"the database {redact(self.url)} cancelled a statement: {exc}")
        writing = getattr(self._writing, "active", False)
        ms = self.timeouts.write_ms if writing else self.timeouts.read_ms
        env = WRITE_TIMEOUT_ENV if writing else READ_TIMEOUT_ENV
        return StatementTimeout(
            f"a {'write' if writing else 'read'} statement on {redact(self.url)} ran longer than"
            f" the statement timeout ({ms / 1000:g} s) and was cancelled; raise it with ${env}"
            " (seconds, 0: no limit) or `treeseek serve --statement-timeout`, or ask less"
        )

    def code(self) -> PostgresCodeStore:
        return self._code

    def jobs(self) -> PostgresJobBoard:
        return PostgresJobBoard(self._pool_connection)

    @contextmanager
    def _pool_connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection of the pool, even on a thread inside a write or a snapshot: what it
        writes commits at once, outside the thread's transaction."""
        import psycopg
        from psycopg_pool import PoolTimeout

        try:
            with ExitStack() as stack:
                pool = self._pool
                try:
                    conn = stack.enter_context(pool.connection(timeout=POOL_FIRST_WAIT_S))
                except PoolTimeout:  # all busy, or the server gone: a new connection tells
                    self._check_reachable()
                    wait = POOL_WAIT_S - POOL_FIRST_WAIT_S
                    conn = stack.enter_context(pool.connection(timeout=wait))
                yield conn
        except psycopg.errors.QueryCanceled as exc:
            raise self._timed_out(exc) from exc
        except psycopg.errors.InsufficientPrivilege as exc:  # the server's grants decide
            lacks = (
                "may not write treeseek's tables there"
                if getattr(self._writing, "active", False)
                else "lacks a grant on treeseek's tables there that this needs"
            )
            raise StoreError(
                f"the database {redact(self.url)} refused: {' '.join(str(exc).split())}; this"
                f" user {lacks} (ask their owner for the grants, or use another --db)"
            ) from exc
        except psycopg.OperationalError as exc:
            raise StoreError(f"the database {redact(self.url)} failed: {exc}") from exc

    def local_files(self) -> list[Path]:
        return []

    def close(self) -> None:
        with self._pool_lock:
            self._closed = True
            if self._pool_obj is not None and self._pool_pid == os.getpid():
                self._pool_obj.close()
            self._pool_obj = None

    # -- schema --------------------------------------------------------------------------
    @property
    def schema_version(self) -> int:
        with self._connection() as conn:
            return self._version(conn)

    @staticmethod
    def _existing_version(conn: psycopg.Connection[Any]) -> int | None:
        """The schema version when treeseek's tables exist in the schema they are created in
        (the first on the search path; None: not yet), read without creating anything."""
        row = conn.execute(
            "SELECT CASE WHEN current_schema() IS NOT NULL"
            " THEN to_regclass(format('%I.schema_version', current_schema())) END"
        ).fetchone()
        if row is None or row[0] is None:
            return None
        return PostgresStore._version(conn)

    @staticmethod
    def _version(conn: psycopg.Connection[Any]) -> int:
        row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
        return int(row[0] or 0) if row else 0

    def migrate(self) -> list[int]:
        """Apply the migrations this database lacks; returns the versions applied."""
        import psycopg

        applied: list[int] = []
        conn = self._connect_direct()
        try:
            known = self._migrations[-1].version if self._migrations else 0
            # a database already at this version is only read: a role that may not create
            # anything (a read-only team member, a query-only server) opens it too
            try:
                existing = self._existing_version(conn)
            except psycopg.Error as exc:
                raise SchemaError(
                    f"cannot read treeseek's schema version in {redact(self.url)}:"
                    f" {' '.join(str(exc).split())}; grant this user SELECT on treeseek's tables"
                ) from exc
            if existing == known:
                return applied
            try:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as exc:
                raise StoreError(
                    f"the database {redact(self.url)} lacks the pgvector extension and this"
                    f" user cannot create it ({str(exc).strip()}); ask an administrator to run"
                    " CREATE EXTENSION vector in it"
                ) from exc
            try:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
                    conn.execute(
                        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY,"
                        " description TEXT NOT NULL, applied_at TEXT NOT NULL)"
                    )
            except psycopg.Error as exc:
                raise SchemaError(
                    f"cannot create treeseek's tables in {redact(self.url)}:"
                    f" {' '.join(str(exc).split())}; grant this user CREATE on the schema, or"
                    " have its owner run `treeseek db migrate` once"
                ) from exc
            current = self._version(conn)
            if current > known:
                raise SchemaError(
                    f"the database {redact(self.url)} has schema version {current}, newer than"
                    f" this treeseek knows ({known}); upgrade treeseek or use another --db"
                )
            for migration in self._migrations:
                if migration.version <= current:
                    continue
                try:
                    with conn.transaction():
                        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
                        if self._version(conn) >= migration.version:
                            continue
                        conn.execute(f"SET LOCAL statement_timeout = {self.timeouts.write_ms}")
                        if migration.sql.strip():
                            conn.execute(migration.sql.encode())
                        if migration.run is not None:
                            migration.run(conn)
                        conn.execute(
                            "INSERT INTO schema_version(version, description, applied_at)"
                            " VALUES (%s, %s, %s)",
                            (
                                migration.version,
                                migration.description,
                                datetime.now(UTC).isoformat(),
                            ),
                        )
                        applied.append(migration.version)
                except psycopg.Error as exc:
                    raise SchemaError(
                        f"migration {migration.version} ({migration.description}) failed on"
                        f" {redact(self.url)}: {str(exc).strip()}; the database is unchanged at"
                        f" version {self._version(conn)}"
                    ) from exc
        finally:
            conn.close()
        return applied

    # -- trees ---------------------------------------------------------------------------
    @staticmethod
    def _tree_id(conn: psycopg.Connection[Any], name: str) -> int:
        if "\x00" in name:  # no PostgreSQL text holds a NUL: no tree has that name
            raise TreeNotFound(name)
        row = conn.execute("SELECT id FROM trees WHERE name = %s", (name,)).fetchone()
        if row is None:
            raise TreeNotFound(name)
        return int(row[0])

    def trees(self) -> list[TreeInfo]:
        with self._connection() as conn:
            rows = conn.execute(f"SELECT {_TREE_COLUMNS} FROM trees ORDER BY name").fetchall()
        return [_row_to_info(r) for r in rows]

    def tree(self, name: str) -> TreeInfo:
        if "\x00" in name:
            raise TreeNotFound(name)
        with self._connection() as conn:
            row = conn.execute(
                f"SELECT {_TREE_COLUMNS} FROM trees WHERE name = %s", (name,)
            ).fetchone()
        if row is None:
            raise TreeNotFound(name)
        return _row_to_info(row)

    def has_tree(self, name: str) -> bool:
        if "\x00" in name:
            return False
        with self._connection() as conn:
            row = conn.execute("SELECT 1 FROM trees WHERE name = %s", (name,)).fetchone()
        return row is not None

    def delete_tree(self, name: str) -> None:
        if "\x00" in name:  # before its lock: hashtext() cannot take a NUL either
            raise TreeNotFound(name)
        with self._write_connection(name) as conn:
            tree_id = self._tree_id(conn, name)
            rows = conn.execute(
                "SELECT DISTINCT content_hash FROM nodes WHERE tree_id = %s"
                " AND content_hash IS NOT NULL",
                (tree_id,),
            ).fetchall()
            conn.execute("DELETE FROM trees WHERE id = %s", (tree_id,))
            self._delete_orphans(conn, {r[0] for r in rows})

    def copy_tree(self, source: str, target: str) -> None:
        info = self.tree(source)
        with self.write_tree(target) as writer:
            writer.copy_from(source)
            now = datetime.now(UTC)
            writer.set_info(dataclasses.replace(info, name=target, built_at=now, updated_at=now))

    @contextmanager
    def _write_connection(self, name: str) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection in a write transaction holding tree ``name``'s advisory lock."""
        if getattr(self._writing, "active", False):
            raise StoreError("nested write: a write transaction is already open on this thread")
        self._writing.active = True
        try:
            with self._connection() as conn, conn.transaction():
                conn.execute(f"SET LOCAL statement_timeout = {self.timeouts.write_ms}")
                conn.execute(
                    "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (TREE_LOCK_NAMESPACE, name)
                )
                yield conn
        finally:
            self._writing.active = False

    @contextmanager
    def write_tree(self, name: str) -> Iterator[PostgresTreeWriter]:
        with self._write_connection(name) as conn:
            row = conn.execute("SELECT id FROM trees WHERE name = %s", (name,)).fetchone()
            if row is None:
                now = datetime.now(UTC).isoformat()
                created = conn.execute(
                    "INSERT INTO trees(name, source, root, built_at, updated_at)"
                    " VALUES (%s, %s, %s, %s, %s) RETURNING id",
                    (name, TreeSource.FILESYSTEM.value, b"", now, now),
                ).fetchone()
                assert created is not None
                tree_id = int(created[0])
            else:
                tree_id = int(row[0])
            writer = PostgresTreeWriter(self, conn, tree_id, fresh=row is None)
            self._writing.writer = writer
            try:
                yield writer
                writer._finish()
            finally:
                self._writing.writer = None

    # -- nodes ---------------------------------------------------------------------------
    def root(self, tree: str) -> Node:
        found = self.node_by_path(tree, ROOT_PATH)
        if found is None:
            raise NodeNotFound(f"tree {tree!r} has no root node; re-index it")
        return found

    def node(self, tree: str, node_id: str) -> Node:
        if not node_id.isascii():
            raise NodeNotFound(f"no node with id {node_id!r} in tree {tree!r}")
        with self._connection() as conn:
            tree_id = self._tree_id(conn, tree)
            row = conn.execute(
                f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tree_id = %s AND node_id = %s",
                (tree_id, node_id),
            ).fetchone()
        if row is None:
            raise NodeNotFound(f"no node with id {node_id!r} in tree {tree!r}")
        return _row_to_node(row)

    def nodes(self, tree: str, node_ids: Sequence[str]) -> list[Node]:
        wanted = [i for i in dict.fromkeys(node_ids) if i.isascii()]
        with self._connection() as conn:
            tree_id = self._tree_id(conn, tree)
            rows = conn.execute(
                f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tree_id = %s AND node_id = ANY(%s)",
                (tree_id, wanted),
            ).fetchall()
        found = {r[0]: _row_to_node(r) for r in rows}
        return [found[i] for i in node_ids if i in found]

    def node_by_path(self, tree: str, path: str) -> Node | None:
        with self._connection() as conn:
            tree_id = self._tree_id(conn, tree)
            row = conn.execute(
                f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tree_id = %s AND path = %s",
                (tree_id, _b(path)),
            ).fetchone()
        return None if row is None else _row_to_node(row)

    def nodes_by_paths(self, tree: str, paths: Sequence[str]) -> dict[str, Node]:
        wanted = [_b(p) for p in dict.fromkeys(paths)]
        with self._connection() as conn:
            tree_id = self._tree_id(conn, tree)
            rows = conn.execute(
                f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tree_id = %s AND path = ANY(%s)",
                (tree_id, wanted),
            ).fetchall()
        found: dict[str, Node] = {}
        for row in rows:
            node = _row_to_node(row)
            found[node.path] = node
        return found

    def children(self, tree: str, node_id: str) -> list[Node]:
        with self._connection() as conn:
            tree_id = self._tree_id(conn, tree)
            rows = conn.execute(
                f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tree_id = %s AND parent_id = %s"
                " ORDER BY ord",
                (tree_id, node_id),
            ).fetchall()
        return [_row_to_node(r) for r in rows]

    def children_many(self, tree: str, node_ids: Sequence[str]) -> dict[str, list[Node]]:
        result: dict[str, list[Node]] = {i: [] for i in node_ids}
        with self._connection() as conn:
            tree_id = self._tree_id(conn, tree)
            rows = conn.execute(
                f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tree_id = %s AND parent_id = ANY(%s)"
                " ORDER BY parent_id, ord",
                (tree_id, list(result)),
            ).fetchall()
        for row in rows:
            result[row[3]].append(_row_to_node(row))
        return result

    def subtree(self, tree: str, path: str = "") -> Iterator[Node]:
        with self._connection() as conn:
            tree_id = self._tree_id(conn, tree)
            if path == ROOT_PATH:
                rows = conn.execute(
                    f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tree_id = %s ORDER BY path",
                    (tree_id,),
                ).fetchall()
            else:
                low, high = _prefix_range(path)
                rows = conn.execute(
                    f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tree_id = %s AND"
                    " (path = %s OR (path >= %s AND path < %s)) ORDER BY path",
                    (tree_id, _b(path), low, high),
                ).fetchall()
        return (_row_to_node(r) for r in rows)

    def file_nodes(self, tree: str) -> list[Node]:
        with self._connection() as conn:
            tree_id = self._tree_id(conn, tree)
            rows = conn.execute(
                f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tree_id = %s AND type = %s ORDER BY path",
                (tree_id, NodeType.FILE.value),
            ).fetchall()
        return [_row_to_node(r) for r in rows]

    def file_states(self, tree: str) -> dict[str, FileState]:
        with self._connection() as conn:
            tree_id = self._tree_id(conn, tree)
            rows = conn.execute(
                "SELECT node_id, path, signature, content_hash FROM nodes"
                " WHERE tree_id = %s AND type = %s",
                (tree_id, NodeType.FILE.value),
            ).fetchall()
        out: dict[str, FileState] = {}
        for node_id, raw_path, signature, content_hash in rows:
            path = _s(raw_path)
            out[path] = FileState(node_id, path, _s(signature) if signature else "", content_hash)
        return out

    def file_signatures(self, tree: str) -> dict[str, str]:
        with self._connection() as conn:
            tree_id = self._tree_id(conn, tree)
            rows = conn.execute(
                "SELECT path, signature FROM nodes WHERE tree_id = %s AND type = %s",
                (tree_id, NodeType.FILE.value),
            ).fetchall()
        return {_s(path): _s(signature) if signature else "" for path, signature in rows}

    def directory_paths(self, tree: str) -> list[str]:
        with self._connection() as conn:
            tree_id = self._tree_id(conn, tree)
            rows = conn.execute(
                "SELECT path FROM nodes WHERE tree_id = %s AND type = %s ORDER BY path",
                (tree_id, NodeType.DIRECTORY.value),
            ).fetchall()
        return [_s(r[0]) for r in rows]

    # -- contents ------------------------------------------------------------------------
    def content(self, tree: str, node_id: str) -> bytes | None:
        with self._connection() as conn:
            tree_id = self._tree_id(conn, tree)
            row = conn.execute(
                "SELECT c.data, n.content_hash FROM nodes n LEFT JOIN contents c"
                " ON c.hash = n.content_hash WHERE n.tree_id = %s AND n.node_id = %s",
                (tree_id, node_id),
            ).fetchone()
        if row is None:
            raise NodeNotFound(f"no node with id {node_id!r} in tree {tree!r}")
        if row[0] is None:
            return None
        return zlib.decompress(row[0])

    def contents(self, hashes: Sequence[str]) -> dict[str, bytes]:
        with self._connection() as conn:
            return self._read_contents(conn, hashes)

    def contents_on(self, conn: psycopg.Connection[Any]) -> Any:
        """:meth:`contents` on one connection (a writer's transaction)."""

        def read(hashes: Sequence[str]) -> dict[str, bytes]:
            return self._read_contents(conn, hashes)

        return read

    @staticmethod
    def _read_contents(conn: psycopg.Connection[Any], hashes: Sequence[str]) -> dict[str, bytes]:
        rows = conn.execute(
            "SELECT hash, data FROM contents WHERE hash = ANY(%s)", (list(dict.fromkeys(hashes)),)
        ).fetchall()
        return {digest: zlib.decompress(data) for digest, data in rows}

    def content_count(self) -> int:
        with self._connection() as conn:
            row = conn.execute("SELECT count(*) FROM contents").fetchone()
        return int(row[0]) if row else 0

    # -- internals -----------------------------------------------------------------------
    @staticmethod
    def _existing_hashes(conn: psycopg.Connection[Any], hashes: Sequence[str]) -> set[str]:
        """The stored ones of ``hashes``, locked (``FOR KEY SHARE``) until the writer's
        transaction ends: a concurrent removal of another tree (:meth:`_delete_orphans`) then
        leaves them, rather than deleting contents this writer is about to reference."""
        rows = conn.execute(
            "SELECT hash FROM contents WHERE hash = ANY(%s) FOR KEY SHARE", (list(hashes),)
        )
        return {r[0] for r in rows}

    @staticmethod
    def _delete_orphans(conn: psycopg.Connection[Any], hashes: Iterable[str]) -> None:
        """Delete the contents of ``hashes`` no node references. One another writer's open
        transaction holds (it stored it, found it stored, or references it: a key-share lock)
        is left (``SKIP LOCKED``; its tree may be about to reference it), and should a
        reference still slip in between, the deletion is given up, not the whole write: an
        unreferenced content left over is harmless, a failed ``rm`` or index run is not."""
        import psycopg

        candidates = list(hashes)
        if not candidates:
            return
        try:
            with conn.transaction():  # a savepoint inside the write
                conn.execute(
                    "DELETE FROM contents WHERE hash IN (SELECT hash FROM contents"
                    " WHERE hash = ANY(%s) AND NOT EXISTS (SELECT 1 FROM nodes"
                    " WHERE nodes.content_hash = contents.hash) FOR UPDATE SKIP LOCKED)",
                    (candidates,),
                )
        except psycopg.errors.ForeignKeyViolation:
            log.info("contents still referenced by a concurrent writer were left in place")
