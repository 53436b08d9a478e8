"""The Block retriever (spec Algorithms 2-5).

Each round materializes the visible candidates of the frontier (turn 0: the top visible layer
of the collapsed root, widened breadth-first to ``top_layer_tokens`` when that option is set;
later: the frontier's direct children), packs them into token-bounded
blocks, asks the navigator to rank each block in parallel (pick limit ``p = max(b̂, k)``, at
least 2 when the round has several blocks), merges the block-local lists order-preservingly,
optionally interleaves them with a path scorer (heads only), then lets files fill the
``k - |A|`` free result slots and the first ``b̂`` directories (single-child chains collapsed)
form the next frontier. ``done`` is the AND of the blocks' answers, overridden to false while
the new frontier still has children.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from treeseek.errors import DeadlineExceeded, LLMError
from treeseek.llm.base import RankRequest, Usage, add_usage_spent, usage_spent
from treeseek.llm.tokens import count_tokens
from treeseek.rank.paths import PathScorer
from treeseek.search.base import QueryOptions, Result, Retriever, SearchContext
from treeseek.search.results import failed_search, finish
from treeseek.search.trace import DEADLINE_STOP, BlockTrace, RoundTrace, Trace
from treeseek.search.tree.beam import after_deadline, past_deadline, tree_root_for
from treeseek.search.tree.blocks import (
    Block,
    BlockPacker,
    TokenCounter,
    collapse_single_child_dirs,
    expand_frontier,
    top_visible_layers,
    top_visible_nodes,
    unique,
)
from treeseek.search.tree.cache import BlockCache, CacheWindow
from treeseek.search.tree.order import (
    Ordered,
    constrained_path_order,
    flatten,
    unique_preserve_block_order,
)
from treeseek.search.tree.prompts import (
    FILESYSTEM_PROMPTS,
    PromptSet,
    block_instructions,
    render_block_message,
    tree_header,
)
from treeseek.search.tree.rankcall import RankOutcome, call_rank
from treeseek.search.treeview import TreeView
from treeseek.trees.model import Node

#: parallel block calls per round (adapters also enforce their own shared concurrency limit)
MAX_PARALLEL_BLOCKS = 8


class BlockRetriever(Retriever):
    name = "block"

    def __init__(
        self,
        scorer: PathScorer | None = None,
        count: TokenCounter = count_tokens,
        hints: Sequence[str] = (),
        *,
        prompts: PromptSet = FILESYSTEM_PROMPTS,
        view: Callable[[SearchContext], TreeView] | None = None,
    ) -> None:
        self.scorer = scorer
        self.count = count
        self.hints = list(hints)  # paths shown in every dynamic message (flat retrieval's)
        self.prompts = prompts  # document trees: DOCUMENT_PROMPTS
        self.view = view  # document trees: a view that shows sections by their titles

    def retrieve(self, ctx: SearchContext, query: str, options: QueryOptions) -> Result:
        search = _BlockSearch(
            ctx, query, options, self.scorer, self.count, self.hints, self.prompts, self.view
        )
        try:
            return search.run()
        except (LLMError, DeadlineExceeded) as exc:  # what the finished rounds spent counts
            failed_search(exc, search.trace)
            raise
        finally:
            search.close()


@dataclass(frozen=True, slots=True)
class _Update:
    """What UPDATESTATE decided for one round."""

    ordered: Ordered  # M' (== merged_ids unless a ranker ran)
    top: list[str]  # A after the round
    chosen: list[str]  # F' = D[1:b], before collapsing
    frontier: list[Node]  # the next frontier, collapsed
    done_before: bool  # ALLTRUE of the blocks' answers
    done: bool  # after the override


class _BlockSearch:
    """The state of one Block query: frontier F, results A, previous top candidates P."""

    def __init__(
        self,
        ctx: SearchContext,
        query: str,
        options: QueryOptions,
        scorer: PathScorer | None,
        count: TokenCounter,
        hints: Sequence[str] = (),
        prompts: PromptSet = FILESYSTEM_PROMPTS,
        view: Callable[[SearchContext], TreeView] | None = None,
    ) -> None:
        self.ctx = ctx
        self.hints = list(hints)
        self.prompts = prompts
        self.query = query
        self.options = options
        self.view = view(ctx) if view is not None else TreeView(ctx.store, ctx.tree.name)
        self.b = options.beam_width or 1  # b̂
        self.k = options.k
        self.p = max(self.b, self.k)
        self.scorer = scorer
        self.count = count
        self.packer = BlockPacker(count, options.block_tokens, prompts)
        self.cache = BlockCache(
            enabled=options.cache,
            cache_current_block=options.cache_current_block,
            cache_subtree_block=options.cache_subtree_block,
            window=CacheWindow(options.cache_window_tokens),
            prompts=prompts,
        )
        self._fixed_tokens = count(tree_header(prompts)) + count(block_instructions(prompts))
        self._pool: ThreadPoolExecutor | None = None
        self.trace = Trace(strategy="block", navigator=ctx.navigator.name)
        self.trace.params = {
            "b": self.b,
            "k": self.k,
            "p": self.p,
            "tau": options.block_tokens,
            "top_layer_tokens": options.top_layer_tokens,
            "ranker": scorer.label if scorer else None,
            "cache": options.cache,
            "cache_window_tokens": options.cache_window_tokens,
            "max_rounds": options.max_rounds,
        }
        if self.hints:
            self.trace.params["hints"] = list(self.hints)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    # -- Algorithm 2 -------------------------------------------------------------------------
    def run(self) -> Result:
        started = time.perf_counter()
        frontier = collapse_single_child_dirs(self.view, [self.view.root()])
        top: list[str] = []
        t = 0
        self.trace.stop_reason = "max rounds reached"
        while t < self.options.max_rounds:
            if past_deadline(self.ctx):
                self.trace.stop_reason = DEADLINE_STOP
                break
            round_started = time.perf_counter()
            if t > 0 and not any(u.has_children for u in frontier):
                self.trace.stop_reason = "no frontier node has children"
                break
            visible = self._visible(frontier, t)
            if not visible:
                self.trace.stop_reason = "no candidates"
                break
            blocks = self.packer.pack(visible)
            pick = self.p if len(blocks) == 1 else max(self.p, 2)
            try:
                frontier, top, _done, finished = self._round(
                    t, round_started, frontier, visible, blocks, top, pick
                )
            except DeadlineExceeded as exc:  # the round ran out of time: it does not count
                self.trace.stop_reason = DEADLINE_STOP
                self.trace.cut_usage = self.trace.cut_usage + usage_spent(exc)
                break
            if finished:
                self.trace.stop_reason = "k files collected" if len(top) >= self.k else "done"
                break
            t += 1
        self.trace.wall_s = time.perf_counter() - started
        after_deadline(self.ctx, self.trace, top)
        return finish(self.view, top[: self.k], self.options, self.ctx.navigator, self.trace)

    # -- Algorithm 3 -------------------------------------------------------------------------
    def _visible(self, frontier: Sequence[Node], t: int) -> list[Node]:
        if not frontier:
            return []
        if t == 0:
            if self.options.top_layer_tokens > 0:
                return top_visible_layers(
                    self.view, frontier[0], self.packer.entry_cost, self.options.top_layer_tokens
                )
            return top_visible_nodes(self.view, frontier[0])
        return expand_frontier(self.view, frontier)

    # -- one round: Algorithms 4 and 5 ---------------------------------------------------------
    def _round(
        self,
        t: int,
        round_started: float,
        frontier: list[Node],
        visible: list[Node],
        blocks: list[Block],
        top: list[str],
        pick: int,
    ) -> tuple[list[Node], list[str], bool, bool]:
        requests, block_traces = self._requests(t, frontier, blocks, top, pick)
        outcomes, llm_s = self._call(requests, blocks)
        for bt, outcome in zip(block_traces, outcomes, strict=True):
            bt.ranked_ids = outcome.ids
            bt.done = outcome.done
            bt.usage = outcome.usage
            bt.dropped_ids = outcome.dropped
            bt.notes = outcome.notes
        # Algorithm 4, lines 6-12
        groups = unique_preserve_block_order([o.ids for o in outcomes])
        merged = flatten(groups)
        update = self._update_state(groups, merged, all(o.done for o in outcomes), visible, top)
        entered = self.cache.after_round(t, blocks, update.chosen)
        self._record(
            t, round_started, llm_s, frontier, visible, block_traces, merged, pick, update, entered
        )  # fmt: skip
        finished = len(update.top) >= self.k or update.done
        return update.frontier, update.top[: self.k], update.done, finished

    # -- Algorithm 5 -------------------------------------------------------------------------
    def _update_state(
        self,
        groups: list[list[str]],
        merged: list[str],
        done: bool,
        visible: list[Node],
        top: list[str],
    ) -> _Update:
        kinds = {n.id: n for n in visible}
        score = self.scorer.score if self.scorer is not None else None
        ordered = constrained_path_order(
            groups, self.query, {i: kinds[i].path for i in merged}, score
        )
        files = [u for u in ordered.ids if kinds[u].is_file]
        # a document section with subsections is a result and can be drilled into
        dirs = [u for u in ordered.ids if kinds[u].is_dir or kinds[u].has_children]
        free = max(0, self.k - len(top))
        top = unique(top + files[:free])
        if len(top) >= self.k:
            return _Update(ordered, top, [], [], done, True)
        chosen = dirs[: self.b]
        frontier = collapse_single_child_dirs(self.view, [kinds[u] for u in chosen])
        overridden = done and any(u.has_children for u in frontier)
        return _Update(ordered, top, chosen, frontier, done, done and not overridden)

    def _requests(
        self, t: int, frontier: list[Node], blocks: list[Block], top: list[str], pick: int
    ) -> tuple[list[RankRequest], list[BlockTrace]]:
        top_paths = [self.view.path(i) for i in top[: self.k]]
        frontier_paths = [u.path for u in frontier]
        window = [e.label for e in self.cache.window.entries] if self.cache.enabled else []
        window_tokens = self.cache.window.tokens if self.cache.enabled else 0
        requests: list[RankRequest] = []
        traces: list[BlockTrace] = []
        for block in blocks:
            message = render_block_message(
                self.query,
                top_paths,
                frontier_paths,
                block.aliases,
                pick,
                self.hints,
                self.prompts,
            )
            requests.append(
                RankRequest(
                    segments=self.cache.segments(block, t),
                    message=message,
                    query=self.query,
                    candidates=block.candidates(),
                    pick_limit=pick,
                    tree_root=tree_root_for(self.ctx),
                    path_prefix=block.prefix,
                    deadline=self.ctx.deadline,
                )
            )
            traces.append(
                BlockTrace(
                    candidate_set=list(block.node_ids),
                    ranked_ids=[],
                    done=False,
                    tokens=block.tokens,
                    index=block.index,
                    pick_limit=pick,
                    path_prefix=block.prefix,
                    aliases=block.alias_to_id(),
                    cached_segments=window,
                    static_tokens=self._fixed_tokens + window_tokens + block.tokens,
                    message_tokens=self.count(message),
                )
            )
        return requests, traces

    def _call(
        self, requests: list[RankRequest], blocks: list[Block]
    ) -> tuple[list[RankOutcome], float]:
        """LLMRANKBLOCK for every block, in parallel; results in block order."""
        started = time.perf_counter()
        navigator = self.ctx.navigator
        maps = [b.alias_to_id() for b in blocks]
        if len(requests) == 1:
            outcomes = [call_rank(navigator, requests[0], maps[0])]
        else:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=MAX_PARALLEL_BLOCKS, thread_name_prefix="treeseek-block"
                )
            futures = [
                self._pool.submit(call_rank, navigator, r, m)
                for r, m in zip(requests, maps, strict=True)
            ]
            outcomes = []
            failure: Exception | None = None
            others = Usage()  # what the other calls spent, should one fail
            for future in futures:  # wait for every call: each is bounded by the deadline
                try:
                    outcome = future.result()
                except Exception as exc:
                    if failure is None:
                        failure = exc
                    else:
                        others = others + usage_spent(exc)
                    continue
                outcomes.append(outcome)
                others = others + outcome.usage
            if failure is not None:  # the round fails, but its finished calls were paid for
                add_usage_spent(failure, others)
                raise failure
        return outcomes, time.perf_counter() - started

    def _record(
        self,
        t: int,
        round_started: float,
        llm_s: float,
        frontier: list[Node],
        visible: list[Node],
        blocks: list[BlockTrace],
        merged: list[str],
        pick: int,
        update: _Update,
        entered: list[str],
    ) -> None:
        paths = self.trace.paths
        for node in (*frontier, *visible, *update.frontier):
            paths[node.id] = node.path
        usage = blocks[0].usage
        for bt in blocks[1:]:
            usage = usage + bt.usage
        wall = time.perf_counter() - round_started
        self.trace.rounds.append(
            RoundTrace(
                round=t,
                frontier=[u.id for u in frontier],
                blocks=blocks,
                merged_ids=merged,
                ordered_ids=update.ordered.ids,
                top_candidate_ids=list(update.top[: self.k]),
                next_frontier=[u.id for u in update.frontier],
                pick_limit=pick,
                done_before_override=update.done_before,
                done_after_override=update.done,
                ranker=self.scorer.label if (self.scorer and update.ordered.ranked) else None,
                overhead_s=max(0.0, wall - llm_s),
                llm_s=llm_s,
                usage=usage,
                visible_count=len(visible),
                cache_window=[e.label for e in self.cache.window.entries],
                cache_entered=entered,
            )
        )
