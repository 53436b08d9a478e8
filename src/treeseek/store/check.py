"""``treeseek db check``: is a database intact? (:func:`check_sqlite`, and the PostgreSQL
store's :meth:`~treeseek.store.postgres.PostgresStore.check`).

SQLite: ``PRAGMA quick_check`` (or the slower ``integrity_check`` with ``full``: indexes
against their tables too) on a read-only connection of its own, so a file too damaged for the
store to open is still checked; then the schema version and the cross-table invariants below.
An intact file loses its damage mark (``<db>-corrupt``), a damaged one gets it.
PostgreSQL (whose pages the server checksums itself): the connection, the schema version,
pgvector, and the same invariants.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from treeseek.errors import StoreError
from treeseek.store.failures import SQLITE_CANTOPEN, SQLITE_READONLY, primary_code

#: cross-table invariants: (what is wrong when the count is not 0, SQL counting the rows)
INVARIANTS: tuple[tuple[str, str], ...] = (
    (
        "nodes whose parent is missing",
        "SELECT count(*) FROM nodes c WHERE c.parent_id IS NOT NULL AND NOT EXISTS"
        " (SELECT 1 FROM nodes p WHERE p.tree_id = c.tree_id AND p.node_id = c.parent_id)",
    ),
    (
        "stored files whose content is missing",
        "SELECT count(*) FROM nodes n WHERE n.content_status = 'stored' AND NOT EXISTS"
        " (SELECT 1 FROM contents c WHERE c.hash = n.content_hash)",
    ),
    (
        "trees whose node count is not their number of nodes",
        "SELECT count(*) FROM trees t WHERE t.node_count !="
        " (SELECT count(*) FROM nodes n WHERE n.tree_id = t.id)",
    ),
)
#: problems listed at most (a badly damaged file has thousands)
MAX_PROBLEMS = 20


@dataclass(frozen=True, slots=True)
class StoreCheck:
    """What ``treeseek db check`` found: ``ok`` when ``problems`` is empty."""

    location: str
    checks: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def check_sqlite(path: Path, *, full: bool = False, schema_version: int) -> StoreCheck:
    """Check the SQLite database ``path`` (read-only; ``schema_version``: the version this
    treeseek knows)."""
    report = StoreCheck(str(path))
    marker = Path(f"{path}-corrupt")
    if not path.is_file():
        raise StoreError(f"no database file at {path}; pass --db (or set TREESEEK_DB)")
    conn = _read_only(path)
    try:
        pragma = "integrity_check" if full else "quick_check"
        report.checks.append(pragma)
        try:
            rows = conn.execute(f"PRAGMA {pragma}({MAX_PROBLEMS})").fetchall()
            report.problems.extend(str(r[0]) for r in rows if r[0] != "ok")
        except sqlite3.Error as exc:
            report.problems.append(f"{pragma} failed: {exc}")
        if report.ok:
            _check_contents(conn, report, schema_version)
    finally:
        conn.close()
    if report.ok:
        with contextlib.suppress(OSError):
            marker.unlink(missing_ok=True)
    else:
        with contextlib.suppress(OSError):
            marker.write_text(
                f"{datetime.now(UTC).isoformat()} {report.problems[0][:300]}\n", encoding="utf-8"
            )
    return report


def _read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection; ``immutable`` when not even a read-only WAL index can be made
    (a read-only directory or mount)."""
    uri = path.resolve().as_uri()
    try:
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=30)
        try:
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        except sqlite3.DatabaseError as exc:  # a malformed file raises DatabaseError itself
            if not isinstance(exc, sqlite3.OperationalError) or primary_code(exc) not in (
                SQLITE_READONLY,
                SQLITE_CANTOPEN,
            ):
                return conn  # a damaged file: the check says so
            conn.close()
            conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, timeout=30)
        return conn
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the database {path} to check it: {exc}") from exc


def _check_contents(conn: sqlite3.Connection, report: StoreCheck, known: int) -> None:
    try:
        row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
    except sqlite3.Error:
        report.problems.append("no schema_version table: not a treeseek database")
        return
    version = int(row[0] or 0)
    report.checks.append(f"schema version {version}")
    if version > known:
        # written by a newer treeseek: not damaged, and not to be marked so (the mark would
        # stop that treeseek writing into it too)
        raise StoreError(
            f"cannot check {report.location}: its schema version {version} is newer than this"
            f" treeseek knows ({known}); check it with the treeseek that wrote it (upgrade)"
        )
    if version < known:
        report.checks.append(f"(version {known} after `treeseek db migrate`)")
    report.checks.append("foreign keys")
    bad = conn.execute("PRAGMA foreign_key_check").fetchmany(MAX_PROBLEMS)
    report.problems.extend(f"row {r[1]} of {r[0]} points at a missing {r[2]}" for r in bad)
    for what, sql in INVARIANTS:
        report.checks.append(what)
        count = int(conn.execute(sql).fetchone()[0])
        if count:
            report.problems.append(f"{count} {what}")
