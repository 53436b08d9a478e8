"""The Beam retriever (spec Algorithm 1): level-by-level navigation with one call per turn.

Each turn expands every beam into its direct children (a beam with no children is kept as its
own candidate so it can be returned), asks the navigator to rank the union with pick limit
``p = max(b, k)``, adds the returned files to ``A`` (truncated to k), keeps the first ``b``
expandable returned ids as the next beams, and stops on k files, ``done`` (forced false when
only directories came back), no candidates, or the depth limit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from treeseek.errors import DeadlineExceeded, LLMError
from treeseek.llm.base import Candidate, RankRequest, usage_spent
from treeseek.llm.tokens import count_tokens
from treeseek.search.base import QueryOptions, Result, Retriever, SearchContext
from treeseek.search.results import failed_search, finish
from treeseek.search.trace import DEADLINE_STOP, BlockTrace, RoundTrace, Trace
from treeseek.search.tree.blocks import unique
from treeseek.search.tree.prompts import FILESYSTEM_PROMPTS, PromptSet, render_beam_prompt
from treeseek.search.tree.rankcall import call_rank
from treeseek.search.treeview import TreeView
from treeseek.trees.model import Node, TreeSource

DEFAULT_BEAM_WIDTH = 3


def past_deadline(ctx: SearchContext) -> bool:
    return ctx.deadline is not None and ctx.deadline.expired()


def after_deadline(ctx: SearchContext, trace: Trace, found: Sequence[str]) -> None:
    """A tree search stopped by its deadline returns the files it had (rounds that finished
    before it); with none, the query fails with DeadlineExceeded (an empty answer would read
    as "nothing relevant")."""
    if trace.stop_reason == DEADLINE_STOP and not found:
        assert ctx.deadline is not None
        raise ctx.deadline.error(f"before {trace.strategy} search found any file")


def tree_root_for(ctx: SearchContext) -> str | None:
    """The absolute root a navigator may resolve absolute paths against (disk trees only)."""
    return ctx.tree.root if ctx.tree.source is TreeSource.FILESYSTEM else None


class BeamRetriever(Retriever):
    name = "beam"

    def __init__(
        self,
        hints: Sequence[str] = (),
        *,
        prompts: PromptSet = FILESYSTEM_PROMPTS,
        view: Callable[[SearchContext], TreeView] | None = None,
    ) -> None:
        self.hints = list(hints)  # paths shown in every prompt (flat retrieval's best files)
        self.prompts = prompts  # document trees: DOCUMENT_PROMPTS
        self.view = view  # document trees: a view that shows sections by their titles

    def retrieve(self, ctx: SearchContext, query: str, options: QueryOptions) -> Result:
        trace = Trace(strategy=self.name, navigator=ctx.navigator.name)
        try:
            return self._search(ctx, query, options, trace)
        except (LLMError, DeadlineExceeded) as exc:  # what the finished rounds spent counts
            failed_search(exc, trace)
            raise

    def _search(
        self, ctx: SearchContext, query: str, options: QueryOptions, trace: Trace
    ) -> Result:
        started = time.perf_counter()
        view = self.view(ctx) if self.view is not None else TreeView(ctx.store, ctx.tree.name)
        b = options.beam_width or DEFAULT_BEAM_WIDTH
        k = options.k
        p = max(b, k)
        max_depth = ctx.tree.max_depth if options.max_depth is None else options.max_depth
        trace.params = {"b": b, "k": k, "p": p, "max_depth": max_depth}
        if self.hints:
            trace.params["hints"] = list(self.hints)
        root = view.root()
        beams: list[Node] = [root] if root.has_children else []  # an empty tree has nothing
        top: list[str] = []
        trace.stop_reason = "depth limit reached"
        for t in range(max_depth + 1):
            if past_deadline(ctx):
                trace.stop_reason = DEADLINE_STOP
                break
            round_started = time.perf_counter()
            kids = view.children_many(beams)
            pool: dict[str, Node] = {}
            for u in beams:
                for c in kids[u.id] or [u]:
                    pool.setdefault(c.id, c)
            if not pool:
                trace.stop_reason = "no candidates"
                break
            candidates = tuple(
                Candidate(n.id, n.path, n.type.value, n.has_children) for n in pool.values()
            )
            request = RankRequest(
                segments=(),
                message=render_beam_prompt(query, top, candidates, p, self.hints, self.prompts),
                query=query,
                candidates=candidates,
                pick_limit=p,
                tree_root=tree_root_for(ctx),
                deadline=ctx.deadline,
            )
            try:
                outcome = call_rank(ctx.navigator, request, {i: i for i in pool})
            except DeadlineExceeded as exc:  # the round does not count; its calls were paid
                trace.stop_reason = DEADLINE_STOP
                trace.cut_usage = trace.cut_usage + usage_spent(exc)
                break
            ranked = outcome.ids
            done_before = outcome.done
            done = done_before and any(pool[u].is_file for u in ranked)
            files = [u for u in ranked if pool[u].is_file]
            top = unique(top + files)[:k]
            frontier_ids = [u.id for u in beams]
            if len(top) < k:
                beams = []
                for node_id in ranked:
                    if pool[node_id].is_dir or pool[node_id].has_children:
                        beams.append(pool[node_id])
                    if len(beams) == b:
                        break
            trace.paths.update({i: n.path for i, n in pool.items()})
            trace.paths.update({u.id: u.path for u in view.nodes(frontier_ids)})
            wall = time.perf_counter() - round_started
            trace.rounds.append(
                RoundTrace(
                    round=t,
                    frontier=frontier_ids,
                    blocks=[
                        BlockTrace(
                            candidate_set=list(pool),
                            ranked_ids=ranked,
                            done=outcome.done,
                            usage=outcome.usage,
                            dropped_ids=outcome.dropped,
                            notes=outcome.notes,
                            pick_limit=p,
                            message_tokens=count_tokens(request.message),
                        )
                    ],
                    merged_ids=list(ranked),
                    ordered_ids=list(ranked),
                    top_candidate_ids=list(top),
                    next_frontier=[u.id for u in beams] if len(top) < k else [],
                    pick_limit=p,
                    done_before_override=done_before,
                    done_after_override=done,
                    overhead_s=max(0.0, wall - outcome.wall_s),
                    llm_s=outcome.wall_s,
                    usage=outcome.usage,
                    visible_count=len(pool),
                )
            )
            if len(top) >= k:
                trace.stop_reason = "k files collected"
                break
            if done:
                trace.stop_reason = "done"
                break
        trace.wall_s = time.perf_counter() - started
        after_deadline(ctx, trace, top)
        return finish(view, top, options, ctx.navigator, trace)
