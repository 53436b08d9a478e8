"""Persistence: the Store protocols (:mod:`.base`, :mod:`.code_base`) and :func:`open_store`.

Only :func:`open_store` knows the concrete stores (the embedded SQLite store, :mod:`.sqlite`;
the shared PostgreSQL + pgvector store, :mod:`.postgres`, extra ``postgres``);
everything above this package works with the protocols, so another backend is a class that
implements them plus one line here.
"""

from __future__ import annotations

from pathlib import Path

from treeseek.errors import StoreError
from treeseek.store.base import FileState, Store, TreeWriter
from treeseek.store.check import StoreCheck
from treeseek.store.code_base import CodeStore, CodeWriter

#: URL schemes :func:`open_store` reads as a SQLite file (``sqlite:///abs/path.db``)
_SQLITE_SCHEMES = ("sqlite",)
#: URL schemes of the PostgreSQL store (libpq connection URIs)
POSTGRES_SCHEMES = ("postgresql", "postgres")


def is_url(location: str | Path) -> bool:
    """Whether ``location`` names a database server rather than a file."""
    return isinstance(location, str) and location.partition("://")[0] in POSTGRES_SCHEMES


def open_store(location: str | Path) -> Store:
    """Open (creating if needed) the store at ``location``: a file path, or a URL whose
    scheme names the backend: ``sqlite:///relative.db``, ``sqlite:////abs/path.db`` (the
    SQLAlchemy spelling: the path is what follows the third slash), or
    ``postgresql://user@host:port/dbname`` (PostgreSQL 15+ with pgvector; extra ``postgres``)."""
    from treeseek.store.sqlite import SQLiteStore

    if isinstance(location, Path):
        return SQLiteStore(location)
    scheme, sep, rest = location.partition("://")
    if not sep or len(scheme) < 2:  # a plain path (a Windows drive letter is not a scheme)
        return SQLiteStore(Path(location))
    if scheme in _SQLITE_SCHEMES:
        return SQLiteStore(Path(rest.removeprefix("/")))
    if scheme in POSTGRES_SCHEMES:
        from treeseek.store.postgres import PostgresStore

        return PostgresStore(location)
    raise StoreError(
        f"no store backend for {scheme}:// URLs; give a SQLite file path (or sqlite:///path)"
        " or a postgresql:// URL"
    )


def check_store(location: str | Path, *, full: bool = False) -> StoreCheck:
    """Check the database at ``location`` without migrating or writing it: a SQLite file is
    checked on a read-only connection of its own (so a file too damaged to open as a store is
    still reported), a PostgreSQL database through its store."""
    from treeseek.store.check import check_sqlite
    from treeseek.store.migrations import MIGRATIONS

    if isinstance(location, Path) or not is_url(location):
        path = Path(str(location).removeprefix("sqlite:///"))
        return check_sqlite(path, full=full, schema_version=MIGRATIONS[-1].version)
    from treeseek.store.postgres import PostgresStore

    store = PostgresStore(location, migrate=False)
    try:
        return store.check(full=full)
    finally:
        store.close()


__all__ = [
    "CodeStore",
    "CodeWriter",
    "FileState",
    "Store",
    "StoreCheck",
    "TreeWriter",
    "check_store",
    "is_url",
    "open_store",
]
