"""A stored tree's code graph: per-file layers read back from the store, resolved, as a graph.

The code layers are stored per content hash (see :mod:`treeseek.store.code_base`); a tree maps
paths to content hashes. Resolution needs symbols, edges and entrypoints only (no chunk texts),
and module names come from the paths, so the rebuilt :class:`FileCodeIndex` objects carry
``chunks=()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from treeseek.code.conventions import code_content
from treeseek.code.graph import CodeGraph
from treeseek.code.languages import language_for_path
from treeseek.code.model import FileCodeIndex
from treeseek.code.modules import module_name
from treeseek.code.packaging import is_packaging_file, with_packaging_entrypoints
from treeseek.code.resolve import ResolvedTree, resolve_tree
from treeseek.search.caches import Slot, TreeCaches
from treeseek.store.base import FileState, Store
from treeseek.trees.model import TreeInfo


@dataclass(frozen=True, slots=True)
class TreeCodeGraph:
    indexes: dict[str, FileCodeIndex]
    resolved: ResolvedTree
    graph: CodeGraph


def load_tree_indexes(store: Store, tree: str) -> dict[str, FileCodeIndex]:
    """``path -> FileCodeIndex`` (without chunks) of every file of ``tree``; files the code
    index never parsed (empty ones, say) get an empty index, so their paths still count."""
    code = store.code()
    states = store.file_states(tree)
    hashes = {h for s in states.values() if (h := code_content(s.path, s.content_hash))}
    infos = code.code_files(hashes)
    symbols = code.symbols_of(hashes)
    edges = code.edges_of(hashes)  # one read each, not one per file (47k files: 26 -> 9 s)
    entrypoints = code.entrypoints_of(hashes)
    per_hash: dict[str, tuple[FileCodeIndex, str | None]] = {}
    out: dict[str, FileCodeIndex] = {}
    for state in sorted(states.values(), key=lambda s: s.path):
        digest = code_content(state.path, state.content_hash)
        info = infos.get(digest) if digest else None
        if digest is None or info is None:
            # never parsed (empty, skipped): still a path, and an empty __init__.py still
            # makes its directory a package
            language = language_for_path(state.path)
            out[state.path] = FileCodeIndex(language, module_name(state.path, language), ())
            continue
        cached = per_hash.get(digest)
        if cached is None:
            base = FileCodeIndex(
                language=info.language,
                module="",
                chunks=(),
                symbols=tuple(symbols.get(digest, ())),
                edges=tuple(edges.get(digest, ())),
                entrypoints=tuple(entrypoints.get(digest, ())),
                parse_error=info.parse_error,
            )
            per_hash[digest] = cached = (base, info.language)
        base, language = cached
        out[state.path] = FileCodeIndex(
            language=language,
            module=module_name(state.path, language),
            chunks=(),
            symbols=base.symbols,
            edges=base.edges,
            entrypoints=base.entrypoints,
            parse_error=base.parse_error,
        )
    _add_packaging_entrypoints(store, states, out)
    return out


def _add_packaging_entrypoints(
    store: Store, states: Mapping[str, FileState], out: dict[str, FileCodeIndex]
) -> None:
    """The console scripts of the tree's packaging files (:mod:`treeseek.code.packaging`),
    read from their stored text, added to those files' entrypoints."""
    wanted = {
        s.path: s.content_hash
        for s in states.values()
        if s.content_hash and is_packaging_file(s.path)
    }
    if not wanted:
        return
    texts = store.contents(sorted(set(wanted.values())))
    for path, digest in sorted(wanted.items()):
        data = texts.get(digest)
        if data and path in out:
            out[path] = with_packaging_entrypoints(out[path], path, data)


def tree_code_graph(store: Store, tree: str) -> TreeCodeGraph:
    """Load, resolve and build the graph of ``tree``."""
    indexes = load_tree_indexes(store, tree)
    resolved = resolve_tree(indexes)
    return TreeCodeGraph(indexes, resolved, CodeGraph.build(indexes, resolved))


#: trees whose graph a database keeps in its caches (a django graph is ~100 MB in memory).
#: Building a graph reads every file's symbols and edges and resolves them (seconds on a
#: django-sized tree), far more than a query's own work, so a retriever that walks the graph
#: keeps it; re-indexing a tree makes its graph stale (see :mod:`treeseek.search.caches`).
TREE_GRAPH: Slot[TreeCodeGraph] = Slot("graph.tree_graph", trees=2)


def cached_tree_graph(caches: TreeCaches, store: Store, tree: TreeInfo) -> TreeCodeGraph:
    """The graph of ``tree`` from ``caches``, built on first use."""
    return caches.get(TREE_GRAPH, tree, lambda: tree_code_graph(store, tree.name))
