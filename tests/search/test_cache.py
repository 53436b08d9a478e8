"""The block cache method: what enters the window, pinning, trimming, and the segments sent."""

from __future__ import annotations

from treeseek.llm.base import Segment
from treeseek.search.tree.blocks import Block
from treeseek.search.tree.cache import BlockCache, CacheWindow
from treeseek.search.tree.prompts import block_instructions, tree_header


def _block(index: int, ids: list[str], tokens: int) -> Block:
    text = "".join(f"- id: n{i + 1}\n  path: {x}\n  type: file\n" for i, x in enumerate(ids)) + "\n"
    paths = tuple(ids)
    return Block(index, tuple(ids), paths, ("file",) * len(ids), None, text, tokens)


def _cache(budget: int = 1000, **flags: bool) -> BlockCache:
    return BlockCache(
        enabled=flags.get("enabled", True),
        cache_current_block=flags.get("current", True),
        cache_subtree_block=flags.get("subtree", True),
        window=CacheWindow(budget),
    )


def test_top_block_is_pinned_and_frontier_blocks_enter() -> None:
    cache = _cache()
    b1, b2, b3 = _block(0, ["a", "b"], 10), _block(1, ["c", "d"], 10), _block(2, ["e"], 10)
    entered = cache.after_round(0, [b1, b2, b3], ["c"])
    assert entered == ["r0b1", "r0b2"]  # the top block (pinned) and the block holding "c"
    assert [(e.label, e.pinned) for e in cache.window.entries] == [("r0b1", True), ("r0b2", False)]
    # only blocks that hold a next-frontier id enter; b3 never did
    assert cache.after_round(1, [_block(0, ["f"], 10), _block(1, ["g"], 10)], ["g"]) == ["r1b2"]
    assert [e.label for e in cache.window.entries] == ["r0b1", "r0b2", "r1b2"]


def test_a_block_already_in_the_window_is_not_added_twice() -> None:
    cache = _cache()
    b1 = _block(0, ["a"], 10)
    assert cache.after_round(0, [b1], ["a"]) == ["r0b1"]
    assert [e.label for e in cache.window.entries] == ["r0b1"]


def test_oldest_unpinned_entries_are_trimmed_past_the_budget() -> None:
    cache = _cache(budget=100)
    cache.after_round(0, [_block(0, ["top"], 50)], [])
    cache.after_round(1, [_block(0, ["x"], 30)], ["x"])
    cache.after_round(2, [_block(0, ["y"], 15)], ["y"])
    assert [e.label for e in cache.window.entries] == ["r0b1", "r1b1", "r2b1"]  # 95 tokens
    cache.after_round(3, [_block(0, ["z"], 30)], ["z"])  # 125 > 100: drop r1b1 (oldest unpinned)
    assert [e.label for e in cache.window.entries] == ["r0b1", "r2b1", "r3b1"]
    assert cache.window.trimmed == ["r1b1"]
    cache.after_round(4, [_block(0, ["w"], 90)], ["w"])  # only the pinned top block survives
    assert [e.label for e in cache.window.entries] == ["r0b1"]
    assert cache.window.tokens == 50


def test_pinned_block_survives_even_when_alone_over_budget() -> None:
    cache = _cache(budget=10)
    cache.after_round(0, [_block(0, ["top"], 50)], [])
    assert [(e.label, e.pinned) for e in cache.window.entries] == [("r0b1", True)]


def test_segments_order_and_cache_flags() -> None:
    cache = _cache()
    top, nxt = _block(0, ["a"], 10), _block(0, ["b"], 10)
    cache.after_round(0, [top], ["a"])
    current = _block(0, ["c"], 10)
    segs = cache.segments(current, round_index=1)
    assert segs == (
        Segment(tree_header() + top.text, cache=True),
        Segment(current.text, cache=True),
        Segment(block_instructions(), cache=True),
    )
    cache.after_round(1, [nxt], ["b"])
    segs = cache.segments(current, round_index=2)
    assert [s.text for s in segs] == [
        tree_header() + top.text,
        nxt.text,
        current.text,
        block_instructions(),
    ]


def test_current_block_flags_top_level_vs_subtree() -> None:
    block = _block(0, ["a"], 10)
    only_top = _cache(current=True, subtree=False)
    assert only_top.segments(block, 0)[0] == Segment(tree_header() + block.text, cache=True)
    only_top.after_round(0, [block], [])
    later = only_top.segments(_block(0, ["b"], 10), 1)
    assert [s.cache for s in later] == [True, False, False]  # window cached, current not
    only_sub = _cache(current=False, subtree=True)
    assert [s.cache for s in only_sub.segments(block, 0)] == [False, False]
    assert [s.cache for s in only_sub.segments(block, 1)] == [True, True]


def test_disabled_cache_sends_current_block_uncached_and_keeps_no_window() -> None:
    cache = _cache(enabled=False)
    block = _block(0, ["a"], 10)
    assert cache.after_round(0, [block], ["a"]) == []
    assert cache.segments(block, 0) == (
        Segment(tree_header() + block.text, cache=False),
        Segment(block_instructions(), cache=False),
    )


def test_segments_concatenate_to_the_cache_prefix_template() -> None:
    from treeseek.search.tree.prompts import RenderedEntry, render_block, render_cache_prefix

    blocks = [
        [RenderedEntry("n1", "src", "directory"), RenderedEntry("n2", "README.md", "file")],
        [RenderedEntry("n1", "core.py", "file")],
        [RenderedEntry("n1", "x.py", "file"), RenderedEntry("n2", "y", "directory")],
    ]
    prefixes = [None, "src/pkg", "src/pkg/y"]
    made = [
        Block(0, (f"id{i}",), ("p",), ("file",), prefix, render_block(prefix, entries), 5)
        for i, (prefix, entries) in enumerate(zip(prefixes, blocks, strict=True))
    ]
    cache = _cache()
    cache.after_round(0, [made[0]], [])
    cache.after_round(1, [made[1]], ["id1"])
    segments = cache.segments(made[2], round_index=2)
    expected = render_cache_prefix(list(zip(prefixes, blocks, strict=True)))
    assert "".join(s.text for s in segments) == expected
