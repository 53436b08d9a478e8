"""Documentation sections as retrieval items: the ``DOCS`` layer of the code-retrieval endpoint.

``code-retrieval-layers.json`` falls back to documentation when code retrieval finds nothing
(``fallback_to_docs_when_code_empty``). :func:`retrieve_with_docs` does that:

* on a *document* tree (no code layers at all) the items are the document retriever's best
  sections (its flat ranking, :meth:`~treeseek.search.document.corpus.SectionCorpus.rank`);
* on a code tree the code layers answer first (:func:`~treeseek.search.graph.items.retrieve_items`,
  unchanged); only when they return no item, the tree's Markdown/reST sections that the flat
  retriever's ``sections`` signal ranks (:class:`~treeseek.search.flat.doc_sections.DocSections`)
  answer instead.

A section item has the shape of a code item: ``source`` (the document's path), ``content`` (the
section's own text, cut at :data:`MAX_CONTENT_CHARS`), ``layer`` ``DOCS``, ``title`` (the title
path joined by `` > ``), the line span in the document's own lines (None for page-numbered
documents: the span is then in ``metadata``), the section's score, and ``metadata`` with
``artifact_type`` ``DOC``. :attr:`Retrieved.fallback` is ``"docs"`` whenever the items are
sections standing in for code layers; ``layers=["DOCS"]`` (alone: sections and code items are
ranked apart) asks for the sections directly, without a ``fallback``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from treeseek.errors import ConfigError
from treeseek.search.base import SearchContext
from treeseek.search.document.ranking import refined_candidates
from treeseek.search.document.retriever import DocumentRetriever, shown_title_path
from treeseek.search.flat.flat import FlatRetriever
from treeseek.search.graph.items import DEFAULT_LIMIT, LAYER_RANK, LAYERS, RetrievalItem
from treeseek.search.graph.items import retrieve_items as code_items

#: the layer name of documentation sections
DOCS_LAYER = "DOCS"
#: the most characters of a section's text an item carries (a long section is cut there and
#: marked ``metadata.truncated``)
MAX_CONTENT_CHARS = 4000


@dataclass(frozen=True, slots=True)
class Retrieved:
    items: list[RetrievalItem] = field(default_factory=list)
    #: "docs" when the items are documentation sections standing in for code layers
    fallback: str | None = None


def _bounded(text: str) -> tuple[str, bool]:
    if len(text) <= MAX_CONTENT_CHARS:
        return text, False
    return text[:MAX_CONTENT_CHARS], True


def document_tree_items(ctx: SearchContext, query: str, limit: int) -> list[RetrievalItem]:
    """A document tree's best sections for ``query`` (the document retriever's flat ranking)."""
    corpus = DocumentRetriever().corpus(ctx)
    items: list[RetrievalItem] = []
    for path, score in corpus.rank(query, None, refined_candidates(limit)):
        if len(items) == limit:
            break
        if score <= 0:
            continue
        s = corpus.sections[path]
        own_end = s.info.own_end if s.info.own_end is not None else s.info.end
        titles = shown_title_path(s.title_path)
        content, cut = _bounded(s.text)
        lines = s.info.unit == "line"
        items.append(
            RetrievalItem(
                s.info.document,
                content,
                DOCS_LAYER,
                " > ".join(titles),
                {
                    "section_path": path,
                    "title_path": titles,
                    "level": s.info.level,
                    "unit": s.info.unit,
                    "span": [s.info.start, own_end],
                    "truncated": cut,
                    "artifact_type": "DOC",
                },
                round(score, 6),
                s.info.start if lines else None,
                own_end if lines else None,
            )
        )
    return items


def code_tree_doc_items(ctx: SearchContext, query: str, limit: int) -> list[RetrievalItem]:
    """A code tree's best documentation sections for ``query`` (the flat retriever's
    :class:`~treeseek.search.flat.doc_sections.DocSections`, BM25 over prose terms)."""
    items: list[RetrievalItem] = []
    for score, path, chunk in FlatRetriever.doc_sections(ctx).ranked(query)[:limit]:
        title = chunk.symbol or path
        content, cut = _bounded(chunk.text)
        items.append(
            RetrievalItem(
                path,
                content,
                DOCS_LAYER,
                title,
                {
                    "section_path": f"{path}::{title}",
                    "title_path": title.split(" > "),
                    "chunk_index": chunk.index,
                    "unit": "line",
                    "span": [chunk.start_line, chunk.end_line],
                    "truncated": cut,
                    "artifact_type": "DOC",
                },
                round(score, 6),
                chunk.start_line,
                chunk.end_line,
            )
        )
    return items


def doc_items(ctx: SearchContext, query: str, limit: int) -> list[RetrievalItem]:
    """The tree's best documentation sections: a document tree's own, a code tree's
    Markdown/reST sections."""
    if ctx.tree.source.is_filesystem:
        return code_tree_doc_items(ctx, query, limit)
    return document_tree_items(ctx, query, limit)


def retrieve_with_docs(
    ctx: SearchContext,
    query: str,
    *,
    layers: Sequence[str] = LAYERS,
    limit: int = DEFAULT_LIMIT,
) -> Retrieved:
    """Code items of ``layers`` for ``query``, or documentation sections when there are none
    (see the module docstring); ``layers=["DOCS"]`` (alone) asks for the sections directly,
    and the answer then has no ``fallback``."""
    if not layers:
        raise ConfigError(
            f"no layer asked for; omit layers for the four code layers, or choose from "
            f"{', '.join(LAYERS)}, {DOCS_LAYER}"
        )
    if DOCS_LAYER in layers:
        if any(name != DOCS_LAYER for name in layers):
            raise ConfigError(
                f"{DOCS_LAYER} is asked for alone (documentation sections and code items are "
                'ranked apart): ask for ["DOCS"], or for code layers, whose answer falls '
                "back to the documentation when they find nothing"
            )
        return Retrieved(doc_items(ctx, query, limit))
    unknown = [name for name in layers if name not in LAYER_RANK]
    if unknown:
        raise ConfigError(
            f"unknown layer(s) {unknown}; choose from {', '.join(LAYERS)}, {DOCS_LAYER}"
        )
    if ctx.tree.source.is_filesystem:
        items = code_items(ctx, query, layers=layers, limit=limit)
        if items:
            return Retrieved(items)
    docs = doc_items(ctx, query, limit)
    return Retrieved(docs, "docs" if docs else None)
