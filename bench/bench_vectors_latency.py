"""Warm flat query latency with and without file vectors, on an eval's per-commit databases.

For a seeded sample of dev instances whose commit database (under --cache, as
``treeseek eval run --db CACHE/eval.db`` built it) holds vectors of the embedder, asks
``db.query(tree, question, strategy="flat")`` and the same with ``vectors=EMBEDDER``, alternating,
``--repeat`` times each in one process; the first round of each (loading the tree's tables and
the model) is dropped. Prints the medians and their ratio. Reads the databases, writes nothing.

    python bench/bench_vectors_latency.py --sample 20 --embedder minilm
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

import treeseek
from treeseek.eval.contents import CONTENTS_TREE, ContentsUniverse
from treeseek.eval.datasets import load_instances


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", type=Path, default=Path("/work/runs/dev-173.jsonl"))
    ap.add_argument("--cache", type=Path, default=Path("/work/runs/contents/eval.db"))
    ap.add_argument("--sample", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=4, help="queries per mode and instance")
    ap.add_argument("--embedder", default="minilm")
    args = ap.parse_args()
    universe = ContentsUniverse({})
    instances = load_instances(args.dataset)
    random.Random(args.seed).shuffle(instances)
    times: dict[str, list[float]] = {"lexical": [], "hybrid": []}
    modes = {"lexical": {}, "hybrid": {"vectors": args.embedder}}
    used = 0
    for inst in instances:
        if used == args.sample:
            break
        path = universe.file_for(args.cache, inst.commit_key)
        if not path.is_file():
            continue
        used += 1
        with treeseek.open(path) as db:
            for round_ in range(args.repeat + 1):
                for mode, extra in modes.items():
                    started = time.perf_counter()
                    result = db.query(CONTENTS_TREE, inst.query, strategy="flat", **extra)
                    seconds = time.perf_counter() - started
                    got = result.trace.params.get("mode")
                    if got != mode:
                        raise SystemExit(f"{path.name}: asked {mode}, ran {got} (no vectors?)")
                    if round_:  # the first round loads the tree's tables (and the model)
                        times[mode].append(seconds)
    lexical = statistics.median(times["lexical"]) * 1000
    hybrid = statistics.median(times["hybrid"]) * 1000
    print(
        f"{used} instances x {args.repeat} warm queries each: median lexical {lexical:.1f} ms,"
        f" hybrid ({args.embedder}) {hybrid:.1f} ms, ratio {hybrid / lexical:.2f},"
        f" added {hybrid - lexical:.1f} ms"
    )


if __name__ == "__main__":
    main()
