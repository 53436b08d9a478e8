"""Benchmark what the ``traverse`` strategy adds to flat retrieval on one indexed tree.

Times, as medians over ``--runs``: building the tree's code graph (load + resolve + build, what
a cache miss costs), the flat ranking of a query, and the walk + fusion on a cached graph.

    python bench/bench_graph_walk.py DB [--tree eval] [--query "text"] [--runs 3]

The query defaults to a fixed django-flavoured question; any text works for timing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import treeseek
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import QueryOptions, SearchContext
from treeseek.search.flat.flat import FlatRetriever
from treeseek.search.graph.tree_graph import tree_code_graph
from treeseek.search.graph.walk import GraphWalkRetriever

QUERY = (
    "QuerySet.values_list() with flat=True crashes after order_by() on a related field\n"
    "Traceback: django/db/models/query.py in __iter__ ... compiler.execute_sql"
)


def _median(fn: object, runs: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(runs):
        w, c = time.perf_counter(), time.process_time()
        fn()  # type: ignore[operator]
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("db")
    ap.add_argument("--tree", default="eval")
    ap.add_argument("--query", default=QUERY)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    db = treeseek.open(args.db)
    tree = db.tree(args.tree)
    ctx = SearchContext(store=db.store, tree=tree, navigator=LexicalNavigator())
    options = QueryOptions(strategy="traverse", include_content=False)
    flat = FlatRetriever()
    walker = GraphWalkRetriever(flat=flat)
    walker.retrieve(ctx, args.query, options)  # warm: graph cached, pages in the OS cache
    out = {
        "files": tree.file_count,
        "graph_build_s": _median(lambda: tree_code_graph(db.store, tree.name), args.runs),
        "flat_s": _median(lambda: flat.rank(ctx, args.query, 30), args.runs),
        "traverse_cached_graph_s": _median(
            lambda: walker.retrieve(ctx, args.query, options), args.runs
        ),
    }
    print(
        json.dumps(
            {k: v if isinstance(v, int) else [round(x, 3) for x in v] for k, v in out.items()}
        )
    )
    db.close()


if __name__ == "__main__":
    main()
