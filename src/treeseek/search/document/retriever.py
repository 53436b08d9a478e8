"""The document retriever: what strategy selection dispatches a ``document`` tree to.

The caller's strategy picks the method (spec section 1 sends every document tree here):

* ``flat`` (and ``auto``/``document`` without an LLM): BM25 over section titles and texts with
  the tree's own statistics, each section scored over its subtree and its own text by the
  linear scorer (:meth:`~treeseek.search.document.corpus.SectionCorpus.rank`); with
  ``vectors`` (``--vectors minilm``) and a tree indexed with section vectors of that model,
  the question's cosines to the sections join the scorer (:meth:`DocumentRetriever.semantic`);
  otherwise the ranking is the lexical one, unchanged;
* ``collapsed`` (or ``traverse``): :func:`~treeseek.search.graph.collapsed.collapsed_tree_policy`
  with the spec's defaults through the traverse operator, routing over document and section
  summaries down to leaf sections;
* ``beam`` / ``block`` (and ``auto`` with an LLM: Beam up to 50 nodes, Block above): the
  filesystem algorithms over section nodes with the document prompts
  (``beam_doc.jinja``, ``block_doc_cache_prefix.jinja``, ``block_doc.jinja``): same rank tool,
  merge and ordering rules and cache method, candidates shown by title path.

Results are sections: their path, their own text as content (under the usual byte budgets)
and :class:`~treeseek.search.base.SectionEvidence` (document, titles, level, span).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from treeseek.embed.base import Embedder
from treeseek.embed.neural import QueryEmbedder, load_embedder
from treeseek.errors import ConfigError
from treeseek.llm.base import Usage
from treeseek.rank.paths import BM25PathScorer
from treeseek.search.base import (
    Evidence,
    FileHit,
    QueryOptions,
    Result,
    Retriever,
    SearchContext,
    SectionEvidence,
)
from treeseek.search.caches import Slot
from treeseek.search.document.corpus import TITLE_REPEAT, SectionCorpus, SectionVectors, terms
from treeseek.search.document.ranking import SemanticScores, refined_candidates
from treeseek.search.document.view import DocumentView
from treeseek.search.graph.collapsed import Surface, collapsed_tree_policy
from treeseek.search.graph.traverse import DFLT_MAX_DEPTH, DFLT_NODE_BUDGET, traverse
from treeseek.search.results import attach_contents
from treeseek.search.trace import Trace
from treeseek.search.tree.beam import BeamRetriever
from treeseek.search.tree.block import BlockRetriever
from treeseek.search.tree.prompts import DOCUMENT_PROMPTS
from treeseek.trees.model import node_id_for_path

#: a document tree's sections and its collapsed-tree surfaces, in the database's caches
CORPUS: Slot[SectionCorpus] = Slot("document.corpus")
SURFACES: Slot[SectionSurfaces] = Slot("document.surfaces")
#: a document tree's section vectors, per model (None: the tree has none of that model)
_VECTORS: dict[str, Slot[SectionVectors | None]] = {}
#: trees with at most this many nodes use Beam under ``auto`` (as for filesystem trees)
AUTO_BEAM_MAX_NODES = 50
METHODS = ("flat", "collapsed", "beam", "block")


def method_for(strategy: str, navigator: str, node_count: int) -> str:
    """Which document method answers ``strategy``."""
    if strategy in ("flat", "beam", "block", "collapsed"):
        return strategy
    if strategy == "traverse":
        return "collapsed"
    if strategy in ("auto", "document"):
        if navigator == "lexical":
            return "flat"
        return "beam" if node_count <= AUTO_BEAM_MAX_NODES else "block"
    raise ConfigError(
        f"unknown strategy {strategy!r} for a document tree; choose one of auto, "
        + ", ".join(METHODS)
    )


@dataclass(slots=True)
class SectionSurfaces:
    """A document tree as the collapsed-tree walk's corpus.

    Surfaces: per document a ``document`` surface (title, description, section titles) whose
    artifact is the whole document; per section with subsections or a summary a ``synopsis``
    surface (title path, summary, subsection titles) whose artifact is the section and its
    subsections; per section with text a ``chunk`` surface (title path and own text), a leaf
    of its own section and of every enclosing one. Similarity: TF-IDF cosine."""

    corpus: SectionCorpus
    surfaces: dict[str, Surface] = field(default_factory=dict)
    tfs: dict[str, object] = field(default_factory=dict)
    ledger: dict[str, list[str]] = field(default_factory=dict)  # artifact -> chunk surface ids
    #: each surface's unit TF-IDF vector, computed on first use and kept with the surfaces
    vectors: dict[str, dict[str, float]] = field(default_factory=dict)
    _query: tuple[str, dict[str, float]] | None = None

    @classmethod
    def build(cls, corpus: SectionCorpus) -> SectionSurfaces:
        from collections import Counter

        out = cls(corpus)
        for doc_path, outline in corpus.outlines.items():
            titles = " ".join(i.title for i in outline.sections.values())
            first = corpus.sections.get(next(iter(outline.sections), ""))
            gist = outline.description or (_gist(first.text) if first is not None else "")
            text = " ".join(filter(None, [outline.title, gist, titles]))
            sid = f"document:{doc_path}"
            node_id = node_id_for_path(doc_path)
            out.surfaces[sid] = Surface(sid, "document", doc_path, node_id, doc_path)
            out.tfs[sid] = Counter(terms(text))
            out.ledger[doc_path] = []
        for path, s in corpus.sections.items():
            if s.children or s.info.summary:
                kids = " ".join(corpus.sections[c].info.title for c in s.children)
                gist = s.info.summary or _gist(s.text)
                text = " ".join([" ".join(s.title_path[1:]), gist, kids])
                sid = f"synopsis:{path}"
                out.surfaces[sid] = Surface(sid, "synopsis", path, s.node.id, path)
                out.tfs[sid] = Counter(terms(text))
                out.ledger.setdefault(path, [])
            if s.text.strip():
                sid = f"chunk:{path}"
                out.surfaces[sid] = Surface(sid, "chunk", path, s.node.id, path)
                title = " ".join(s.title_path[1:] or s.title_path)
                summary = s.info.summary or ""
                out.tfs[sid] = Counter(terms(title) * TITLE_REPEAT + terms(summary) + terms(s.text))
                out.ledger.setdefault(path, []).append(sid)
                parent = s.parent
                while parent is not None:
                    out.ledger.setdefault(parent, []).append(sid)
                    parent = corpus.sections[parent].parent if parent in corpus.sections else None
                out.ledger.setdefault(s.info.document, []).append(sid)
        return out

    def _query_vec(self, query: str) -> dict[str, float]:
        from collections import Counter

        if self._query is None or self._query[0] != query:
            self._query = (query, self.corpus.vector(Counter(terms(query))))
        return self._query[1]

    def similarity(self, query: str, surface: Surface) -> float:
        vec = self.vectors.get(surface.id)
        if vec is None:
            tf = self.tfs.get(surface.id)
            vec = self.vectors[surface.id] = self.corpus.vector(tf) if tf else {}  # type: ignore[arg-type]
        if not vec:
            return 0.0
        return sum(w * vec.get(t, 0.0) for t, w in self._query_vec(query).items())

    def search(self, query: str, kinds: Collection[str], k: int) -> Sequence[Surface]:
        scored = [
            (self.similarity(query, s), i, s)
            for i, s in enumerate(self.surfaces.values())
            if s.kind in kinds
        ]
        scored = [x for x in scored if x[0] > 0]
        scored.sort(key=lambda x: (-x[0], x[1]))
        return [s for _, _, s in scored[:k]]

    def leaves(self, artifact: str, kinds: Collection[str]) -> Sequence[Surface]:
        return [
            self.surfaces[i]
            for i in self.ledger.get(artifact, ())
            if self.surfaces[i].kind in kinds
        ]


#: characters of a section's own text that stand in for its summary when it has none
GIST_CHARS = 600


def shown_title_path(titles: Sequence[str]) -> list[str]:
    """A section's title path as results show it: a document titled by its one top heading
    (a Markdown file with a single ``# Guide``) has that title once, not as the document's
    and then the section's (``Guide > Install``, not ``Guide > Guide > Install``)."""
    if len(titles) > 1 and titles[0] == titles[1]:
        return list(titles[1:])
    return list(titles)


def _gist(text: str) -> str:
    """The opening of a text (its first paragraphs, up to :data:`GIST_CHARS`)."""
    return text[:GIST_CHARS]


class DocumentRetriever(Retriever):
    """Sections of a document tree for a query (see the module docstring)."""

    name = "document"

    def __init__(self, embedders: Mapping[str, Embedder] | None = None) -> None:
        #: embedders by short name (``--vectors``): the given ones, and the packaged models
        #: (:func:`~treeseek.embed.neural.load_embedder`) loaded once per retriever on first use
        self._embedders: dict[str, Embedder] = dict(embedders or {})

    def corpus(self, ctx: SearchContext) -> SectionCorpus:
        """The tree's sections, loaded once per tree version (the database's caches)."""
        return ctx.caches.get(CORPUS, ctx.tree, lambda: SectionCorpus.load(ctx.store, ctx.tree))

    def semantic(
        self, ctx: SearchContext, query: str, vectors: str | None
    ) -> tuple[SemanticScores, str] | None:
        """The question's cosines to the tree's section vectors of embedder ``vectors``
        (``--vectors``), and the model's name; None without the option, or when the tree has
        no section vectors of that model (the ranking is then the lexical one)."""
        if vectors is None:
            return None
        embedder = self._embedders.get(vectors)
        if embedder is None:
            embedder = self._embedders[vectors] = load_embedder(vectors)
        model = embedder.name
        corpus = self.corpus(ctx)
        slot = _VECTORS.setdefault(model, Slot(f"document.vectors.{model}"))
        stored = ctx.caches.get(
            slot, ctx.tree, lambda: SectionVectors.load(ctx.store, corpus, model)
        )
        if stored is None:
            return None
        if isinstance(embedder, QueryEmbedder):
            question = embedder.embed_query(query)
        else:
            question = embedder.embed([query])[0]
        return stored.cosines(question), model

    def surfaces(self, ctx: SearchContext) -> SectionSurfaces:
        corpus = self.corpus(ctx)
        return ctx.caches.get(SURFACES, ctx.tree, lambda: SectionSurfaces.build(corpus))

    def retrieve(self, ctx: SearchContext, query: str, options: QueryOptions) -> Result:
        started = time.perf_counter()
        method = method_for(options.strategy, ctx.navigator.name, ctx.tree.node_count)
        corpus = self.corpus(ctx)
        if method in ("beam", "block"):
            return self._tree_search(ctx, query, options, method, corpus)
        if method == "flat":
            semantic = self.semantic(ctx, query, options.vectors)
            refined = refined_candidates(options.k)
            ranked = corpus.rank(query, semantic[0] if semantic else None, refined)[: options.k]
            ids = [(corpus.sections[p].node.id, p, score) for p, score in ranked]
            navigator = "none"
            stop = f"{len(ids)} sections ranked by BM25 (subtree + document)"
            if semantic is not None:
                stop += f" and section vectors ({semantic[1]})"
        else:
            hits = traverse(
                query,
                self.surfaces(ctx),
                policy=collapsed_tree_policy(),
                max_depth=DFLT_MAX_DEPTH,
                node_budget=max(DFLT_NODE_BUDGET, 4 * options.k),
                k=options.k,
            )
            ids = [(h.node_id, h.path, h.score) for h in hits if h.path in corpus.sections]
            navigator = "none"
            stop = f"{len(ids)} sections from the collapsed-tree walk"
        files = [self._hit(corpus, node_id, path, score) for node_id, path, score in ids]
        files = attach_contents(ctx.store, ctx.tree.name, files, options)
        trace = Trace(strategy=f"document-{method}", navigator=navigator)
        trace.paths.update({h.node_id: h.path for h in files})
        trace.stop_reason = stop
        trace.wall_s = round(time.perf_counter() - started, 4)
        return Result(
            files=files,
            strategy=f"document-{method}",
            navigator=navigator,
            trace=trace,
            usage=Usage(),
            cost_usd=0.0,
        )

    @staticmethod
    def _hit(corpus: SectionCorpus, node_id: str, path: str, score: float | None) -> FileHit:
        s = corpus.sections[path]
        own_end = s.info.own_end if s.info.own_end is not None else s.info.end
        evidence = Evidence(
            section=SectionEvidence(
                document=s.info.document,
                title=s.info.title,
                title_path=shown_title_path(s.title_path),
                level=s.info.level,
                start=s.info.start,
                end=own_end,
                unit=s.info.unit,
            )
        )
        return FileHit(
            node_id=node_id,
            path=path,
            score=round(score, 6) if score is not None else None,
            content_status=s.node.content_status.value,
            evidence=evidence,
        )

    def _tree_search(
        self,
        ctx: SearchContext,
        query: str,
        options: QueryOptions,
        method: str,
        corpus: SectionCorpus,
    ) -> Result:
        def view(c: SearchContext) -> DocumentView:
            return DocumentView(c.store, c.tree.name, corpus)

        inner: Retriever
        if method == "beam":
            inner = BeamRetriever(prompts=DOCUMENT_PROMPTS, view=view)
        else:
            inner = BlockRetriever(
                scorer=BM25PathScorer() if options.ranker == "bm25" else None,
                prompts=DOCUMENT_PROMPTS,
                view=view,
            )
        result = inner.retrieve(ctx, query, replace(options, strategy=method))
        files: list[FileHit] = []
        for hit in result.files:
            path = corpus.by_id.get(hit.node_id)
            if path is None:
                continue
            fixed = self._hit(corpus, hit.node_id, path, hit.score)
            fixed.content, fixed.truncated = hit.content, hit.truncated
            fixed.content_status = hit.content_status
            files.append(fixed)
        result.files = files
        result.strategy = f"document-{method}"
        result.trace.strategy = result.strategy
        return result
