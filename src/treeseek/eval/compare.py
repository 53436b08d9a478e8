"""Compare two runs per metric with a paired bootstrap 95% confidence interval.

Instances are paired by id (only ids both runs answered count). The interval is the 2.5th and
97.5th percentile of the mean paired difference (B - A) over resamples of the instances, with
a fixed seed so the same two runs always print the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from treeseek.errors import ConfigError
from treeseek.eval.metrics import METRICS
from treeseek.eval.records import PER_QUERY_FILE, QueryRecord, read_records

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 0


@dataclass(frozen=True, slots=True)
class MetricDiff:
    metric: str
    mean_a: float
    mean_b: float
    diff: float  # mean_b - mean_a
    ci_low: float
    ci_high: float

    @property
    def significant(self) -> bool:
        """The 95% interval excludes zero."""
        return self.ci_low > 0 or self.ci_high < 0


@dataclass(frozen=True, slots=True)
class Comparison:
    run_a: str
    run_b: str
    paired: int
    only_a: int
    only_b: int
    diffs: list[MetricDiff]


def _load(run_dir: Path) -> dict[str, QueryRecord]:
    path = run_dir / PER_QUERY_FILE
    if not path.is_file():
        raise ConfigError(f"{run_dir} has no {PER_QUERY_FILE}; is it an eval output directory?")
    return {r.instance_id: r for r in read_records(path)}


def paired_bootstrap(
    a: np.ndarray, b: np.ndarray, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> tuple[float, float]:
    """95% percentile interval of mean(b - a) over paired resamples."""
    diff = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    if diff.size == 0:
        return (0.0, 0.0)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, diff.size, size=(resamples, diff.size))
    means = diff[idx].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def compare_runs(
    run_a: Path, run_b: Path, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> Comparison:
    records_a, records_b = _load(run_a), _load(run_b)
    ids = [i for i in records_a if i in records_b]
    if not ids:
        raise ConfigError(f"{run_a} and {run_b} share no instance; nothing to compare")
    # an id names one instance only within one dataset: the same id with other gold files is
    # another question (two datasets numbering their instances alike), not a pair
    unlike = [i for i in ids if sorted(records_a[i].gold_files) != sorted(records_b[i].gold_files)]
    if unlike:
        raise ConfigError(
            f"{len(unlike)} instances of {run_a} and {run_b} have other gold files under the same"
            f" id (e.g. {unlike[0]}): the runs are of different datasets; compare runs of one"
        )
    diffs: list[MetricDiff] = []
    for metric in METRICS:
        a = np.array([float(getattr(records_a[i].scores, metric)) for i in ids])
        b = np.array([float(getattr(records_b[i].scores, metric)) for i in ids])
        low, high = paired_bootstrap(a, b, resamples, seed)
        diffs.append(
            MetricDiff(metric, float(a.mean()), float(b.mean()), float((b - a).mean()), low, high)
        )
    return Comparison(
        run_a=run_a.name,
        run_b=run_b.name,
        paired=len(ids),
        only_a=len(set(records_a) - set(records_b)),
        only_b=len(set(records_b) - set(records_a)),
        diffs=diffs,
    )
