"""Line- and function-level metrics of budgeted answers (``treeseek eval --budget N``).

For an answer's spans (path, start_line, end_line; 1-based inclusive), its ranked symbols
(``path::Qual.name``) and an instance's ``gold_spans`` / ``gold_symbols`` (see
``shared/bench/README.md``):

- **line recall**: gold lines inside some returned span of the same file / all gold lines;
- **file cover**: gold files (the keys of ``gold_spans``) with at least one returned span /
  all gold files;
- **symbol Acc@k** (k = 1, 5, 10): 1 if every gold symbol other than ``<module>`` (and
  ``<file>``, a non-Python file) is among the first k ranked symbols; an instance whose gold
  has no such symbol has no symbol score (it is left out of that mean, and counted).

Aggregation is a plain mean over instances. The whole-file baseline (the top files, whole,
until the budget is spent) is scored the same way on the same instances.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

SYMBOL_KS = (1, 5, 10)
_NOT_SYMBOLS = ("::<module>", "::<file>")

GoldSpans = Sequence[tuple[str, Sequence[tuple[int, int]]]]


def _gold_lines(gold_spans: GoldSpans) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for path, ranges in gold_spans:
        lines = out.setdefault(path, set())
        for s, e in ranges:
            lines.update(range(s, e + 1))
    return out


def _covered(spans: Iterable[Mapping[str, Any]]) -> dict[str, list[tuple[int, int]]]:
    out: dict[str, list[tuple[int, int]]] = {}
    for s in spans:
        out.setdefault(str(s["path"]), []).append((int(s["start_line"]), int(s["end_line"])))
    return out


def line_recall(spans: Iterable[Mapping[str, Any]], gold_spans: GoldSpans) -> float | None:
    """Share of gold lines inside the spans (None without line gold)."""
    gold = _gold_lines(gold_spans)
    total = sum(len(lines) for lines in gold.values())
    if not total:
        return None
    covered = _covered(spans)
    found = 0
    for path, lines in gold.items():
        ranges = covered.get(path, [])
        found += sum(1 for i in lines if any(s <= i <= e for s, e in ranges))
    return found / total


def file_cover(spans: Iterable[Mapping[str, Any]], gold_spans: GoldSpans) -> float | None:
    """Share of gold files with at least one span (None without line gold)."""
    gold = [path for path, _ in gold_spans]
    if not gold:
        return None
    covered = _covered(spans)
    return sum(1 for p in gold if p in covered) / len(gold)


def gold_symbol_set(gold_symbols: Iterable[str]) -> set[str]:
    return {s for s in gold_symbols if not s.endswith(_NOT_SYMBOLS)}


def symbol_acc(symbols: Sequence[str], gold_symbols: Iterable[str], k: int) -> float | None:
    """1.0 if every gold symbol (but ``<module>``/``<file>``) is in ``symbols[:k]``; None when
    the gold has no such symbol."""
    gold = gold_symbol_set(gold_symbols)
    if not gold:
        return None
    return 1.0 if gold <= set(symbols[:k]) else 0.0


def score_context(
    spans: Sequence[Mapping[str, Any]],
    symbols: Sequence[str],
    used: int,
    gold_spans: GoldSpans,
    gold_symbols: Sequence[str],
) -> dict[str, float | None]:
    """The metrics of one answer at one budget."""
    out: dict[str, float | None] = {
        "line_recall": line_recall(spans, gold_spans),
        "file_cover": file_cover(spans, gold_spans),
        "tokens_used": float(used),
    }
    for k in SYMBOL_KS:
        out[f"symbol_acc_at_{k}"] = symbol_acc(symbols, gold_symbols, k)
    return out


#: the summary's columns: (record key, "" or "baseline"), in report order
CONTEXT_METRICS = (
    "line_recall",
    "tokens_used",
    "file_cover",
    "symbol_acc_at_1",
    "symbol_acc_at_5",
    "symbol_acc_at_10",
)
BASELINE_METRICS = ("line_recall", "tokens_used", "file_cover")


def _mean(values: Iterable[float | None]) -> tuple[float | None, int]:
    kept = [v for v in values if v is not None]
    return (sum(kept) / len(kept) if kept else None), len(kept)


def summarize_contexts(rows: Sequence[Sequence[Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Means per budget over records' ``contexts`` lists: ``{"4000": {"n": ..., metric: mean,
    "baseline_" + metric: mean, "n_symbols": ...}}``, budgets in increasing order."""
    by_budget: dict[int, list[Mapping[str, Any]]] = {}
    for contexts in rows:
        for c in contexts:
            by_budget.setdefault(int(c["budget"]["limit"]), []).append(c)
    out: dict[str, dict[str, Any]] = {}
    for budget in sorted(by_budget):
        items = by_budget[budget]
        group: dict[str, Any] = {"n": len(items)}
        for name in CONTEXT_METRICS:
            group[name], n = _mean(c.get("scores", {}).get(name) for c in items)
            if name == "symbol_acc_at_1":
                group["n_symbols"] = n
        for name in BASELINE_METRICS:
            group[f"baseline_{name}"], _ = _mean(
                (c.get("baseline") or {}).get("scores", {}).get(name) for c in items
            )
        out[str(budget)] = group
    return out
