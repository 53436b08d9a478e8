"""A run's summary: metric means overall and per tier, repo and gold count, plus usage.

The summary is computed from the per-query records alone, so a run can be rescored or
re-reported at any time (``summary.json`` is derived data).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from treeseek.eval.context_metrics import summarize_contexts
from treeseek.eval.datasets import DatasetError
from treeseek.eval.metrics import METRICS, Aggregate, gold_count_bucket, group_means, mean_scores
from treeseek.eval.records import PER_QUERY_FILE, QueryRecord

SUMMARY_FILE = "summary.json"
TIER_ORDER = ("easy", "medium", "hard", "none")

#: per-query usage fields, averaged in the summary
USAGE_FIELDS = (
    "calls",
    "input_tokens",
    "cache_write_tokens",
    "cache_read_tokens",
    "output_tokens",
    "llm_latency_s",
    "wall_s",
)


@dataclass(slots=True)
class Group:
    """Metric and usage means of a set of records."""

    n: int
    metrics: dict[str, float]
    usage: dict[str, float]
    errors: int
    cost_usd: float | None  # mean estimated cost per query; None when no record has a cost

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "errors": self.errors,
            **self.metrics,
            **{f"mean_{k}": v for k, v in self.usage.items()},
            "mean_cost_usd": self.cost_usd,
        }


def _group(records: Sequence[QueryRecord], aggregate: Aggregate) -> Group:
    n = len(records)
    usage = {
        name: (sum(float(getattr(r, name)) for r in records) / n if n else 0.0)
        for name in USAGE_FIELDS
    }
    costs = [r.cost_usd for r in records if r.cost_usd is not None]
    return Group(
        n=n,
        metrics=dict(aggregate.means),
        usage=usage,
        errors=sum(1 for r in records if r.error),
        cost_usd=(sum(costs) / n) if costs and n else None,
    )


def _groups(
    records: Sequence[QueryRecord], key: Callable[[QueryRecord], str], order: Sequence[str] = ()
) -> dict[str, Group]:
    means = group_means(records, key=key, scores=lambda r: r.scores)
    names = [o for o in order if o in means] + [g for g in means if g not in order]
    return {g: _group([r for r in records if key(r) == g], means[g]) for g in names}


@dataclass(slots=True)
class Summary:
    run: dict[str, Any]
    overall: Group
    by_tier: dict[str, Group]
    by_repo: dict[str, Group]
    by_gold_count: dict[str, Group]
    totals: dict[str, float] = field(default_factory=dict)
    #: ``--budget`` runs: context metric means per budget (see eval.context_metrics)
    context: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        extra = {"context": self.context} if self.context else {}
        return {
            "run": self.run,
            "metrics": list(METRICS),
            "overall": self.overall.to_dict(),
            "by_tier": {k: v.to_dict() for k, v in self.by_tier.items()},
            "by_repo": {k: v.to_dict() for k, v in self.by_repo.items()},
            "by_gold_count": {k: v.to_dict() for k, v in self.by_gold_count.items()},
            "totals": self.totals,
            **extra,
        }


def summarize(records: Sequence[QueryRecord], run: dict[str, Any]) -> Summary:
    costs = [r.cost_usd for r in records if r.cost_usd is not None]
    totals: dict[str, float] = {
        name: float(sum(getattr(r, name) for r in records)) for name in USAGE_FIELDS
    }
    totals["cost_usd"] = float(sum(costs))
    return Summary(
        run=run,
        overall=_group(records, mean_scores([r.scores for r in records])),
        by_tier=_groups(records, lambda r: r.tier, TIER_ORDER),
        by_repo=_groups(records, lambda r: r.repo),
        by_gold_count=_groups(records, lambda r: gold_count_bucket(r.n_gold)),
        totals=totals,
        context=summarize_contexts([r.contexts for r in records if r.contexts]),
    )


def write_summary(summary: Summary, out_dir: Path) -> Path:
    path = out_dir / SUMMARY_FILE
    path.write_text(json.dumps(summary.to_dict(), indent=2) + "\n", encoding="utf-8")
    return path


def read_summary(run_dir: Path) -> dict[str, Any]:
    path = run_dir / SUMMARY_FILE
    if not path.is_file():
        if (run_dir / PER_QUERY_FILE).is_file():  # records, no summary: stopped before the end
            raise DatasetError(
                f"{run_dir} has no {SUMMARY_FILE}: the run did not finish (interrupted?); rerun"
                " its command to finish it (answered instances are kept) and write the summary"
            )
        raise DatasetError(f"{run_dir} has no {SUMMARY_FILE}; is it an eval output directory?")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise DatasetError(
            f"{path} is not valid JSON ({exc}); rerun the eval on {run_dir} to rewrite it"
        ) from exc
    if not isinstance(data, dict):
        raise DatasetError(f"{path} is not a run summary (a JSON object); rerun the eval")
    return data
