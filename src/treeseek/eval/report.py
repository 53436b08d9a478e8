"""``report.md``: a run's summary as markdown tables (ready to paste into a README)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPORT_FILE = "report.md"

#: (summary key, column title) of the quality columns
METRIC_COLUMNS = (
    ("recall_at_gold", "recall@gold"),
    ("exact_at_gold", "exact@gold"),
    ("mrr", "MRR"),
    ("ndcg_at_10", "nDCG@10"),
    ("acc_at_1", "Acc@1"),
    ("acc_at_3", "Acc@3"),
    ("acc_at_5", "Acc@5"),
    ("acc_at_10", "Acc@10"),
)

USAGE_COLUMNS = (
    ("mean_calls", "calls/q"),
    ("mean_input_tokens", "input tok/q"),
    ("mean_cache_write_tokens", "cache-write tok/q"),
    ("mean_cache_read_tokens", "cache-read tok/q"),
    ("mean_output_tokens", "output tok/q"),
    ("mean_cost_usd", "est. $/q"),
    ("mean_wall_s", "wall s/q"),
)


def _cell(value: Any, key: str) -> str:
    if value is None:
        return "–"
    if key == "mean_cost_usd":
        return f"{value:.4f}"
    if key.startswith("mean_") and key.endswith("_s"):
        return f"{value:.3f}"
    if key.startswith("mean_"):
        return f"{value:,.1f}"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def markdown_table(
    rows: Sequence[tuple[str, Mapping[str, Any]]],
    columns: Sequence[tuple[str, str]],
    first: str,
) -> str:
    """A markdown table: one row per (label, group dict), ``n`` after the label."""
    head = [first, "n", *(title for _, title in columns)]
    lines = [
        "| " + " | ".join(head) + " |",
        "| " + " | ".join(["---"] + ["---:"] * (len(head) - 1)) + " |",
    ]
    for label, group in rows:
        cells = [label, str(group.get("n", "")), *(_cell(group.get(k), k) for k, _ in columns)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _section(title: str, groups: Mapping[str, Mapping[str, Any]], first: str) -> str:
    rows = list(groups.items())
    return f"## {title}\n\n{markdown_table(rows, METRIC_COLUMNS, first)}\n"


def render_report(summary: Mapping[str, Any]) -> str:
    run = summary["run"]
    overall = summary["overall"]
    ranker = run.get("ranker") or "none"
    settings = (
        f"universe **{run['universe']}**, strategy **{run['strategy']}**, navigator"
        f" **{run['llm']}**, ranker **{ranker}**, k={run['k']}"
    )
    selection = f"{run['selected']} instances from `{run['dataset']}`"
    if run.get("tiers"):
        selection += f", tiers {', '.join(run['tiers'])}"
    if run.get("sample"):
        selection += f", sample {run['sample']} (seed {run['seed']})"
    if run.get("limit"):
        selection += f", limit {run['limit']}"
    machine = run.get("machine", {})
    load = run.get("load_average") or ["?", "?"]
    errors = overall.get("errors", 0)
    parts = [
        f"# Eval run `{run['name']}`\n",
        f"- settings: {settings}",
        f"- {selection}; errors (scored as misses): {errors}",
        f"- wall time {run['seconds']:.1f} s (CPU {run.get('cpu_seconds', 0.0):.0f} s; tree"
        f" building {run['index_seconds']:.1f} s summed over build processes),"
        f" {run['workers']} worker(s), {run['sessions']} session(s), finished"
        f" {run['finished_at']}",
        f"- machine: {machine.get('platform', '?')}, {machine.get('cpus', '?')} CPUs,"
        f" Python {machine.get('python', '?')}; 1-min load average {load[0]} at the start,"
        f" {load[1]} at the end of the last session\n",
        "## Overall\n",
        markdown_table([("all", overall)], METRIC_COLUMNS, "set") + "\n",
        "## Cost and usage (per query)\n",
        markdown_table([("all", overall)], USAGE_COLUMNS, "set") + "\n",
        _section("By tier", summary["by_tier"], "tier"),
        _section("By gold-file count", summary["by_gold_count"], "gold files"),
        _section("By repository", summary["by_repo"], "repo"),
    ]
    if summary.get("context"):
        parts.insert(4, context_section(summary["context"]))
    return "\n".join(parts)


#: (summary key, column title) of the budgeted-context table
CONTEXT_COLUMNS = (
    ("line_recall", "line recall"),
    ("tokens_used", "tokens used"),
    ("file_cover", "file cover"),
    ("symbol_acc_at_1", "sym Acc@1"),
    ("symbol_acc_at_5", "sym Acc@5"),
    ("symbol_acc_at_10", "sym Acc@10"),
    ("baseline_line_recall", "whole files: line recall"),
    ("baseline_tokens_used", "whole files: tokens"),
    ("baseline_file_cover", "whole files: file cover"),
)


def context_section(context: Mapping[str, Mapping[str, Any]]) -> str:
    """Line recall, file cover and symbol accuracy per budget, beside the whole-file
    baseline (the top files, whole, until the budget is spent) on the same instances."""
    head = ["budget", "n", *(t for _, t in CONTEXT_COLUMNS), "n (symbols)"]
    lines = [
        "| " + " | ".join(head) + " |",
        "| " + " | ".join(["---:"] * len(head)) + " |",
    ]
    for budget, group in context.items():
        cells = [f"{int(budget):,}", str(group.get("n", ""))]
        for key, _ in CONTEXT_COLUMNS:
            value = group.get(key)
            if value is None:
                cells.append("–")
            elif "tokens" in key:
                cells.append(f"{value:,.0f}")
            else:
                cells.append(f"{value:.3f}")
        cells.append(str(group.get("n_symbols", "")))
        lines.append("| " + " | ".join(cells) + " |")
    return "## Budgeted context (line level)\n\n" + "\n".join(lines) + "\n"


def write_report(summary: Mapping[str, Any], out_dir: Path) -> Path:
    path = out_dir / REPORT_FILE
    path.write_text(render_report(summary), encoding="utf-8")
    return path


def comparison_table(summaries: Sequence[Mapping[str, Any]]) -> str:
    """One row per run (overall means), for a README "Results" section."""
    columns = (
        ("recall_at_gold", "recall@gold"),
        ("exact_at_gold", "exact@gold"),
        ("mrr", "MRR"),
        ("ndcg_at_10", "nDCG@10"),
        ("acc_at_1", "Acc@1"),
        ("acc_at_5", "Acc@5"),
        ("acc_at_10", "Acc@10"),
        ("mean_calls", "nav. calls/q"),
        ("mean_wall_s", "wall s/q"),
    )
    head = ["run", "trees", "strategy", "navigator", "ranker", "n", *(t for _, t in columns)]
    lines = [
        "| " + " | ".join(head) + " |",
        "| " + " | ".join(["---"] * 5 + ["---:"] * (len(head) - 5)) + " |",
    ]
    for summary in summaries:
        run, overall = summary["run"], summary["overall"]
        cells = [
            f"`{run['name']}`",
            run["universe"],
            run["strategy"],
            run["llm"],
            run.get("ranker") or "none",
            str(overall["n"]),
            *(_cell(overall.get(k), k) for k, _ in columns),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
