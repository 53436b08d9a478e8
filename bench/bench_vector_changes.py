"""PostgreSQL's log of vector changes before and after migration 6, in one process.

    python bench/bench_vector_changes.py [--url postgresql://...] [--changes 500 5000]

For each count of changes, two fresh schemas: one at schema 5 (a row per vector-changing
transaction, the reader counts rows) and one at the current schema (the first change of a
transaction folds the committed rows into its own, the reader sums their counts). Each gets
that many transactions, each writing a few vectors of one (model, kind) in several statements
(as a re-index does); then the table's rows, and the medians of the reader's stamp query (in
a ``REPEATABLE READ, READ ONLY`` transaction, as ``PostgresCodeStore._matrix`` reads it) and
of a writing transaction. Dead rows of folds are left to autovacuum, as in use.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_postgres import fresh, load, postgres

from treeseek.store.migrations import POSTGRES_MIGRATIONS
from treeseek.store.postgres import PostgresStore

STAMPS = {
    5: "SELECT count(*) FROM code_vector_changes WHERE model = %s AND kind = %s",
    6: "SELECT coalesce(sum(n), 0) FROM code_vector_changes WHERE model = %s AND kind = %s",
}


def _write(conn: Any, rng: np.random.Generator, statements: int = 4) -> float:
    started = time.perf_counter()
    with conn.transaction():
        for s in range(statements):
            vec = "[" + ",".join(f"{x:.4f}" for x in rng.random(8)) + "]"
            conn.execute(
                "INSERT INTO code_vectors(content_hash, path, model, kind, vec)"
                " VALUES (%s, %s, 'm', 'file', %s::vector)"
                " ON CONFLICT (content_hash, path, model, kind) DO UPDATE SET vec = EXCLUDED.vec",
                ("a" * 64, f"f{s}.py".encode(), vec),
            )
    return time.perf_counter() - started


def _stamp(conn: Any, version: int) -> tuple[float, int]:
    started = time.perf_counter()
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        row = conn.execute(STAMPS[version], ("m", "file")).fetchone()
    return time.perf_counter() - started, int(row[0])


def measure(base: str, work: Path, version: int, changes: int) -> str:
    import psycopg

    url = str(fresh("postgres", base, work))
    migrations = [m for m in POSTGRES_MIGRATIONS if m.version <= version]
    PostgresStore(url, migrations=migrations).close()
    rng = np.random.default_rng(0)
    with psycopg.connect(url, autocommit=True) as conn:
        writes = [_write(conn, rng) for _ in range(changes)]
        rows = int(conn.execute("SELECT count(*) FROM code_vector_changes").fetchone()[0])
        for _ in range(20):  # warm-up
            _stamp(conn, version)
        reads = [_stamp(conn, version) for _ in range(300)]
    stamps = {s for _, s in reads}
    assert stamps == {changes}, stamps
    read_ms = statistics.median(t for t, _ in reads) * 1000
    write_ms = statistics.median(writes[-100:]) * 1000
    return (
        f"schema {version}, {changes} changes: {rows} rows, stamp {changes}, "
        f"reader's stamp query median {read_ms:.3f} ms, a write (last 100) {write_ms:.2f} ms"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--url", default=None)
    ap.add_argument("--changes", type=int, nargs="+", default=[500, 5000])
    args = ap.parse_args()
    work = Path(f"/tmp/bench-vector-changes-{os.getpid()}")
    work.mkdir(exist_ok=True)
    with postgres(args.url) as base:
        for changes in args.changes:
            for version in (5, 6):
                print(measure(base, work, version, changes), flush=True)
    work.rmdir()
    print(f"load {load()}")


if __name__ == "__main__":
    main()
