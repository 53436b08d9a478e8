"""File-level BM25 (the flat retriever's ``files`` signal): index build and query time.

    python bench/bench_file_bm25.py --db /tmp/dj.db --tree dj     # an indexed tree
    python bench/bench_file_bm25.py --db /tmp/dj.db --tree dj --repo django/django

Reports medians (wall clock) of:
- building the tree's index: reading the primary files' term rows + FileBM25Index (``--runs``),
- one query of the signal (term ids, scoring, ranking the allowed files), warm (the index and
  the query's term ids cached, as in a long-lived process) and cold (term ids looked up),
- ``FileBM25Index.score`` alone,
- the whole flat ranking (warm), for scale.

Queries are the issue texts of the dev split (``--repo``: only that repository's, else all);
nothing else of the dataset is read.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter, defaultdict
from pathlib import Path

import treeseek
from treeseek.eval.datasets import load_instances
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import SearchContext
from treeseek.search.flat.flat import FlatRetriever, _Signals
from treeseek.text.tokens import QUERY_STOPWORDS, code_tokens

DATASET = Path("/work/shared/bench/swebench-verified-dev.jsonl")


def _ms(values: list[float]) -> str:
    return f"{1000 * statistics.median(values):.2f} ms"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--tree", required=True)
    ap.add_argument("--repo", default="", help="only the dev queries of this repository")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    queries = [i.query for i in load_instances(DATASET) if not args.repo or i.repo == args.repo]
    db = treeseek.open(args.db)
    try:
        ctx = SearchContext(
            store=db.store, tree=db.tree(args.tree), navigator=LexicalNavigator(), caches=db.caches
        )
        retriever = FlatRetriever()
        cfg = retriever.config
        code = db.store.code()
        files = retriever._tree_files(ctx)
        allowed: dict[str, list[str]] = defaultdict(list)
        for p, h in files.hash_by_path.items():
            allowed[h].append(p)

        builds = []
        for _ in range(args.runs):
            files.file_index = None
            t0 = time.perf_counter()
            primary = retriever._primary_file_index(code, files)
            builds.append(time.perf_counter() - t0)
        index = primary.index
        assert index is not None, primary.note
        print(
            f"index: {index.size} primary contents, {len(index.docs)} postings,"
            f" {len(index.terms)} terms; build median {_ms(builds)}"
        )

        counted = [Counter(t for t in code_tokens(q) if t not in QUERY_STOPWORDS) for q in queries]
        cold, warm, scoring, whole = [], [], [], []
        for qt in counted:
            files.term_ids.clear()
            t0 = time.perf_counter()
            retriever._file_signal(code, qt, files, cfg, _Signals(), allowed, "files")
            cold.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            retriever._file_signal(code, qt, files, cfg, _Signals(), allowed, "files")
            warm.append(time.perf_counter() - t0)
            ids = {files.term_ids[t]: n for t, n in qt.items() if files.term_ids[t] >= 0}
            t0 = time.perf_counter()
            index.score(ids)
            scoring.append(time.perf_counter() - t0)
        for q in queries:
            retriever.rank(ctx, q, 10)
            t0 = time.perf_counter()
            retriever.rank(ctx, q, 10)
            whole.append(time.perf_counter() - t0)
        terms = statistics.median(len(qt) for qt in counted)
        longest = max(range(len(counted)), key=lambda i: len(counted[i]))
        print(
            f"longest query ({len(counted[longest])} distinct terms):"
            f" signal warm {1000 * warm[longest]:.2f} ms, score() {1000 * scoring[longest]:.2f} ms"
        )
        print(
            f"{len(queries)} queries (median {terms:.0f} distinct terms):"
            f" signal warm {_ms(warm)}, cold {_ms(cold)}; score() {_ms(scoring)};"
            f" whole flat rank (warm) {_ms(whole)}"
        )
    finally:
        db.close()


if __name__ == "__main__":
    main()
