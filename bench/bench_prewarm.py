"""The first question after a re-index, with and without a server's prewarmer.

A query's per-tree tables are built per tree version, so after a re-index (``treeseek watch``
beside an MCP server, say) the next question pays for them. The prewarmer
(:mod:`treeseek.service.prewarm`) builds them in the background when it sees the new version.
This benchmark plays that loop in one process: a server-side :class:`~treeseek.service.Service`
answers questions; another database handle edits one file and re-indexes the tree (as the
watcher does); ``--delay`` seconds later (an agent reading the last answer) the next question
comes. Rounds alternate between a service without a prewarmer and one with it (fresh
``Database`` objects each, the same file), and report the median latency of the question
after a re-index, of a warm question (the baseline, same process), and their ratios.

    python bench/bench_prewarm.py --root /tmp/django --db /tmp/dj.db --tree dj \\
        --questions /work/runs/dev-173.jsonl --edit django/utils/text.py --rounds 5 --delay 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import treeseek
from treeseek.service import Service


def _questions(path: Path, limit: int) -> list[str]:
    out = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                out.append(json.loads(line)["query"])
    return out[:limit]


def _round(
    args: argparse.Namespace, questions: list[str], prewarm: bool, n: int
) -> tuple[float, float]:
    """(seconds of the first question after a re-index, median of warm questions)."""
    with treeseek.open(args.db) as db:
        service = Service(db, prewarm=prewarm, prewarm_interval=args.interval)
        try:
            service.query(args.tree, questions[0], k=10)  # the tree in use, tables built
            warm = []
            for q in questions[1:4]:
                started = time.perf_counter()
                service.query(args.tree, q, k=10)
                warm.append(time.perf_counter() - started)
            edited = args.root / args.edit
            edited.write_text(edited.read_text(encoding="utf-8") + f"\n# edit {n}\n")
            with treeseek.open(args.db) as watcher:  # the watcher's own handle
                watcher.index(args.root, name=args.tree)
            time.sleep(args.delay)
            started = time.perf_counter()
            service.query(args.tree, questions[4 + n % (len(questions) - 4)], k=10)
            return time.perf_counter() - started, statistics.median(warm)
        finally:
            if service.prewarmer is not None:
                service.prewarmer.stop(timeout=600)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, required=True, help="the tree's directory")
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--tree", required=True)
    ap.add_argument("--questions", type=Path, required=True, help="JSONL with a 'query' field")
    ap.add_argument("--edit", required=True, help="a file under --root to append a line to")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--delay", type=float, default=3.0, help="seconds from re-index to question")
    ap.add_argument("--interval", type=float, default=1.0, help="the prewarmer's poll interval")
    ap.add_argument("--max-questions", type=int, default=24)
    args = ap.parse_args()
    questions = _questions(args.questions, args.max_questions)
    if len(questions) < 5:
        raise SystemExit("need at least 5 questions")
    after: dict[bool, list[float]] = {False: [], True: []}
    warm: dict[bool, list[float]] = {False: [], True: []}
    for n in range(args.rounds):
        for prewarm in (False, True):
            first, baseline = _round(args, questions, prewarm, 2 * n + prewarm)
            after[prewarm].append(first)
            warm[prewarm].append(baseline)
            print(
                f"round {n + 1} prewarm={prewarm}: after re-index {first * 1000:.0f} ms,"
                f" warm {baseline * 1000:.0f} ms",
                flush=True,
            )
    load = os.getloadavg()[0]
    print(f"\n{args.tree}: {args.rounds} rounds, delay {args.delay} s, load average {load:.1f}")
    for prewarm in (False, True):
        a, w = statistics.median(after[prewarm]), statistics.median(warm[prewarm])
        label = "with prewarmer" if prewarm else "without"
        print(
            f"  {label:>14}: after re-index {a * 1000:8.1f} ms, warm {w * 1000:6.1f} ms,"
            f" x{a / w:.1f}"
        )


if __name__ == "__main__":
    main()
