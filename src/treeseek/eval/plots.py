"""PNG plots of eval runs (matplotlib, Agg backend: no display needed; the ``eval`` extra,
imported on first use: without it ``treeseek eval plot`` says what to install and a run
skips its plots).

- ``metric_by_tier.png``: one metric per tier, one bar per run (grouped bars);
- ``cost_vs_quality.png``: each run as a labelled point, quality against estimated cost per
  query and against wall time per query (runs without an LLM cost nothing, so the second
  panel still separates them).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from treeseek.errors import ConfigError
from treeseek.eval.summary import TIER_ORDER

#: how to install what the plots need
EXTRA = "pip install 'treeseek[eval]'"

METRIC_TITLES = {
    "recall_at_gold": "recall@gold",
    "exact_at_gold": "exact@gold",
    "mrr": "MRR",
    "ndcg_at_10": "nDCG@10",
    "acc_at_1": "Acc@1",
    "acc_at_5": "Acc@5",
    "acc_at_10": "Acc@10",
}


def available() -> bool:
    """Whether matplotlib (the ``eval`` extra) is installed."""
    return importlib.util.find_spec("matplotlib") is not None


def _pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, imported on first use (the ``eval`` extra)."""
    try:
        import matplotlib
    except ImportError as exc:
        raise ConfigError(f"plots need matplotlib: {EXTRA}") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _label(summary: Mapping[str, Any]) -> str:
    return str(summary["run"]["name"])


def plot_metric_by_tier(
    summaries: Sequence[Mapping[str, Any]], out: Path, metric: str = "recall_at_gold"
) -> Path:
    """Grouped bars: tiers (plus "all") on x, one bar per run."""
    tiers = [t for t in TIER_ORDER if any(t in s["by_tier"] for s in summaries)]
    groups = [*tiers, "all"]
    width = 0.8 / max(1, len(summaries))
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(groups) + 0.4 * len(summaries)), 4.2))
    for n, summary in enumerate(summaries):
        values = [
            float(
                (summary["overall"] if g == "all" else summary["by_tier"].get(g, {})).get(
                    metric, 0.0
                )
            )
            for g in groups
        ]
        xs = [i + (n - (len(summaries) - 1) / 2) * width for i in range(len(groups))]
        bars = ax.bar(xs, values, width, label=_label(summary))
        crowded = len(summaries) > 3
        ax.bar_label(
            bars, fmt="%.2f", fontsize=6 if crowded else 7, padding=1, rotation=90 if crowded else 0
        )
    counts = summaries[0]["by_tier"] if summaries else {}
    ticks = [f"{g}\n(n={counts[g]['n']})" if g in counts else g for g in tiers]
    n_all = summaries[0]["overall"]["n"] if summaries else 0
    ax.set_xticks(range(len(groups)), [*ticks, f"all\n(n={n_all})"])
    ax.set_ylim(0, 1.08)
    ax.set_ylabel(METRIC_TITLES.get(metric, metric))
    ax.set_title(f"{METRIC_TITLES.get(metric, metric)} by query tier")
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def plot_cost_vs_quality(
    summaries: Sequence[Mapping[str, Any]], out: Path, metric: str = "recall_at_gold"
) -> Path:
    """Two scatter panels: quality vs estimated $/query, and quality vs wall s/query."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2 + 0.18 * len(summaries)))
    panels = (("mean_cost_usd", "estimated cost per query (USD)"), ("mean_wall_s", "wall s/query"))
    for ax, (key, title) in zip(axes, panels, strict=True):
        # runs at the same point (e.g. a ranker that changed nothing) share one marker; markers
        # carry a number and the legend names the runs, so close points never hide their names
        points: dict[tuple[float, float], list[str]] = {}
        for summary in summaries:
            overall = summary["overall"]
            x = round(float(overall.get(key) or 0.0), 6)
            y = round(float(overall.get(metric, 0.0)), 6)
            points.setdefault((x, y), []).append(_label(summary))
        for number, ((x, y), labels) in enumerate(points.items(), start=1):
            ax.scatter([x], [y], s=40, label=f"{number}: {', '.join(labels)}")
            ax.annotate(str(number), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.18), frameon=False)
        ax.set_xlabel(title)
        ax.set_ylabel(METRIC_TITLES.get(metric, metric))
        ax.set_ylim(0, 1.0)
        ax.set_xlim(left=0)
        ax.grid(alpha=0.3)
    fig.suptitle(f"cost versus quality ({METRIC_TITLES.get(metric, metric)})")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def write_plots(summaries: Sequence[Mapping[str, Any]], out_dir: Path) -> list[Path]:
    """Both plots for ``summaries`` into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return [
        plot_metric_by_tier(summaries, out_dir / "metric_by_tier.png"),
        plot_cost_vs_quality(summaries, out_dir / "cost_vs_quality.png"),
    ]
