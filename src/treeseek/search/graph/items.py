"""Layer items in the reference's response shape: ``{source, content, layer, title, metadata,
score}`` (plus line spans, which the reference stores but does not return).

The flat retriever picks the files; this module explains them item by item from the code
layers of those files: C3 entrypoints, C1 symbols, C2 edges and C0 chunks, ordered as the
reference orders them: (lexical rank, test penalty, layer rank C3 > C1 > C2 > C0, score).

C2 items carry the cross-file resolver's answer per edge (``resolution``: ``resolved`` or
``partial``, :class:`~treeseek.code.model.Resolution`) and the destination it found
(``dst_path``, ``dst_symbol_id``), resolved against the whole tree when that layer is asked
for: only the chosen files' edges, looked up as resolution needs (or the tree's graph, when
this process has built it); this is why the module lives with the graph retrievers rather than
under ``search/flat/``. C3 items name their handler the same way (``handler_symbol_id``).

Every item carries the ids of the spec: ``symbol_id`` (the name path ``path::Qual.name``),
``parent_symbol_id``, ``edge_id`` and ``src_symbol_id``, ``entry_id`` (16 hex digits of SHA-256
over the row's fields, stable across re-indexing), and its file's module (``module_or_unit``,
``package_or_module``). The score is per item: the file's fused score times
``0.5 + 0.5 * overlap``, the share of the query's terms the item's text contains.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from treeseek.code.conventions import code_content, is_test_path
from treeseek.code.languages import language_for_path
from treeseek.code.model import Entrypoint, symbol_id
from treeseek.code.modules import module_name
from treeseek.code.resolve import ResolvedTree, resolve_files
from treeseek.search.base import SearchContext
from treeseek.search.flat.flat import FlatConfig, FlatRetriever
from treeseek.search.graph.lookup import cached_tree_lookup
from treeseek.search.graph.tree_graph import TREE_GRAPH
from treeseek.text.tokens import code_tokens, unique_tokens

LAYERS: tuple[str, ...] = (
    "C3_ENTRYPOINTS",
    "C1_SYMBOL_CATALOG",
    "C2_DEPENDENCY_GRAPH",
    "C0_SOURCE_CHUNKS",
)
LAYER_RANK = {name: i for i, name in enumerate(LAYERS)}
#: the reference's default number of items
DEFAULT_LIMIT = 8


@dataclass(frozen=True, slots=True)
class RetrievalItem:
    source: str  # repo-relative path
    content: str
    layer: str
    title: str
    metadata: dict[str, Any] = field(default_factory=dict)
    score: float | None = None
    start_line: int | None = None
    end_line: int | None = None


def _match(text: str, terms: set[str], exact: set[str]) -> tuple[int, float]:
    """(lexical rank, overlap): rank 0 names an identifier of the query exactly, 1 shares query
    terms, 2 neither; overlap is the share of the query's terms the text contains."""
    tokens = set(code_tokens(text))
    shared = tokens & terms
    overlap = len(shared) / len(terms) if terms else 0.0
    if tokens & exact:
        return 0, overlap
    return (1 if shared else 2), overlap


def item_id(*parts: object) -> str:
    """A stable id of an edge or entrypoint row: 16 hex digits of SHA-256 over its fields."""
    text = "\0".join(str(p) for p in parts)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def retrieve_items(
    ctx: SearchContext,
    query: str,
    *,
    layers: Sequence[str] = LAYERS,
    limit: int = DEFAULT_LIMIT,
    config: FlatConfig | None = None,
    files: int = 5,
) -> list[RetrievalItem]:
    """Items of the requested layers from the best ``files`` files for ``query``.

    ``config`` carries the filters (path prefix, languages, exclude tests). C2 and C3 items
    carry the edges and handlers of those files resolved against the whole tree
    (:func:`_resolved_files`).
    """
    unknown = [name for name in layers if name not in LAYER_RANK]
    if unknown:
        from treeseek.errors import ConfigError

        raise ConfigError(f"unknown layer(s) {unknown}; choose from {', '.join(LAYERS)}")
    hits = FlatRetriever(config).rank(ctx, query, files).hits
    code = ctx.store.code()
    resolved: ResolvedTree | None = None
    if hits and ("C2_DEPENDENCY_GRAPH" in layers or "C3_ENTRYPOINTS" in layers):
        resolved = _resolved_files(ctx, [hit.path for hit in hits])
    terms = set(unique_tokens([query]))
    exact = {i.lower() for i in code_tokens(query) if "_" in i} | {
        t
        for t in terms
        if len(t) > 3
        and any(
            w.lower() == t and (any(c.isupper() for c in w[1:]) or "_" in w) for w in query.split()
        )
    }
    # a file's entrypoints with their resolved handlers (the graph's: these include the
    # console scripts of packaging files, which the code index does not store)
    entries: dict[str, list[tuple[Entrypoint, str | None]]] = {}
    if resolved is not None and "C3_ENTRYPOINTS" in layers:
        for rep in resolved.entrypoints:
            handler = rep.handler_path
            if handler is not None and rep.handler_symbol:
                handler = symbol_id(handler, rep.handler_symbol)
            entries.setdefault(rep.path, []).append((rep.entrypoint, handler))
    ranked: list[tuple[tuple[int, int, int, float], RetrievalItem]] = []
    for hit in hits:
        node = ctx.store.node(ctx.tree.name, hit.node_id)
        digest = code_content(node.path, node.content_hash)
        if digest is None:
            continue
        test = int(is_test_path(hit.path))
        file_score = float(hit.score or 0.0)
        module = module_name(hit.path, language_for_path(hit.path))

        def add(
            item: RetrievalItem, text: str, test: int = test, file_score: float = file_score
        ) -> None:
            rank, overlap = _match(text, terms, exact)
            score = round(file_score * (0.5 + 0.5 * overlap), 6)
            key = (rank, test, LAYER_RANK[item.layer], -score)
            ranked.append((key, replace(item, score=score)))

        if "C3_ENTRYPOINTS" in layers:
            for ep, handler_id in entries.get(hit.path, ()):
                add(
                    RetrievalItem(
                        hit.path,
                        f"{ep.framework} {ep.entry_type} {ep.route_or_command}",
                        "C3_ENTRYPOINTS",
                        ep.route_or_command,
                        {
                            "entry_id": item_id(
                                hit.path, ep.framework, ep.route_or_command, ep.line
                            ),
                            "entry_type": ep.entry_type,
                            "framework": ep.framework,
                            "route_or_command": ep.route_or_command,
                            "handler": ep.handler,
                            "handler_symbol_id": handler_id,
                            "module_or_unit": module,
                            "lang_payload": ep.lang_payload,
                            "artifact_type": "CODE",
                        },
                        file_score,
                        ep.line,
                        ep.line,
                    ),
                    f"{ep.route_or_command} {ep.handler or ''}",
                )
        if "C1_SYMBOL_CATALOG" in layers:
            for s in code.symbols(digest):
                add(
                    RetrievalItem(
                        hit.path,
                        f"{s.kind} {s.qname}\n{s.signature}",
                        "C1_SYMBOL_CATALOG",
                        s.qname,
                        {
                            "symbol_id": symbol_id(hit.path, s.qname),
                            "qname": s.qname,
                            "kind": str(s.kind),
                            "signature": s.signature,
                            "decorators_or_annotations": list(s.decorators),
                            "docstring_or_javadoc": s.docstring,
                            "parent_symbol_id": (
                                symbol_id(hit.path, s.parent) if s.parent else None
                            ),
                            "package_or_module": module,
                            "is_entry_candidate": s.is_entry_candidate,
                            "lang_payload": s.lang_payload,
                            "artifact_type": "CODE",
                        },
                        file_score,
                        s.start_line,
                        s.end_line,
                    ),
                    s.qname,
                )
        if resolved is not None and "C2_DEPENDENCY_GRAPH" in layers:
            for e in resolved.edges_of(hit.path):
                dst_id = None
                if e.dst_path is not None:
                    dst_id = symbol_id(e.dst_path, e.dst_symbol) if e.dst_symbol else e.dst_path
                add(
                    RetrievalItem(
                        hit.path,
                        f"{e.src or '<module>'} {e.type} {e.dst_ref}",
                        "C2_DEPENDENCY_GRAPH",
                        f"{e.src or '<module>'}:{e.type}",
                        {
                            "edge_id": item_id(hit.path, e.src, e.type, e.dst_ref, e.line),
                            "edge_type": str(e.type),
                            "src_symbol_id": symbol_id(hit.path, e.src) if e.src else hit.path,
                            "src_qname": e.src,
                            "dst_ref": e.dst_ref,
                            "resolution": str(e.resolution),
                            "dst_path": e.dst_path,
                            "dst_symbol_id": dst_id,
                            "module_or_unit": module,
                            "lang_payload": e.lang_payload,
                            "artifact_type": "CODE",
                        },
                        file_score,
                        e.line,
                        e.line,
                    ),
                    f"{e.src} {e.dst_ref}",
                )
        if "C0_SOURCE_CHUNKS" in layers:
            for c in code.chunks(digest):
                title = f"{hit.path}:{c.symbol}" if c.symbol else hit.path
                add(
                    RetrievalItem(
                        hit.path,
                        c.text,
                        "C0_SOURCE_CHUNKS",
                        title,
                        {
                            "chunk_index": c.index,
                            "chunk_type": str(c.type),
                            "module_or_unit": module,
                            "symbol_id": symbol_id(hit.path, c.symbol) if c.symbol else None,
                            "artifact_type": "CODE",
                        },
                        file_score,
                        c.start_line,
                        c.end_line,
                    ),
                    f"{c.symbol or ''} {c.text}",
                )
    ranked.sort(key=lambda pair: pair[0])
    return [item for _, item in ranked[:limit]]


def _resolved_files(ctx: SearchContext, paths: list[str]) -> ResolvedTree:
    """The edges and entrypoints of ``paths`` resolved against the whole tree: from the tree's
    graph when this process has built it, else resolving only these files with the version's
    kept lookup (their targets are a function of the tree's facts,
    :mod:`~treeseek.search.graph.lookup`: the same items, without reading and resolving the
    whole tree, 40 s on a 47,000-file tree)."""
    built = ctx.caches.peek(TREE_GRAPH, ctx.tree)
    if built is not None:
        return built.resolved
    shared = cached_tree_lookup(ctx.caches, ctx.store, ctx.tree)
    with shared.lock:
        lookup = shared.lookup
        return resolve_files(lookup.facts, paths, entrypoints=True, resolvers=lookup.resolvers)
