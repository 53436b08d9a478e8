"""PostgreSQL's log of vector changes (``code_vector_changes``, migrations 5 and 6) stays
small and never lets a reader's stamp miss a change: the first change of a (model, kind) in a
transaction folds the committed rows into its own (their count kept), so after re-indexes the
table holds a row per (model, kind), and concurrent writers (who never wait for each other)
count every committed transaction once, in every snapshot."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from treeseek.store.code_base import VectorKey
from treeseek.store.migrations import POSTGRES_MIGRATIONS
from treeseek.store.postgres import PostgresStore

DIM = 8


def _rows(url: str, counted: bool = True) -> list[tuple[str, str, int]]:
    import psycopg

    n = "n" if counted else "1"  # schema 5 has no counts: a row is a change
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(f"SELECT model, kind, {n} FROM code_vector_changes ORDER BY 1, 2, 3")
        return [(str(m), str(k), int(c)) for m, k, c in rows]


def _stamp(conn: Any, model: str = "m", kind: str = "file") -> int:
    row = conn.execute(
        "SELECT coalesce(sum(n), 0) FROM code_vector_changes WHERE model = %s AND kind = %s",
        (model, kind),
    ).fetchone()
    return int(row[0])


@contextmanager
def _connect(url: str, isolation: str = "READ COMMITTED") -> Iterator[Any]:
    """A connection in an open transaction of ``isolation``; a lock wait fails at once (the
    writers' triggers never wait)."""
    import psycopg

    with psycopg.connect(url) as conn:
        conn.execute(f"SET TRANSACTION ISOLATION LEVEL {isolation}")
        conn.execute("SET lock_timeout = '5s'")
        yield conn


def _put(conn: Any, path: str, kind: str = "file", model: str = "m") -> None:
    vec = "[" + ",".join(str(float(x)) for x in np.random.default_rng().random(DIM)) + "]"
    conn.execute(
        "INSERT INTO code_vectors(content_hash, path, model, kind, vec)"
        " VALUES (%s, %s, %s, %s, %s::vector) ON CONFLICT (content_hash, path, model, kind)"
        " DO UPDATE SET vec = EXCLUDED.vec",
        ("a" * 64, path.encode(), model, kind, vec),
    )


def test_rows_of_before_fold_at_migration_and_reindexes_keep_one_row(
    postgres_url: Callable[[], str],
) -> None:
    """Three changes logged by schema 5 become one row counting three; 60 re-indexes (each a
    transaction of many statements) leave one row per (model, kind), counting every one, and
    a long-lived reader answers from the vectors of the last each time."""
    url = postgres_url()
    old = PostgresStore(url, migrations=POSTGRES_MIGRATIONS[:5])
    keys = [VectorKey(f"{i:064x}", f"m{i}.py") for i in range(30)]
    rng = np.random.default_rng(3)
    try:
        for _ in range(3):
            with old.write_tree("t") as writer:
                writer.put_contents((k.content_hash, b"x") for k in keys)
                vecs = rng.standard_normal((len(keys), DIM)).astype(np.float32)
                writer.code().put_vectors("m", "file", list(zip(keys, vecs, strict=True)))
        assert _rows(url, counted=False) == [("m", "file", 1)] * 3
    finally:
        old.close()
    writer_store = PostgresStore(url)
    reader = PostgresStore(url)
    try:
        assert _rows(url) == [("m", "file", 3)]
        for cycle in range(60):
            target = keys[cycle % len(keys)]
            query = rng.standard_normal(DIM).astype(np.float32)
            with writer_store.write_tree("t") as writer:
                vecs = rng.standard_normal((len(keys), DIM)).astype(np.float32)
                vecs[keys.index(target)] = query
                writer.code().put_vectors("m", "file", list(zip(keys, vecs, strict=True)))
                writer.code().put_vectors("m", "outline", [(target, query)])
            top = reader.code().nearest("m", "file", query, 3, keys)
            assert top[0][0] == target and top[0][1] == pytest.approx(1.0, abs=1e-5)
        assert _rows(url) == [("m", "file", 63), ("m", "outline", 60)]
    finally:
        writer_store.close()
        reader.close()


def test_concurrent_writers_count_every_change_once_in_every_snapshot(
    postgres_url: Callable[[], str],
) -> None:
    """Interleaved transactions of three writers (two READ COMMITTED, one REPEATABLE READ)
    and readers' snapshots between them: no writer waits (a lock wait would fail), a row held
    by an open fold is skipped, not folded twice, and each snapshot's stamp is the number of
    committed vector-changing transactions it sees: unchanged by folds committed after it,
    grown by each commit before it."""
    url = postgres_url()
    PostgresStore(url).close()
    committed = 0
    with _connect(url) as setup:
        for i in range(4):
            _put(setup, f"s{i}")
            setup.commit()
            committed += 1
    assert _rows(url) == [("m", "file", 4)]
    with (
        _connect(url) as a,
        _connect(url) as b,
        _connect(url, "REPEATABLE READ") as c,
        _connect(url, "REPEATABLE READ") as early,
    ):
        assert _stamp(early) == committed  # a snapshot taken now
        _put(a, "a1")  # a folds the committed row (holding it) into its own
        _put(a, "a2")
        _put(b, "b1")  # b skips the row a holds: its own row only
        _put(c, "c1")
        assert _stamp(a) == _stamp(b) == committed + 1  # b still sees the held row
        b.commit()
        committed += 1
        with _connect(url, "REPEATABLE READ") as middle:
            assert _stamp(middle) == committed
            a.commit()
            committed += 1
            assert _stamp(middle) == committed - 1  # its snapshot: before a
            _put(b, "b2")  # b's next transaction folds a's row
            b.commit()
            committed += 1
            assert _stamp(middle) == committed - 2
            assert _stamp(early) == committed - 3
        c.commit()
        committed += 1
        assert _stamp(early) == committed - 4
    rows = _rows(url)
    assert sum(n for _, _, n in rows) == committed == 8
    assert len(rows) == 2  # b's fold, c's row (committed after b's fold began)
    with _connect(url) as d:
        _put(d, "d1")
        d.commit()
    assert _rows(url) == [("m", "file", 9)]


def test_a_rolled_back_fold_keeps_the_rows_it_held(postgres_url: Callable[[], str]) -> None:
    url = postgres_url()
    PostgresStore(url).close()
    with _connect(url) as a:
        _put(a, "x")
        a.commit()
        _put(a, "y")
        a.commit()
        _put(a, "z")
        assert _stamp(a) == 3
        a.rollback()
    assert _rows(url) == [("m", "file", 2)]
