"""What a tree's first flat query costs in a fresh process, and where the time goes.

    python bench/bench_first_query.py --db /tmp/mono.db --tree mono --runs 3
    python bench/bench_first_query.py --db repo.db --tree repo --questions dev.jsonl
    python bench/bench_first_query.py --db postgresql://me@db/treeseek --tree repo

A query builds the tree's tables once per process and tree version (its files, path
statistics, chunk and symbol BM25, symbol catalog, file BM25: ``Database.caches``) and keeps
them; every later query reuses them. The first query leaves two builds to later ones: it scans
the BM25 postings rather than inverting them, and looks symbol names up by the store's name
indexes rather than reading the symbol catalog (shown apart, as built by the warm queries).
A command-line query pays the first query's builds every time, a server once per tree version.
Each run is a fresh Python process that opens the database, times its first query with each
table's build timed apart, then the warm median of the other questions (the baseline, in the
same process). Reported: medians over the runs, and the first query over
the warm median.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

#: the tables the first query builds: (label, module, owner, attribute)
BUILDERS = (
    ("tree files", "treeseek.search.flat.flat", "FlatRetriever", "_load_tree_files"),
    ("path statistics", "treeseek.rank.paths", "PathCorpusStats", "from_paths"),
    ("chunk + symbol BM25", "treeseek.search.flat.parts", "PartIndex", "__init__"),
    ("symbol rows", "treeseek.store.code_sqlite", "SQLiteCodeStore", "symbol_rows"),
    (
        "symbol rows (PostgreSQL)",
        "treeseek.store.code_postgres",
        "PostgresCodeStore",
        "symbol_rows",
    ),
    ("symbol catalog", "treeseek.search.flat.parts", "SymbolCatalog", "__init__"),
    ("file BM25", "treeseek.search.flat.flat", "FlatRetriever", "_primary_file_index"),
)

_CHILD = r"""
import functools, importlib, json, statistics, sys, time
spent = {}
def timed(label, module, owner, attr):
    cls = getattr(importlib.import_module(module), owner)
    raw = cls.__dict__[attr]
    fn = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + time.perf_counter() - t
    kind = type(raw) if isinstance(raw, (staticmethod, classmethod)) else None
    setattr(cls, attr, kind(wrapper) if kind else wrapper)
t0 = time.perf_counter()
import treeseek
args = json.loads(sys.stdin.read())
for b in args["builders"]:
    timed(*b)
imported = time.perf_counter() - t0
with treeseek.open(args["db"]) as db:
    t = time.perf_counter()
    db.query(args["tree"], args["questions"][0], k=10)
    first = time.perf_counter() - t
    first_spent = dict(spent)
    warm = []
    for q in args["questions"][1:]:
        t = time.perf_counter()
        db.query(args["tree"], q, k=10)
        warm.append(time.perf_counter() - t)
later = {k: v - first_spent.get(k, 0.0) for k, v in spent.items()}
print(json.dumps({"import": imported, "first": first, "warm": statistics.median(warm),
                  "spent": first_spent, "later": {k: v for k, v in later.items() if v > 0.001}}))
"""

DEFAULT_QUESTIONS = (
    "QuerySet.bulk_create crashes on mixed case columns",
    "TypeError when saving a model with a JSONField",
    "where are blueprints registered on the application",
    "the session does not resend cookies after a redirect",
    "format string parsing fails on nested replacement fields",
    "the router returns 404 for a trailing slash",
)


def _questions(path: Path | None, limit: int) -> list[str]:
    if path is None:
        return list(DEFAULT_QUESTIONS)[:limit]
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            out.append(row.get("query") or row["problem_statement"])
    return out[:limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--tree", required=True)
    parser.add_argument("--questions", type=Path, help="JSONL with query/problem_statement")
    parser.add_argument("--max-questions", type=int, default=6)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    questions = _questions(args.questions, args.max_questions)
    if len(questions) < 2:
        sys.exit("need at least two questions (the first, and a warm one)")
    payload = json.dumps(
        {"db": args.db, "tree": args.tree, "questions": questions, "builders": BUILDERS}
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    runs = []
    for _ in range(args.runs):
        done = subprocess.run(
            [sys.executable, "-c", _CHILD],
            input=payload,
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode:
            lines = done.stderr.strip().splitlines()
            sys.exit(f"the query process failed: {lines[-1] if lines else done.returncode}")
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))

    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    print(f"{args.tree}: {args.runs} fresh processes, load average {os.getloadavg()[0]:.1f}")
    print(f"  import {med('import'):.2f} s")
    print(f"  first query {med('first'):.2f} s, warm median {med('warm') * 1000:.0f} ms")
    print(f"  first / warm: {med('first') / med('warm'):.0f}x")
    for label, *_ in BUILDERS:
        if any(label in r["spent"] for r in runs):  # the other backend's reader is not called
            spent = statistics.median(r["spent"].get(label, 0.0) for r in runs)
            print(f"    {label}: {spent:.2f} s")
    later = [label for label, *_ in BUILDERS if any(label in r["later"] for r in runs)]
    if later:  # what the first query left to a later one (the symbol catalog)
        print("  built by the warm queries (not in their median unless most of them build):")
        for label in later:
            spent = statistics.median(r["later"].get(label, 0.0) for r in runs)
            print(f"    {label}: {spent:.2f} s")


if __name__ == "__main__":
    main()
