"""Where budgeted answers lose gold lines and gold symbols (error analysis of an eval run).

Reads a run's ``per_query.jsonl`` (rows with ``contexts``: spans without text, ranked
``symbols``; ``treeseek eval run --budget N`` or ``bench/replay_context.py`` write them) and
the dataset's line/symbol gold. Analysis may read gold; product code never does.

Lost gold lines at each budget, as shares of all gold lines (mean over instances, like line
recall, so the rows and the recall add up to 1):

- ``file not ranked``: the gold file is not among the ranked files (preds);
- ``ranked, no span``: ranked, but the answer has no span of it (split by the file's rank:
  the budget went to other files);
- ``in a shown symbol``: the file has spans, the line's innermost symbol (with ``--db``) has
  a span too, but not this line (a window cut the symbol, or only its header was shown);
- ``in another symbol``: the file has spans, none touches the line's symbol;
- ``module level, not shown``: the file has spans, the line is outside every symbol;
  the last three split by the file's rank (1 or 2+).

Symbol Acc@5 misses (instances with symbol gold), each by its first failing cause:
``file not ranked`` (a gold symbol's file is not a ranked file), ``not listed`` (its file is
ranked, the symbol is not among the answer's symbols at all), ``listed past 5``; with the
ranks of the gold symbols that are listed, and single- vs multi-symbol instances.

    PYTHONPATH=src python bench/analyze_context.py RUN/per_query.jsonl \
        --dataset /work/runs/dev-173.jsonl [--db /work/runs/contents/eval.db --repo ...]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from treeseek.code.model import Symbol
from treeseek.eval.datasets import Instance, load_instances

_NOT_SYMBOLS = ("::<module>", "::<file>")


class SymbolLookup:
    """Innermost symbol of a line, from the eval's per-commit databases (optional)."""

    def __init__(self, db: Path | None, repos: list[str]) -> None:
        self.db = db
        self.universe: Any = None
        if db is not None:
            from treeseek.cli.eval_commands import parse_repo_mappings
            from treeseek.eval.contents import ContentsUniverse

            self.universe = ContentsUniverse(parse_repo_mappings(repos))

    def symbols(self, inst: Instance, paths: list[str]) -> dict[str, list[Symbol]]:
        if self.universe is None or self.db is None:
            return {}
        import treeseek
        from treeseek.context import TreeSource
        from treeseek.eval.contents import CONTENTS_TREE

        out: dict[str, list[Symbol]] = {}
        with treeseek.open(str(self.universe.file_for(self.db, inst.commit_key))) as db:
            source = TreeSource(db.store, CONTENTS_TREE)
            for p in paths:
                try:
                    out[p] = list(source.symbols(p))
                except Exception:  # a path the tree lacks (an added file)
                    out[p] = []
        return out


def _innermost(symbols: list[Symbol], line: int) -> Symbol | None:
    around = [s for s in symbols if s.start_line <= line <= s.end_line]
    return min(around, key=lambda s: s.end_line - s.start_line) if around else None


def line_losses(
    inst: Instance, row: dict[str, Any], ctx: dict[str, Any], syms: dict[str, list[Symbol]]
) -> dict[str, float]:
    gold = {p: {i for s, e in r for i in range(s, e + 1)} for p, r in inst.gold_spans}
    total = sum(len(v) for v in gold.values())
    if not total:
        return {}
    spans: dict[str, list[tuple[int, int]]] = {}
    for s in ctx["context"]:
        spans.setdefault(s["path"], []).append((s["start_line"], s["end_line"]))
    preds = row["preds"]
    out: Counter[str] = Counter()
    for path, lines in gold.items():
        mine = spans.get(path, [])
        for i in lines:
            if any(s <= i <= e for s, e in mine):
                out["covered"] += 1
            elif path not in preds:
                out["file not ranked"] += 1
            elif not mine:
                rank = preds.index(path) + 1
                out[f"ranked, no span (rank {'1-3' if rank <= 3 else '4+'})"] += 1
            else:
                sym = _innermost(syms.get(path, []), i)
                shown = sym is not None and any(
                    s <= sym.end_line and e >= sym.start_line for s, e in mine
                )
                where = "file rank 1" if preds.index(path) == 0 else "file rank 2+"
                if sym is None:
                    out[f"module level, not shown ({where})"] += 1
                else:
                    out[f"in {'a shown' if shown else 'another'} symbol ({where})"] += 1
    return {k: v / total for k, v in out.items()}


def symbol_miss(inst: Instance, row: dict[str, Any], ctx: dict[str, Any], k: int) -> str | None:
    gold = [s for s in inst.gold_symbols if not s.endswith(_NOT_SYMBOLS)]
    if not gold:
        return None
    ranked = ctx["symbols"]
    if all(g in ranked[:k] for g in gold):
        return "hit"
    if any(g.partition("::")[0] not in row["preds"] for g in gold):
        return "file not ranked"
    if any(g not in ranked for g in gold):
        return "not listed"
    return "listed past 5"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("per_query", type=Path)
    ap.add_argument("--dataset", type=Path, required=True)
    ap.add_argument("--db", type=Path)
    ap.add_argument("--repo", action="append", default=[])
    args = ap.parse_args()
    instances = {i.instance_id: i for i in load_instances(args.dataset)}
    rows = [json.loads(line) for line in args.per_query.read_text().splitlines() if line]
    lookup = SymbolLookup(args.db, args.repo)
    budgets = [c["budget"]["limit"] for c in rows[0]["contexts"]]
    losses: dict[int, Counter[str]] = {b: Counter() for b in budgets}
    for row in rows:
        inst = instances[row["instance_id"]]
        syms = lookup.symbols(inst, [p for p, _ in inst.gold_spans if p in row["preds"]])
        for ctx in row["contexts"]:
            for key, v in line_losses(inst, row, ctx, syms).items():
                losses[ctx["budget"]["limit"]][key] += v / len(rows)
    keys = sorted({k for c in losses.values() for k in c}, key=lambda k: (k != "covered", k))
    print("## Gold lines by fate (share of gold lines, mean over instances)\n")
    print("| fate | " + " | ".join(f"{b:,}" for b in budgets) + " |")
    print("| --- |" + " ---: |" * len(budgets))
    for key in keys:
        print(f"| {key} | " + " | ".join(f"{losses[b][key]:.3f}" for b in budgets) + " |")

    ctx0 = [r["contexts"][0] for r in rows]
    causes: Counter[str] = Counter()
    by_size: dict[str, Counter[str]] = {"1": Counter(), "2+": Counter()}
    ranks: Counter[str] = Counter()
    for row, ctx in zip(rows, ctx0, strict=True):
        inst = instances[row["instance_id"]]
        cause = symbol_miss(inst, row, ctx, 5)
        if cause is None:
            continue
        causes[cause] += 1
        gold = [s for s in inst.gold_symbols if not s.endswith(_NOT_SYMBOLS)]
        by_size["1" if len(gold) == 1 else "2+"][cause] += 1
        for g in gold:
            if g in ctx["symbols"]:
                r = ctx["symbols"].index(g) + 1
                ranks["1" if r == 1 else "2-5" if r <= 5 else "6-10" if r <= 10 else "11-30"] += 1
            elif g.partition("::")[0] in row["preds"]:
                ranks["not listed (file ranked)"] += 1
            else:
                ranks["file not ranked"] += 1
    n = sum(causes.values())
    print(f"\n## Symbol Acc@5 by first failing cause ({n} instances with symbol gold)\n")
    print("| cause | all | 1 gold symbol | 2+ gold symbols |")
    print("| --- | ---: | ---: | ---: |")
    for cause in ("hit", "file not ranked", "not listed", "listed past 5"):
        print(f"| {cause} | {causes[cause]} | {by_size['1'][cause]} | {by_size['2+'][cause]} |")
    print("\n## Rank of each gold symbol in the answer's symbols\n")
    print("| rank | gold symbols |")
    print("| --- | ---: |")
    for key in ("1", "2-5", "6-10", "11-30", "not listed (file ranked)", "file not ranked"):
        print(f"| {key} | {ranks[key]} |")


if __name__ == "__main__":
    main()
