"""Layer items in the reference's response shape: ``{source, content, layer, title, metadata,
score}`` (plus line spans, which the reference stores but does not return).

The flat retriever picks the files; this module explains them item by item from the code
layers of those files: C3 entrypoints, C1 symbols, C2 edges and C0 chunks, ordered as the
reference orders them: (lexical rank, test penalty, layer rank C3 > C1 > C2 > C0, score).

C2 items carry the cross-file resolver's answer per edge (``resolution``: ``resolved`` or
``partial``, :class:`~treeseek.code.model.Resolution`) and the destination it found
(``dst_path``, ``dst_symbol_id``), so the tree's code graph is built (and cached per database,
see :func:`~treeseek.search.graph.tree_graph.cached_tree_graph`) when that layer is asked for; this
is why the module lives with the graph retrievers rather than under ``search/flat/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from treeseek.code.conventions import is_test_path
from treeseek.code.model import symbol_id
from treeseek.code.resolve import ResolvedTree
from treeseek.search.base import SearchContext
from treeseek.search.flat.flat import FlatConfig, FlatRetriever
from treeseek.search.graph.tree_graph import cached_tree_graph
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


def _lexical_rank(text: str, terms: set[str], exact: set[str]) -> int:
    """0: names an identifier of the query exactly; 1: shares query terms; 2: neither."""
    tokens = set(code_tokens(text))
    if tokens & exact:
        return 0
    return 1 if tokens & terms else 2


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

    ``config`` carries the filters (path prefix, languages, exclude tests). The tree's
    resolved code graph is cached in the database's caches (``ctx.caches``).
    """
    unknown = [name for name in layers if name not in LAYER_RANK]
    if unknown:
        from treeseek.errors import ConfigError

        raise ConfigError(f"unknown layer(s) {unknown}; choose from {', '.join(LAYERS)}")
    hits = FlatRetriever(config).rank(ctx, query, files).hits
    code = ctx.store.code()
    resolved: ResolvedTree | None = None
    if hits and "C2_DEPENDENCY_GRAPH" in layers:
        resolved = cached_tree_graph(ctx.caches, ctx.store, ctx.tree).resolved
    terms = set(unique_tokens([query]))
    exact = {i.lower() for i in code_tokens(query) if "_" in i} | {
        t
        for t in terms
        if len(t) > 3
        and any(
            w.lower() == t and (any(c.isupper() for c in w[1:]) or "_" in w) for w in query.split()
        )
    }
    ranked: list[tuple[tuple[int, int, int, float], RetrievalItem]] = []
    for hit in hits:
        node = ctx.store.node(ctx.tree.name, hit.node_id)
        digest = node.content_hash
        if digest is None:
            continue
        test = int(is_test_path(hit.path))
        file_score = float(hit.score or 0.0)

        def add(
            item: RetrievalItem, text: str, test: int = test, score: float = file_score
        ) -> None:
            key = (_lexical_rank(text, terms, exact), test, LAYER_RANK[item.layer], -score)
            ranked.append((key, item))

        if "C3_ENTRYPOINTS" in layers:
            for ep in code.entrypoints(digest):
                add(
                    RetrievalItem(
                        hit.path,
                        f"{ep.framework} {ep.entry_type} {ep.route_or_command}",
                        "C3_ENTRYPOINTS",
                        ep.route_or_command,
                        {
                            "entry_type": ep.entry_type,
                            "framework": ep.framework,
                            "route_or_command": ep.route_or_command,
                            "handler": ep.handler,
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
                            "qname": s.qname,
                            "kind": str(s.kind),
                            "signature": s.signature,
                            "decorators_or_annotations": list(s.decorators),
                            "docstring_or_javadoc": s.docstring,
                            "parent_symbol_id": s.parent,
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
        if resolved is not None:
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
                            "edge_type": str(e.type),
                            "src_qname": e.src,
                            "dst_ref": e.dst_ref,
                            "resolution": str(e.resolution),
                            "dst_path": e.dst_path,
                            "dst_symbol_id": dst_id,
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
