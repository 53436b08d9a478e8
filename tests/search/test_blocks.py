"""Algorithm 3 pieces: collapse, visible nodes, token-bounded packing, Path prefix rendering."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from treeseek.llm.tokens import count_tokens
from treeseek.search.tree.blocks import (
    BlockPacker,
    collapse_single_child_dirs,
    expand_frontier,
    top_visible_layers,
    top_visible_nodes,
)
from treeseek.search.tree.prompts import render_entry
from treeseek.search.treeview import TreeView
from treeseek.trees.model import Node, TreeInfo

TreeFactory = Callable[[Sequence[str]], TreeInfo]
ViewOf = Callable[[TreeInfo], TreeView]


def test_collapse_follows_single_child_directory_chains(
    make_tree: TreeFactory, view_of: ViewOf
) -> None:
    view = view_of(make_tree(["a/b/c/x.py", "a/b/c/y.py", "d/e.py", "f/g/h.py", "f/i.py"]))
    root = view.root()
    kids = {n.path: n for n in view.children(root)}
    collapsed = collapse_single_child_dirs(view, [kids["a"], kids["d"], kids["f"]])
    # a -> a/b -> a/b/c (each the only child and a directory); d's only child is a file; f has two
    assert [n.path for n in collapsed] == ["a/b/c", "d", "f"]


def test_collapse_of_root_and_duplicates(make_tree: TreeFactory, view_of: ViewOf) -> None:
    view = view_of(make_tree(["src/pkg/a.py", "src/pkg/b.py"]))
    root = view.root()
    assert [n.path for n in collapse_single_child_dirs(view, [root])] == ["src/pkg"]
    src = view.children(root)[0]
    assert [n.path for n in collapse_single_child_dirs(view, [root, src])] == ["src/pkg"]


def test_top_visible_nodes_are_children_of_collapsed_root(
    make_tree: TreeFactory, view_of: ViewOf
) -> None:
    view = view_of(make_tree(["src/pkg/a.py", "src/pkg/sub/b.py"]))
    first = collapse_single_child_dirs(view, [view.root()])[0]
    assert [n.path for n in top_visible_nodes(view, first)] == ["src/pkg/sub", "src/pkg/a.py"]


def test_expand_frontier_is_union_in_frontier_then_sibling_order(
    make_tree: TreeFactory, view_of: ViewOf
) -> None:
    view = view_of(make_tree(["b/z.py", "b/a.py", "a/y.py", "a/x/q.py"]))
    kids = {n.path: n for n in view.children(view.root())}
    nodes = expand_frontier(view, [kids["b"], kids["a"], kids["b"]])
    assert [n.path for n in nodes] == ["b/a.py", "b/z.py", "a/x", "a/y.py"]


def test_path_prefix_only_when_shorter(make_tree: TreeFactory, view_of: ViewOf) -> None:
    deep = [f"very/long/shared/directory/name/file_{i}.py" for i in range(6)]
    view = view_of(make_tree([*deep, "x.py"]))
    packer = BlockPacker(count_tokens, 10_000)
    nodes = view.nodes(
        [n.id for n in view.store.subtree(view.tree, "very/long/shared/directory/name")][1:]
    )
    block = packer.render(0, nodes)
    assert block.prefix == "very/long/shared/directory/name"
    assert block.text.startswith("Path prefix: very/long/shared/directory/name/\n- id: n1\n")
    assert "  path: file_0.py\n" in block.text
    assert block.tokens == count_tokens(block.text)
    # a single short entry: the prefix line costs more than it saves
    single = packer.render(0, nodes[:1])
    assert single.prefix is None
    assert single.text == (
        "- id: n1\n  path: very/long/shared/directory/name/file_0.py\n  type: file\n\n"
    )


def test_no_prefix_when_entries_do_not_share_a_directory(
    make_tree: TreeFactory, view_of: ViewOf
) -> None:
    view = view_of(make_tree(["a/x.py", "b/y.py"]))
    root = view.root()
    nodes = expand_frontier(view, view.children(root))
    block = BlockPacker(count_tokens, 10_000).render(0, nodes)
    assert block.prefix is None
    assert "path: a/x.py" in block.text and "path: b/y.py" in block.text


def test_aliases_are_block_local_and_map_back(make_tree: TreeFactory, view_of: ViewOf) -> None:
    view = view_of(make_tree([f"d/f{i:02d}.py" for i in range(30)]))
    d = view.children(view.root())[0]
    blocks = BlockPacker(count_tokens, 120).pack(view.children(d))
    assert len(blocks) > 1
    for block in blocks:
        assert block.aliases == tuple(f"n{i + 1}" for i in range(len(block.node_ids)))
        mapping = block.alias_to_id()
        assert [mapping[c.id] for c in block.candidates()] == list(block.node_ids)
        assert [c.path for c in block.candidates()] == list(block.paths)  # full paths
    # the blocks partition X in order
    flat = [i for b in blocks for i in b.node_ids]
    assert flat == [n.id for n in view.children(d)]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    names=st.lists(
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=40),
        min_size=1,
        max_size=60,
        unique=True,
    ),
    budget=st.integers(min_value=5, max_value=400),
)
def test_packing_respects_the_budget(
    make_tree: TreeFactory, view_of: ViewOf, names: list[str], budget: int
) -> None:
    view = view_of(make_tree([f"pkg/sub/{n}.py" for n in names]))
    sub = collapse_single_child_dirs(view, [view.root()])[0]
    nodes = view.children(sub)
    packer = BlockPacker(count_tokens, budget)
    blocks = packer.pack(nodes)
    assert [i for b in blocks for i in b.node_ids] == [n.id for n in nodes]
    for block in blocks:
        assert block.tokens == count_tokens(block.text)
        # no block exceeds tau unless it holds a single candidate
        assert block.tokens <= budget or len(block.node_ids) == 1
    # greedy: a block could not have taken the next block's first entry
    for left, right in itertools.pairwise(blocks):
        ids = [*left.node_ids, right.node_ids[0]]
        assert packer.render(0, view.nodes(ids)).tokens > budget


def test_top_visible_layers_add_deeper_layers_breadth_first_within_the_budget(
    make_tree: TreeFactory, view_of: ViewOf
) -> None:
    view = view_of(make_tree(["a/x.py", "a/y/z.py", "b/w.py", "README.md"]))
    first = collapse_single_child_dirs(view, [view.root()])[0]

    def cost(position: int, node: Node) -> int:
        return 10

    def layers(budget: int) -> list[str]:
        return [n.path for n in top_visible_layers(view, first, cost, budget)]

    top = [n.path for n in top_visible_nodes(view, first)]
    assert top == ["a", "b", "README.md"]
    second = ["a/y", "a/x.py", "b/w.py"]  # children of a, then of b (stored order)
    assert layers(1000) == [*top, *second, "a/y/z.py"]  # everything, breadth-first
    assert layers(50) == [*top, *second[:2]]  # stops at the first entry that does not fit
    assert layers(59) == [*top, *second[:2]]
    assert layers(60) == [*top, *second]
    assert layers(5) == top  # the top layer is always shown whole, even over the budget


def test_entry_cost_is_the_rendered_entry_at_its_position(
    make_tree: TreeFactory, view_of: ViewOf
) -> None:
    view = view_of(make_tree(["src/a.py", "b.py"]))
    node = view.children(view.root())[0]
    packer = BlockPacker(count_tokens, 4000)
    for position in (0, 9, 99):
        expected = count_tokens(render_entry(f"n{position + 1}", node.path, node.type.value))
        assert packer.entry_cost(position, node) == expected
