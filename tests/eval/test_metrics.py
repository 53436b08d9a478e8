"""The metric functions against hand-computed cases (shared/bench/README.md definitions)."""

from __future__ import annotations

import math

import pytest

from treeseek.eval.metrics import (
    METRICS,
    Scores,
    gold_count_bucket,
    group_means,
    mean_scores,
    miss,
    normalize_predictions,
    score,
)


def test_single_gold_at_rank_one() -> None:
    s = score(["a.py", "b.py"], {"a.py"})
    assert s == Scores(1.0, 1.0, 1, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)


def test_single_gold_at_rank_three() -> None:
    s = score(["x", "y", "g", "z"], ["g"])
    # cutoff 1: preds[:1] = [x] -> found 0
    assert s.found_at_gold == 0 and s.recall_at_gold == 0.0 and s.exact_at_gold == 0.0
    assert s.mrr == pytest.approx(1 / 3)
    assert s.ndcg_at_10 == pytest.approx((1 / math.log2(4)) / 1.0)  # = 0.5
    assert (s.acc_at_1, s.acc_at_3, s.acc_at_5, s.acc_at_10) == (0.0, 1.0, 1.0, 1.0)


def test_multi_gold_partial_within_cutoff() -> None:
    gold = {"g1", "g2", "g3"}
    preds = ["g2", "x", "g1", "y", "g3"]
    s = score(preds, gold)
    # cutoff 3: {g2, x, g1} ∩ G = 2
    assert s.found_at_gold == 2
    assert s.recall_at_gold == pytest.approx(2 / 3)
    assert s.exact_at_gold == 0.0
    assert s.mrr == 1.0
    dcg = 1 / math.log2(2) + 1 / math.log2(4) + 1 / math.log2(6)
    ideal = 1 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert s.ndcg_at_10 == pytest.approx(dcg / ideal)
    assert (s.acc_at_1, s.acc_at_3, s.acc_at_5, s.acc_at_10) == (0.0, 0.0, 1.0, 1.0)


def test_multi_gold_all_within_cutoff_any_order() -> None:
    s = score(["b", "a", "c"], ["a", "b"])
    assert s.found_at_gold == 2 and s.recall_at_gold == 1.0 and s.exact_at_gold == 1.0
    assert s.ndcg_at_10 == pytest.approx(1.0)
    assert s.acc_at_1 == 0.0 and s.acc_at_3 == 1.0


def test_duplicates_are_dropped_keeping_first_occurrence() -> None:
    # without dedup, "x" twice would push g out of the top 2; with it, g is rank 2
    s = score(["x", "x", "g", "x"], ["g", "h"])
    assert normalize_predictions(["x", "x", "g", "x"]) == ["x", "g"]
    assert s.found_at_gold == 1 and s.recall_at_gold == 0.5
    assert s.mrr == 0.5
    ideal = 1 + 1 / math.log2(3)
    assert s.ndcg_at_10 == pytest.approx((1 / math.log2(3)) / ideal)


def test_a_repeated_gold_counts_once() -> None:
    s = score(["g", "g"], ["g", "h"])
    assert s.found_at_gold == 1 and s.recall_at_gold == 0.5
    assert s.ndcg_at_10 == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_empty_predictions_score_zero() -> None:
    s = score([], ["a", "b"])
    assert s == Scores(0.0, 0.0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    assert miss(["a"]) == score([], ["a"])


def test_gold_beyond_the_cutoff_only_counts_for_rank_metrics() -> None:
    preds = [f"x{i}" for i in range(9)] + ["g"]
    s = score(preds, ["g"])
    assert s.recall_at_gold == 0.0 and s.exact_at_gold == 0.0
    assert s.mrr == pytest.approx(0.1)
    assert s.ndcg_at_10 == pytest.approx(1 / math.log2(11))
    assert (s.acc_at_5, s.acc_at_10) == (0.0, 1.0)


def test_predictions_beyond_ten_are_ignored() -> None:
    preds = [f"x{i}" for i in range(10)] + ["g"]
    s = score(preds, ["g"])
    assert s.mrr == 0.0 and s.ndcg_at_10 == 0.0 and s.acc_at_10 == 0.0
    # after dedup the 11th distinct path is still out, even with repeats before it
    s2 = score(["x0", "x0", *[f"x{i}" for i in range(1, 10)], "g"], ["g"])
    assert s2.mrr == 0.0
    # but repeats that dedup away can bring a gold path back into the first ten
    s3 = score(["x0"] * 20 + ["g"], ["g"])
    assert s3.mrr == 0.5


def test_more_gold_than_k_can_never_be_strictly_accurate() -> None:
    gold = [f"g{i}" for i in range(6)]
    s = score(gold, gold)
    assert s.recall_at_gold == 1.0 and s.exact_at_gold == 1.0
    assert (s.acc_at_1, s.acc_at_3, s.acc_at_5, s.acc_at_10) == (0.0, 0.0, 0.0, 1.0)
    assert s.ndcg_at_10 == pytest.approx(1.0)


def test_ideal_dcg_is_capped_at_ten_hits() -> None:
    gold = [f"g{i}" for i in range(12)]
    s = score(gold, gold)
    assert s.ndcg_at_10 == pytest.approx(1.0)
    assert s.recall_at_gold == pytest.approx(10 / 12)  # only 10 predictions can be made


def test_empty_gold_is_rejected() -> None:
    with pytest.raises(ValueError, match="gold"):
        score(["a"], [])


def test_means_and_groups() -> None:
    a = score(["g"], ["g"])
    b = score([], ["g"])
    agg = mean_scores([a, b])
    assert agg.n == 2 and agg.means["recall_at_gold"] == 0.5 and agg.means["mrr"] == 0.5
    assert set(agg.means) == set(METRICS)
    assert mean_scores([]).n == 0
    items = [("easy", a), ("hard", b), ("easy", b)]
    groups = group_means(items, key=lambda t: t[0], scores=lambda t: t[1])
    assert list(groups) == ["easy", "hard"]
    assert groups["easy"].n == 2 and groups["easy"].means["acc_at_1"] == 0.5
    assert groups["hard"].means["acc_at_1"] == 0.0
    assert [gold_count_bucket(n) for n in (1, 2, 3, 6)] == ["1", "2", "3+", "3+"]
