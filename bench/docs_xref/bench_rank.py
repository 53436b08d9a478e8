"""What the boosted trees add to a flat section query: medians, in one process.

For each question (the benchmark's dev split, or ``--limit`` of them), alternating, the two
scorings of the same candidates: the linear score alone (the features, then one dot product)
and the shipped one (the same plus the trees), after one warm-up pass; prints the medians and
the added time. The features are computed in both, so the difference is the trees.

    python bench/docs_xref/bench_rank.py DOCS --questions Q.jsonl --db x.db [--limit 200]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

import treeseek
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import SearchContext
from treeseek.search.document.ranking import WEIGHTS
from treeseek.search.document.retriever import DocumentRetriever


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("docs", type=Path)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--name", default="docs")
    ap.add_argument("--limit", type=int, default=200)
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

        def shipped(q: str) -> None:
            corpus.rank(q)

        for q in questions:  # warm-up
            linear(q)
            shipped(q)
        times: dict[str, list[float]] = {"linear": [], "shipped": []}
        for q in questions:
            for name, run in (("linear", linear), ("shipped", shipped)):
                started = time.perf_counter()
                run(q)
                times[name].append(time.perf_counter() - started)
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    print(
        f"{len(questions)} questions, median ms: linear {med['linear']:.2f}, "
        f"with trees {med['shipped']:.2f}, added {med['shipped'] - med['linear']:.2f}"
    )


if __name__ == "__main__":
    main()
