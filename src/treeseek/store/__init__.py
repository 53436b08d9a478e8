"""Persistence: the Store protocols (:mod:`.base`, :mod:`.code_base`) and :func:`open_store`.

Only :func:`open_store` knows the concrete stores (the embedded SQLite store, :mod:`.sqlite`);
everything above this package works with the protocols, so another backend is a class that
implements them plus one line here.
"""

from __future__ import annotations

from pathlib import Path

from treeseek.errors import StoreError
from treeseek.store.base import FileState, Store, TreeWriter
from treeseek.store.code_base import CodeStore, CodeWriter

#: URL schemes :func:`open_store` reads as a SQLite file (``sqlite:///abs/path.db``)
_SQLITE_SCHEMES = ("sqlite",)


def open_store(location: str | Path) -> Store:
    """Open (creating if needed) the store at ``location``: a file path, or a URL whose
    scheme names the backend: ``sqlite:///relative.db``, ``sqlite:////abs/path.db`` (the
    SQLAlchemy spelling: the path is what follows the third slash)."""
    from treeseek.store.sqlite import SQLiteStore

    if isinstance(location, Path):
        return SQLiteStore(location)
    scheme, sep, rest = location.partition("://")
    if not sep or len(scheme) < 2:  # a plain path (a Windows drive letter is not a scheme)
        return SQLiteStore(Path(location))
    if scheme in _SQLITE_SCHEMES:
        return SQLiteStore(Path(rest.removeprefix("/")))
    raise StoreError(
        f"no store backend for {scheme}:// URLs; give a SQLite file path (or sqlite:///path)"
    )


__all__ = ["CodeStore", "CodeWriter", "FileState", "Store", "TreeWriter", "open_store"]
