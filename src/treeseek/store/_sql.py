"""Small SQL helpers shared by the SQLite modules of this package."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

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
