"""Algorithms 2-5 (FilesystemBlock), rule by rule, with a scripted navigator."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from scripting import candidate_paths, scripted

from treeseek.database import Database
from treeseek.llm.base import RankRequest
from treeseek.llm.scripted import ScriptedNavigator, ScriptedReply
from treeseek.search.base import QueryOptions, Result
from treeseek.search.strategy import run_query
from treeseek.search.tree.prompts import block_instructions, tree_header
from treeseek.trees.model import TreeInfo

TreeFactory = Callable[[Sequence[str]], TreeInfo]

TREE = [
    "src/app/main.py",
    "src/app/util.py",
    "src/lib/core.py",
    "src/lib/extra/more.py",
    "docs/index.md",
    "tests/test_app.py",
    "README.md",
    "empty/",
]
WIDE = [f"pkg/mod_{i:03d}.py" for i in range(60)] + ["pkg/sub/x.py"]  # root collapses to pkg


def block(
    db: Database, info: TreeInfo, nav: object, query: str = "question", **opts: object
) -> Result:
    options = QueryOptions(strategy="block", **opts)  # type: ignore[arg-type]
    return run_query(db.store, info, query, options, nav)  # type: ignore[arg-type]


def paths(result: Result, ids: Sequence[str]) -> list[str]:
    return [result.trace.paths[i] for i in ids]


def test_turn_zero_shows_top_visible_nodes_of_collapsed_root(
    db: Database, make_tree: TreeFactory
) -> None:
    info = make_tree(["src/pkg/a.py", "src/pkg/sub/b.py"])  # root -> src -> pkg collapses
    nav = scripted(lambda r: (["src/pkg/a.py"], True))
    result = block(db, info, nav, k=1)
    (request,) = nav.requests
    assert candidate_paths(request) == ["src/pkg/sub", "src/pkg/a.py"]
    assert "Current exploration path:\n- src/pkg\n" in request.message
    assert paths(result, result.trace.rounds[0].frontier) == ["src/pkg"]


def test_pick_limit_uses_b_hat_one_when_unset(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(TREE)
    for b, k, expected in ((None, 3, 3), (5, 3, 5), (None, 1, 1)):
        nav = scripted(lambda r: (["README.md"], True))
        block(db, info, nav, k=k, beam_width=b)
        assert nav.requests[0].pick_limit == expected
        assert f"Pick up to {expected} candidates" in nav.requests[0].message


def test_pick_limit_at_least_two_when_the_round_has_several_blocks(
    db: Database, make_tree: TreeFactory
) -> None:
    info = make_tree(WIDE)
    nav = scripted(lambda r: ([], False))
    result = block(db, info, nav, k=1, block_tokens=300)
    assert len(nav.requests) > 1
    assert {r.pick_limit for r in nav.requests} == {2}
    assert result.trace.rounds[0].pick_limit == 2
    single = scripted(lambda r: ([], False))
    block(db, info, single, k=1, block_tokens=100_000)
    assert [r.pick_limit for r in single.requests] == [1]


def test_blocks_partition_the_visible_nodes_within_the_budget(
    db: Database, make_tree: TreeFactory
) -> None:
    info = make_tree(WIDE)
    nav = scripted(lambda r: ([], False))
    result = block(db, info, nav, k=1, block_tokens=300)
    shown = [p for r in nav.requests for p in candidate_paths(r)]
    assert shown == ["pkg/sub", *[f"pkg/mod_{i:03d}.py" for i in range(60)]]
    for bt in result.trace.rounds[0].blocks:
        assert bt.tokens <= 300
    # every block's allowed set is its own aliases n1..nK
    for request in nav.requests:
        assert [c.id for c in request.candidates] == [
            f"n{i + 1}" for i in range(len(request.candidates))
        ]
        allowed = "".join(f"- n{i + 1}\n" for i in range(len(request.candidates)))
        assert f"Selectable ids in the CURRENT BLOCK:\n{allowed}\n" in request.message


def test_path_prefix_rendered_in_the_block(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(WIDE)
    nav = scripted(lambda r: ([], False))
    block(db, info, nav, k=1)
    (request,) = nav.requests
    static = "".join(s.text for s in request.segments)
    assert static.startswith(
        tree_header() + "Path prefix: pkg/\n- id: n1\n  path: sub\n  type: directory\n"
    )
    assert static.endswith(block_instructions())
    assert request.path_prefix == "pkg"


def test_aliases_map_back_and_foreign_ids_are_dropped(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(TREE)

    def reply(request: RankRequest) -> ScriptedReply:
        by_path = {c.path: c.id for c in request.candidates}
        return ScriptedReply([by_path["README.md"], "n99"], True)

    nav = ScriptedNavigator(reply)
    result = block(db, info, nav, k=2)
    bt = result.trace.rounds[0].blocks[0]
    assert paths(result, bt.ranked_ids) == ["README.md"]
    assert "n99" in bt.dropped_ids
    assert bt.aliases[nav.requests[0].candidates[0].id] == bt.candidate_set[0]
    assert [f.path for f in result.files] == ["README.md"]


def test_blocks_are_called_in_parallel_and_merged_in_block_order(
    db: Database, make_tree: TreeFactory
) -> None:
    info = make_tree(WIDE)
    lock = threading.Lock()
    active, peak = [0], [0]

    def script(r: RankRequest) -> tuple[list[str], bool]:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        first = candidate_paths(r)[0]
        # earlier blocks answer later, so completion order is the reverse of block order
        time.sleep(0.05 if first == "pkg/sub" else 0.0)
        with lock:
            active[0] -= 1
        return [candidate_paths(r)[-1]], False

    nav = scripted(script)
    result = block(db, info, nav, k=10, block_tokens=300, max_rounds=1)
    rnd = result.trace.rounds[0]
    assert peak[0] > 1
    lasts = [bt.candidate_set[-1] for bt in rnd.blocks]
    assert rnd.merged_ids == lasts
    assert [bt.ranked_ids for bt in rnd.blocks] == [[i] for i in lasts]


def test_done_is_all_blocks_true(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(WIDE)

    def script(r: RankRequest) -> tuple[list[str], bool]:
        files = [p for p in candidate_paths(r) if p.endswith(".py")]
        return files[:1], candidate_paths(r)[0] != "pkg/sub"  # the first block says not done

    nav = scripted(script)
    result = block(db, info, nav, k=50, block_tokens=300, max_rounds=1)
    assert result.trace.rounds[0].done_before_override is False
    nav = scripted(lambda r: ([p for p in candidate_paths(r) if p.endswith(".py")][:1], True))
    result = block(db, info, nav, k=50, block_tokens=300)
    assert result.trace.rounds[0].done_before_override is True
    assert result.trace.stop_reason == "done" and len(result.trace.rounds) == 1


def test_files_fill_only_the_free_result_slots(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(TREE)

    def script(r: RankRequest) -> tuple[list[str], bool]:
        if "README.md" in candidate_paths(r):
            return ["README.md", "src"], False
        if "src/app" in candidate_paths(r):
            return ["src/app"], False
        return ["src/app/util.py", "src/app/main.py"], False

    nav = scripted(script)
    result = block(db, info, nav, k=2)
    assert [f.path for f in result.files] == ["README.md", "src/app/util.py"]
    last = result.trace.rounds[-1]
    assert paths(result, last.top_candidate_ids) == ["README.md", "src/app/util.py"]
    assert last.done_after_override is True and last.next_frontier == []
    assert result.trace.stop_reason == "k files collected"


def test_directories_truncated_to_beam_width_then_collapsed(
    db: Database, make_tree: TreeFactory
) -> None:
    info = make_tree(["a/x.py", "b/only/deeper/y.py", "c/z.py", "d/w.py"])

    def script(r: RankRequest) -> tuple[list[str], bool]:
        if "a" in candidate_paths(r):
            return ["b", "c", "a"], False
        return [], False

    nav = scripted(script)
    result = block(db, info, nav, k=3, beam_width=2)
    first = result.trace.rounds[0]
    # D[1:b] = [b, c]; b -> b/only -> b/only/deeper collapses
    assert paths(result, first.next_frontier) == ["b/only/deeper", "c"]
    assert candidate_paths(nav.requests[1]) == ["b/only/deeper/y.py", "c/z.py"]
    assert "Current exploration path:\n- b/only/deeper\n- c\n" in nav.requests[1].message


def test_done_overridden_while_the_frontier_has_children(
    db: Database, make_tree: TreeFactory
) -> None:
    info = make_tree(TREE)

    def script(r: RankRequest) -> tuple[list[str], bool]:
        if "README.md" in candidate_paths(r):
            return ["src", "README.md"], True
        if "src/app" in candidate_paths(r):
            return ["src/app"], True
        return ["src/app/main.py"], True

    nav = scripted(script)
    result = block(db, info, nav, k=5)
    overrides = [(r.done_before_override, r.done_after_override) for r in result.trace.rounds]
    assert overrides == [(True, False), (True, False), (True, True)]
    assert result.trace.stop_reason == "done"
    assert [f.path for f in result.files] == ["README.md", "src/app/main.py"]


def test_stops_when_no_frontier_node_has_children(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(TREE)
    nav = scripted(lambda r: (["empty"], False))
    result = block(db, info, nav, k=5)
    assert len(nav.requests) == 1
    assert result.trace.stop_reason == "no frontier node has children"


def test_max_rounds(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(["a/b1/c1/d.py", "a/b2/c2/e.py", "f.py"])
    nav = scripted(lambda r: ([p for p in candidate_paths(r) if not p.endswith(".py")], False))
    result = block(db, info, nav, k=1, max_rounds=2)
    assert len(result.trace.rounds) == 2 and result.trace.stop_reason == "max rounds reached"


def test_ranker_interleaves_block_heads(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(WIDE)
    # each block returns its entries in stored order; bm25 moves the block holding the
    # mentioned module ahead, without reordering inside any block
    nav = scripted(lambda r: (candidate_paths(r)[-2:], False))
    result = block(
        db,
        info,
        nav,
        query="crash in mod_059",
        k=100,
        block_tokens=300,
        max_rounds=1,
        ranker="bm25",
    )
    rnd = result.trace.rounds[0]
    assert rnd.ranker == "bm25"
    holder = next(bt for bt in rnd.blocks if "pkg/mod_059.py" in paths(result, bt.ranked_ids))
    assert holder.index > 0  # not the first block: without the ranker it would come later
    assert rnd.ordered_ids[0] == holder.ranked_ids[0]
    assert rnd.merged_ids[0] != holder.ranked_ids[0]
    for bt in rnd.blocks:  # block-internal order unchanged
        assert [i for i in rnd.ordered_ids if i in bt.ranked_ids] == bt.ranked_ids
    assert sorted(rnd.ordered_ids) == sorted(rnd.merged_ids)
    declined = block(
        db,
        info,
        scripted(lambda r: (candidate_paths(r)[-2:], False)),
        query="the",
        k=100,
        block_tokens=300,
        max_rounds=1,
        ranker="bm25",
    )
    assert declined.trace.rounds[0].ranker is None
    assert declined.trace.rounds[0].ordered_ids == declined.trace.rounds[0].merged_ids


def test_cache_window_travels_in_later_rounds(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(TREE)

    def script(r: RankRequest) -> tuple[list[str], bool]:
        if "README.md" in candidate_paths(r):
            return ["src"], False
        if "src/app" in candidate_paths(r):
            return ["src/lib"], False
        return ["src/lib/core.py"], True

    nav = scripted(script)
    result = block(db, info, nav, k=1)
    first, second, third = nav.requests
    top_block = first.segments[0].text  # header + the top-level block
    assert [s.cache for s in first.segments] == [True, True]
    assert second.segments[0].text == top_block  # pinned top block leads every later call
    assert third.segments[0].text == top_block
    assert third.segments[1].text == second.segments[1].text  # the block that held src/lib
    assert [r.cache_window for r in result.trace.rounds] == [
        ["r0b1"],
        ["r0b1", "r1b1"],
        ["r0b1", "r1b1"],
    ]
    # without caching: the same navigation, no window, nothing marked cacheable
    off = scripted(script)
    plain = block(db, info, off, k=1, cache=False)
    assert [f.path for f in plain.files] == [f.path for f in result.files]
    assert all(not s.cache for r in off.requests for s in r.segments)
    assert [s.text for s in off.requests[2].segments] == [
        tree_header() + third.segments[-2].text,  # the current block only, no window
        block_instructions(),
    ]


def test_round_trace_vocabulary(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(TREE)
    nav = scripted(
        lambda r: (
            (["src", "README.md"], False)
            if "README.md" in candidate_paths(r)
            else (["src/app/main.py"], True)
        )
    )
    result = block(db, info, nav, k=3)
    rnd = result.trace.rounds[0]
    assert paths(result, rnd.blocks[0].candidate_set) == [
        "docs",
        "empty",
        "src",
        "tests",
        "README.md",
    ]
    assert paths(result, rnd.blocks[0].ranked_ids) == ["src", "README.md"]
    assert paths(result, rnd.merged_ids) == ["src", "README.md"]
    assert paths(result, rnd.top_candidate_ids) == ["README.md"]
    assert paths(result, rnd.next_frontier) == ["src"]
    assert rnd.pick_limit == 3 and rnd.visible_count == 5
    assert rnd.overhead_s >= 0.0 and rnd.usage.calls == 1
    assert result.usage.calls == 2 and result.trace.usage == result.usage
    data = result.to_dict()
    assert data["strategy"] == "block" and data["files"][0]["path"] == "README.md"


def test_cached_and_uncached_adapters_get_the_same_payload(
    db: Database, make_tree: TreeFactory
) -> None:
    info = make_tree(TREE)

    def script(r: RankRequest) -> ScriptedReply:
        picks = {"README.md": ["src"], "src/app": ["src/app"]}
        for marker, chosen in picks.items():
            if marker in candidate_paths(r):
                return ScriptedReply([c.id for c in r.candidates if c.path in chosen], False)
        return ScriptedReply([r.candidates[0].id], True)

    caching = ScriptedNavigator(script, supports_cache=True)
    plain = ScriptedNavigator(script, supports_cache=False)
    a = block(db, info, caching, k=1)
    b = block(db, info, plain, k=1)
    assert [f.path for f in a.files] == [f.path for f in b.files]
    assert caching.requests == plain.requests  # segments, flags, message: all identical
    # the segments of a later call concatenate to the cache-prefix template's rendering
    last = caching.requests[-1]
    text = "".join(s.text for s in last.segments)
    assert text.startswith(tree_header()) and text.endswith(block_instructions())
    assert text.count("- id: n1\n") == len(last.segments) - 1  # one block per segment


def test_a_path_relative_to_the_block_prefix_resolves(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(WIDE)
    # the LLM saw "Path prefix: pkg/" and "path: mod_007.py", and answers with that path
    nav = ScriptedNavigator(lambda r: ScriptedReply(["mod_007.py"], True))
    result = block(db, info, nav, k=1)
    assert [f.path for f in result.files] == ["pkg/mod_007.py"]
    assert nav.requests[0].path_prefix == "pkg"


def test_top_layer_tokens_widens_turn_zero_breadth_first(
    db: Database, make_tree: TreeFactory
) -> None:
    info = make_tree(TREE)

    def script(r: RankRequest) -> tuple[list[str], bool]:
        if "README.md" in candidate_paths(r):
            return ["src/lib"], False  # a second-layer directory, chosen at turn 0
        return ["src/lib/core.py"], True

    nav = scripted(script)
    result = block(db, info, nav, k=1, top_layer_tokens=10_000)
    first, second = nav.requests
    top = ["docs", "empty", "src", "tests", "README.md"]
    layer2 = ["docs/index.md", "src/app", "src/lib", "tests/test_app.py"]
    layer3 = ["src/app/main.py", "src/app/util.py", "src/lib/extra", "src/lib/core.py"]
    assert candidate_paths(first) == [*top, *layer2, *layer3, "src/lib/extra/more.py"]
    assert candidate_paths(second) == ["src/lib/extra", "src/lib/core.py"]  # frontier: src/lib
    assert [f.path for f in result.files] == ["src/lib/core.py"]
    assert result.trace.params["top_layer_tokens"] == 10_000
    assert second.segments[0].text == first.segments[0].text  # the wide top block is pinned
    # a budget the top layer alone exceeds: exactly the spec's top layer
    narrow = scripted(script)
    block(db, info, narrow, k=1, top_layer_tokens=1)
    assert candidate_paths(narrow.requests[0]) == top
    # the same navigation with caching off: same results
    off = scripted(script)
    plain = block(db, info, off, k=1, top_layer_tokens=10_000, cache=False)
    assert [f.path for f in plain.files] == [f.path for f in result.files]
    assert candidate_paths(off.requests[0]) == candidate_paths(first)
