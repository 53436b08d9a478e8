"""Replay budgeted-context selection over cached search results (a fast loop for tuning).

``treeseek eval run --budget ...`` answers every query (flat search, ~2 s each) and then
selects spans. Selection (``context.plan`` / ``context.select``) is what this script tunes, so
it runs the search once per instance, caches the ranked hits and the retriever's terms in a
pickle, and on later runs only re-plans and re-selects. Scores are the eval's own
(``eval.context_metrics.score_context``) and the output rows have the shape of a run's
``per_query.jsonl`` (``instance_id``, ``gold_files``, ``preds``, ``contexts``), so
``bench/analyze_context.py`` reads both.

The numbers of record stay those of the full ``treeseek eval run``; this script is for
iterating (same per-commit databases, same search, same selection code).

    PYTHONPATH=src python bench/replay_context.py /work/runs/dev-173.jsonl \
        --db /work/runs/contents/eval.db --repo django/django=/path/to/django.git ... \
        --cache /tmp/ctx3/hits.pkl --out /tmp/ctx3/replay.jsonl
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path
from typing import Any

import treeseek
from treeseek.cli.eval_commands import parse_repo_mappings
from treeseek.context import TreeSource, plan, select, whole_files
from treeseek.eval.contents import CONTENTS_TREE, ContentsUniverse
from treeseek.eval.context_metrics import SYMBOL_KS, score_context
from treeseek.eval.datasets import Instance, load_instances
from treeseek.llm.select import navigator_from_spec
from treeseek.search.base import QueryOptions
from treeseek.search.strategy import run_query

BUDGETS = (2000, 4000, 8000, 16000)


def _search(
    instances: list[Instance], universe: ContentsUniverse, db: Path, k: int = 10
) -> dict[str, Any]:
    """Ranked hits and terms per instance (flat, k=10, no LLM: the eval's settings; a larger
    ``k`` caches more candidate files, the first 10 in the same order)."""
    options = QueryOptions(strategy="flat", k=k, ranker=None, include_content=False)
    navigator = navigator_from_spec("lexical")
    out: dict[str, Any] = {}
    for n, inst in enumerate(instances):
        path = universe.file_for(db, inst.commit_key)
        with treeseek.open(str(path)) as database:
            result = run_query(
                database.store,
                database.tree(CONTENTS_TREE),
                inst.query,
                options,
                navigator,
                caches=database.caches,
            )
        out[inst.instance_id] = (list(result.files), result.trace.params.get("terms"))
        print(f"\rsearched {n + 1}/{len(instances)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return out


def _replay(
    inst: Instance, universe: ContentsUniverse, db: Path, files: list[Any], terms: Any
) -> dict[str, Any]:
    path = universe.file_for(db, inst.commit_key)
    with treeseek.open(str(path)) as database:
        source = TreeSource(database.store, CONTENTS_TREE)
        chosen = plan(source, files, inst.query, terms=terms)
        contexts = []
        for budget in BUDGETS:
            sel = select(chosen, budget)
            base = whole_files(source, files, budget)
            spans = [s.to_dict(text=False) for s in sel.spans]
            base_spans = [s.to_dict(text=False) for s in base.spans]
            contexts.append(
                {
                    "budget": sel.budget.to_dict(),
                    "context": spans,
                    "symbols": sel.symbols,
                    "scores": score_context(
                        spans, sel.symbols, sel.budget.used, inst.gold_spans, inst.gold_symbols
                    ),
                    "baseline": {
                        "budget": base.budget.to_dict(),
                        "context": base_spans,
                        "scores": score_context(
                            base_spans, [], base.budget.used, inst.gold_spans, ()
                        ),
                    },
                }
            )
    return {
        "instance_id": inst.instance_id,
        "repo": inst.repo,
        "gold_files": list(inst.gold_files),
        "preds": [h.path for h in files],
        "contexts": contexts,
    }


def _mean(values: list[float | None]) -> float:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--repo", action="append", default=[])
    ap.add_argument("--cache", type=Path, required=True)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--k", type=int, default=10, help="ranked files cached per query")
    args = ap.parse_args()
    instances = load_instances(args.dataset)[: args.limit]
    universe = ContentsUniverse(parse_repo_mappings(args.repo))
    if args.cache.is_file():
        cached: dict[str, Any] = pickle.loads(args.cache.read_bytes())
    else:
        cached = _search(instances, universe, args.db, args.k)
        args.cache.parent.mkdir(parents=True, exist_ok=True)
        args.cache.write_bytes(pickle.dumps(cached))
    started = time.perf_counter()
    rows = []
    for inst in instances:
        files, terms = cached[inst.instance_id]
        rows.append(_replay(inst, universe, args.db, files, terms))
    seconds = time.perf_counter() - started
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"{len(rows)} instances, selection replayed in {seconds:.1f} s")
    print("budget  recall  cover  used   | whole: recall cover")
    for i, budget in enumerate(BUDGETS):
        sc = [r["contexts"][i]["scores"] for r in rows]
        bs = [r["contexts"][i]["baseline"]["scores"] for r in rows]
        print(
            f"{budget:>6}  {_mean([s['line_recall'] for s in sc]):.3f}  "
            f"{_mean([s['file_cover'] for s in sc]):.3f}  "
            f"{_mean([s['tokens_used'] for s in sc]):>6.0f} | "
            f"{_mean([s['line_recall'] for s in bs]):.3f} "
            f"{_mean([s['file_cover'] for s in bs]):.3f}"
        )
    sc = [r["contexts"][0]["scores"] for r in rows]
    accs = " / ".join(f"{_mean([s[f'symbol_acc_at_{k}'] for s in sc]):.3f}" for k in SYMBOL_KS)
    print(f"symbol Acc@{'/'.join(map(str, SYMBOL_KS))}: {accs}")


if __name__ == "__main__":
    main()
