"""``rerank``: flat retrieval's top files, reordered listwise by the navigator (beyond the spec).

The way SweRank's LLM reranker works over an embedding retriever's candidates: the flat
retriever ranks the tree's files; its top ``candidates`` (default 20) are shown to the
navigator, each as its path and an outline (the file's classes and functions with their
signatures, from the code index), and the navigator returns them best first in one ``rank``
call, or in a few when they do not fit one call's token budget (windows slid from the bottom
of the list to the top, as RankGPT does, so a strong file low in flat's list can climb).

- Works with any navigator: hosted, local, scripted, or lexical (which reads only paths).
- Falls back to flat's order on any failure: an error from the navigator, an empty or unusable
  reply; ids a reply leaves out keep their flat order after the ones it ranked.
- The budget: each call's prompt (instructions, query, candidates) stays within
  ``options.block_tokens`` tokens: outlines are shortened first (fewer symbol lines per file,
  down to the path alone), then a call takes fewer files.
- The instructions are one static, cacheable segment (the same in every call of every query);
  the query and the candidates are the dynamic message.

Files past the candidates keep flat's order after the reranked ones; contents are attached
to the final top ``k`` as by every retriever.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from treeseek.code.conventions import code_content
from treeseek.code.model import Symbol, SymbolKind
from treeseek.errors import DeadlineExceeded
from treeseek.llm.base import Candidate, RankRequest, Segment, Usage, usage_spent
from treeseek.llm.prices import estimate_cost
from treeseek.llm.tokens import count_tokens
from treeseek.search.base import FileHit, QueryOptions, Result, Retriever, SearchContext
from treeseek.search.flat.flat import FlatRetriever
from treeseek.search.results import attach_contents
from treeseek.search.trace import DEADLINE_STOP, BlockTrace, RoundTrace, Trace

log = logging.getLogger("treeseek.search")

INSTRUCTIONS = """\
You rerank source files of a code repository for a query (an issue, a question or an error).
Each candidate below has an id, its path, and an outline: its classes and functions with
their signatures. Order the candidates by how likely the file must be read or edited to
resolve the query, most likely first.

Return ONE tool call "rank" with:
- ranked_ids: the candidate ids, best first (all of them if you can)
- done: true
"""


@dataclass(frozen=True, slots=True)
class RerankConfig:
    candidates: int = 20  # flat's top N files that are reranked
    window: int = 20  # files per call (several calls slide over the list when N is larger)
    step: int = 10  # how far the window moves up between calls
    outline_lines: int = 12  # at most this many symbol lines per file
    line_chars: int = 160  # a symbol line is cut to this many characters


def _outline_lines(symbols: Sequence[Symbol], line_chars: int) -> list[str]:
    """Classes and top-level functions first (by position), then methods, each with its
    signature; private helpers (``_name``) after the public ones; dunders left out."""
    picked: list[tuple[int, int, int, str]] = []
    for sym in symbols:
        if sym.name.startswith("__") and sym.name.endswith("__"):
            continue
        if sym.kind not in (SymbolKind.CLASS, SymbolKind.FUNCTION, SymbolKind.METHOD):
            continue
        nested = 0 if sym.kind is SymbolKind.CLASS or sym.parent is None else 1
        private = int(sym.name.startswith("_"))
        text = (sym.signature or sym.name).replace("\n", " ")
        if sym.kind is SymbolKind.CLASS:
            text = f"class {text}"
        elif sym.kind is SymbolKind.METHOD and sym.parent:
            text = f"{sym.parent}.{text}"
        picked.append((private, nested, sym.start_line, " ".join(text.split())[:line_chars]))
    picked.sort()
    return [text for *_, text in picked]


@dataclass(slots=True)
class _Entry:
    alias: str
    hit: FileHit
    lines: list[str]


def render_entries(entries: Sequence[_Entry], lines_per_file: int) -> str:
    out: list[str] = []
    for e in entries:
        out.append(f"[{e.alias}] {e.hit.path}")
        shown = e.lines[:lines_per_file]
        out.extend(f"    {line}" for line in shown)
        if len(e.lines) > len(shown) and lines_per_file > 0:
            out.append(f"    ... {len(e.lines) - len(shown)} more")
    return "\n".join(out)


def render_message(query: str, entries: Sequence[_Entry], lines_per_file: int) -> str:
    ids = ", ".join(e.alias for e in entries)
    return (
        f"Query: {query}\n\nCandidates:\n{render_entries(entries, lines_per_file)}\n\n"
        f"Rank these ids, best first: {ids}\n"
    )


class RerankRetriever(Retriever):
    """Flat's top files reordered by the navigator, listwise."""

    name = "rerank"

    def __init__(self, flat: FlatRetriever | None = None, config: RerankConfig | None = None):
        self.flat = flat or FlatRetriever()
        self.config = config or RerankConfig()

    def _outlines(self, ctx: SearchContext, hits: Sequence[FileHit]) -> dict[str, list[str]]:
        """node id -> outline lines (empty when the code index has no symbols for it)."""
        try:
            code = ctx.store.code()
            nodes = ctx.store.nodes(ctx.tree.name, [h.node_id for h in hits])
            by_hash = {h: n.id for n in nodes if (h := code_content(n.path, n.content_hash))}
            symbols = code.symbols_of(list(by_hash))
        except Exception as exc:  # no code index (or a store without one): paths alone
            log.info("rerank: no outlines (%s)", exc)
            return {}
        return {
            node_id: _outline_lines(symbols.get(h, []), self.config.line_chars)
            for h, node_id in by_hash.items()
        }

    def _fit(self, query: str, entries: list[_Entry], budget: int) -> tuple[list[_Entry], int]:
        """The entries and lines per file that keep one call within ``budget`` tokens."""
        fixed = count_tokens(INSTRUCTIONS)
        lines = self.config.outline_lines
        while True:
            if fixed + count_tokens(render_message(query, entries, lines)) <= budget:
                return entries, lines
            if lines > 0:
                lines = lines // 2 if lines > 1 else 0
            elif len(entries) > 2:
                entries = entries[:-1]
            else:
                return entries, 0

    def _windows(self, n: int) -> list[tuple[int, int]]:
        """(start, end) of each call, from the bottom of the list to the top."""
        w = max(2, self.config.window)
        if n <= w:
            return [(0, n)]
        step = max(1, min(self.config.step, w - 1))
        out: list[tuple[int, int]] = []
        end = n
        while True:
            start = max(0, end - w)
            out.append((start, end))
            if start == 0:
                return out
            end -= step

    def retrieve(self, ctx: SearchContext, query: str, options: QueryOptions) -> Result:
        started = time.perf_counter()
        cfg = self.config
        ranking = self.flat.rank(ctx, query, max(cfg.candidates, options.k))
        hits = list(ranking.hits)
        head, rest = hits[: cfg.candidates], hits[cfg.candidates :]
        outlines = self._outlines(ctx, head) if head else {}
        trace = Trace(strategy=self.name, navigator=ctx.navigator.name)
        trace.params.update(ranking.trace_params())
        trace.params["rerank"] = {
            "candidates": len(head),
            "window": cfg.window,
            "budget_tokens": options.block_tokens,
            "outlines": sum(1 for h in head if outlines.get(h.node_id)),
        }
        order = list(head)
        usage = Usage()
        cut = False  # the query's deadline passed: flat's order stands for the rest
        segments = (Segment(INSTRUCTIONS, cache=True),)
        for i, (start, end) in enumerate(self._windows(len(order)) if len(order) > 1 else []):
            window = order[start:end]
            entries = [
                _Entry(f"f{j + 1}", h, outlines.get(h.node_id, [])) for j, h in enumerate(window)
            ]
            shown, lines = self._fit(query, entries, options.block_tokens)
            message = render_message(query, shown, lines)
            request = RankRequest(
                segments=segments,
                message=message,
                query=query,
                candidates=tuple(Candidate(e.alias, e.hit.path, "file") for e in shown),
                pick_limit=len(shown),
                deadline=ctx.deadline,  # the query's deadline and per-call timeout
            )
            block = BlockTrace(
                candidate_set=[e.hit.node_id for e in shown],
                ranked_ids=[],
                done=True,
                tokens=count_tokens(message),
                index=0,
                pick_limit=len(shown),
                aliases={e.alias: e.hit.node_id for e in shown},
                static_tokens=count_tokens(INSTRUCTIONS),
                message_tokens=count_tokens(message),
            )
            if len(shown) < len(entries):
                block.notes.append(f"{len(entries) - len(shown)} file(s) left out: token budget")
            call_started = time.perf_counter()
            try:
                reply = ctx.navigator.rank(request)
            except Exception as exc:  # any failure: flat's order stands for this window
                block.notes.append(f"navigator failed ({type(exc).__name__}: {exc}); flat order")
                trace.events.append(f"call {i + 1}: navigator failed; flat order kept")
                log.warning("rerank: navigator failed: %s", exc)
                reply = None
                block.usage = usage_spent(exc)  # a reply it paid for before failing
                usage = usage + block.usage
                cut = isinstance(exc, DeadlineExceeded)
            llm_s = time.perf_counter() - call_started
            by_alias = {e.alias: e.hit for e in shown}
            ranked = [by_alias[a] for a in (reply.ranked_ids if reply else []) if a in by_alias]
            if reply is not None:
                block.usage = reply.usage
                block.notes.extend(reply.notes)
                block.dropped_ids = list(reply.dropped_ids)
                usage = usage + reply.usage
                if not ranked:
                    block.notes.append("empty or unusable ranking; flat order kept")
                    trace.events.append(f"call {i + 1}: empty ranking; flat order kept")
            block.ranked_ids = [h.node_id for h in ranked]
            if ranked:
                picked = {h.node_id for h in ranked}
                order[start:end] = ranked + [h for h in window if h.node_id not in picked]
            trace.rounds.append(
                RoundTrace(
                    round=i,
                    frontier=[],
                    blocks=[block],
                    merged_ids=block.ranked_ids,
                    ordered_ids=[h.node_id for h in order],
                    top_candidate_ids=[h.node_id for h in order[: options.k]],
                    next_frontier=[],
                    pick_limit=len(shown),
                    done_before_override=True,
                    done_after_override=True,
                    llm_s=round(llm_s, 4),
                    usage=block.usage,
                    visible_count=len(shown),
                )
            )
            if cut:
                break
        final = (order + rest)[: options.k]
        for rank, hit in enumerate(final):
            hit.score = 1.0 / (1 + rank)
        trace.paths.update({h.node_id: h.path for h in order + final})
        trace.usage = usage
        trace.stop_reason = (
            DEADLINE_STOP
            if cut
            else f"{len(head)} flat files reranked in {len(trace.rounds)} call(s)"
        )
        trace.wall_s = round(time.perf_counter() - started, 4)
        files = attach_contents(ctx.store, ctx.tree.name, final, options)
        return Result(
            files=files,
            strategy=self.name,
            navigator=ctx.navigator.name,
            trace=trace,
            usage=usage,
            cost_usd=estimate_cost(ctx.navigator.name, usage),
        )
