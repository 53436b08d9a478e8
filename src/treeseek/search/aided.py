"""Tree search aided by flat retrieval: a retriever that wraps Beam or Block.

:class:`AidedTreeSearch` has the retriever interface; per query it builds :class:`SearchAids`
from the options and runs the wrapped tree search with them:

- ``ranker="flat"``: ConstrainedPathOrder interleaves the blocks' lists by the flat retriever's
  scores (:class:`~treeseek.search.flat.content_rank.ContentPathScorer`) instead of path BM25.
- ``hints=N``: the flat retriever's ``N`` best files. An LLM reads them as a short list in the
  dynamic message of every rank call (never in the cached segments). The lexical navigator
  cannot read text, so it gets the same evidence as numbers instead: it is rebuilt with a
  content-aware scorer (flat scores first, path BM25 when they decline).

The flat scores are computed once per query
(:class:`~treeseek.search.flat.content_rank.FlatContent`) and shared by all three.
:attr:`SearchAids.params` says in the trace what answered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from treeseek.llm.base import Navigator
from treeseek.llm.lexical import LexicalNavigator
from treeseek.rank.paths import BM25PathScorer, PathScorer
from treeseek.search.base import QueryOptions, Result, Retriever, SearchContext
from treeseek.search.flat.content_rank import ContentPathScorer, FirstAnswer, FlatContent

#: the name of the content-aware path ranker (``--ranker flat``)
CONTENT_RANKER = "flat"
LEXICAL = "lexical"


@dataclass(slots=True)
class SearchAids:
    """Per-query help for a tree search; empty when the options ask for none."""

    scorer: PathScorer | None = None  # ConstrainedPathOrder's ranker
    hints: list[str] = field(default_factory=list)  # paths for the LLM's dynamic message
    navigator: Navigator | None = None  # replaces the context's navigator when set
    params: dict[str, Any] = field(default_factory=dict)  # for the trace


def wants_content(options: QueryOptions) -> bool:
    return options.ranker == CONTENT_RANKER or options.hints > 0


def content_navigator(content: FlatContent) -> LexicalNavigator:
    """The lexical navigator reading flat scores (path BM25 when they decline)."""
    return LexicalNavigator(scorer=FirstAnswer([ContentPathScorer(content), BM25PathScorer()]))


def build_aids(
    ctx: SearchContext,
    query: str,
    options: QueryOptions,
    path_ranker: PathScorer | None,
    *,
    content: FlatContent | None = None,
) -> SearchAids:
    """The aids ``options`` ask for. ``path_ranker``: the path-only ranker already chosen for a
    ranker other than ``flat`` (passed through). ``content``: a shared per-tree flat view."""
    aids = SearchAids(scorer=path_ranker)
    if not wants_content(options):
        return aids
    content = content or FlatContent(ctx)
    scores = content.scores(query)  # once, before any (parallel) rank call
    aids.params["content"] = {
        "usable": scores.usable,
        "files": len(scores.files),
        "seconds": round(scores.seconds, 4),
        **({"reason": scores.reason} if scores.reason else {}),
    }
    if options.ranker == CONTENT_RANKER:
        aids.scorer = ContentPathScorer(content)
    if options.hints > 0:
        if ctx.navigator.name == LEXICAL:
            aids.navigator = content_navigator(content)
            aids.params["navigator_scorer"] = aids.navigator.scorer.name
        else:
            aids.hints = content.top(query, options.hints)
            aids.params["hints"] = list(aids.hints)
    return aids


def with_navigator(ctx: SearchContext, navigator: Navigator | None) -> SearchContext:
    if navigator is None:
        return ctx
    return replace(ctx, navigator=navigator)


class AidedTreeSearch(Retriever):
    """Beam or Block with flat retrieval's aids: ``make(aids)`` builds the tree search for one
    query (a ranker, hints), and it runs under the aids' navigator when they replace it.
    ``path_ranker``: the path-only ranker chosen for a ranker other than ``flat``."""

    name = "aided"

    def __init__(
        self, make: Callable[[SearchAids], Retriever], *, path_ranker: PathScorer | None = None
    ) -> None:
        self.make = make
        self.path_ranker = path_ranker

    def retrieve(self, ctx: SearchContext, query: str, options: QueryOptions) -> Result:
        aids = build_aids(ctx, query, options, self.path_ranker)
        result = self.make(aids).retrieve(with_navigator(ctx, aids.navigator), query, options)
        result.trace.params.update(aids.params)
        return result


__all__: Sequence[str] = (
    "AidedTreeSearch",
    "SearchAids",
    "build_aids",
    "content_navigator",
    "wants_content",
)
