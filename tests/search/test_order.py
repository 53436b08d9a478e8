"""Merge and ordering invariants (Algorithms 4-5), as properties."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from treeseek.rank.paths import BM25PathScorer
from treeseek.search.tree.order import (
    constrained_path_order,
    flatten,
    unique_preserve_block_order,
)

ids = st.sampled_from([f"i{n}" for n in range(12)])
groups_st = st.lists(st.lists(ids, max_size=6), max_size=5)
scores_st = st.dictionaries(
    st.sampled_from([f"i{n}" for n in range(12)]),
    st.floats(min_value=-5, max_value=5, allow_nan=False),
)


def _is_subsequence(short: Sequence[str], long: Sequence[str]) -> bool:
    it = iter(long)
    return all(x in it for x in short)


@given(groups_st)
def test_unique_merge_keeps_first_occurrence_and_block_order(groups: list[list[str]]) -> None:
    uniq = unique_preserve_block_order(groups)
    merged = flatten(uniq)
    assert len(merged) == len(set(merged))
    assert merged == list(dict.fromkeys(flatten(groups)))
    for original, kept in zip(groups, uniq, strict=True):
        assert _is_subsequence(kept, original)


@given(groups_st, scores_st)
def test_constrained_order_is_a_permutation_preserving_each_group(
    groups: list[list[str]], table: dict[str, float]
) -> None:
    uniq = unique_preserve_block_order(groups)
    merged = flatten(uniq)
    paths = {i: f"p/{i}.py" for i in merged}

    def score(query: str, ps: Sequence[str]) -> list[float]:
        return [table.get(p[2:-3], 0.0) for p in ps]

    out = constrained_path_order(uniq, "q", paths, score)
    assert sorted(out.ids) == sorted(merged)
    for group in uniq:
        assert _is_subsequence(group, out.ids)  # relative order inside each L_i unchanged
    # each step takes the best head: the chosen id scores >= every other head at that time
    heads = [list(g) for g in uniq]
    for chosen in out.ids:
        live = [g for g in heads if g]
        best = max(table.get(g[0], 0.0) for g in live)
        assert table.get(chosen, 0.0) == best
        owner = next(g for g in live if g[0] == chosen)
        owner.pop(0)


@given(groups_st)
def test_no_scorer_or_declining_scorer_is_flatten(groups: list[list[str]]) -> None:
    uniq = unique_preserve_block_order(groups)
    merged = flatten(uniq)
    paths = {i: i for i in merged}
    assert constrained_path_order(uniq, "q", paths, None).ids == merged
    declined = constrained_path_order(uniq, "q", paths, lambda q, ps: None)
    assert declined.ids == merged and not declined.ranked


def test_equal_scores_keep_block_order() -> None:
    groups = [["a", "b"], ["c"], ["d", "e"]]
    out = constrained_path_order(
        groups, "q", {i: i for i in "abcde"}, lambda q, ps: [1.0] * len(ps)
    )
    assert out.ids == ["a", "b", "c", "d", "e"] and out.ranked


def test_heads_compete_across_blocks_with_bm25() -> None:
    # block 1 ranked "docs" above "parser.py"; block 2 holds "lexer.py". BM25 may move block 2's
    # head before block 1's, but never "parser.py" before "docs".
    groups = [["docs", "parser"], ["lexer"]]
    paths = {"docs": "docs", "parser": "src/parser.py", "lexer": "src/lexer.py"}
    out = constrained_path_order(groups, "lexer crashes", paths, BM25PathScorer().score)
    assert out.ranked
    assert out.ids == ["lexer", "docs", "parser"]
