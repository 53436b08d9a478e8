"""One tree's flat query latency alone vs among 100 trees, and database size per tree, on
SQLite and PostgreSQL.

    python bench/bench_scale.py                        # starts a pgserver in a temp dir
    python bench/bench_scale.py --url postgresql://me@db/treeseek_bench --trees 100

Per backend, two databases:

- ``alone``: django (the worktree's ``.bench-cache/django``, see ``bench_index``) indexed with
  the code layers, nothing else;
- ``many``: the same django tree (copied with ``treeseek db copy``'s ``copy_trees``, so its
  rows are the same) plus ``--trees - 1`` other trees of the benchmark's sizes: copies of the
  django tree under other names (sharing its contents, as commits of one repository do) and
  path-only trees of ``--paths`` paths (the benchmark's listings), alternately; more than a
  million nodes in all with the defaults.

Then the dev split's django questions are asked of the django tree of both databases: each
question twice to warm, then ``--runs`` rounds, each question timed once in ``alone`` and
once in ``many``, in turn (so a change in the machine's load hits both alike). Reported:
p50 and p99 over all timed queries, their ratio many / alone (the issue: it must not grow),
whether the answers are identical, and the database size per tree (all of ``many`` divided
by its trees; and the size added per other tree). The load average is printed with each
result: on a shared machine ratios in one process matter more than absolute numbers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_index
from bench_postgres import _size, fresh, load, pct, postgres, questions

import treeseek
from treeseek.index.transfer import copy_trees
from treeseek.store import open_store
from treeseek.trees.pathlist import PathListBuilder


def build_many(location: Any, source: Any, trees: int, paths: list[str]) -> int:
    """``location`` holds django (copied from ``source``) and ``trees - 1`` others; returns
    the node count."""
    src, dst = open_store(source), open_store(location)
    try:
        copy_trees(src, dst, ["django"])
    finally:
        src.close()
        dst.close()
    with treeseek.open(location, hooks=[]) as db:
        for t in range(1, trees):
            if t % 2:
                db.store.copy_tree("django", f"django-{t}")
            else:
                db.index(PathListBuilder(paths), name=f"paths-{t}")
        return sum(i.node_count for i in db.trees())


def ask(db: Any, question: str) -> tuple[float, list[tuple[str, float]]]:
    start = time.perf_counter()
    result = db.query("django", question, strategy="flat", k=10, include_content=False)
    took = time.perf_counter() - start
    return took, [(h.path, round(h.score or 0.0, 6)) for h in result.files]


def measure(alone: Any, many: Any, qs: list[str], runs: int) -> dict[str, Any]:
    with treeseek.open(alone, hooks=[]) as a, treeseek.open(many, hooks=[]) as m:
        for q in qs:  # warm both: each tree's tables are built once and cached
            for _ in range(2):
                ask(a, q)
                ask(m, q)
        times: dict[str, list[float]] = {"alone": [], "many": []}
        same = True
        for _ in range(runs):
            for q in qs:
                ta, ra = ask(a, q)
                tm, rm = ask(m, q)
                times["alone"].append(ta)
                times["many"].append(tm)
                same = same and ra == rm
    out: dict[str, Any] = {"identical": same, "queries": len(times["alone"])}
    for name, values in times.items():
        out[f"p50_{name}"] = statistics.median(values)
        out[f"p99_{name}"] = pct(values, 0.99)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="an existing PostgreSQL (15+, pgvector) to use")
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--paths", type=int, default=20_000, help="paths of a path-only tree")
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    repo = bench_index.default_repository()
    qs = questions(args.questions)
    paths = bench_index.synthesize_paths(args.paths)
    rows: list[dict[str, Any]] = []
    print(f"load average before: {load()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="treeseek-scale-") as tmp, postgres(args.url) as base:
        work = Path(tmp)
        seed = work / "seed.db"
        started = time.perf_counter()
        with treeseek.open(seed) as db:
            db.index(repo, name="django")
        print(f"django indexed in {time.perf_counter() - started:.0f} s (load {load()})")
        for backend in ("sqlite", "postgres"):
            alone, many = fresh(backend, base, work), fresh(backend, base, work)
            started = time.perf_counter()
            build_many(alone, seed, 1, paths)
            nodes = build_many(many, seed, args.trees, paths)
            built = time.perf_counter() - started
            result = measure(alone, many, qs, args.runs)
            size_alone, size_many = _size(backend, alone), _size(backend, many)
            row = {
                "backend": backend,
                "trees": args.trees,
                "nodes": nodes,
                "build_s": built,
                **result,
                "ratio_p50": result["p50_many"] / result["p50_alone"],
                "ratio_p99": result["p99_many"] / result["p99_alone"],
                "size_alone": size_alone,
                "size_many": size_many,
                "bytes_per_tree": size_many / args.trees,
                "bytes_per_added_tree": (size_many - size_alone) / max(1, args.trees - 1),
                "load": load(),
            }
            rows.append(row)
            print(
                f"{backend}: {args.trees} trees, {nodes:,} nodes (built in {built:.0f} s);"
                f" {result['queries']} queries each: p50 {result['p50_alone'] * 1000:.0f} ->"
                f" {result['p50_many'] * 1000:.0f} ms (x{row['ratio_p50']:.2f}), p99"
                f" {result['p99_alone'] * 1000:.0f} -> {result['p99_many'] * 1000:.0f} ms"
                f" (x{row['ratio_p99']:.2f}); identical answers: {result['identical']};"
                f" size {size_alone / 2**20:.0f} MiB alone, {size_many / 2**20:.0f} MiB many"
                f" ({row['bytes_per_tree'] / 2**20:.1f} MiB/tree,"
                f" {row['bytes_per_added_tree'] / 2**20:.2f} MiB per added tree)"
                f" (load {load()})",
                flush=True,
            )
    print(f"load average after: {load()}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
