"""The benchmark's metrics, exactly as ``shared/bench/README.md`` defines them.

For ranked predictions (deduplicated keeping the first occurrence, at most 10) and a gold set G:

- cutoff = max(1, |G|); found@gold = |set(preds[:cutoff]) ∩ G|; recall@gold = found / |G|;
  exact@gold = 1 if G ⊆ preds[:cutoff] else 0
- MRR = 1 / rank of the first gold file anywhere in preds (0 if none)
- nDCG@10 = Σ_{i<10} [preds[i] ∈ G] / log2(i+2), divided by the ideal sum over min(|G|, 10) hits
- strict Acc@k (k = 1, 3, 5, 10) = 1 if G ⊆ preds[:k]

Aggregation is a plain mean over instances, overall and per group (tier, repo, gold count).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from typing import TypeVar

MAX_PREDICTIONS = 10
ACC_KS = (1, 3, 5, 10)

T = TypeVar("T")


def normalize_predictions(preds: Iterable[str], limit: int = MAX_PREDICTIONS) -> list[str]:
    """Drop repeated paths (keeping the first occurrence) and keep at most ``limit``."""
    seen: set[str] = set()
    out: list[str] = []
    for path in preds:
        if path in seen:
            continue
        seen.add(path)
        out.append(path)
        if len(out) == limit:
            break
    return out


@dataclass(frozen=True, slots=True)
class Scores:
    """The metrics of one instance."""

    recall_at_gold: float
    exact_at_gold: float
    found_at_gold: int
    mrr: float
    ndcg_at_10: float
    acc_at_1: float
    acc_at_3: float
    acc_at_5: float
    acc_at_10: float

    def as_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}


#: metric names in report order
METRICS: tuple[str, ...] = tuple(f.name for f in fields(Scores))


def score(preds: Sequence[str], gold: Iterable[str]) -> Scores:
    """Score ranked ``preds`` against the ``gold`` set (which must not be empty)."""
    gold_set = frozenset(gold)
    if not gold_set:
        raise ValueError("an instance needs at least one gold file to be scored")
    ranked = normalize_predictions(preds)
    cutoff = max(1, len(gold_set))
    found = len(set(ranked[:cutoff]) & gold_set)
    first_hit = next((i for i, p in enumerate(ranked) if p in gold_set), None)
    dcg = sum(1.0 / math.log2(i + 2) for i, p in enumerate(ranked[:10]) if p in gold_set)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold_set), 10)))

    def covers(k: int) -> float:
        return 1.0 if gold_set <= set(ranked[:k]) else 0.0

    accs = [covers(k) for k in ACC_KS]
    return Scores(
        recall_at_gold=found / len(gold_set),
        exact_at_gold=covers(cutoff),
        found_at_gold=found,
        mrr=0.0 if first_hit is None else 1.0 / (first_hit + 1),
        ndcg_at_10=dcg / ideal,
        acc_at_1=accs[0],
        acc_at_3=accs[1],
        acc_at_5=accs[2],
        acc_at_10=accs[3],
    )


def miss(gold: Iterable[str]) -> Scores:
    """The scores of an instance with no predictions (errors are scored as misses)."""
    return score([], gold)


def gold_count_bucket(n_gold: int) -> str:
    """Groups instances by how many files their fix touched: "1", "2", "3+"."""
    return str(n_gold) if n_gold < 3 else "3+"


@dataclass(frozen=True, slots=True)
class Aggregate:
    """Mean metrics over a group of instances."""

    n: int
    means: dict[str, float]

    def to_dict(self) -> dict[str, object]:
        return {"n": self.n, **self.means}


def mean_scores(items: Sequence[Scores]) -> Aggregate:
    if not items:
        return Aggregate(0, {name: 0.0 for name in METRICS})
    return Aggregate(
        len(items),
        {name: sum(float(getattr(s, name)) for s in items) / len(items) for name in METRICS},
    )


def group_means(
    items: Sequence[T], key: Callable[[T], str], scores: Callable[[T], Scores]
) -> dict[str, Aggregate]:
    """Means per group, groups in sorted order."""
    groups: dict[str, list[Scores]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(scores(item))
    return {name: mean_scores(groups[name]) for name in sorted(groups)}
