"""Flat query latency and quality on the per-commit contents databases an eval run built.

Each dev instance's commit has its own database file under the contents cache (see
treeseek.eval.contents; the tree inside is named "eval"). This copies each selected file to
--work (the originals are never written), asks ``db.query(..., strategy="flat")`` three times
(the first query of a tree in a process pays for loading the tree's file tables; the next ones
are what a long-lived process sees) and scores the last answer with treeseek.eval.metrics.

    python bench/bench_flat_latency.py --sample 40        # same seed as bench_flat.py
    python bench/bench_flat_latency.py --sample 0 --keep 0 # all, deleting each copy after use

Gold files are read only to score.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import time
from pathlib import Path

import treeseek
from treeseek.eval.datasets import Instance, load_instances
from treeseek.eval.metrics import score
from treeseek.eval.universes import UniverseKind, eval_tree_name, layers_of
from treeseek.index.run import default_hooks

DATASET = Path("/work/shared/bench/swebench-verified-dev.jsonl")
CACHE = Path("/work/runs/contents-cache")


def database_of(inst: Instance, cache: Path, layers: str) -> Path:
    key = (inst.repo, inst.base_commit)
    return cache / f"eval.{eval_tree_name(UniverseKind.CONTENTS, key, layers)[5:]}.db"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", type=int, default=40, help="random sample size (0: all)")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--work", type=Path, default=Path("/tmp/tsbench/latency"))
    ap.add_argument("--keep", type=int, default=1, help="1: keep the copies for the next run")
    ap.add_argument("--out", type=Path, default=Path("/tmp/tsbench/latency.json"))
    args = ap.parse_args()
    layers = layers_of(default_hooks())
    instances = [i for i in load_instances(DATASET) if database_of(i, args.cache, layers).is_file()]
    if args.sample:
        random.Random(args.seed).shuffle(instances)
        instances = instances[: args.sample]
    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    for inst in instances:
        src = database_of(inst, args.cache, layers)
        copy = args.work / src.name
        if not copy.exists():
            shutil.copyfile(src, copy)
        db = treeseek.open(copy)
        seconds = []
        for _ in range(3):
            t0 = time.perf_counter()
            result = db.query("eval", inst.query, strategy="flat", k=10)
            seconds.append(time.perf_counter() - t0)
        db.close()
        if not args.keep:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{copy}{suffix}").unlink(missing_ok=True)
        s = score([h.path for h in result.files], inst.gold_files)
        rows.append(
            {
                "instance_id": inst.instance_id,
                "first_s": seconds[0],
                "warm_s": statistics.median(seconds[1:]),
                "recall_at_gold": s.recall_at_gold,
                "mrr": s.mrr,
            }
        )
        print(f"{inst.instance_id:40s} {seconds[0]:.3f} {seconds[1]:.3f} {seconds[2]:.3f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1))
    print(
        f"n={len(rows)}"
        f"  first query median {1000 * statistics.median(r['first_s'] for r in rows):.0f} ms"
        f"  warm median {1000 * statistics.median(r['warm_s'] for r in rows):.0f} ms"
        f"  recall@gold {statistics.mean(r['recall_at_gold'] for r in rows):.4f}"
        f"  MRR {statistics.mean(r['mrr'] for r in rows):.4f}"
    )


if __name__ == "__main__":
    main()
