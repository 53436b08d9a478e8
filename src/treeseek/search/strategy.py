"""Strategy selection (spec section 1) and the one table of retrievers.

``run_query`` reads the tree metadata first: a non-filesystem tree goes to the document
retriever. Otherwise ``beam`` and ``block`` run directly, ``auto`` uses Beam for trees of at
most 50 nodes and Block above, and any other registered name (``flat`` ...) runs as registered.

Every built-in strategy is one row of :data:`BUILTIN_STRATEGIES` (name -> factory); this module
is the top of ``treeseek.search`` and the only one that knows them all. :func:`register` adds a
strategy at run time (a plugin, a test). Tree search aided by flat retrieval is not a special
case here: the Beam and Block factories return an :class:`~treeseek.search.aided.AidedTreeSearch`
that wraps them when the options ask for flat's aids.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from treeseek.code.languages import SUPPORTED
from treeseek.embed.base import Embedder
from treeseek.embed.hashing import HashingEmbedder
from treeseek.embed.neural import packaged_model
from treeseek.errors import ConfigError, RetrievalError
from treeseek.llm.base import Navigator
from treeseek.llm.deadline import Deadline, resolve_deadline_s, seconds
from treeseek.rank.paths import BM25PathScorer, PathScorer, VectorPathScorer
from treeseek.search.aided import AidedTreeSearch, SearchAids, wants_content
from treeseek.search.base import (
    MAX_QUESTION_CHARS,
    QueryOptions,
    Result,
    Retriever,
    SearchContext,
)
from treeseek.search.caches import TreeCaches
from treeseek.search.tree.beam import BeamRetriever
from treeseek.search.tree.block import BlockRetriever
from treeseek.store.base import Store
from treeseek.trees.model import TreeInfo, is_clean_path

#: trees with at most this many nodes use Beam under ``auto``; larger trees use Block
AUTO_BEAM_MAX_NODES = 50
#: the name under which the retriever of non-filesystem (document) trees registers
DOCUMENT_STRATEGY = "document"
#: what a caller who names no strategy and has no LLM gets, once registered (else ``auto``)
NO_LLM_DEFAULT = "flat"
#: path rankers for ConstrainedPathOrder (``--ranker``); ``flat`` reads file contents
RANKERS: tuple[str, ...] = ("none", "bm25", "vector", "flat")

RetrieverFactory = Callable[[QueryOptions], Retriever]


def register(name: str, factory: RetrieverFactory) -> None:
    """Make ``factory(options) -> Retriever`` available as strategy ``name``."""
    if name == "auto":
        raise ValueError("'auto' is the selection rule, not a strategy name")
    _registry[name] = factory


def strategies() -> list[str]:
    """Registered strategy names (plus ``auto``), for help texts and errors."""
    return ["auto", *sorted(n for n in _registry if n != DOCUMENT_STRATEGY)]


def default_strategy(navigator: Navigator | str) -> str:
    """The strategy when none is named: LLM tree search (``auto``) with an LLM navigator; with
    the lexical navigator (no LLM), flat retrieval when it is registered, else ``auto``.

    ``navigator``: the navigator, or its name / spec (``"lexical"``, ``"anthropic:MODEL"``)."""
    name = navigator if isinstance(navigator, str) else navigator.name
    if name.strip().lower() == "lexical" and NO_LLM_DEFAULT in _registry:
        return NO_LLM_DEFAULT
    return "auto"


def path_scorer(name: str | None) -> PathScorer | None:
    """The path-only ranker named by ``--ranker`` (``None``/``"none"``: no ranker).

    ``flat`` scores contents of one tree for one query; :func:`run_query` builds it with the
    search context (:mod:`treeseek.search.aided`)."""
    if name is None or name == "none":
        return None
    if name == "bm25":
        return BM25PathScorer()
    if name == "vector":
        return VectorPathScorer(vector_embedder())
    if name == "flat":
        raise ConfigError("the flat ranker reads a tree's contents; use it through run_query")
    raise ConfigError(f"unknown ranker {name!r}; choose one of {', '.join(RANKERS)}")


def vector_embedder() -> Embedder:
    """The embedder of ``--ranker vector``: the packaged model when it is installed (the
    spec's formula over real embeddings), else the feature-hashing embedder (no model, nothing
    to install). The trace names the one that ranked (``vector:all-minilm-l6-v2``)."""
    model = packaged_model()
    return model if model is not None else HashingEmbedder()


def select_strategy(tree: TreeInfo, strategy: str) -> str:
    """Which registered strategy answers ``strategy`` on ``tree`` (spec section 1, steps 1-3)."""
    if not tree.source.is_filesystem:
        if DOCUMENT_STRATEGY not in _registry:
            raise RetrievalError(
                f"tree {tree.name!r} is a {tree.source.value} tree; it needs the document "
                "retriever, which is not available in this version of treeseek"
            )
        return DOCUMENT_STRATEGY
    if strategy == "auto":
        return "beam" if tree.node_count <= AUTO_BEAM_MAX_NODES else "block"
    if strategy not in _registry:
        raise ConfigError(f"unknown strategy {strategy!r}; choose one of {', '.join(strategies())}")
    return strategy


#: QueryOptions fields that must be integers (``None`` allowed for the ones in _OPTIONAL)
_INT_OPTIONS = (
    "k",
    "beam_width",
    "block_tokens",
    "top_layer_tokens",
    "hints",
    "cache_window_tokens",
    "max_rounds",
    "max_depth",
    "max_file_bytes",
    "max_total_bytes",
)
_BOOL_OPTIONS = ("cache", "cache_current_block", "cache_subtree_block", "include_content")
_STR_OPTIONS = ("strategy", "ranker", "vectors", "path_prefix", "language")
_OPTIONAL = frozenset({"beam_width", "max_depth", "ranker", "vectors"})


def _check_types(options: QueryOptions) -> None:
    """Every option has its declared type (a caller may pass ``k='5'`` through the API)."""
    for name in _INT_OPTIONS:
        value = getattr(options, name)
        if value is None and name in _OPTIONAL:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"query option {name} must be an integer, got {value!r}")
    for name in _BOOL_OPTIONS:
        if not isinstance(getattr(options, name), bool):
            raise ConfigError(
                f"query option {name} must be true or false, got {getattr(options, name)!r}"
            )
    for name in _STR_OPTIONS:
        value = getattr(options, name)
        if not (isinstance(value, str) or (value is None and name in _OPTIONAL)):
            raise ConfigError(f"query option {name} must be a string, got {value!r}")
    if options.deadline_s is not None:
        seconds(options.deadline_s, "the query deadline (deadline_s)")
    if options.llm_timeout_s is not None:
        seconds(options.llm_timeout_s, "the LLM call timeout (llm_timeout_s)", allow_zero=False)


def _validate(question: str, options: QueryOptions) -> None:
    if not isinstance(question, str):
        raise ConfigError(f"the question must be a string, got {type(question).__name__}")
    _check_types(options)
    if len(question) > MAX_QUESTION_CHARS:
        raise ConfigError(
            f"the question is {len(question):,} characters; the maximum is "
            f"{MAX_QUESTION_CHARS:,} (shorten it, e.g. keep the issue text and the relevant "
            "part of a log)"
        )
    if not question.strip():
        raise ConfigError("the question is empty; pass the text to search for")
    if options.k < 1:
        raise ConfigError(f"k must be at least 1, got {options.k}")
    if options.beam_width is not None and options.beam_width < 1:
        raise ConfigError(f"beam width must be at least 1, got {options.beam_width}")
    if options.block_tokens < 1:
        raise ConfigError(f"block token budget must be at least 1, got {options.block_tokens}")
    if options.max_rounds < 1:
        raise ConfigError(f"max rounds must be at least 1, got {options.max_rounds}")
    if options.max_depth is not None and options.max_depth < 0:
        raise ConfigError(f"max depth must be at least 0, got {options.max_depth}")
    if options.ranker not in (None, *RANKERS):
        raise ConfigError(f"unknown ranker {options.ranker!r}; choose one of {', '.join(RANKERS)}")
    if options.hints < 0:
        raise ConfigError(f"hints must be at least 0, got {options.hints}")
    if options.language and options.language not in SUPPORTED:
        raise ConfigError(
            f"unknown language {options.language!r:.80}; one of: {', '.join(sorted(SUPPORTED))}"
        )
    if options.path_prefix and not is_clean_path(options.path_prefix):
        raise ConfigError(
            f"path_prefix {options.path_prefix!r:.200} is not a clean repo-relative path (no"
            " leading '/', no '.' or '..' parts); give a directory of the tree"
        )


def run_query(
    store: Store,
    tree_info: TreeInfo,
    question: str,
    options: QueryOptions,
    navigator: Navigator | None = None,
    *,
    caches: TreeCaches | None = None,
) -> Result:
    """Answer ``question`` over one tree with the selected strategy.

    ``navigator`` defaults to the configured one (:func:`treeseek.llm.select.navigator_from_spec`:
    the lexical navigator unless an LLM provider is configured). Beam and Block get flat
    retrieval's aids when the options ask for them (``ranker="flat"``, ``hints``); other
    strategies ignore those two options. ``caches``: the database's per-tree caches
    (:attr:`treeseek.database.Database.caches`); without them, what a retriever derives from
    the tree is built for this query alone.
    """
    _validate(question, options)
    name = select_strategy(tree_info, options.strategy)
    if navigator is None:
        from treeseek.llm.select import navigator_from_spec

        navigator = navigator_from_spec(None)
    if name != DOCUMENT_STRATEGY:
        options = replace(options, strategy=name)
    # a document tree: the document retriever reads the caller's strategy (flat, collapsed,
    # beam, block, auto) to pick its method
    deadline = Deadline(
        resolve_deadline_s(options.deadline_s), call_timeout_s=options.llm_timeout_s
    )
    ctx = SearchContext(
        store=store,
        tree=tree_info,
        navigator=navigator,
        caches=caches if caches is not None else TreeCaches(),
        deadline=deadline,
    )
    result = _registry[name](options).retrieve(ctx, question, options)
    for scoped in ("path_prefix", "language"):
        if getattr(options, scoped) and name != "flat":
            notes = result.trace.params.setdefault("notes", [])
            notes.append(f"{scoped} is applied by the flat strategy; {name} ranked every file")
    if options.ranker is not None and name in RANKER_IGNORED_BY:
        # the ranker orders Block search's blocks; say so rather than drop it silently
        notes = result.trace.params.setdefault("notes", [])
        notes.append(
            f"--ranker {options.ranker} orders Block search's blocks; the {name} strategy"
            " does not use it"
        )
    return result


def warm_tree(store: Store, tree_info: TreeInfo, caches: TreeCaches) -> bool:
    """Build what a flat query of ``tree_info``'s version reads into ``caches``, so the next
    query (of any strategy that reads flat's tables) is warm; False for a tree flat retrieval
    does not answer (a document tree: its retriever keeps no per-version tables to build)."""
    from treeseek.search.flat.flat import FlatRetriever

    if not tree_info.source.is_filesystem:
        return False
    retriever = _flat(QueryOptions())
    assert isinstance(retriever, FlatRetriever)
    navigator = _lexical_navigator()
    retriever.warm(SearchContext(store=store, tree=tree_info, navigator=navigator, caches=caches))
    return True


def _lexical_navigator() -> Navigator:
    from treeseek.llm.select import navigator_from_spec

    return navigator_from_spec("lexical")


#: built-in strategies that take no path ranker (``--ranker`` is for Block search)
RANKER_IGNORED_BY = frozenset({"flat", "beam", "rerank", "traverse", "traverse-between"})


# -- the built-in strategies ---------------------------------------------------------------
def _beam(options: QueryOptions) -> Retriever:
    if wants_content(options):
        return AidedTreeSearch(lambda aids: BeamRetriever(hints=aids.hints))
    return BeamRetriever()


def _block(options: QueryOptions) -> Retriever:
    if wants_content(options):
        ranker = None if options.ranker == "flat" else path_scorer(options.ranker)

        def block(aids: SearchAids) -> Retriever:
            return BlockRetriever(scorer=aids.scorer, hints=aids.hints)

        return AidedTreeSearch(block, path_ranker=ranker)
    return BlockRetriever(scorer=path_scorer(options.ranker))


def _flat(options: QueryOptions) -> Retriever:
    from treeseek.search.flat.flat import FlatRetriever

    # one retriever per embedder, so its loaded model serves every query (what it derives
    # from a tree is kept in the database's caches, not on the retriever)
    retriever = _flat_retrievers.get(options.vectors)
    if retriever is None:
        embedder = None
        if options.vectors is not None:
            from treeseek.embed.neural import load_embedder

            embedder = load_embedder(options.vectors)
        retriever = _flat_retrievers[options.vectors] = FlatRetriever(embedder=embedder)
    return retriever


_flat_retrievers: dict[str | None, Retriever] = {}


def _rerank(options: QueryOptions) -> Retriever:
    from treeseek.search.flat.flat import FlatRetriever
    from treeseek.search.rerank import RerankRetriever

    flat = _flat(options)  # the shared per-embedder flat retriever (its per-tree caches)
    assert isinstance(flat, FlatRetriever)
    return RerankRetriever(flat)


def _traverse(options: QueryOptions) -> Retriever:
    from treeseek.search.graph.walk import GraphWalkRetriever

    return GraphWalkRetriever()


def _traverse_between(options: QueryOptions) -> Retriever:
    # the eval contest's second setting: walked files may enter between the seeds, by score
    from treeseek.search.graph.walk import GraphWalkRetriever, WalkConfig

    return GraphWalkRetriever(WalkConfig(protect_head=0))


def _document(options: QueryOptions) -> Retriever:
    from treeseek.search.document.retriever import DocumentRetriever

    return _document_retriever.setdefault("", DocumentRetriever())


_document_retriever: dict[str, Retriever] = {}


#: name -> factory of every strategy treeseek ships (``auto`` is the selection rule, not a row)
BUILTIN_STRATEGIES: dict[str, RetrieverFactory] = {
    "beam": _beam,
    "block": _block,
    "flat": _flat,
    "rerank": _rerank,
    "traverse": _traverse,
    "traverse-between": _traverse_between,
    DOCUMENT_STRATEGY: _document,
}
_registry: dict[str, RetrieverFactory] = dict(BUILTIN_STRATEGIES)
