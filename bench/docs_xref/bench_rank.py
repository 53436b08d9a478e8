"""What the boosted trees add to a flat section query: medians, in one process.

For each question (the benchmark's dev split, or ``--limit`` of them), alternating, three
scorings of the same candidates: the linear score alone (the features, then one dot product),
the trees over every candidate, and the shipped one for a query of ``--k`` sections (the
trees over the linear scorer's best ``refined_candidates(k)`` only), after one warm-up pass;
prints the medians, the time the trees add each way, and how many questions' first ``--k``
differ between the two. The features are computed in all, so the differences are the trees.

    python bench/docs_xref/bench_rank.py DOCS --questions Q.jsonl --db x.db [--limit 200]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np

import treeseek
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import SearchContext
from treeseek.search.document.ranking import WEIGHTS, refined_candidates
from treeseek.search.document.retriever import DocumentRetriever


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("docs", type=Path)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--name", default="docs")
    ap.add_argument("--limit", type=int, default=200)
    ap.add_argument("--k", type=int, default=10)
    args = ap.parse_args()
    qs = [json.loads(x) for x in args.questions.read_text().splitlines() if x.strip()]
    questions = [q["question"] for q in qs if q["split"] == "dev"][: args.limit]
    weights = np.array(list(WEIGHTS.values()))
    with treeseek.open(args.db) as db:
        db.index(args.docs, name=args.name, documents=True)
        ctx = SearchContext(db.store, db.tree(args.name), LexicalNavigator())
        corpus = DocumentRetriever().corpus(ctx)

        def linear(q: str) -> None:
            _, features = corpus.candidate_features(q)
            features @ weights

        refined = refined_candidates(args.k)

        def every(q: str) -> None:
            corpus.rank(q)

        def shipped(q: str) -> None:
            corpus.rank(q, refined=refined)

        runs = (("linear", linear), ("every", every), ("shipped", shipped))
        differ = 0
        for q in questions:  # warm-up, and the answers compared
            linear(q)
            differ += corpus.rank(q)[: args.k] != corpus.rank(q, refined=refined)[: args.k]
        times: dict[str, list[float]] = {name: [] for name, _ in runs}
        for q in questions:
            for name, run in runs:
                started = time.perf_counter()
                run(q)
                times[name].append(time.perf_counter() - started)
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    print(
        f"{len(questions)} questions, median ms: linear {med['linear']:.2f}, trees on every"
        f" candidate {med['every']:.2f} (+{med['every'] - med['linear']:.2f}), on the best"
        f" {refined} (k={args.k}) {med['shipped']:.2f} (+{med['shipped'] - med['linear']:.2f});"
        f" first {args.k} differ for {differ}; load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
