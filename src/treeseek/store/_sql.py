"""Small SQL helpers shared by the SQLite modules of this package."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

#: how many values go into one ``IN (...)`` list (SQLite's default limit is 32766; stay small)
BATCH = 500


def batched(items: Sequence[T], size: int = BATCH) -> Iterator[Sequence[T]]:
    """``items`` in consecutive slices of at most ``size``: the values of one ``IN (...)``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def qmarks(n: int) -> str:
    """``?,?,...`` with ``n`` placeholders."""
    return ",".join("?" * n)


def is_utf8(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (no surrogate escapes): what a database can be sent
    as text, and all stored text of the code layers is."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


#: what sqlite3 raises when a TEXT value is not UTF-8 and the text factory is ``str``
_NOT_UTF8 = "Could not decode to UTF-8"


def fetch_decoded(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[Any]:
    """Every row of one read, its text decoded as the connection's text factory decodes it,
    but in C.

    The store's connections decode text with a Python function (surrogate escapes, so a
    name that is not UTF-8 reads back as written): one call per value, about a second per
    two million values, most of a large tree's first query. Valid UTF-8 decodes to the same
    string with sqlite3's own ``str`` factory, so a read of many rows runs with that one;
    a value that is not UTF-8 makes ``str`` fail, and the read runs again with the
    connection's factory. The connection is its thread's own: nothing else reads on it
    meanwhile.
    """
    factory = conn.text_factory
    if factory is str:
        return conn.execute(sql, params).fetchall()
    conn.text_factory = str
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        if _NOT_UTF8 not in str(exc):
            raise
    finally:
        conn.text_factory = factory
    return conn.execute(sql, params).fetchall()
