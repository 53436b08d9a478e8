"""Benchmark the foundation: indexing a real repository, re-indexing, path lists, children-of.

    python bench/bench_index.py                      # django (from the bare mirror) + 200k paths
    python bench/bench_index.py --repo ~/src/proj    # any directory of 5k+ files
    python bench/bench_index.py --runs 7 --paths 200000 --out runs/bench_index.json

Reports medians of ``--runs`` runs (wall clock), each in a fresh SQLite file:
- full index of a real repository (files/s),
- re-index after changing 10 files,
- path-list indexing of N paths (the benchmark's listings, each repository under its own
  prefix until N paths are reached), without and with the default index hooks,
- one children-of read (``Store.children``), median over many directories.

The repository defaults to a checkout of django extracted from the bare mirror with
``git archive`` into ``.bench-cache/`` (a plain directory: the walk-based builder). The load
average is printed too: on a shared machine it explains most of the spread.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import treeseek
from treeseek.trees.filesystem import FilesystemBuilder
from treeseek.trees.pathlist import PathListBuilder

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".bench-cache"
DJANGO_MIRROR = Path("/work/.mirror/apprent1c3+django/repo")
TREES = Path("/work/shared/bench/swebench-verified-dev-trees.jsonl.gz")


@dataclass(frozen=True, slots=True)
class Row:
    metric: str
    median: float
    unit: str
    runs: int
    target: str
    ok: bool
    detail: str = ""


#: CPU seconds of the runs of the last _median_of call (wall clock is what it returns)
_last_cpu: list[float] = []


def _median_of(runs: int, setup: Callable[[int], None], work: Callable[[int], None]) -> list[float]:
    times: list[float] = []
    _last_cpu.clear()
    for i in range(runs):
        setup(i)
        started, cpu = time.perf_counter(), time.process_time()
        work(i)
        times.append(time.perf_counter() - started)
        _last_cpu.append(time.process_time() - cpu)
    return times


def _cpu_median() -> float:
    return statistics.median(_last_cpu)


def calibrate() -> float:
    """CPU seconds of a fixed pure-Python loop, to compare machines and moments."""
    started = time.process_time()
    total = 0
    for i in range(10_000_000):
        total += i
    return time.process_time() - started


def default_repository() -> Path:
    """django's HEAD, extracted once from the bare mirror."""
    target = CACHE / "django"
    if target.is_dir() and any(target.iterdir()):
        return target
    if not DJANGO_MIRROR.exists():
        sys.exit(f"no --repo given and no django mirror at {DJANGO_MIRROR}; pass --repo DIR")
    target.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "--git-dir", str(DJANGO_MIRROR), "archive", "HEAD"],
        capture_output=True,
        check=True,
    )
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target


def synthesize_paths(count: int) -> list[str]:
    """``count`` paths: the benchmark's listings, each under its own prefix."""
    paths: list[str] = []
    with gzip.open(TREES, "rt") as handle:
        for i, line in enumerate(handle):
            listing = json.loads(line)["paths"]
            paths.extend(f"r{i:03}/{p}" for p in listing)
            if len(paths) >= count:
                break
    if len(paths) < count:
        sys.exit(f"only {len(paths)} paths in {TREES}; lower --paths")
    return paths[:count]


def bench_repository(repo: Path, runs: int, work_dir: Path) -> list[Row]:
    checkout = work_dir / "repo"
    shutil.copytree(repo, checkout, symlinks=True)
    files = [p for p in checkout.rglob("*.py") if p.is_file()]
    db_paths = [work_dir / f"full{i}.db" for i in range(runs)]
    reports = []

    def full(i: int) -> None:
        with treeseek.open(db_paths[i], hooks=[]) as db:
            reports.append(db.index(FilesystemBuilder(checkout), name="repo"))

    full_times = _median_of(runs, lambda i: None, full)
    full_cpu = _cpu_median()
    file_count = reports[-1].tree.file_count
    full_median = statistics.median(full_times)

    rng = random.Random(7)
    changed_reports = []

    def touch(i: int) -> None:
        for path in rng.sample(files, 10):
            with path.open("a") as handle:
                handle.write(f"\n# bench edit {i}\n")

    def reindex(i: int) -> None:
        with treeseek.open(db_paths[0], hooks=[]) as db:
            changed_reports.append(db.index(FilesystemBuilder(checkout), name="repo"))

    re_times = _median_of(runs, touch, reindex)
    re_cpu = _cpu_median()
    assert all(r.changed == 10 for r in changed_reports), [r.changed for r in changed_reports]
    re_median = statistics.median(re_times)
    size_mb = sum(f.stat().st_size for f in checkout.rglob("*") if f.is_file()) / 1e6
    return [
        Row(
            f"full index, {file_count} files ({size_mb:.0f} MB)",
            full_median,
            "s",
            runs,
            "< 10 s",
            full_median < 10 and file_count >= 5000,
            f"{file_count / full_median:,.0f} files/s; CPU {full_cpu:.3f} s",
        ),
        Row(
            "re-index after changing 10 files",
            re_median,
            "s",
            runs,
            "< 1 s",
            re_median < 1,
            f"{changed_reports[-1].unchanged} unchanged files skipped by signature;"
            f" CPU {re_cpu:.3f} s",
        ),
    ]


def bench_path_list(count: int, runs: int, work_dir: Path) -> tuple[list[Row], Path]:
    paths = synthesize_paths(count)
    rows: list[Row] = []
    first_db: Path | None = None
    # hooks=None: the default index hooks (the code index), which must cost nothing here
    for label, hooks in (("", []), (", default index hooks", None)):
        db_paths = [work_dir / f"paths{len(rows)}-{i}.db" for i in range(runs)]
        first_db = first_db or db_paths[0]
        nodes = 0

        def index(i: int, db_paths: list[Path] = db_paths, hooks: list[Any] | None = hooks) -> None:
            nonlocal nodes
            with treeseek.open(db_paths[i], hooks=hooks) as db:
                nodes = db.index(PathListBuilder(paths), name="paths").tree.node_count

        times = _median_of(runs, lambda i: None, index)
        median = statistics.median(times)
        cpu = _cpu_median()
        rows.append(
            Row(
                f"path-list index, {count:,} paths ({nodes:,} nodes){label}",
                median,
                "s",
                runs,
                "< 3 s",
                median < 3,
                f"{count / median:,.0f} paths/s; CPU {cpu:.3f} s",
            )
        )
    assert first_db is not None
    return rows, first_db


def bench_children(db_path: Path, samples: int) -> Row:
    with treeseek.open(db_path, hooks=[]) as db:
        store = db.store
        dirs = [n.id for n in store.subtree("paths") if n.is_dir]
        rng = random.Random(11)
        chosen = [rng.choice(dirs) for _ in range(samples)]
        for node_id in chosen[:200]:  # warm the page cache and the statement cache
            store.children("paths", node_id)
        times: list[float] = []
        counts: list[int] = []
        for node_id in chosen:
            started = time.perf_counter_ns()
            kids = store.children("paths", node_id)
            times.append((time.perf_counter_ns() - started) / 1e6)
            counts.append(len(kids))
    median = statistics.median(times)
    return Row(
        "children-of read (Store.children)",
        median,
        "ms",
        samples,
        "< 0.1 ms",
        median < 0.1,
        f"{statistics.median(counts):.0f} children median, p90"
        f" {statistics.quantiles(times, n=10)[-1]:.3f} ms",
    )


def markdown(rows: list[Row]) -> str:
    lines = [
        "| measurement | median | target | runs | notes |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        value = f"{r.median:.3f} {r.unit}" if r.unit == "s" else f"{r.median:.4f} {r.unit}"
        mark = "ok" if r.ok else "MISSED"
        lines.append(f"| {r.metric} | {value} | {r.target} ({mark}) | {r.runs} | {r.detail} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, help="repository directory (default: django)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--paths", type=int, default=200_000)
    parser.add_argument("--children-samples", type=int, default=5000)
    parser.add_argument("--out", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args()

    repo = args.repo or default_repository()
    load_before = os.getloadavg()
    loop = calibrate()
    with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:
        work = Path(tmp)
        rows = bench_repository(repo, args.runs, work)
        path_rows, path_db = bench_path_list(args.paths, args.runs, work)
        rows += path_rows
        rows.append(bench_children(path_db, args.children_samples))
    load_after = os.getloadavg()
    print(markdown(rows))
    print(
        f"\nrepository: {repo} · python {sys.version.split()[0]} · {os.cpu_count()} cpus"
        f" · load average {load_before[0]:.1f} before, {load_after[0]:.1f} after"
        f" · calibration loop (10M adds) {loop:.2f} s CPU"
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps([asdict(r) for r in rows], indent=2))


if __name__ == "__main__":
    main()
