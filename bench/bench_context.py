"""What a budgeted answer adds to a query: selecting line spans within a token budget.

Indexes a source tree (default: this repository's ``src/``) into a temporary database, then
for each question runs a plain flat query (paths only) and the same query answered as budgeted
context (``db.query(..., budget=N)``: the ranked files' evidence turned into line spans), in
one warm process, and reports the medians of the plain query, the budgeted one and their
difference (target: < 20 ms added). Also reports the selection alone (plan + select, on the
plain query's hits) and whole files until the budget (the baseline).

    python bench/bench_context.py [--tree DIR] [--budget 8000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import treeseek
from treeseek.context import TreeSource, plan, select, whole_files
from treeseek.llm.tokens import default_counter

QUESTIONS = [
    "where are node ids derived from paths",
    "the block cache window trims blocks past its token budget",
    "retry with backoff and jitter when the LLM provider fails",
    "gitignore negation and nested ignore files",
    "how are chunks cut from a file's symbols",
    "reciprocal rank fusion of the flat retrieval signals",
    "resolve a symbol name path that is ambiguous",
    "incremental re-index only writes changed files in one transaction",
    "parse a stack trace frame from an issue into a file and line",
    "which tokenizer counts tokens offline",
    "eval runner resumes a run from per_query.jsonl",
    "sqlite store content deduplicated by sha256 and compressed",
]


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:7.1f} ms median, p90 {_p90(values) * 1000:7.1f} ms"


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1] / "src")
    parser.add_argument("--budget", type=int, default=8000)
    parser.add_argument("--repeat", type=int, default=5, help="rounds over the questions")
    args = parser.parse_args()
    counter = default_counter()
    counter.count("warm the tokenizer up")
    with tempfile.TemporaryDirectory() as tmp, treeseek.open(Path(tmp) / "bench.db") as db:
        report = db.index(args.tree, name="bench")
        print(
            f"indexed {args.tree}: {report.tree.file_count} files in {report.seconds:.2f} s;"
            f" budget {args.budget} tokens ({counter.name}); {len(QUESTIONS)} questions x"
            f" {args.repeat}; load average {os.getloadavg()[0]:.1f}"
        )
        for q in QUESTIONS:  # warm: per-tree tables, parsed symbols, token counts
            db.query("bench", q, budget=args.budget)
        plain: list[float] = []
        budgeted: list[float] = []
        added: list[float] = []
        selection: list[float] = []
        baseline: list[float] = []
        used: list[int] = []
        for _ in range(args.repeat):
            for q in QUESTIONS:
                t0 = time.perf_counter()
                result = db.query("bench", q, include_content=False)
                t1 = time.perf_counter()
                ctx = db.query("bench", q, budget=args.budget)
                t2 = time.perf_counter()
                source = TreeSource(db.store, "bench")
                terms = result.trace.params.get("terms")
                select(plan(source, result.files, q, terms=terms), args.budget)
                t3 = time.perf_counter()
                whole_files(TreeSource(db.store, "bench"), result.files, args.budget)
                t4 = time.perf_counter()
                plain.append(t1 - t0)
                budgeted.append(t2 - t1)
                added.append((t2 - t1) - (t1 - t0))
                selection.append(t3 - t2)
                baseline.append(t4 - t3)
                used.append(ctx.budget.used)
                assert ctx.budget.used <= args.budget
    print(f"plain query (paths):          {_ms(plain)}")
    print(f"budgeted query (spans):       {_ms(budgeted)}")
    print(f"added by the budget:          {_ms(added)}   (target < 20 ms)")
    print(f"selection alone (plan+select): {_ms(selection)}")
    print(f"whole files until the budget: {_ms(baseline)}")
    print(f"tokens used: median {statistics.median(used):.0f} of {args.budget}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
