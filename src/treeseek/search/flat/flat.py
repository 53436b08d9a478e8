"""The flat retriever: no LLM, BM25 over files/chunks/symbols/paths, exact mentions, vectors.

Every signal ranks the tree's files on its own; the ``fused`` ranking combines the ranks by
weighted reciprocal rank fusion (``w / (K + rank)``), adds the exact evidence of query
understanding (:mod:`treeseek.search.flat.understanding`) as a strong additive term, and
multiplies test files by a penalty. The ``reference`` ranking reproduces the reference
system's ordering instead: items sorted by (lexical rank, test penalty, layer priority
C3 > C1 > C2 > C0, vector distance), files in order of their first item.

Signals (each can be switched off for ablations, see :class:`FlatConfig`):

- ``files``: BM25 of whole files over the tree's primary files (code in any language, not
  tests, not vendored)
  with every query term (:class:`~treeseek.search.flat.file_bm25.FileBM25Index`);
- ``title``: the same with only the first line of a multi-line query (an issue's title);
- ``chunks``: BM25 of C0 chunks (FTS5's formula, :mod:`treeseek.search.flat.parts`), a file
  scores its best chunk (+ a share of the next ones);
- ``symbols``: the same over C1 symbol documents (qualified name, signature, docstring); off
  by default, and with ``w_symbols`` 0 only a feature of the learned ranking;
- ``paths``: fielded path BM25 (:class:`~treeseek.rank.paths.BM25PathScorer`);
- ``mentions``: paths, modules, stack frames and identifiers named exactly in the query;
- ``vectors``: cosine similarity of the query and each file's embedded outline (optional);
- ``graph`` (not a fused signal: a feature of the learned ranking): personalized PageRank
  over the import links among the learned ranking's candidates and the named files,
  restarting at the question's files (:mod:`~treeseek.search.flat.import_graph`);
- ``sections``: for a *prose question* only (one line phrased as a question, naming no code:
  no path, module, stack frame or code-shaped identifier, e.g. "how do I deploy flask with
  gunicorn"), the documentation files (Markdown/reST, cut at their headings at query time,
  :mod:`~treeseek.search.flat.doc_sections`) ranked by their best section, which becomes the
  hit's chunk evidence (type ``section``: title path and line span); those files are spared
  the non-code penalty. Any other question ranks exactly as without this signal, and code
  files never move relative to each other.

Every statistic (document counts, document frequencies, average lengths) is the tree's own:
a tree's ranking depends only on the tree and the question, never on the other trees of its
database. What a query derives from the tree (its files, names, BM25 indexes) is built once
per tree version and kept in the database's caches (:class:`~treeseek.search.caches.TreeCaches`,
reached through the :class:`~treeseek.search.base.SearchContext`).
"""

from __future__ import annotations

import copy
import math
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

from treeseek.code.chunks import SECTION_SUFFIXES
from treeseek.code.conventions import code_content, is_config_path, is_test_path, is_vendored_path
from treeseek.code.languages import language_for_path
from treeseek.embed.base import Embedder
from treeseek.embed.neural import QueryEmbedder
from treeseek.errors import RetrievalError
from treeseek.index.code_hook import OUTLINE_KIND
from treeseek.llm.base import Usage
from treeseek.rank.paths import BM25PathScorer, PathCorpusStats
from treeseek.search.base import (
    ChunkEvidence,
    Evidence,
    FileHit,
    MentionEvidence,
    QueryOptions,
    Result,
    Retriever,
    SearchContext,
)
from treeseek.search.caches import Slot
from treeseek.search.flat.doc_sections import DocSections
from treeseek.search.flat.file_bm25 import FileBM25Index
from treeseek.search.flat.import_graph import ImportResolver, personalized_pagerank
from treeseek.search.flat.learned import (
    TEXT_FEATURES,
    Candidate,
    GraphScore,
    LinearModel,
    TextMatch,
    candidate_features,
    counterpart_stem,
    query_words,
)
from treeseek.search.flat.ltr_weights import HYBRID_MODEL, LEARNED_MODEL
from treeseek.search.flat.parts import PartIndex, RankedPart, SymbolCatalog, TreeSymbols
from treeseek.search.flat.understanding import (
    MentionMatch,
    MentionResolver,
    ParsedQuery,
    TreeNames,
    files_by_evidence,
)
from treeseek.search.results import attach_contents
from treeseek.search.trace import Trace
from treeseek.store.code_base import CHUNK_PARTS, SYMBOL_PARTS, ChunkSpan, CodeStore, VectorKey
from treeseek.text.tokens import unique_tokens
from treeseek.trees.model import Node

T = TypeVar("T")

#: above this many files, path BM25 scores only the files other signals found
PATH_CANDIDATES = 2000


@dataclass(frozen=True, slots=True)
class FlatConfig:
    """Ranking switches and weights; the defaults are the measured best on the dev split."""

    #: "learned": the fused order's first ``learned_depth`` files rescored by the learned
    #: linear model (:mod:`treeseek.search.flat.learned`; a prose question, which the model
    #: was not fitted on, keeps the fused order); "fused": weighted reciprocal rank fusion;
    #: "reference": the reference system's ordering
    ranking: str = "learned"
    learned_depth: int = 30
    #: file BM25 over the primary files with the whole query (the biggest lexical signal:
    #: alone recall@gold ~0.43 on the dev split, where chunk BM25 alone is ~0.15)
    files: bool = True
    #: file BM25 with only the first line of a multi-line query (an issue's title, which
    #: names the problem in few words); skipped for one-line queries, where it would repeat
    #: ``files``
    title: bool = True
    chunks: bool = True
    #: BM25 over the tree's symbol documents (qualified name, signature, docstring; numpy over
    #: the stored term counts, :class:`~treeseek.search.flat.parts.PartIndex`): features of
    #: the learned ranking (weight 0 in the shipped model: it did not earn its place, README
    #: "Learned fusion"), in the fused order only with ``w_symbols`` > 0
    symbols: bool = False
    paths: bool = True
    mentions: bool = True
    vectors: bool = True  # used only when an embedder is given and vectors are stored
    #: the import graph around the learned ranking's candidates (personalized PageRank from
    #: the question's files, :mod:`~treeseek.search.flat.import_graph`): a feature of the
    #: learned ranking only (``graph.ppr``, README "Learned fusion")
    graph: bool = True
    #: the fused order's first files the graph walk restarts at (with the named files)
    graph_anchors: int = 3
    #: the files the vector signal ranks: the files nearest the query (an RRF rank past
    #: 200 adds under w_vectors / 220 to a file's score; both stores find them exactly)
    vector_limit: int = 200
    test_penalty: float = 0.2  # multiplies a test file's fused score (1.0: no penalty)
    #: multiplies files without a grammar (docs, configs, data) and tool configuration
    #: written in code (``*.config.js``, dotfiles): questions are about code
    non_code_penalty: float = 0.3
    #: multiplies vendored code (``vendor/``, ``third_party/``, ``*.min.js``, see
    #: ``is_vendored_path``). No signal looks at a file's language: a minority language of
    #: the tree (the frontend of a monorepo, the TypeScript source among JavaScript
    #: examples) ranks like the majority
    vendored_penalty: float = 0.5
    # filters
    path_prefix: str = ""
    languages: frozenset[str] = frozenset()  # empty: any
    exclude_tests: bool = False
    # fusion
    #: chosen on all 197 dev instances from a grid over rrf_k, w_files, w_title, w_chunks and
    #: w_mentions, in the middle of a flat plateau (see README "Flat retrieval: ablations");
    #: a smaller K than the usual 60 lets the first ranks of each signal count against the
    #: exact evidence of mentions
    rrf_k: float = 20.0
    w_files: float = 2.0
    w_title: float = 1.0
    w_chunks: float = 1.0
    #: 0: symbol BM25 only as a feature of the learned ranking (in the fused order it lowered
    #: the multilingual dev half, README "Flat retrieval: ablations")
    w_symbols: float = 0.0
    w_paths: float = 1.0
    w_vectors: float = 0.8
    w_mentions: float = 0.02  # per unit of exact evidence (understanding.py weights)
    #: documentation sections for prose questions (see the module docstring); 0 turns it off
    w_sections: float = 2.0
    # lexical
    #: the query's most important terms that go to chunk (and symbol) BM25. Measured when
    #: FTS5 ran it (every chunk any OR'ed term matched was scored): on all 197 dev instances 24
    #: terms beat 48 (recall@gold 0.476 -> 0.486, MRR 0.622 -> 0.629); kept, so the chunk
    #: ranking is the one measured
    max_terms: int = 24
    max_df_ratio: float = 0.1  # terms in more chunks than this share are too common
    file_limit: int = 1000
    chunk_limit: int = 4000
    symbol_limit: int = 1000
    second_chunk_share: float = 0.25  # a file's score: best chunk + share * second best


@dataclass(slots=True)
class _TreeFiles:
    nodes: dict[str, Node]  # path -> file node with content
    hash_by_path: dict[str, str]
    names: TreeNames
    language: dict[str, str | None]  # path -> language by extension (None: no grammar)
    contents: frozenset[str]  # the contents of ``hash_by_path``
    path_stats: PathCorpusStats | None = None
    #: file BM25 over the primary files, built by the first query that uses it
    file_index: _PrimaryFileIndex | None = None
    #: BM25 over the tree's chunks / symbol documents, built by the first query that uses it
    chunk_index: PartIndex | None = None
    symbol_index: PartIndex | None = None
    #: vocabulary ids of query terms already looked up (-1: no content has the term); a
    #: lookup costs about 0.2 ms, an issue has hundreds of terms
    term_ids: dict[str, int] = field(default_factory=dict)
    #: chunk positions of contents whose best chunk was shown (evidence), by content
    chunk_spans: dict[str, list[ChunkSpan]] = field(default_factory=dict)
    #: the tree's symbols by name (exact mentions, the symbols signal's evidence)
    catalog: SymbolCatalog | None = None
    #: exact symbol lookups: by the store's name indexes until the catalog is built
    symbols: TreeSymbols | None = None
    #: sections of the documentation files, built by the first prose question
    doc_sections: DocSections | None = None
    #: path -> (test, not code, vendored), by path conventions, filled as files are ranked
    classes: dict[str, tuple[bool, bool, bool]] = field(default_factory=dict)
    #: path -> the files of the tree it imports (resolved at query time), filled as needed
    imports: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: the files a query may rank, by what limits them (see :class:`_Scope`)
    scopes: dict[tuple[str, bool, tuple[str, ...]], _Scope] = field(default_factory=dict)
    #: the question's mentions matched against the tree's names, built on first use
    resolver: MentionResolver | None = None
    #: held while a table above is built: a query and a server's warm-up (or two queries)
    #: asking for one table at once build it once
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    def built(self, table: str, build: Callable[[], T]) -> T:
        """The table in field ``table``, built by ``build()`` on first use, once: a query and
        a server's warm-up (or two queries) asking at the same time build it once."""
        found = getattr(self, table)
        if found is None:
            with self.lock:
                found = getattr(self, table)
                if found is None:
                    found = build()
                    setattr(self, table, found)
        return cast(T, found)

    def classes_of(self, path: str) -> tuple[bool, bool, bool]:
        """Whether ``path`` is a test, not code (no grammar, or tool configuration), vendored."""
        found = self.classes.get(path)
        if found is None:
            lang = self.language.get(path)
            found = (
                is_test_path(path),
                lang is None or is_config_path(path),
                is_vendored_path(path),
            )
            self.classes[path] = found
        return found


#: the per-tree tables of the flat retriever, in the database's caches
TREE_FILES: Slot[_TreeFiles] = Slot("flat.tree_files")

#: scopes a tree's tables keep (a client may ask for any path prefix)
MAX_SCOPES = 16


@dataclass(slots=True)
class _Scope:
    """The files a query may rank under one configuration's limits (path prefix, tests,
    languages): the same for every question, so kept with the tree's files rather than
    recomputed per query (a pass over every file of the tree). Read-only once built."""

    paths: list[str]  # allowed files, in the tree's order
    path_set: frozenset[str]
    allowed: dict[str, list[str]]  # content hash -> its allowed paths
    #: per part layer: which of the layer's documents belong to allowed contents
    masks: dict[str, npt.NDArray[np.bool_]] = field(default_factory=dict)

    def mask(self, index: PartIndex) -> npt.NDArray[np.bool_]:
        found = self.masks.get(index.layer)
        if found is None:
            found = self.masks[index.layer] = index.contents_mask(self.allowed.keys())
        return found


@dataclass(slots=True)
class _PrimaryFileIndex:
    """File BM25 over a tree's primary files: code in any language, not tests, not vendored
    (the files issues are about; tests and docs share their words and crowd them out
    otherwise)."""

    index: FileBM25Index | None  # None: no primary file has term rows (an older database)
    paths: list[list[str]]  # per document of ``index``: the primary paths holding it
    #: what retrieval should know: the layer is missing, or some files lack it
    note: str | None
    #: path -> the file's token count over the mean of the primary files
    length: dict[str, float] = field(default_factory=dict)
    #: content hash -> its document number in ``index`` (filled on first use)
    position: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Signals:
    ranks: dict[str, dict[str, int]] = field(default_factory=dict)  # signal -> path -> rank
    evidence: dict[str, Evidence] = field(default_factory=lambda: defaultdict(Evidence))
    #: each path's best chunk by the chunk signal (shown as evidence of the returned hits)
    best_chunk: dict[str, RankedPart] = field(default_factory=dict)
    #: every chunk's score for the query's terms (None: not computed)
    chunk_scores: npt.NDArray[np.float64] | None = None
    #: a prose question: documentation files are not penalized as non-code
    prose: bool = False
    scores: dict[str, dict[str, float]] = field(default_factory=dict)  # signal -> path -> score

    def put(self, name: str, scores: dict[str, float]) -> None:
        """Signal ``name`` ranked these files by these scores."""
        self.ranks[name] = _ranks(scores)
        self.scores[name] = scores


def _chunk_evidence(span: ChunkSpan, score: float) -> ChunkEvidence:
    """A file's best chunk as shown in its evidence: where it is and how it scored."""
    return ChunkEvidence(
        index=span.index,
        type=str(span.type),
        start_line=span.start_line,
        end_line=span.end_line,
        symbol=span.symbol,
        score=round(score, 4),
    )


def _ranks(scores: dict[str, float]) -> dict[str, int]:
    ordered = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return {path: i + 1 for i, (path, _) in enumerate(ordered)}


@dataclass(slots=True)
class _Collected:
    """Every signal's ranking of one query, before fusion."""

    code: CodeStore
    files: _TreeFiles
    signals: _Signals
    matches: list[MentionMatch]
    terms: list[str]
    notes: list[str]
    vector_mode: bool


@dataclass(slots=True)
class CandidateTable:
    """The candidates of the learned ranking and their feature rows (one per path)."""

    paths: list[str]
    features: npt.NDArray[np.float64]
    #: "hybrid" when the vector signal took part (its columns are filled), else "lexical"
    mode: str = "lexical"


@dataclass(slots=True)
class FlatRanking:
    """What :meth:`FlatRetriever.rank` returns: the ranked files and what ran."""

    hits: list[FileHit]  # best first, without contents
    mode: str  # "lexical" | "hybrid" (vectors took part)
    terms: list[str]  # the weighted terms sent to the chunk index
    signals: list[str]  # the signals that ranked at least one file
    mentions: int  # exact mentions resolved to files of the tree
    seconds: float
    notes: list[str] = field(default_factory=list)  # what could not run fully, and why
    #: what ordered the files: "learned:lexical" / "learned:hybrid" (which learned model),
    #: "fused" (also a prose question under the learned ranking), "reference"
    ranked_by: str = "fused"

    def trace_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "mode": self.mode,
            "ranked_by": self.ranked_by,
            "terms": self.terms,
            "signals": self.signals,
            "mentions": self.mentions,
            "seconds": self.seconds,
        }
        if self.notes:
            params["notes"] = self.notes
        return params


class FlatRetriever(Retriever):
    """BM25 + exact mentions (+ vectors) over the code index; never calls an LLM."""

    name = "flat"

    def __init__(
        self,
        config: FlatConfig | None = None,
        *,
        embedder: Embedder | None = None,
        vector_kind: str = OUTLINE_KIND,
    ) -> None:
        self.config = config or FlatConfig()
        self.embedder = embedder
        self.vector_kind = vector_kind

    # -- tree files -----------------------------------------------------------------------
    @staticmethod
    def _tree_files(ctx: SearchContext) -> _TreeFiles:
        """The tree's files and derived tables, built once per tree version and kept in the
        database's caches (loading them costs more than a warm query: ~150 ms on a django
        tree). Nothing in them depends on the configuration."""
        return ctx.caches.get(TREE_FILES, ctx.tree, lambda: FlatRetriever._load_tree_files(ctx))

    @staticmethod
    def _load_tree_files(ctx: SearchContext) -> _TreeFiles:
        nodes = {n.path: n for n in ctx.store.file_nodes(ctx.tree.name)}
        hash_by_path = {p: h for p, n in nodes.items() if (h := code_content(p, n.content_hash))}
        language = {p: language_for_path(p) for p in nodes}
        names = TreeNames.build(list(nodes))
        return _TreeFiles(nodes, hash_by_path, names, language, frozenset(hash_by_path.values()))

    def _scope(self, code: CodeStore, files: _TreeFiles, cfg: FlatConfig) -> _Scope:
        """The files ``cfg`` lets a query rank, kept with the tree's files."""
        key = (cfg.path_prefix or "", cfg.exclude_tests, tuple(sorted(cfg.languages or ())))
        found = files.scopes.get(key)
        if found is not None:
            return found
        paths = [p for p in files.nodes if self._allowed(p, cfg)]
        allowed: dict[str, list[str]] = defaultdict(list)
        for p in paths:
            h = files.hash_by_path.get(p)
            if h:
                allowed[h].append(p)
        if cfg.languages:
            infos = code.code_files(allowed.keys())
            allowed = defaultdict(
                list,
                {
                    h: ps
                    for h, ps in allowed.items()
                    if h in infos and infos[h].language in cfg.languages
                },
            )
            paths = [p for ps in allowed.values() for p in ps]
        scope = _Scope(paths, frozenset(paths), dict(allowed))
        if len(files.scopes) >= MAX_SCOPES:
            files.scopes.clear()
        files.scopes[key] = scope
        return scope

    def _allowed(self, path: str, cfg: FlatConfig) -> bool:
        if cfg.path_prefix and not (
            path == cfg.path_prefix or path.startswith(cfg.path_prefix.rstrip("/") + "/")
        ):
            return False
        return not (cfg.exclude_tests and is_test_path(path))

    # -- signals --------------------------------------------------------------------------
    @staticmethod
    def _term_ids(code: CodeStore, files: _TreeFiles, terms: Sequence[str]) -> dict[str, int]:
        """Vocabulary ids of ``terms`` (-1: no content has the term), cached per tree."""
        ids = files.term_ids
        unseen = [t for t in dict.fromkeys(terms) if t not in ids]
        if unseen:
            found = code.term_ids(unseen)
            ids.update((t, found.get(t, -1)) for t in unseen)
        return {t: ids[t] for t in terms}

    @staticmethod
    def _chunk_index(code: CodeStore, files: _TreeFiles) -> PartIndex:
        """BM25 over the tree's chunks, built on first use and kept with the tree's files."""
        contents = files.hash_by_path.values()
        return files.built("chunk_index", lambda: PartIndex(code, CHUNK_PARTS, set(contents)))

    @staticmethod
    def _symbol_index(code: CodeStore, files: _TreeFiles) -> PartIndex:
        """BM25 over the tree's symbol documents, built on first use."""
        contents = files.hash_by_path.values()
        return files.built("symbol_index", lambda: PartIndex(code, SYMBOL_PARTS, set(contents)))

    @staticmethod
    def _catalog(code: CodeStore, files: _TreeFiles) -> SymbolCatalog:
        """The tree's symbols by name, read on first use and kept with the tree's files."""
        contents = files.hash_by_path.values()
        return files.built("catalog", lambda: SymbolCatalog(code.symbol_rows(set(contents))))

    @classmethod
    def _symbols(cls, code: CodeStore, files: _TreeFiles) -> TreeSymbols:
        """The tree's exact symbol lookups (the catalog once built, the store's name indexes
        before: :class:`TreeSymbols`)."""
        return files.built(
            "symbols",
            lambda: TreeSymbols(
                code, lambda: cls._catalog(code, files), lambda: files.catalog is not None
            ),
        )

    @classmethod
    def _resolver(cls, code: CodeStore, files: _TreeFiles) -> MentionResolver:
        """The question's mentions against the tree's names and symbols, built on first use."""
        return files.built(
            "resolver",
            lambda: MentionResolver(files.names, files.hash_by_path, cls._symbols(code, files)),
        )

    @staticmethod
    def _path_stats(files: _TreeFiles) -> PathCorpusStats:
        """The path BM25 statistics of the tree's files, built on first use."""
        return files.built("path_stats", lambda: PathCorpusStats.from_paths(list(files.nodes)))

    def warm(self, ctx: SearchContext) -> None:
        """Build every per-tree table a query of this tree version reads (its files, the
        configuration's scope, chunk and symbol BM25, the symbol catalog and the mention
        resolver, file BM25, path statistics, every file's resolved imports), so the next
        query finds them built. A server calls this in the background after a re-index
        (:mod:`treeseek.service.prewarm`): the tables are per tree version, and building them
        is most of a first query. The documentation sections that prose questions read are
        left to the first of those."""
        try:
            code = ctx.store.code()
        except Exception as exc:
            raise RetrievalError(f"flat retrieval needs the code index: {exc}") from exc
        files = self._tree_files(ctx)
        self._scope(code, files, self.config)
        # inverted now: a query's first reads would scan them otherwise (BM25Postings)
        self._chunk_index(code, files).postings.invert()
        self._symbol_index(code, files).postings.invert()
        self._resolver(code, files)
        self._catalog(code, files)  # the first lookups would go to the store otherwise
        primary = self._primary_file_index(code, files)
        if primary.index is not None:
            primary.index.invert()
        self._path_stats(files)
        # the import links the graph features walk (resolved per file as queries reach it)
        self._imports_of(code, files, list(files.nodes))

    def _doc_freqs(
        self, code: CodeStore, terms: list[str], files: _TreeFiles
    ) -> tuple[dict[str, int], int]:
        """Document frequencies of ``terms`` (0: no chunk of the tree has it) over the tree's
        chunks, and the tree's chunk count."""
        chunks = self._chunk_index(code, files)
        ids = self._term_ids(code, files, terms)
        dfs = chunks.doc_freqs(np.fromiter((ids[t] for t in terms), np.int64, len(terms)))
        return dict(zip(terms, dfs.tolist(), strict=True)), max(1, chunks.size)

    def _query_terms(
        self, code: CodeStore, query: ParsedQuery, cfg: FlatConfig, files: _TreeFiles
    ) -> list[str]:
        """The query's terms for BM25, most important first, repeated to weigh more.

        A term's importance: its IDF over the tree's chunks, times (1 + log of its count in the
        query), doubled in the first line (an issue's title) and for tokens of code-shaped
        identifiers. Stopwords, and terms in more than ``max_df_ratio`` of the tree's chunks
        (and more than 20), go.
        Chunk BM25 sums over the query's terms with repeats (as FTS5 did over the phrases of an
        OR query), so a repeated term counts again.
        """
        if not query.tokens:
            return []
        qtf = Counter(query.tokens)
        title = set(query.title_tokens)
        mentions = query.mentions
        code_like = set(unique_tokens(i for i, w in mentions.identifiers.items() if w >= 1.0))
        dfs, n = self._doc_freqs(code, list(qtf), files)
        scored: list[tuple[float, str]] = []
        for t, count in qtf.items():
            df = dfs.get(t)
            if not df or df > max(cfg.max_df_ratio * n, 20):
                continue
            weight = math.log(1 + n / df) * (1 + math.log(count))
            if t in title:
                weight *= 2.0
            if t in code_like:
                weight *= 1.5
            scored.append((weight, t))
        scored.sort(reverse=True)
        top = scored[: cfg.max_terms]
        if not top:
            return []
        out: list[str] = []
        best = top[0][0]
        for weight, t in top:
            out.extend([t] * (1 + int(2 * weight / best + 0.5) // 2))  # 1..2 copies
        return out

    @staticmethod
    def _primary_file_index(code: CodeStore, files: _TreeFiles) -> _PrimaryFileIndex:
        """The tree's file BM25 index, built on first use and kept with the tree's files."""
        return files.built("file_index", lambda: FlatRetriever._build_file_index(code, files))

    @staticmethod
    def _build_file_index(code: CodeStore, files: _TreeFiles) -> _PrimaryFileIndex:
        by_hash: dict[str, list[str]] = defaultdict(list)
        for p, h in files.hash_by_path.items():
            lang = files.language.get(p)
            if lang is None or is_test_path(p) or is_vendored_path(p) or is_config_path(p):
                continue
            if files.nodes[p].size == 0:
                continue  # an empty file has no terms to count (and is not missing any)
            by_hash[h].append(p)
        rows = code.file_terms(by_hash.keys())
        docs = [rows[h] for h in sorted(rows)]
        note: str | None = None
        if by_hash and not docs:
            note = (
                "files signal skipped: the database has no file term counts for this tree"
                " (written before that layer existed); run `treeseek index` again to add them"
            )
        elif len(docs) < len(by_hash):
            note = f"files signal: {len(by_hash) - len(docs)} primary files have no term counts"
        mean = sum(d.length for d in docs) / len(docs) if docs else 0.0
        return _PrimaryFileIndex(
            FileBM25Index(docs) if docs else None,
            [by_hash[d.content_hash] for d in docs],
            note,
            {p: d.length / mean for d in docs for p in by_hash[d.content_hash]} if mean else {},
        )

    def _file_signal(
        self,
        code: CodeStore,
        query_terms: Counter[str],
        files: _TreeFiles,
        cfg: FlatConfig,
        signals: _Signals,
        allowed: dict[str, list[str]],
        name: str,
    ) -> str | None:
        """Rank the allowed primary files by BM25 with every query term, each weighted by
        its count in the query, as signal ``name``; returns a note when the signal could not
        run fully."""
        primary = self._primary_file_index(code, files)
        if primary.index is None or not query_terms:
            return primary.note
        ids = self._term_ids(code, files, list(query_terms))
        query = {ids[t]: n for t, n in query_terms.items() if ids[t] >= 0}
        scored = primary.index.score(query)
        hit = np.flatnonzero(scored > 0)
        scores: dict[str, float] = {}
        for i in hit[np.argsort(-scored[hit], kind="stable")].tolist():
            digest = primary.index.hashes[i]
            keep = allowed.get(digest)
            if not keep:
                continue
            for p in primary.paths[i]:
                if p in keep:
                    scores[p] = float(scored[i])
            if len(scores) >= cfg.file_limit:
                break
        if scores:
            signals.put(name, scores)
        return primary.note

    def _query_weights(
        self, code: CodeStore, files: _TreeFiles, terms: list[str]
    ) -> dict[int, int]:
        """The chunk/symbol query: term id -> how often the term is in ``terms``."""
        ids = self._term_ids(code, files, terms)
        weights: Counter[int] = Counter()
        for t in terms:
            if ids[t] >= 0:
                weights[ids[t]] += 1
        return dict(weights)

    def _chunk_scores(
        self, code: CodeStore, terms: list[str], files: _TreeFiles, signals: _Signals
    ) -> npt.NDArray[np.float64]:
        """Every chunk's BM25 for ``terms`` (computed once per query)."""
        if signals.chunk_scores is None:
            chunks = self._chunk_index(code, files)
            signals.chunk_scores = chunks.score(self._query_weights(code, files, terms))
        return signals.chunk_scores

    def _spans(self, code: CodeStore, files: _TreeFiles, hashes: set[str]) -> None:
        """Make sure the chunk positions of ``hashes`` are in ``files.chunk_spans``."""
        missing = [h for h in hashes if h not in files.chunk_spans]
        if missing:
            found = code.chunk_spans(missing)
            for h in missing:
                files.chunk_spans[h] = found.get(h, [])

    def _chunk_evidence_of(
        self, code: CodeStore, files: _TreeFiles, parts: dict[str, RankedPart]
    ) -> dict[str, ChunkEvidence]:
        """Evidence of ranked chunks, by path."""
        self._spans(code, files, {p.content_hash for p in parts.values()})
        out: dict[str, ChunkEvidence] = {}
        for path, part in parts.items():
            spans = files.chunk_spans.get(part.content_hash, [])
            if part.index < len(spans):
                out[path] = _chunk_evidence(spans[part.index], part.score)
        return out

    def _add_chunk_evidence(
        self,
        code: CodeStore,
        terms: list[str],
        hits: list[FileHit],
        files: _TreeFiles,
        signals: _Signals,
    ) -> None:
        """The best chunk of each returned file: the chunk signal's, else the file's best
        chunk for the query's terms."""
        reached = {h.path: signals.best_chunk[h.path] for h in hits if h.path in signals.best_chunk}
        want = {
            files.hash_by_path[h.path]
            for h in hits
            if h.path not in reached
            and h.path in files.hash_by_path
            and h.evidence.chunk is None  # a documentation section found by ``sections``
        }
        sectioned = {h.path for h in hits if h.evidence.chunk is not None}
        for path in sectioned:
            reached.pop(path, None)  # a documentation section found by ``sections`` stays
        best: dict[str, RankedPart] = {}
        if want:
            chunks = self._chunk_index(code, files)
            best = chunks.best_of(self._chunk_scores(code, terms, files, signals), want)
        for h in hits:
            top = best.get(files.hash_by_path.get(h.path, ""))
            if top is not None:
                reached.setdefault(h.path, top)
        evidence = self._chunk_evidence_of(code, files, reached)
        for h in hits:
            found = evidence.get(h.path)
            if found is not None:
                h.evidence.chunk = found

    @staticmethod
    def doc_sections(ctx: SearchContext) -> DocSections:
        """The sections of the tree's documentation files (Markdown/reST, not release notes),
        built on first use and kept with the tree's files: what the ``sections`` signal ranks,
        and what code retrieval falls back to when its code layers find nothing."""
        return FlatRetriever._doc_sections(ctx, FlatRetriever._tree_files(ctx))

    @staticmethod
    def _doc_sections(ctx: SearchContext, files: _TreeFiles) -> DocSections:
        if files.doc_sections is None:
            docs = {p: h for p, h in files.hash_by_path.items() if is_doc_path(p)}
            blobs = ctx.store.contents(list(set(docs.values())))
            files.doc_sections = DocSections.build(
                {p: blobs[h] for p, h in docs.items() if h in blobs}
            )
        return files.doc_sections

    @staticmethod
    def _section_signal(
        ctx: SearchContext,
        query: str,
        files: _TreeFiles,
        signals: _Signals,
        allowed: frozenset[str],
    ) -> None:
        """Documentation files ranked by their best section (prose questions only)."""
        sections = FlatRetriever._doc_sections(ctx, files)
        best = {p: v for p, v in sections.best_by_file(query).items() if p in allowed}
        if not best:
            return
        signals.put("sections", {p: score for p, (score, _) in best.items()})
        for p, (score, chunk) in best.items():
            signals.evidence[p].chunk = ChunkEvidence(
                index=chunk.index,
                type=chunk.type.value,
                start_line=chunk.start_line,
                end_line=chunk.end_line,
                symbol=chunk.symbol,
                score=round(score, 4),
            )

    def _chunk_signal(
        self,
        code: CodeStore,
        terms: list[str],
        files: _TreeFiles,
        cfg: FlatConfig,
        signals: _Signals,
        scope: _Scope,
    ) -> None:
        chunks = self._chunk_index(code, files)
        scores = self._chunk_scores(code, terms, files, signals)
        allowed = scope.allowed
        # a file scores its best chunk plus a share of its second best, among the best
        # ``chunk_limit`` chunks of the allowed files
        best, seconds = chunks.best_two(scores, scope.mask(chunks), cfg.chunk_limit)
        found: dict[str, float] = {}
        for part, second in zip(best, seconds, strict=True):
            score = part.score + cfg.second_chunk_share * second
            for p in allowed.get(part.content_hash, ()):
                found[p] = score
                signals.best_chunk[p] = part
        signals.put("chunks", found)

    def _symbol_signal(
        self,
        code: CodeStore,
        terms: list[str],
        files: _TreeFiles,
        cfg: FlatConfig,
        signals: _Signals,
        scope: _Scope,
    ) -> None:
        index = self._symbol_index(code, files)
        scores = index.score(self._query_weights(code, files, terms))
        allowed = scope.allowed
        ranked = index.top(scores, scope.mask(index), cfg.symbol_limit)
        found: dict[str, float] = {}
        catalog = self._catalog(code, files)
        for part in ranked:
            qname = catalog.qname(part.content_hash, part.index)
            if qname is None:
                continue
            for p in allowed.get(part.content_hash, ()):
                if p not in found:
                    found[p] = part.score
                    signals.evidence[p].symbols.append(qname)
        signals.put("symbols", found)

    def _path_signal(
        self, query: str, files: _TreeFiles, paths: list[str], signals: _Signals
    ) -> None:
        scored = BM25PathScorer(stats=self._path_stats(files)).score(query, paths)
        if scored is None:
            return
        signals.put("paths", {p: s for p, s in zip(paths, scored, strict=True) if s > 0})

    def _vector_signal(
        self,
        code: CodeStore,
        query: str,
        allowed: dict[str, list[str]],
        cfg: FlatConfig,
        signals: _Signals,
    ) -> bool:
        """The ``vector_limit`` files nearest the query (by the store, exactly on both
        backends: a function of this tree's vectors only)."""
        if self.embedder is None:
            return False
        if isinstance(self.embedder, QueryEmbedder):
            q = self.embedder.embed_query(query)
        else:
            q = self.embedder.embed([query])[0]
        keys = [VectorKey(h, p) for h, paths in allowed.items() for p in paths]
        nearest = code.nearest(self.embedder.name, self.vector_kind, q, cfg.vector_limit, keys)
        if not nearest:
            return False
        scores = {key.path: float(s) for key, s in nearest}
        signals.put("vectors", scores)
        return True

    # -- retrieve -------------------------------------------------------------------------
    def _collect(self, ctx: SearchContext, query: str) -> _Collected:
        """Run every switched-on signal for ``query`` over the tree's allowed files."""
        cfg = self.config
        try:
            code = ctx.store.code()
        except Exception as exc:
            raise RetrievalError(f"flat retrieval needs the code index: {exc}") from exc
        files = self._tree_files(ctx)
        scope = self._scope(code, files, cfg)
        paths, allowed = scope.paths, scope.allowed
        signals = _Signals()
        notes: list[str] = []
        parsed = ParsedQuery.parse(query)
        signals.prose = cfg.w_sections > 0 and is_prose_question(parsed)
        terms = self._query_terms(code, parsed, cfg, files)
        if cfg.files:
            note = self._file_signal(
                code, Counter(parsed.tokens), files, cfg, signals, allowed, "files"
            )
            if note:
                notes.append(note)
        if cfg.title and parsed.has_body:
            self._file_signal(
                code, Counter(parsed.title_tokens), files, cfg, signals, allowed, "title"
            )
        if cfg.chunks and terms:
            self._chunk_signal(code, terms, files, cfg, signals, scope)
        if cfg.symbols and terms:
            self._symbol_signal(code, terms, files, cfg, signals, scope)
        if signals.prose:
            self._section_signal(ctx, query, files, signals, scope.path_set)
        matches: list[MentionMatch] = []
        if cfg.mentions:
            resolver = self._resolver(code, files)
            allowed_paths = scope.path_set
            matches = [m for m in resolver.resolve(parsed.mentions) if m.path in allowed_paths]
            for m in matches:
                signals.evidence[m.path].mentions.append(
                    MentionEvidence(kind=m.kind, text=m.text, symbol=m.symbol, line=m.line)
                )
        if cfg.paths:
            candidates = (
                set(paths)
                if len(paths) <= PATH_CANDIDATES
                else {p for ranks in signals.ranks.values() for p in ranks}
                | {m.path for m in matches}
            )
            self._path_signal(query, files, sorted(candidates), signals)
        vector_mode = cfg.vectors and self._vector_signal(code, query, allowed, cfg, signals)
        if cfg.vectors and self.embedder is not None and not vector_mode:
            notes.append(
                f"no {self.embedder.name} vectors of this tree's files: ranked without vectors"
                " (index the tree with --vectors to store them)"
            )
        return _Collected(code, files, signals, matches, terms, notes, vector_mode)

    def rank(self, ctx: SearchContext, query: str, k: int, *, evidence: bool = True) -> FlatRanking:
        """Rank the tree's files: hits without content, and what ran (for the trace).

        ``evidence=False`` leaves out the best chunk of each hit (looking chunk positions up):
        callers that only want scores of many files."""
        cfg = self.config
        started = time.perf_counter()
        got = self._collect(ctx, query)
        files, signals, matches, terms = got.files, got.signals, got.matches, got.terms
        ranked_by = cfg.ranking
        if cfg.ranking == "reference":
            ordered = self._reference_order(signals, matches)
        else:
            ordered = self._fused_order(signals, matches, cfg, files)
            ranked_by = "fused"
            if cfg.ranking == "learned" and not signals.prose:
                # the hybrid model when vectors ranked (it weighs their columns), else the
                # lexical one: each fitted on dumps of its own mode
                model = HYBRID_MODEL if got.vector_mode else LEARNED_MODEL
                ordered = self._learned_order(
                    got.code, query, ordered, signals, matches, cfg, files, terms, model
                )
                ranked_by = f"learned:{model.name}"
        hits: list[FileHit] = []
        for path, score in ordered[:k]:
            node = files.nodes[path]
            known = signals.evidence.get(path)
            ev = replace(known) if known is not None else Evidence()
            ev.why = {s: r[path] for s, r in signals.ranks.items() if path in r}
            hits.append(
                FileHit(
                    node_id=node.id,
                    path=path,
                    score=round(score, 6),
                    content_status=str(node.content_status),
                    evidence=ev,
                )
            )
        if terms and evidence:
            self._add_chunk_evidence(got.code, terms, hits, files, signals)
        return FlatRanking(
            hits=hits,
            mode="hybrid" if got.vector_mode else "lexical",
            terms=terms,
            signals=sorted(signals.ranks),
            mentions=len(matches),
            seconds=round(time.perf_counter() - started, 4),
            notes=got.notes,
            ranked_by=ranked_by,
        )

    def candidate_table(self, ctx: SearchContext, query: str) -> CandidateTable:
        """The fused order's first ``learned_depth`` files and their features (what the
        learned ranking scores; ``bench/fit_flat_ltr.py`` fits the model on these)."""
        cfg = self.config
        got = self._collect(ctx, query)
        ordered = self._fused_order(got.signals, got.matches, cfg, got.files)
        cands = self._candidates(got.code, ordered[: cfg.learned_depth], got.files, cfg)
        x = self._features(
            query, cands, got.signals, got.matches, cfg, got.code, got.files, got.terms, ordered
        )
        return CandidateTable(
            [c.path for c in cands], x, "hybrid" if got.vector_mode else "lexical"
        )

    def _candidates(
        self, code: CodeStore, ordered: list[tuple[str, float]], files: _TreeFiles, cfg: FlatConfig
    ) -> list[Candidate]:
        length = self._primary_file_index(code, files).length
        out: list[Candidate] = []
        for i, (p, score) in enumerate(ordered):
            test, non_code, vendored = files.classes_of(p)
            out.append(
                Candidate(
                    path=p,
                    fused=score,
                    fused_rank=i + 1,
                    test=test,
                    non_code=non_code,
                    vendored=vendored,
                    length=length.get(p, 0.0),
                )
            )
        return out

    def _features(
        self,
        query: str,
        cands: list[Candidate],
        signals: _Signals,
        matches: list[MentionMatch],
        cfg: FlatConfig,
        code: CodeStore,
        files: _TreeFiles,
        terms: list[str],
        ordered: list[tuple[str, float]],
        *,
        text: bool = True,
    ) -> npt.NDArray[np.float64]:
        """The candidates' feature rows (``text=False``: the text-match columns left 0, not
        computed)."""
        kinds: dict[str, Counter[str]] = defaultdict(Counter)
        for m in matches:
            kinds[m.path][m.kind] += 1
        evidence = files_by_evidence(matches)
        graph = self._graph_scores(code, files, cands, evidence, cfg) if cfg.graph else None
        return candidate_features(
            cands,
            signals.ranks,
            signals.scores,
            kinds,
            evidence,
            rrf_k=cfg.rrf_k,
            words=query_words(query),
            graph=graph,
            text=self._text_matches(code, files, query, terms, cands, ordered) if text else None,
        )

    def _text_matches(
        self,
        code: CodeStore,
        files: _TreeFiles,
        query: str,
        terms: list[str],
        cands: list[Candidate],
        ordered: list[tuple[str, float]],
    ) -> dict[str, TextMatch]:
        """What of the question each candidate's stored text covers (:class:`TextMatch`):
        term coverage over the file and over its best chunk, the named identifiers it
        defines, the fused rank of its test counterpart."""
        parsed = ParsedQuery.parse(query)
        hashes = {c.path: files.hash_by_path.get(c.path, "") for c in cands}
        file_cover: dict[str, float] = {}
        terms_cover: dict[str, float] = {}
        primary = self._primary_file_index(code, files)
        if primary.index is not None and parsed.tokens:
            index = primary.index
            position = primary.position
            if not position:
                position.update((h, i) for i, h in enumerate(index.hashes))
            ids = self._term_ids(code, files, list(dict.fromkeys(parsed.tokens)))
            every = index.coverage(np.fromiter((i for i in ids.values() if i >= 0), np.int64))
            top_ids = [ids[t] for t in dict.fromkeys(terms) if ids.get(t, -1) >= 0]
            top = index.coverage(np.asarray(top_ids, dtype=np.int64))
            for p, h in hashes.items():
                if (i := position.get(h)) is not None:
                    file_cover[p] = float(every[i])
                    terms_cover[p] = float(top[i])
        chunk_cover: dict[str, float] = {}
        if terms:
            chunks = self._chunk_index(code, files)
            ids = self._term_ids(code, files, terms)
            cover = chunks.postings.coverage(
                np.asarray([i for i in ids.values() if i >= 0], dtype=np.int64)
            )
            best = chunks.best_per_content(cover, set(hashes.values()))
            chunk_cover = {p: best.get(h, 0.0) for p, h in hashes.items()}
        defined: dict[str, float] = defaultdict(float)
        names = set()
        for ident in parsed.mentions.identifiers:
            names.add(ident)
            names.add(ident.rpartition(".")[2])
        if names:
            symbols = self._symbols(code, files)
            definers: dict[str, set[str]] = defaultdict(set)
            for hit in symbols.symbols_named(sorted(names), files.contents):
                for n in {hit.name, hit.qname} & names:
                    definers[n].add(hit.content_hash)
            by_hash: dict[str, float] = defaultdict(float)
            for contents in definers.values():
                for h in contents:
                    by_hash[h] += 1.0 / len(contents)
            defined.update((p, by_hash.get(h, 0.0)) for p, h in hashes.items())
        best_rank: dict[tuple[str, bool], int] = {}
        for rank, (p, _) in enumerate(ordered, start=1):
            best_rank.setdefault((counterpart_stem(p), files.classes_of(p)[0]), rank)
        out: dict[str, TextMatch] = {}
        for c in cands:
            pair = best_rank.get((counterpart_stem(c.path), not c.test))
            out[c.path] = TextMatch(
                file_cover=file_cover.get(c.path, 0.0),
                terms_cover=terms_cover.get(c.path, 0.0),
                chunk_cover=chunk_cover.get(c.path, 0.0),
                defined=defined.get(c.path, 0.0),
                pair_rr=1.0 / pair if pair else 0.0,
            )
        return out

    @staticmethod
    def _imports_of(code: CodeStore, files: _TreeFiles, paths: Sequence[str]) -> None:
        """Make sure ``files.imports`` has the resolved imports of ``paths`` (one read of the
        stored import references of those not seen yet)."""
        missing = [p for p in paths if p not in files.imports]
        if not missing:
            return
        refs = code.import_refs({files.hash_by_path[p] for p in missing if p in files.hash_by_path})
        resolver = ImportResolver(files.names)
        for p in missing:
            found: dict[str, None] = {}
            # ``from a.b import c, d`` is one edge per name: resolve each reference once
            for ref in dict.fromkeys(refs.get(files.hash_by_path.get(p, ""), ())):
                for target in resolver.resolve(p, ref):
                    if target != p:
                        found[target] = None
            files.imports[p] = tuple(found)

    def _graph_scores(
        self,
        code: CodeStore,
        files: _TreeFiles,
        cands: list[Candidate],
        evidence: dict[str, float],
        cfg: FlatConfig,
    ) -> dict[str, GraphScore]:
        """Each candidate's links to the question's anchor files (the fused order's first
        ``graph_anchors`` files, the files it names) and its personalized PageRank over the
        import links among the candidates and anchors, restarting at the anchors."""
        top = max((c.fused for c in cands), default=0.0) or 1.0
        restart: dict[str, float] = {c.path: c.fused / top for c in cands[: cfg.graph_anchors]}
        named = max(evidence.values(), default=0.0) or 1.0
        for p, ev in evidence.items():
            if p in files.nodes:
                restart[p] = max(restart.get(p, 0.0), ev / named)
        nodes = list(dict.fromkeys([c.path for c in cands] + sorted(restart)))
        self._imports_of(code, files, nodes)
        links = {p: files.imports[p] for p in nodes}
        ppr = personalized_pagerank(nodes, links, restart)
        linked: dict[str, set[str]] = defaultdict(set)
        for src, dsts in links.items():
            for dst in dsts:
                if src in restart:
                    linked[dst].add(src)
                if dst in restart:
                    linked[src].add(dst)
        walked = {c.path: ppr[c.path] for c in cands if c.path not in restart}
        best = max(walked.values(), default=0.0)
        out: dict[str, GraphScore] = {}
        for c in cands:
            others = linked.get(c.path, set()) - {c.path}
            share = ppr[c.path] / best if best > 0 and c.path in walked else 0.0
            out[c.path] = GraphScore(links=len(others), ppr=share if others or share else 0.0)
        return out

    def _learned_order(
        self,
        code: CodeStore,
        query: str,
        ordered: list[tuple[str, float]],
        signals: _Signals,
        matches: list[MentionMatch],
        cfg: FlatConfig,
        files: _TreeFiles,
        terms: list[str],
        model: LinearModel,
    ) -> list[tuple[str, float]]:
        """The fused order's first ``learned_depth`` files rescored by ``model`` (score: the
        model's softmax share among them); the rest follow in fused order."""
        head = ordered[: cfg.learned_depth]
        if len(head) < 2:
            return ordered
        cands = self._candidates(code, head, files, cfg)
        z = model.score(
            self._features(
                query,
                cands,
                signals,
                matches,
                cfg,
                code,
                files,
                terms,
                ordered,
                text=model.uses(TEXT_FEATURES),
            )
        )
        p = np.exp(z - z.max())
        p /= p.sum()
        order = np.argsort(-p, kind="stable")
        out = [(cands[i].path, float(p[i])) for i in order.tolist()]
        tail = ordered[cfg.learned_depth :]
        if tail:
            floor = 0.5 * float(p.min())
            top = tail[0][1] or 1.0
            out += [(path, floor * score / top) for path, score in tail]
        return out

    def _fused_order(
        self, signals: _Signals, matches: list[MentionMatch], cfg: FlatConfig, files: _TreeFiles
    ) -> list[tuple[str, float]]:
        weights = {
            "files": cfg.w_files,
            "title": cfg.w_title,
            "chunks": cfg.w_chunks,
            "symbols": cfg.w_symbols,
            "paths": cfg.w_paths,
            "vectors": cfg.w_vectors,
            "sections": cfg.w_sections,
        }
        scores: dict[str, float] = defaultdict(float)
        for name, ranks in signals.ranks.items():
            w = weights[name]
            if w <= 0:
                continue  # a feature of the learned ranking only
            for p, r in ranks.items():
                scores[p] += w / (cfg.rrf_k + r)
        for p, ev in files_by_evidence(matches).items():
            scores[p] += cfg.w_mentions * ev
        for p in scores:
            if signals.prose and is_doc_path(p):
                scores[p] *= cfg.test_penalty if is_test_path(p) else 1.0
            else:
                scores[p] *= self._prior(p, cfg, files)
        return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))

    @staticmethod
    def _prior(path: str, cfg: FlatConfig, files: _TreeFiles) -> float:
        """Multiplicative penalties of a file: tests, files that are not code, vendored code;
        never its language."""
        test, non_code, vendored = files.classes_of(path)
        factor = cfg.test_penalty if test else 1.0
        if non_code:
            factor *= cfg.non_code_penalty
        elif vendored:
            factor *= cfg.vendored_penalty
        return factor

    def _reference_order(
        self, signals: _Signals, matches: list[MentionMatch]
    ) -> list[tuple[str, float]]:
        """(lexical rank, test penalty, layer rank, distance) over items; files by first item.

        Lexical rank: 0 exact name/path match, 1 symbol text match, 2 chunk text match.
        Layer rank: C1 symbols before C0 chunks. Distance: the vector rank when vectors ran.
        """
        items: list[tuple[int, int, int, float, str]] = []
        vec = signals.ranks.get("vectors", {})
        for m in matches:
            layer = 1 if m.kind in ("symbol", "qname") else 3
            items.append((0, int(is_test_path(m.path)), layer, -m.weight, m.path))
        for p, r in signals.ranks.get("symbols", {}).items():
            items.append((1, int(is_test_path(p)), 1, float(vec.get(p, r)), p))
        for name in ("files", "chunks"):
            for p, r in signals.ranks.get(name, {}).items():
                items.append((2, int(is_test_path(p)), 3, float(vec.get(p, r)), p))
        items.sort()
        out: list[tuple[str, float]] = []
        seen: set[str] = set()
        for i, it in enumerate(items):
            if it[4] not in seen:
                seen.add(it[4])
                out.append((it[4], 1.0 / (1 + i)))
        return out

    def retrieve(self, ctx: SearchContext, query: str, options: QueryOptions) -> Result:
        languages = frozenset({options.language}) if options.language else frozenset()
        prefix, cfg = options.path_prefix, self.config
        if (prefix and prefix != cfg.path_prefix) or (languages and languages != cfg.languages):
            # the files under one directory, or of one language: the same retriever (its
            # embedder), that scope
            scoped = copy.copy(self)
            scoped.config = replace(
                cfg, path_prefix=prefix or cfg.path_prefix, languages=languages or cfg.languages
            )
            return scoped.retrieve(ctx, query, options)
        started = time.perf_counter()
        ranking = self.rank(ctx, query, options.k)
        hits = attach_contents(ctx.store, ctx.tree.name, ranking.hits, options)
        trace = Trace(strategy=self.name, navigator="none")
        trace.params.update(ranking.trace_params())
        trace.paths.update({h.node_id: h.path for h in hits})
        trace.stop_reason = f"{len(hits)} files ranked ({ranking.mode})"
        trace.wall_s = round(time.perf_counter() - started, 4)
        return Result(
            files=hits,
            strategy=self.name,
            navigator="none",
            trace=trace,
            usage=Usage(),
            cost_usd=0.0,
        )


#: release notes: sections by version, which match every question's words and answer none
_CHANGELOG_NAMES = ("changes", "changelog", "history", "news", "release")

#: first words of a question asked in prose ("how do I ...", "what is ...")
QUESTION_WORDS = frozenset(
    {
        "how",
        "what",
        "why",
        "where",
        "when",
        "which",
        "who",
        "whom",
        "can",
        "could",
        "should",
        "would",
        "is",
        "are",
        "does",
        "do",
        "did",
        "explain",
    }
)


def is_doc_path(path: str) -> bool:
    """A documentation file cut at its headings (Markdown, reST), not release notes."""
    low = path.lower()
    if not low.endswith(SECTION_SUFFIXES):
        return False
    return not low.rpartition("/")[2].startswith(_CHANGELOG_NAMES)


def is_prose_question(parsed: ParsedQuery) -> bool:
    """A question asked in prose: one line, phrased as a question (a question word first, or a
    question mark last), naming no code (no path, module, stack frame or code-shaped
    identifier). Keyword queries ("session cookie signing") are not: they rank as before."""
    m = parsed.mentions
    if parsed.has_body or m.paths or m.frames or m.exceptions:
        return False
    if any(w >= 1.0 for w in m.identifiers.values()):
        return False
    text = parsed.first_line.strip()
    words = text.split(maxsplit=1)
    return bool(words) and (text.endswith("?") or words[0].lower() in QUESTION_WORDS)


def flat_mode(retriever: FlatRetriever) -> str:
    """ "hybrid" when the retriever can use vectors, else "lexical"."""
    return "hybrid" if retriever.embedder is not None and retriever.config.vectors else "lexical"


def chunk_statistics(ctx: SearchContext, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
    """The tree's chunk count and how many of its chunks contain each of ``terms`` (0: none):
    the statistics of chunk BM25 for callers outside flat retrieval (say, picking a file's
    best chunks for a question), from the index flat keeps in the database's caches."""
    files = FlatRetriever._tree_files(ctx)
    code = ctx.store.code()
    chunks = FlatRetriever._chunk_index(code, files)
    ids = FlatRetriever._term_ids(code, files, list(terms))
    dfs = chunks.doc_freqs(np.fromiter((ids[t] for t in terms), np.int64, len(terms)))
    return chunks.size, dict(zip(terms, dfs.tolist(), strict=True))


__all__: Sequence[str] = (
    "CandidateTable",
    "FlatConfig",
    "FlatRetriever",
    "chunk_statistics",
    "flat_mode",
)
