"""PostgreSQL vector search of one tree beside another big tree: the exact search (the tree's
vectors scored in the process, cached between queries) against the paths it replaced, in one
process.

    python bench/bench_vector_search.py                      # starts a pgserver in a temp dir
    python bench/bench_vector_search.py --url postgresql://me@db/treeseek_bench
    python bench/bench_vector_search.py --sizes 1000,5000 --other 20000 --queries 5

One database holds trees of ``--sizes`` vectors and one ``--other`` tree (random
``--dim``-dimensional float32 vectors: no clusters, the hard case for a graph index; keys as
the code hook writes them, one per (content, path)), loaded with ``COPY``. Per tree size, the
median over ``--queries`` random questions of ``nearest(k=--k)`` among the tree's keys:

- ``old``: what the store did before (``EXACT_KEYS`` = 4,096): up to 4,096 keys an ``ORDER BY
  <=>`` scan of the tree's rows in PostgreSQL, candidates rescored exactly; beyond, the HNSW
  index of every tree's vectors (created here as the old store did, ``hnsw.ef_search = 2k``,
  iterative relaxed scan, ``max_scan_tuples`` by the tree's share); ``recall`` is the share
  of the exact ``k`` it returned;
- ``cold``: the store's search with an empty cache (the tree's vectors read by primary key in
  binary and scored), what the first query of a process, or the first after any change of the
  vectors, costs;
- ``warm``: the same query again (the cache checked against the database's vector changes,
  the cached matrix scored).

Then the write side, ``--writes`` new vectors written by ``put_vectors`` in one tree write
(the index hook's path), as the old schema had it (the HNSW index, no triggers), with this
schema (the change-logging triggers, no index), and with neither.

Answers of ``cold`` and ``warm`` are compared with SQLite's scoring of the same vectors (they
must be identical). The load average is printed: on a shared machine the ratios in one
process matter more than the absolute numbers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_postgres import load, postgres

from treeseek.store.code_base import VectorKey
from treeseek.store.postgres import PostgresStore
from treeseek.store.vector_search import VectorMatrix, exact_nearest

#: the most keys the old store scanned exactly (its ``EXACT_KEYS``)
OLD_EXACT_KEYS = 4096


def keys_of(tree: int, size: int) -> list[VectorKey]:
    return [VectorKey(f"{tree:02x}{i:062x}", f"pkg{tree}/mod{i}.py") for i in range(size)]


def fill(url: str, trees: list[tuple[int, int]], dim: int, seed: int) -> dict[int, Any]:
    """COPY every tree's vectors; returns each tree's vectors (for the exact reference)."""
    import psycopg
    from pgvector import Vector
    from pgvector.psycopg import register_vector

    rng = np.random.default_rng(seed)
    out: dict[int, Any] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        with (
            conn.cursor() as cur,
            cur.copy(
                "COPY code_vectors(content_hash, path, model, kind, vec) FROM STDIN"
                " WITH (FORMAT BINARY)"
            ) as copy,
        ):
            copy.set_types(["text", "bytea", "text", "text", "vector"])
            for tree, size in trees:
                vecs = rng.standard_normal((size, dim)).astype(np.float32)
                out[tree] = vecs
                for key, vec in zip(keys_of(tree, size), vecs, strict=True):
                    copy.write_row((key.content_hash, key.path.encode(), "m", "file", Vector(vec)))
    return out


def add_old_index(url: str, dim: int) -> float:
    """The HNSW index the old store created at the first write of a model: build seconds."""
    import psycopg

    start = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute(
            "CREATE INDEX code_vectors_hnsw_bench ON code_vectors USING hnsw"
            f" ((vec::vector({dim})) vector_cosine_ops) WHERE model = 'm' AND kind = 'file'"
            f" AND vector_dims(vec) = {dim}"
        )
        conn.execute("ANALYZE code_vectors")
    return time.perf_counter() - start


def old_nearest(
    store: PostgresStore, q: np.ndarray, k: int, keys: list[VectorKey]
) -> list[tuple[VectorKey, float]]:
    """The old store's ``nearest`` among more than ``k`` keys (its statements, verbatim)."""
    from pgvector import Vector

    dim = int(q.shape[0])
    hashes = [key.content_hash for key in keys]
    paths = [key.path.encode() for key in keys]
    with store._connection() as conn, conn.transaction(), conn.cursor(binary=True) as cur:
        if len(keys) <= OLD_EXACT_KEYS:
            rows = cur.execute(
                "WITH c AS MATERIALIZED (SELECT v.content_hash, v.path, v.vec"
                " FROM code_vectors AS v"
                " JOIN unnest(%s::text[], %s::bytea[]) AS w(content_hash, path)"
                " ON v.content_hash = w.content_hash AND v.path = w.path"
                f" WHERE v.model = %s AND v.kind = %s AND vector_dims(v.vec) = {dim})"
                f" SELECT content_hash, path, vec FROM c"
                f" ORDER BY vec::vector({dim}) <=> %s::vector({dim}) LIMIT %s",
                (hashes, paths, "m", "file", Vector(q), 2 * k),
                prepare=False,
            ).fetchall()
        else:
            total_row = cur.execute(
                "SELECT reltuples::bigint FROM pg_class WHERE oid = 'code_vectors'::regclass"
            ).fetchone()
            total = int(total_row[0]) if total_row else 0
            tuples = max(20_000, min(2**31 - 1, 4 * k * max(total, len(keys)) // len(keys)))
            cur.execute(f"SET LOCAL hnsw.ef_search = {max(40, min(1000, 2 * k))}")
            cur.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            cur.execute(f"SET LOCAL hnsw.max_scan_tuples = {tuples}")
            cur.execute("SET LOCAL enable_sort = off")
            texts = [f"{h}:{p.hex()}" for h, p in zip(hashes, paths, strict=True)]
            rows = cur.execute(
                "SELECT content_hash, path, vec FROM code_vectors WHERE model = %s"
                f" AND kind = %s AND vector_dims(vec) = {dim}"
                " AND content_hash || ':' || encode(path, 'hex') = ANY(%s)"
                f" ORDER BY vec::vector({dim}) <=> %s::vector({dim}) LIMIT %s",
                ("m", "file", texts, Vector(q), k),
                prepare=False,
            ).fetchall()
    found = {
        VectorKey(h, bytes(p).decode()): np.asarray(v.to_numpy(), dtype=np.float32)
        for h, p, v in rows
    }
    return exact_nearest(found, q, k)


def with_schema(base: str, schema: str, *, drop: bool) -> str:
    """``base`` with its own schema (created, or dropped with ``drop``)."""
    import psycopg

    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        if not drop:
            conn.execute(f"CREATE SCHEMA {schema}")
    options = quote(f"-csearch_path={schema},public", safe="")
    return f"{base}{'&' if '?' in base else '?'}options={options}"


def write_seconds(store: PostgresStore, tree: int, count: int, dim: int) -> float:
    """Seconds to write ``count`` new vectors in one tree write."""
    rng = np.random.default_rng(tree)
    items = list(zip(keys_of(tree, count), rng.standard_normal((count, dim)), strict=True))
    start = time.perf_counter()
    with store.write_tree(f"w{tree}") as writer:
        writer.code().put_vectors("m", "file", [(key, v.astype(np.float32)) for key, v in items])
    return time.perf_counter() - start


def median_ms(samples: list[float]) -> float:
    return 1000 * statistics.median(samples)


def timed(fn: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="an existing PostgreSQL (15+, pgvector) to use")
    parser.add_argument("--sizes", default="1000,5000,20000,50000")
    parser.add_argument("--other", type=int, default=50_000, help="vectors of the other tree")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--k", type=int, default=200, help="flat's vector_limit")
    parser.add_argument("--queries", type=int, default=7)
    parser.add_argument("--writes", type=int, default=1000, help="vectors of the write test")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    trees = [(i + 1, size) for i, size in enumerate(sizes)]
    print(f"load {load()}", flush=True)
    schema = f"bench_vectors_{os.getpid()}"
    with postgres(args.url) as base:
        url = with_schema(base, schema, drop=False)
        store = PostgresStore(url)
        try:
            start = time.perf_counter()
            vectors = fill(url, [*trees, (0, args.other)], args.dim, seed=7)
            print(
                f"{sum(sizes) + args.other} vectors ({args.dim} dims) copied in"
                f" {time.perf_counter() - start:.1f} s; old HNSW index built in"
                f" {add_old_index(url, args.dim):.1f} s; load {load()}",
                flush=True,
            )
            rng = np.random.default_rng(3)
            code = store.code()
            cache = store.vector_cache
            print("vectors  old ms (path, recall)  cold ms  warm ms  old/warm  cold/old  load")
            for tree, size in trees:
                keys = keys_of(tree, size)
                reference = VectorMatrix.from_rows(keys, vectors[tree])  # keys are sorted
                old: list[float] = []
                cold: list[float] = []
                warm: list[float] = []
                recalls: list[float] = []
                for q in rng.standard_normal((args.queries, args.dim)).astype(np.float32):
                    exact = reference.nearest(q, args.k)
                    seconds, got = timed(old_nearest, store, q, args.k, list(keys))
                    old.append(seconds)
                    recalls.append(len({h for h, _ in got} & {h for h, _ in exact}) / args.k)
                    cache.clear()
                    seconds, got = timed(code.nearest, "m", "file", q, args.k, list(keys))
                    cold.append(seconds)
                    assert got == exact, "cold: not the exact answer"
                    seconds, got = timed(code.nearest, "m", "file", q, args.k, list(keys))
                    warm.append(seconds)
                    assert got == exact, "warm: not the exact answer"
                path = "scan" if size <= OLD_EXACT_KEYS else "hnsw"
                o, c, w = median_ms(old), median_ms(cold), median_ms(warm)
                print(
                    f"{size:>7}  {o:7.0f} ({path}, {statistics.mean(recalls):.3f})"
                    f"  {c:7.0f}  {w:7.1f}  {o / w:8.1f}  {c / o:8.2f}  {load()}",
                    flush=True,
                )
            print(f"cache: {len(cache)} matrices, {cache.nbytes / 2**20:.0f} MiB")
            triggers = "ALTER TABLE code_vectors {} TRIGGER USER"
            with store._connection() as conn:
                conn.execute(triggers.format("DISABLE"))
            old_write = write_seconds(store, 200, args.writes, args.dim)
            with store._connection() as conn:
                conn.execute(triggers.format("ENABLE"))
                conn.execute("DROP INDEX code_vectors_hnsw_bench")
            new_write = write_seconds(store, 201, args.writes, args.dim)
            with store._connection() as conn:
                conn.execute(triggers.format("DISABLE"))
            bare_write = write_seconds(store, 202, args.writes, args.dim)
            print(
                f"write {args.writes} vectors: old (HNSW index) {old_write:.2f} s, now"
                f" (change log) {new_write:.2f} s, neither {bare_write:.2f} s; load {load()}"
            )
        finally:
            store.close()
            with_schema(base, schema, drop=True)  # hundreds of MB on a server of one's own
    print(f"load {load()}")


if __name__ == "__main__":
    main()
