"""A tree view of a document tree as the Beam and Block retrievers should see it: a section
is shown by its title path (``guide.md/Install/Setup``, a ``/`` inside a title shown as
``∕``), and a document node, whose content is its outline, is a folder to drill into, never a
result."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from treeseek.search.document.corpus import SectionCorpus
from treeseek.search.treeview import TreeView
from treeseek.store.base import Store
from treeseek.trees.model import ContentStatus, Node, NodeType


class DocumentView(TreeView):
    def __init__(self, store: Store, tree: str, corpus: SectionCorpus) -> None:
        super().__init__(store, tree)
        self.corpus = corpus

    def shown(self, node: Node) -> Node:
        if node.path in self.corpus.outlines:
            return replace(node, type=NodeType.DIRECTORY, content_status=ContentStatus.NONE)
        section = self.corpus.sections.get(node.path)
        if section is None:
            return node
        titles = [t.replace("/", "\u2215") for t in section.title_path[1:]]
        return replace(node, path="/".join([section.info.document, *titles]))

    def root(self) -> Node:
        node = self.shown(self.store.root(self.tree))
        self._nodes[node.id] = node
        return node

    def remember(self, nodes: Iterable[Node]) -> None:
        for node in nodes:
            self._nodes[node.id] = self.shown(node)

    def children_many(self, nodes: Sequence[Node]) -> dict[str, list[Node]]:
        wanted = [n.id for n in nodes if n.has_children and n.id not in self._children]
        if wanted:
            fetched = self.store.children_many(self.tree, wanted)
            for node_id in wanted:
                kids = [self.shown(k) for k in fetched.get(node_id, [])]
                self._children[node_id] = kids
                for k in kids:
                    self._nodes[k.id] = k
        return {n.id: (self._children.get(n.id, []) if n.has_children else []) for n in nodes}
