"""A memoizing read view of one stored tree, shared by the Beam and Block retrievers.

Retrievers ask for the same children repeatedly (collapse, frontier checks, candidate
materialization); the view batches those reads through ``Store.children_many`` and keeps them
for the duration of one query.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from treeseek.errors import RetrievalError
from treeseek.store.base import Store
from treeseek.trees.model import Node


class TreeView:
    def __init__(self, store: Store, tree: str) -> None:
        self.store = store
        self.tree = tree
        self._nodes: dict[str, Node] = {}
        self._children: dict[str, list[Node]] = {}

    def root(self) -> Node:
        node = self.store.root(self.tree)
        self._nodes[node.id] = node
        return node

    def remember(self, nodes: Iterable[Node]) -> None:
        for node in nodes:
            self._nodes[node.id] = node

    def node(self, node_id: str) -> Node:
        found = self._nodes.get(node_id)
        if found is None:
            found = self.store.node(self.tree, node_id)
            self._nodes[node_id] = found
        return found

    def nodes(self, node_ids: Sequence[str]) -> list[Node]:
        missing = [i for i in node_ids if i not in self._nodes]
        if missing:
            self.remember(self.store.nodes(self.tree, missing))
        return [self._nodes[i] for i in node_ids if i in self._nodes]

    def path(self, node_id: str) -> str:
        return self.node(node_id).path

    def children_many(self, nodes: Sequence[Node]) -> dict[str, list[Node]]:
        """Children of each node (stored sibling order); leaves map to ``[]`` without a read."""
        wanted = [n.id for n in nodes if n.has_children and n.id not in self._children]
        if wanted:
            fetched = self.store.children_many(self.tree, wanted)
            for node_id in wanted:
                kids = fetched.get(node_id, [])
                if not kids:
                    self._changed(node_id)
                self._children[node_id] = kids
                self.remember(kids)
        return {n.id: (self._children.get(n.id, []) if n.has_children else []) for n in nodes}

    def _changed(self, node_id: str) -> None:
        """A directory that had children has none: the tree was deleted or re-indexed while
        the query read it. Say so (TreeNotFound when it is gone) instead of searching on as if
        it were empty, which ended in "no files found"."""
        self.store.tree(self.tree)  # TreeNotFound when the tree was deleted
        raise RetrievalError(
            f"tree {self.tree!r} changed while the query read it (node {node_id} lost its "
            "children: re-indexed or being deleted); run the query again"
        )

    def children(self, node: Node) -> list[Node]:
        return self.children_many([node])[node.id]
