"""Storage failures as one-line errors: THE path from a driver's exception to a StoreError.

A store class decorated with :func:`translate_failures` never lets its driver's exceptions out
of a public method (nor out of a generator it returns, nor out of the ``with`` block of a
context manager it returns, so a failed ``COMMIT`` is covered): each becomes the
:class:`~treeseek.errors.StoreError` its ``_failure(exc)`` method makes, a one-line message
that names the database and says what to do. :func:`sqlite_failure` is that message for the
SQLite store: a full disk (or a file-size limit), a corrupt file, a read-only one, a busy one.
"""

from __future__ import annotations

import functools
import inspect
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, TypeVar

from treeseek.errors import CorruptDatabase, DiskFull, ReadOnlyDatabase, StoreError

C = TypeVar("C")

#: SQLite primary result codes (``sqlite3.Error.sqlite_errorcode & 0xFF``)
SQLITE_READONLY = 8
SQLITE_IOERR = 10
SQLITE_CORRUPT = 11
SQLITE_FULL = 13
SQLITE_CANTOPEN = 14
SQLITE_NOTADB = 26
SQLITE_BUSY = 5
SQLITE_LOCKED = 6


#: the first 16 bytes of every SQLite database file
SQLITE_HEADER = b"SQLite format 3\x00"


def lacks_sqlite_header(path: Path) -> bool:
    """Whether ``path`` is a non-empty file that does not start as every SQLite database
    does: a file named as the database by mistake (notes, a path list), or one whose header
    was overwritten. Either way not a file to advise deleting."""
    try:
        with path.open("rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError:
        return False
    return bool(head) and head != SQLITE_HEADER


def not_sqlite_message(path: Path | str) -> str:
    """What to say of a database path whose file is not SQLite (see lacks_sqlite_header)."""
    return (
        f"the database {path} is not a SQLite file (it lacks SQLite's header): if --db or"
        " TREESEEK_DB names the wrong file, point it at a treeseek database; if it was one, it"
        f" is damaged beyond repair (`treeseek db check --db {path}`): restore it from a backup"
    )


class _Failing(Protocol):
    def _failure(self, exc: Exception) -> StoreError: ...


def primary_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


def sqlite_failure(exc: sqlite3.Error, path: Path) -> StoreError:
    """The one-line error of a failed SQLite operation on the database ``path``."""
    code = primary_code(exc)
    detail = str(exc).strip() or type(exc).__name__
    if code == SQLITE_NOTADB and lacks_sqlite_header(path):
        return CorruptDatabase(not_sqlite_message(path))
    if code in (SQLITE_CORRUPT, SQLITE_NOTADB):
        return CorruptDatabase(
            f"the database {path} is damaged ({detail}): nothing more is written to it;"
            f" run `treeseek db check --db {path}`, then restore it from a backup or delete"
            " it and index again"
        )
    if code == SQLITE_FULL or (code == SQLITE_IOERR and _no_space(exc)):
        return DiskFull(
            f"the disk holding {path} is full or a file-size limit was reached ({detail});"
            " the write was rolled back and the previous version is intact: free space"
            " (or raise the limit) and run it again"
        )
    if code == SQLITE_READONLY:
        return ReadOnlyDatabase(
            f"the database {path} is read-only ({detail}): reading works, writing needs"
            " write permission on the file and its directory"
        )
    if code in (SQLITE_BUSY, SQLITE_LOCKED):
        return StoreError(
            f"the database {path} is busy ({detail}); another process holds a lock on it:"
            " wait for it to finish and retry"
        )
    if code == SQLITE_IOERR:
        return StoreError(
            f"disk I/O error on the database {path} ({detail}); is the disk full or failing?"
            f" `treeseek db check --db {path}` tells whether the file is intact"
        )
    if code == SQLITE_CANTOPEN:
        return StoreError(f"cannot open the database {path} ({detail}); check its permissions")
    return StoreError(f"the database {path} failed: {detail}")


def _no_space(exc: sqlite3.Error) -> bool:
    name = str(getattr(exc, "sqlite_errorname", ""))
    return name in ("SQLITE_IOERR_WRITE", "SQLITE_IOERR_FSYNC", "SQLITE_IOERR_TRUNCATE")


def translate_failures(error: type[Exception]) -> Callable[[type[C]], type[C]]:
    """A class decorator: ``error`` (the driver's base exception) raised by a public method
    becomes ``self._failure(exc)``."""

    def decorate(cls: type[C]) -> type[C]:
        for name, member in list(vars(cls).items()):
            if name.startswith("_") or not inspect.isfunction(member):
                continue
            setattr(cls, name, _wrap(member, error))
        return cls

    return decorate


def _wrap(method: Callable[..., Any], error: type[Exception]) -> Callable[..., Any]:
    if inspect.isgeneratorfunction(method):

        @functools.wraps(method)
        def generator(self: _Failing, *args: Any, **kwargs: Any) -> Iterator[Any]:
            try:
                yield from method(self, *args, **kwargs)
            except error as exc:
                raise self._failure(exc) from exc

        return generator

    @functools.wraps(method)
    def call(self: _Failing, *args: Any, **kwargs: Any) -> Any:
        try:
            result = method(self, *args, **kwargs)
        except error as exc:
            raise self._failure(exc) from exc
        if isinstance(result, AbstractContextManager):
            return _Translating(result, self, error)
        return result

    return call


class _Translating(AbstractContextManager[Any]):
    """A context manager whose enter and exit (a COMMIT, say) translate ``error``."""

    def __init__(
        self, inner: AbstractContextManager[Any], owner: _Failing, error: type[Exception]
    ) -> None:
        self._inner = inner
        self._owner = owner
        self._error = error

    def __enter__(self) -> Any:
        try:
            return self._inner.__enter__()
        except self._error as exc:
            raise self._owner._failure(exc) from exc

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        try:
            handled = self._inner.__exit__(exc_type, exc, tb)
        except self._error as failure:
            raise self._owner._failure(failure) from failure
        if not handled and isinstance(exc, self._error):
            raise self._owner._failure(exc) from exc
        return handled
