"""Block invariants over random trees and random (but valid) navigator answers."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from treeseek.database import Database
from treeseek.llm.base import RankRequest
from treeseek.llm.scripted import ScriptedNavigator, ScriptedReply
from treeseek.search.base import QueryOptions
from treeseek.search.strategy import run_query
from treeseek.trees.model import TreeInfo

TreeFactory = Callable[[Sequence[str]], TreeInfo]

segment = st.sampled_from(["a", "b", "c", "d", "src", "lib"])
paths_st = st.lists(
    st.builds(
        lambda dirs, name: "/".join([*dirs, name]),
        st.lists(segment, max_size=3),
        st.sampled_from(["x.py", "y.py", "z.md", "w.txt"]),
    ),
    min_size=1,
    max_size=40,
    unique=True,
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    paths=paths_st,
    seed=st.integers(0, 10_000),
    k=st.integers(1, 5),
    b=st.one_of(st.none(), st.integers(1, 3)),
    tau=st.sampled_from([40, 80, 4000]),
    ranker=st.sampled_from([None, "bm25"]),
)
def test_block_invariants(
    db: Database,
    make_tree: TreeFactory,
    paths: list[str],
    seed: int,
    k: int,
    b: int | None,
    tau: int,
    ranker: str | None,
) -> None:
    info = make_tree(paths)
    rng = random.Random(seed)

    def answer(request: RankRequest) -> ScriptedReply:
        ids = [c.id for c in request.candidates]
        rng.shuffle(ids)
        return ScriptedReply(ids[: rng.randint(0, len(ids))], rng.random() < 0.5)

    nav = ScriptedNavigator(answer)
    options = QueryOptions(strategy="block", k=k, beam_width=b, block_tokens=tau, ranker=ranker)
    result = run_query(db.store, info, "x.py in src", options, nav)
    trace = result.trace
    b_hat = b or 1
    files = [f.path for f in result.files]
    assert len(files) <= k and len(set(files)) == len(files)
    assert all(p in paths for p in files)  # only files, and only real ones
    previous: list[str] = []
    for rnd in trace.rounds:
        shown = [i for bt in rnd.blocks for i in bt.candidate_set]
        assert len(shown) == len(set(shown)) == rnd.visible_count  # blocks partition X
        assert rnd.pick_limit == (max(b_hat, k) if len(rnd.blocks) == 1 else max(b_hat, k, 2))
        for bt in rnd.blocks:
            assert set(bt.ranked_ids) <= set(bt.candidate_set)
            assert len(bt.ranked_ids) <= rnd.pick_limit
            assert bt.tokens <= tau or len(bt.candidate_set) == 1
            assert [i for i in rnd.ordered_ids if i in bt.ranked_ids] == bt.ranked_ids
        assert rnd.merged_ids == [i for bt in rnd.blocks for i in bt.ranked_ids]
        assert sorted(rnd.ordered_ids) == sorted(rnd.merged_ids)
        assert rnd.top_candidate_ids[: len(previous)] == previous  # A only grows
        previous = rnd.top_candidate_ids
        assert len(rnd.next_frontier) <= b_hat
        assert rnd.done_before_override == all(bt.done for bt in rnd.blocks)
        if rnd.done_after_override and len(rnd.top_candidate_ids) < k:
            assert rnd.done_before_override
    assert [result.trace.paths[i] for i in previous] == files
    assert len(nav.requests) == sum(len(rnd.blocks) for rnd in trace.rounds)  # one call a block
