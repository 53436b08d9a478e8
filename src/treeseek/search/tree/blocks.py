"""Block candidates (spec Algorithm 3): collapse, visible nodes, token-bounded packing, rendering.

A block is rendered with block-local aliases ``n1..nK`` (so its text does not depend on node ids
and stays byte-identical, hence cacheable, across queries), each entry showing only id, path and
type. When every entry shares a directory prefix and rendering it once is shorter (in tokens),
the block starts with ``Path prefix: <prefix>/`` and shows paths relative to it.

Packing is greedy in stored order: an entry joins the current block while the block's rendered
size stays within the budget ``tau``; the finished block is counted exactly and, if it still
overflows (tokenization is not perfectly additive), trailing entries move to the next block. A
block exceeds ``tau`` only when a single entry does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from treeseek.llm.base import Candidate
from treeseek.search.tree.prompts import (
    FILESYSTEM_PROMPTS,
    PromptSet,
    RenderedEntry,
    render_block,
    render_entry,
)
from treeseek.search.treeview import TreeView
from treeseek.trees.model import Node

TokenCounter = Callable[[str], int]


def unique(ids: Sequence[str]) -> list[str]:
    """Order-preserving de-duplication."""
    return list(dict.fromkeys(ids))


def collapse_single_child_dirs(view: TreeView, nodes: Sequence[Node]) -> list[Node]:
    """COLLAPSESINGLECHILDDIRS: replace each directory whose only child is a directory by the
    end of that chain (``a`` -> ``a/b`` -> ``a/b/c`` while each has exactly one directory child),
    keeping order and dropping duplicates."""
    out: dict[str, Node] = {}
    for node in nodes:
        end = node
        while end.is_dir and end.child_count == 1:
            only = view.children(end)[0]
            if not only.is_dir:
                break
            end = only
        out.setdefault(end.id, end)
    return list(out.values())


def top_visible_nodes(view: TreeView, first: Node) -> list[Node]:
    """TOPVISIBLENODES(T, F_1): the top visible layer at turn 0, i.e. the children of the
    collapsed root (so a repository wrapped in ``src/pkg/`` shows ``pkg``'s entries)."""
    return view.children(first)


def top_visible_layers(
    view: TreeView, first: Node, cost: Callable[[int, Node], int], budget: int
) -> list[Node]:
    """TOPVISIBLENODES widened to a token budget (option ``top_layer_tokens``).

    The top layer (:func:`top_visible_nodes`) always, whole; then the next layers breadth-first
    in stored order while the running cost (``cost(position, node)``: the entry's tokens at
    that position in the block) stays within ``budget``, stopping at the first entry that does
    not fit. So the result is a breadth-first prefix of the tree below ``first``. Why: on
    narrow repositories the top layer renders to a few hundred tokens, shorter than the
    smallest prefix a provider caches (1,024 tokens), so the pinned top block never earns a
    cache read; a top block packed to ~1,200 tokens does, and shows the model the repository's
    layout two or three levels deep at turn 0.
    """
    out = list(top_visible_nodes(view, first))
    used = sum(cost(i, n) for i, n in enumerate(out))
    layer = out
    while layer:
        kids = view.children_many(layer)
        deeper = [child for node in layer for child in kids[node.id]]
        for child in deeper:
            used += cost(len(out), child)
            if used > budget:
                return out
            out.append(child)
        layer = deeper
    return out


def expand_frontier(view: TreeView, frontier: Sequence[Node]) -> list[Node]:
    """The union of the frontier's direct children, in frontier then sibling order."""
    kids = view.children_many(frontier)
    seen: dict[str, Node] = {}
    for node in frontier:
        for child in kids[node.id]:
            seen.setdefault(child.id, child)
    return list(seen.values())


@dataclass(frozen=True, slots=True)
class Block:
    """One token-bounded block of candidates, rendered once."""

    index: int  # 0-based position among the round's blocks
    node_ids: tuple[str, ...]  # C_i: the block's allowed real node ids, in rendered order
    paths: tuple[str, ...]  # full repo-relative paths, same order
    types: tuple[str, ...]
    prefix: str | None  # shared directory prefix rendered once, or None
    text: str  # the rendered block (ends with a blank separator line)
    tokens: int
    #: per node, whether it has children (see :attr:`~treeseek.llm.base.Candidate.expandable`)
    expandable: tuple[bool, ...] = ()

    @property
    def aliases(self) -> tuple[str, ...]:
        return tuple(alias(i) for i in range(len(self.node_ids)))

    def alias_to_id(self) -> dict[str, str]:
        return dict(zip(self.aliases, self.node_ids, strict=True))

    def candidates(self) -> tuple[Candidate, ...]:
        """The allowed set as the navigator sees it: aliases with full paths."""
        expandable = self.expandable or (False,) * len(self.node_ids)
        return tuple(
            Candidate(a, p, t, e)
            for a, p, t, e in zip(self.aliases, self.paths, self.types, expandable, strict=True)
        )


def alias(position: int) -> str:
    return f"n{position + 1}"


def _common_dir_prefix(paths: Sequence[str]) -> str | None:
    """Longest directory path that every path lies strictly under, or None."""
    if not paths:
        return None
    first = paths[0].split("/")[:-1]
    depth = len(first)
    for path in paths[1:]:
        parts = path.split("/")[:-1]
        depth = min(depth, len(parts))
        for i in range(depth):
            if parts[i] != first[i]:
                depth = i
                break
        if depth == 0:
            return None
    return "/".join(first[:depth]) if depth else None


def _relative(path: str, prefix: str | None) -> str:
    return path[len(prefix) + 1 :] if prefix else path


class BlockPacker:
    """Packs nodes into token-bounded blocks and renders them, memoizing token counts."""

    def __init__(
        self, count_tokens: TokenCounter, budget: int, prompts: PromptSet = FILESYSTEM_PROMPTS
    ) -> None:
        self.prompts = prompts
        if budget < 1:
            raise ValueError("block token budget must be positive")
        self.count = count_tokens
        self.budget = budget
        self._entry_tokens = lru_cache(maxsize=200_000)(self._entry_tokens_uncached)
        self._prefix_tokens = lru_cache(maxsize=20_000)(self._prefix_tokens_uncached)

    def _entry_tokens_uncached(self, position: int, path: str, node_type: str) -> int:
        return self.count(render_entry(alias(position), path, node_type, self.prompts))

    def entry_cost(self, position: int, node: Node) -> int:
        """Tokens of ``node``'s entry rendered at ``position`` in a block (no Path prefix)."""
        return self._entry_tokens(position, node.path, node.type.value)

    def _prefix_tokens_uncached(self, prefix: str) -> int:
        return self.count(render_block(prefix, [], self.prompts))

    def render(self, index: int, nodes: Sequence[Node]) -> Block:
        """Render one block, using ``Path prefix`` only when it makes the block shorter."""
        paths = tuple(n.path for n in nodes)
        types = tuple(n.type.value for n in nodes)
        pairs = list(enumerate(zip(paths, types, strict=True)))
        plain_text = render_block(
            None, [RenderedEntry(alias(i), p, t) for i, (p, t) in pairs], self.prompts
        )
        text, tokens, used = plain_text, self.count(plain_text), None
        prefix = _common_dir_prefix(paths)
        if prefix is not None:
            short_text = render_block(
                prefix,
                [RenderedEntry(alias(i), _relative(p, prefix), t) for i, (p, t) in pairs],
                self.prompts,
            )
            short_tokens = self.count(short_text)
            if short_tokens < tokens:
                text, tokens, used = short_text, short_tokens, prefix
        expandable = tuple(n.has_children for n in nodes)
        return Block(
            index, tuple(n.id for n in nodes), paths, types, used, text, tokens, expandable
        )

    def pack(self, nodes: Sequence[Node]) -> list[Block]:
        """PACKINTOBLOCKS(X, tau): consecutive runs of ``nodes`` in order, each within budget."""
        groups: list[list[Node]] = []
        run = _Run(self)
        for node in nodes:
            if run.nodes and run.cost_with(node) > self.budget:
                groups.append(run.nodes)
                run = _Run(self)
            run.add(node)
        if run.nodes:
            groups.append(run.nodes)
        blocks: list[Block] = []
        while groups:
            group = groups.pop(0)
            block = self.render(len(blocks), group)
            carry: list[Node] = []
            while block.tokens > self.budget and len(group) > 1:
                carry.insert(0, group.pop())
                block = self.render(len(blocks), group)
            blocks.append(block)
            if carry:
                groups.insert(0, carry)
        return blocks


class _Run:
    """The block being packed, with incremental size estimates of both renderings."""

    def __init__(self, packer: BlockPacker) -> None:
        self.packer = packer
        self.nodes: list[Node] = []
        self.plain = 0
        self.prefix: str | None = None
        self.short = 0  # entry tokens relative to self.prefix

    def _next_prefix(self, node: Node) -> str | None:
        if not self.nodes:
            return _common_dir_prefix([node.path])
        if self.prefix is None:
            return None
        return _common_dir_prefix([self.prefix + "/x", node.path])

    def _short_sum(self, prefix: str, nodes: Sequence[Node]) -> int:
        entry = self.packer._entry_tokens
        return sum(entry(i, _relative(n.path, prefix), n.type.value) for i, n in enumerate(nodes))

    def cost_with(self, node: Node) -> int:
        entry = self.packer._entry_tokens
        position = len(self.nodes)
        plain = self.plain + entry(position, node.path, node.type.value)
        prefix = self._next_prefix(node)
        if prefix is None:
            return plain
        short = self.short if prefix == self.prefix else self._short_sum(prefix, self.nodes)
        short += entry(position, _relative(node.path, prefix), node.type.value)
        return min(plain, self.packer._prefix_tokens(prefix) + short)

    def add(self, node: Node) -> None:
        entry = self.packer._entry_tokens
        position = len(self.nodes)
        prefix = self._next_prefix(node)
        if prefix is not None and prefix != self.prefix:
            self.short = self._short_sum(prefix, self.nodes)
        if prefix is not None:
            self.short += entry(position, _relative(node.path, prefix), node.type.value)
        self.prefix = prefix
        self.plain += entry(position, node.path, node.type.value)
        self.nodes.append(node)
