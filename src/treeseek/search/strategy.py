"""Strategy selection (spec section 1) and the registry of retrievers.

``run_query`` reads the tree metadata first: a non-filesystem tree goes to the document
retriever. Otherwise ``beam`` and ``block`` run directly, ``auto`` uses Beam for trees of at
most 50 nodes and Block above, and any other registered name (``flat`` ...) runs as registered.

Retrievers register a factory under a name with :func:`register`; modules that register
strategies are listed in :data:`STRATEGY_MODULES` and imported on first use (like the CLI's
command modules), so adding a strategy is one line there.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import replace

from treeseek.embed.hashing import HashingEmbedder
from treeseek.errors import ConfigError, RetrievalError
from treeseek.llm.base import Navigator
from treeseek.rank.paths import BM25PathScorer, PathScorer, VectorPathScorer
from treeseek.search.base import QueryOptions, Result, Retriever, SearchContext
from treeseek.search.tree.beam import BeamRetriever
from treeseek.search.tree.block import BlockRetriever
from treeseek.store.base import Store
from treeseek.trees.model import TreeInfo

#: trees with at most this many nodes use Beam under ``auto``; larger trees use Block
AUTO_BEAM_MAX_NODES = 50
#: the name under which the retriever of non-filesystem (document) trees registers
DOCUMENT_STRATEGY = "document"
#: modules that register further strategies when imported
STRATEGY_MODULES: tuple[str, ...] = ("treeseek.search.flat.flat", "treeseek.search.graph.walk")
#: what a caller who names no strategy and has no LLM gets, once registered (else ``auto``)
NO_LLM_DEFAULT = "flat"
#: path rankers for ConstrainedPathOrder (``--ranker``); ``flat`` reads file contents
RANKERS: tuple[str, ...] = ("none", "bm25", "vector", "flat")
#: strategies that accept flat retrieval's aids (content ranker, hints, content navigator)
TREE_SEARCH: tuple[str, ...] = ("beam", "block")

RetrieverFactory = Callable[[QueryOptions], Retriever]
_registry: dict[str, RetrieverFactory] = {}
_loaded = False


def register(name: str, factory: RetrieverFactory) -> None:
    """Make ``factory(options) -> Retriever`` available as strategy ``name``."""
    if name == "auto":
        raise ValueError("'auto' is the selection rule, not a strategy name")
    _registry[name] = factory


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in STRATEGY_MODULES:
            importlib.import_module(module)


def strategies() -> list[str]:
    """Registered strategy names (plus ``auto``), for help texts and errors."""
    _load()
    return ["auto", *sorted(n for n in _registry if n != DOCUMENT_STRATEGY)]


def default_strategy(navigator: Navigator) -> str:
    """The strategy when none is named: LLM tree search (``auto``) with an LLM navigator; with
    the lexical navigator (no LLM), flat retrieval when it is registered, else ``auto``."""
    _load()
    if navigator.name == "lexical" and NO_LLM_DEFAULT in _registry:
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
        return VectorPathScorer(HashingEmbedder())
    if name == "flat":
        raise ConfigError("the flat ranker reads a tree's contents; use it through run_query")
    raise ConfigError(f"unknown ranker {name!r}; choose one of {', '.join(RANKERS)}")


def select_strategy(tree: TreeInfo, strategy: str) -> str:
    """Which registered strategy answers ``strategy`` on ``tree`` (spec section 1, steps 1-3)."""
    _load()
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


def _validate(question: str, options: QueryOptions) -> None:
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


def run_query(
    store: Store,
    tree_info: TreeInfo,
    question: str,
    options: QueryOptions,
    navigator: Navigator | None = None,
) -> Result:
    """Answer ``question`` over one tree with the selected strategy.

    ``navigator`` defaults to the configured one (:func:`treeseek.llm.select.navigator_from_spec`:
    the lexical navigator unless an LLM provider is configured). Beam and Block get flat
    retrieval's aids when the options ask for them (``ranker="flat"``, ``hints``); other
    strategies ignore those two options.
    """
    _validate(question, options)
    name = select_strategy(tree_info, options.strategy)
    if navigator is None:
        from treeseek.llm.select import navigator_from_spec

        navigator = navigator_from_spec(None)
    options = replace(options, strategy=name)
    ctx = SearchContext(store=store, tree=tree_info, navigator=navigator)
    if name in TREE_SEARCH:
        from treeseek.search.aided import build_aids, wants_content, with_navigator

        if wants_content(options):
            ranker = None if options.ranker == "flat" else path_scorer(options.ranker)
            aids = build_aids(ctx, question, options, ranker)
            tree_search: Retriever = (
                BeamRetriever(hints=aids.hints)
                if name == "beam"
                else BlockRetriever(scorer=aids.scorer, hints=aids.hints)
            )
            result = tree_search.retrieve(with_navigator(ctx, aids.navigator), question, options)
            result.trace.params.update(aids.params)
            return result
    return _registry[name](options).retrieve(ctx, question, options)


register("beam", lambda options: BeamRetriever())
register("block", lambda options: BlockRetriever(scorer=path_scorer(options.ranker)))
