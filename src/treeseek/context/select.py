"""``select(hits, budget)``: from ranked evidence to the line spans that fit a token budget.

The steps (each a plain function, so an agent-facing layer can reuse them):

1. **Anchors** (:func:`plan`): for each ranked file, the places its evidence points at, best
   first: symbols and stack-frame lines the question names exactly (``mentions``), the chunk
   that ranked the file (``chunk``), a document tree's section (``section``: its own text;
   its spans carry the document's line numbers, see
   :func:`~treeseek.context.disclose.document_lines`), the file's other chunks ranked by
   BM25 of the question's terms within the file, each term also weighed by its IDF among
   the file's chunks (``bm25``), symbols from symbol search or a
   graph walk (``symbol``, ``walk``); a file with none of these gets its head (``head``).
2. **Units**: an anchor becomes a unit of lines: the whole enclosing function or method (the
   outermost one below classes, else the innermost) with :data:`SYMBOL_MARGIN` lines of margin
   each side (a fix often adds lines just after a function, or edits its decorators) when it
   fits the per-unit cap (a third of the budget, at most :data:`MAX_UNIT_TOKENS`); else a window
   of :data:`WINDOW_LINES` lines around the anchor's hottest line (the line matching the most
   query terms, weighted by IDF), inside the symbol. A class's anchor is its header.
3. **Greedy fill** (:func:`select`): units in priority order, ``(1 + file rank) ** -1.5``
   times ``1 / (1 + the anchor's rank within its file)`` (:func:`unit_priority`: the second
   place of the best file comes before the best place of the second file, its third after;
   the second file's second place after the third file's best: diversity across files
   without ten spans of one file, weighted to the best files), divided by the unit's size
   in tokens ``** 0.25`` (of places ranked alike, the shorter first). The answer's first
   :data:`SYMBOL_PLACES` ranked symbols are places too, the ``g``-th with the priority of
   the best file's ``g``-th place (:func:`symbol_units`: a function the symbol ranking puts
   first is taken early even when its file ranks lower). A file gives up to
   :data:`CHUNKS_PER_FILE` BM25 anchors, so a large budget is filled with more of the ranked
   files rather than left unused. A unit costs the tokens of its lines not yet taken; a unit
   that does not fit is cut to a window around its hottest line when its file is not
   represented yet (so the best file always is) or enough budget is left; else skipped.
   Until the best file has a span, the other files leave :data:`MIN_CUT_TOKENS` of the
   budget for it.
   Lines of one file that overlap or touch merge into one span.
4. **Exact count**: each span's text is counted as a whole; the sum never exceeds the budget
   (spans are trimmed from the lowest priority up if it would).

The answer's ranked ``symbols`` come from the plan (:mod:`treeseek.context.symbol_rank`, on
the plain in-file chunk scores and the evidence), whatever the budget.

Token counts use :func:`treeseek.llm.tokens.default_counter` (cl100k offline). Planning adds
up the tokens of single lines (each with its newline), an upper bound of a span's count in
practice; step 4 makes the bound hard regardless.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from treeseek.code.model import Symbol, SymbolKind, symbol_id
from treeseek.context._deps import (
    QUERY_STOPWORDS,
    QueryMentions,
    code_tokens,
    extract_mentions,
    fts_document,
)
from treeseek.context.model import Budget, Span
from treeseek.context.source import ChunkRow, TreeSource
from treeseek.context.symbol_rank import FileEvidence, rank_symbols
from treeseek.llm.tokens import TokenCounter, default_counter

#: ranked files whose evidence is read
MAX_FILES = 10
#: chunks of a file ranked by in-file BM25 that become anchors
CHUNKS_PER_FILE = 40
FILE_DECAY = 1.5
#: a unit's priority is divided by its size in tokens to this power (see :func:`unit_priority`)
SIZE_DECAY = 0.25
#: the answer's best-ranked symbols (:mod:`~treeseek.context.symbol_rank`) that are also
#: places of their own (see :func:`symbol_units`)
SYMBOL_PLACES = 10
#: lines of margin around a whole symbol
SYMBOL_MARGIN = 5
#: lines of a window cut around an anchor's hottest line
WINDOW_LINES = 80
#: lines of a file's head when the file has no other anchor
HEAD_LINES = 40
#: a whole symbol may take at most this share of the budget ...
UNIT_SHARE = 1 / 3
#: ... and at most this many tokens
MAX_UNIT_TOKENS = 3000
MIN_UNIT_TOKENS = 200
#: a unit that does not fit is cut to fit only when at least this much budget is left (or
#: when its file has no span yet)
MIN_CUT_TOKENS = 120
#: lines of a section's anchor when its span counts pages, not lines (clipped to its text)
SECTION_LINES = 10**6
#: query terms used for in-file BM25 and hot lines
MAX_TERMS = 32
#: the most symbols an answer lists
MAX_SYMBOLS = 30
#: lines scanned for an anchor's hottest line (after its first); a document section is scanned
#: whole (prose: the answer is often far below its heading, and a section the retriever
#: ranked for its words has them somewhere: one regex pass, ~4 ms for 12,000 lines)
MAX_SCAN_LINES = 200

_FUNCTIONS = (SymbolKind.FUNCTION, SymbolKind.METHOD)
_SYMBOL_KINDS = (SymbolKind.FUNCTION, SymbolKind.METHOD, SymbolKind.CLASS)


@dataclass(frozen=True, slots=True)
class Anchor:
    """A place in a ranked file that the evidence points at."""

    path: str
    file_rank: int  # 0-based rank of the file
    start_line: int
    end_line: int
    reason: str  # mention | frame | chunk | section | bm25 | symbol | walk | head
    symbol: str | None = None  # qualified name within the file
    focus: int | None = None  # a line the evidence names


@dataclass(slots=True)
class Plan:
    """The budget-independent part of a selection: ranked files, their anchors, query terms."""

    source: TreeSource
    paths: list[str]  # ranked files with lines, best first
    anchors: dict[str, list[Anchor]]  # per path, best first
    terms: dict[str, float]  # query term -> weight (IDF x query frequency factor)
    symbols: list[str] = field(default_factory=list)  # ranked name paths (symbol_rank)
    _hot: dict[str, list[float | None]] = field(default_factory=dict)
    _qnames: dict[str, dict[str, Symbol]] = field(default_factory=dict)
    _pattern: re.Pattern[str] | None = None

    def hot(self, path: str, line: int) -> float:
        """How strongly line ``line`` of ``path`` matches the query's terms (the weights of
        the distinct terms of 3+ characters it contains)."""
        self._score_lines(path, line, line)
        value = self._hot[path][line] if 0 < line < len(self._hot[path]) else 0.0
        return value or 0.0

    def qnames(self, path: str) -> dict[str, Symbol]:
        """The file's symbols by qualified name."""
        found = self._qnames.get(path)
        if found is None:
            found = self._qnames[path] = {s.qname: s for s in self.source.symbols(path)}
        return found

    def hottest(self, path: str, lo: int, hi: int, scan: int = MAX_SCAN_LINES) -> int:
        """The line of ``lo..hi`` (its first ``scan`` + 1) with the highest :meth:`hot`
        score, the first on ties; ``lo`` when none matches."""
        hi = min(hi, lo + scan)
        self._score_lines(path, lo, hi)
        scores = self._hot[path]
        best, best_line = 0.0, lo
        for line in range(max(lo, 1), min(hi, len(scores) - 1) + 1):
            h = scores[line]
            if h is not None and h > best:
                best, best_line = h, line
        return best_line

    def _score_lines(self, path: str, lo: int, hi: int) -> None:
        """Score the lines of ``lo..hi`` not scored yet with one regex pass over them (terms
        hold no newline, so a match never spans lines: the same matches as line by line)."""
        lines = self.source.lines(path) or []
        scores = self._hot.get(path)
        if scores is None:
            scores = self._hot[path] = [None] * (len(lines) + 1)
        lo, hi = max(lo, 1), min(hi, len(lines))
        while lo <= hi and scores[lo] is not None:
            lo += 1
        while hi >= lo and scores[hi] is not None:
            hi -= 1
        if lo > hi:
            return
        if self._pattern is None:
            words = sorted((t for t in self.terms if len(t) >= 3), key=len, reverse=True)
            self._pattern = re.compile("|".join(map(re.escape, words)) or "(?!)")
        lowered = [text.lower() for text in lines[lo - 1 : hi]]
        starts = list(itertools.accumulate((len(t) + 1 for t in lowered), initial=0))
        found: list[set[str]] = [set() for _ in lowered]
        for m in self._pattern.finditer("\n".join(lowered)):
            found[bisect.bisect_right(starts, m.start()) - 1].add(m.group())
        for i, matched in enumerate(found):
            scores[lo + i] = sum(self.terms[t] for t in matched)


@dataclass(frozen=True, slots=True)
class Selection:
    spans: list[Span]  # best first
    symbols: list[str]  # ranked name paths
    budget: Budget


# -- query terms -------------------------------------------------------------------------------


def query_terms(source: TreeSource, query: str, limit: int = MAX_TERMS) -> dict[str, float]:
    """The query's code tokens (stopwords out) when the retriever reported no ranked terms:
    longer (rarer-looking) tokens and repeated ones weigh more."""
    tokens = [t for t in code_tokens(query) if t not in QUERY_STOPWORDS]
    if not tokens:
        return {}
    qtf = Counter(tokens)
    scored = sorted(
        ((math.log(1 + len(t)) * (1 + math.log(c)), t) for t, c in qtf.items()),
        key=lambda x: (-x[0], x[1]),
    )
    return {t: w for w, t in scored[:limit]}


# -- anchors -----------------------------------------------------------------------------------


def evidence_dict(hit: Any) -> dict[str, Any]:
    """A hit's evidence as plain data (``FileHit.evidence`` is an ``Evidence`` with
    ``to_dict()``; a plain dict is accepted too)."""
    evidence = getattr(hit, "evidence", None)
    if evidence is None:
        return {}
    if hasattr(evidence, "to_dict"):
        data: dict[str, Any] = evidence.to_dict()
        return data
    return dict(evidence)


def _evidence_anchors(path: str, rank: int, evidence: dict[str, Any]) -> list[Anchor]:
    out: list[Anchor] = []
    for m in evidence.get("mentions", ()) or ():
        if not isinstance(m, dict):
            continue
        line, sym = m.get("line"), m.get("symbol")
        if isinstance(line, int) and line > 0:
            reason = "frame" if m.get("kind") == "frame" else "mention"
            out.append(Anchor(path, rank, line, line, reason, sym or None, line))
        elif sym:
            out.append(Anchor(path, rank, 0, 0, "mention", str(sym)))
    chunk = evidence.get("chunk")
    if isinstance(chunk, dict) and isinstance(chunk.get("start_line"), int):
        out.append(
            Anchor(path, rank, chunk["start_line"], chunk["end_line"], "chunk", chunk.get("symbol"))
        )
    section = evidence.get("section")
    if isinstance(section, dict):
        # a section of a document tree: its own text (a unit cuts a window when it is long)
        start, end = section.get("start"), section.get("end")
        lines = SECTION_LINES
        if section.get("unit") == "line" and isinstance(start, int) and isinstance(end, int):
            lines = max(1, end - start + 1)
        out.append(Anchor(path, rank, 1, lines, "section"))
    for sym in evidence.get("symbols", ()) or ():
        out.append(Anchor(path, rank, 0, 0, "symbol", str(sym)))
    walk = evidence.get("walk")
    if isinstance(walk, dict) and "::" in str(walk.get("node", "")):
        out.append(Anchor(path, rank, 0, 0, "walk", str(walk["node"]).partition("::")[2]))
    return out


def chunk_scores(
    plan_terms: dict[str, float], rows: Sequence[ChunkRow], *, in_file_idf: bool = False
) -> list[tuple[float, int]]:
    """BM25 (k1 1.2, b 0.75, within the file) of the chunks matching a query term, as
    ``(score, chunk index)``, best first.

    ``in_file_idf``: each term's weight also times its IDF among the file's chunks
    (``log(1 + (n - df + 0.5) / (df + 0.5))``), so a query term that is in most of the
    file's chunks (the class or module the whole file is about) does little to tell its
    places apart, and a rarer one decides. The anchors use it; the symbol ranking's evidence
    keeps the plain scores (:func:`both_chunk_scores` gives both in one pass)."""
    plain, idf = both_chunk_scores(plan_terms, rows)
    return idf if in_file_idf else plain


def both_chunk_scores(
    plan_terms: dict[str, float], rows: Sequence[ChunkRow]
) -> tuple[list[tuple[float, int]], list[tuple[float, int]]]:
    """:func:`chunk_scores` without and with ``in_file_idf``, matching the rows once (terms
    summed in sorted order: the same floats in every process, whatever the string hash
    seed)."""
    if not rows or not plan_terms:
        return [], []
    avg = sum(len(r.tokens) for r in rows) / len(rows) or 1.0
    wanted = plan_terms.keys()
    matched: list[tuple[int, float, list[tuple[str, int]]]] = []  # index, norm, term counts
    df: Counter[str] = Counter()
    for i, row in enumerate(rows):
        common = wanted & set(row.tokens)
        if not common:
            continue
        df.update(common)
        norm = 1.2 * (0.25 + 0.75 * len(row.tokens) / avg)
        matched.append((i, norm, [(t, row.tokens.count(t)) for t in sorted(common)]))
    n = len(rows)
    weighted = {
        t: w * math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t, w in plan_terms.items()
    }
    out: tuple[list[tuple[float, int]], list[tuple[float, int]]] = ([], [])
    for weights, scored in zip((plan_terms, weighted), out, strict=True):
        for i, norm, counts in matched:
            s = 0.0
            for t, c in counts:
                s += weights[t] * c * 2.2 / (c + norm)
            scored.append((s, i))
        scored.sort(key=lambda x: (-x[0], x[1]))
    return out


def _bm25_anchors(
    rows: Sequence[ChunkRow], scored: list[tuple[float, int]], path: str, rank: int, limit: int
) -> list[Anchor]:
    return [
        Anchor(path, rank, rows[i].start_line, rows[i].end_line, "bm25", rows[i].symbol)
        for _, i in scored[:limit]
    ]


def weighted_terms(terms: Sequence[str]) -> dict[str, float]:
    """Weights of a retriever's ranked query terms (most important first, repeated to weigh
    more, as flat retrieval reports them): copies x (2 - rank / count), so the order counts."""
    copies = Counter(terms)
    order = list(dict.fromkeys(terms))
    return {t: copies[t] * (2.0 - i / len(order)) for i, t in enumerate(order)}


def plan(
    source: TreeSource,
    hits: Sequence[Any],
    query: str = "",
    *,
    terms: Sequence[str] | None = None,
    max_files: int = MAX_FILES,
    chunks_per_file: int = CHUNKS_PER_FILE,
) -> Plan:
    """Anchors of the first ``max_files`` ranked hits that have text.

    ``hits``: ranked :class:`~treeseek.search.base.FileHit` (anything with ``path`` and
    ``evidence``). ``terms``: the query's terms as the retriever ranked them (flat's trace
    has them), which saves looking their document frequencies up again; without them the
    terms of ``query`` are weighed here."""
    weights: dict[str, float] = {}
    if terms:
        weights = weighted_terms(terms)
    elif query:
        weights = query_terms(source, query)
    paths: list[str] = []
    for hit in hits:
        if len(paths) >= max_files:
            break
        if hit.path not in paths and source.lines(hit.path):
            paths.append(hit.path)
    source.prefetch_symbols(paths)
    source.chunk_rows(paths)
    by_path = {h.path: h for h in hits}
    anchors: dict[str, list[Anchor]] = {}
    files: list[FileEvidence] = []
    for rank, path in enumerate(paths):
        evidence = evidence_dict(by_path[path])
        from_evidence = _evidence_anchors(path, rank, evidence)
        found = _order(source, path, from_evidence)
        rows = source.chunk_rows([path]).get(path) or []
        scored, places = both_chunk_scores(weights, rows)
        found += _bm25_anchors(rows, places, path, rank, chunks_per_file)

        if not found:
            n = len(source.lines(path) or [])
            found.append(Anchor(path, rank, 1, min(n, HEAD_LINES), "head"))
        anchors[path] = found
        files.append(_file_evidence(source, path, rank, rows, scored, from_evidence, weights))
    symbols = rank_symbols(
        files, extract_mentions(query) if query else QueryMentions(), MAX_SYMBOLS
    )
    return Plan(source, paths, anchors, weights, symbols)


def _file_evidence(
    source: TreeSource,
    path: str,
    rank: int,
    rows: Sequence[ChunkRow],
    scored: list[tuple[float, int]],
    from_evidence: list[Anchor],
    weights: dict[str, float],
) -> FileEvidence:
    best: dict[str, float] = {}
    for score, i in scored:
        sym = rows[i].symbol
        if sym and score > best.get(sym, 0.0):
            best[sym] = score
    best.update(_unchunked_scores(weights, rows, source.lines(path) or [], source.symbols(path)))
    matched: dict[str, str] = {}
    ranking_chunk = None
    for a in from_evidence:
        if a.reason == "chunk":
            ranking_chunk = a.symbol
        elif a.symbol and a.reason in ("mention", "frame"):
            matched.setdefault(a.symbol, a.reason)
    return FileEvidence(path, rank, source.symbols(path), best, matched, ranking_chunk)


def _unchunked_scores(
    weights: dict[str, float], rows: Sequence[ChunkRow], lines: Sequence[str], symbols: list[Symbol]
) -> dict[str, float]:
    """BM25 of the functions and classes that have no chunk of their own (those nested in a
    function stay in its chunk), over their own lines, as :func:`both_chunk_scores` scores a
    chunk without the in-file IDF (same length normalization against the file's chunks).

    Without it a nested function had no evidence of its own, and when a fix is inside one
    (``check_thread.check``) the symbol the answer points to could only be the outer one."""
    if not rows or not weights or not lines:
        return {}
    chunked = {r.symbol for r in rows}
    avg = sum(len(r.tokens) for r in rows) / len(rows) or 1.0
    out: dict[str, float] = {}
    for sym in symbols:
        if sym.kind not in _SYMBOL_KINDS or sym.qname in chunked:
            continue
        text = "\n".join(lines[sym.start_line - 1 : sym.end_line])
        tokens = fts_document(sym.qname + "\n" + text).split()  # as the code index does
        counts = Counter(t for t in tokens if t in weights)
        if not counts:
            continue
        norm = 1.2 * (0.25 + 0.75 * len(tokens) / avg)
        score = 0.0
        for t in sorted(counts):
            c = counts[t]
            score += weights[t] * c * 2.2 / (c + norm)
        out[sym.qname] = score
    return out


def _order(source: TreeSource, path: str, anchors: list[Anchor]) -> list[Anchor]:
    """Evidence anchors best first: named lines and functions, the ranking chunk, then named
    classes (an issue names the classes it uses more often than the ones to change), then
    symbols found by search or a walk."""
    kinds = {s.qname: s.kind for s in source.symbols(path)}

    def rank(a: Anchor) -> int:
        kind = kinds.get(a.symbol or "")
        if a.reason == "frame" or (a.reason == "mention" and kind in _FUNCTIONS):
            return 0
        if a.reason in ("chunk", "section"):
            return 1
        if a.reason == "mention":
            return 2
        return 3

    return sorted(anchors, key=rank)


# -- units -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Unit:
    path: str
    start: int
    end: int
    focus: int
    symbol: str | None  # qualified name within the file
    reason: str
    priority: float
    file_rank: int = 0


def _named(
    symbols: Sequence[Symbol], by_qname: dict[str, Symbol], name: str | None
) -> Symbol | None:
    """The symbol ``name`` names: its qualified name, else the one symbol whose qualified
    name ends with ``.name`` (a frame or a mention gives only the function's name)."""
    if not name:
        return None
    found = by_qname.get(name)
    if found is not None:
        return found
    tail = [s for s in symbols if s.qname.endswith("." + name)]
    return tail[0] if len(tail) == 1 else None


def _enclosing(symbols: Sequence[Symbol], line: int) -> list[Symbol]:
    """Symbols containing ``line``, outermost first."""
    return [s for s in symbols if s.start_line <= line <= s.end_line]


class _Costs:
    """Per-line token costs of files (each line with its newline), cached."""

    def __init__(self, source: TreeSource, counter: TokenCounter) -> None:
        self.source = source
        self.counter = counter
        self._cost: dict[str, list[int | None]] = {}
        self._chars: dict[str, list[Any]] = {}

    def line(self, path: str, line: int) -> int:
        costs = self._cost.get(path)
        if costs is None:
            costs = self._cost[path] = self.source.line_table(self.counter.name, path)
        c = costs[line]
        if c is None:
            text = (self.source.lines(path) or [])[line - 1]
            c = costs[line] = self.counter.count(text + "\n")
        return c

    def span(self, path: str, lo: int, hi: int) -> int:
        return sum(self.line(path, i) for i in range(lo, hi + 1))

    def estimate(self, path: str, lo: int, hi: int) -> int:
        """A quick estimate of ``span`` (a third of the characters, plus one a line), for
        choosing between a whole symbol and a window, where exactness buys nothing."""
        prefix = self._chars.get(path)
        if prefix is None:
            prefix = self._chars[path] = self.source.line_table("chars/3", path)
            if prefix[-1] is None:  # first use in the process: the prefix sums, at once
                sizes = (len(text) // 3 + 1 for text in self.source.lines(path) or [])
                prefix[:] = itertools.accumulate(sizes, initial=0)
        value: int = prefix[min(hi, len(prefix) - 1)] - prefix[max(lo, 1) - 1]
        return value


def _window(
    p: Plan, costs: _Costs, path: str, lo: int, hi: int, focus: int, cap: int
) -> tuple[int, int]:
    """At most :data:`WINDOW_LINES` lines within ``lo..hi`` around ``focus`` costing at most
    ``cap`` tokens (possibly empty: ``(focus, focus - 1)``)."""
    focus = min(max(focus, lo), hi)
    s = e = focus
    if costs.line(path, focus) > cap:
        return focus, focus - 1
    used = costs.line(path, focus)
    # a little more after the focus than before: code reads downwards
    while e - s + 1 < WINDOW_LINES:
        grew = False
        for side in ("down", "up", "down"):
            if e - s + 1 >= WINDOW_LINES:
                break
            if side == "down" and e < hi and used + costs.line(path, e + 1) <= cap:
                e += 1
                used += costs.line(path, e)
                grew = True
            elif side == "up" and s > lo and used + costs.line(path, s - 1) <= cap:
                s -= 1
                used += costs.line(path, s)
                grew = True
        if not grew:
            break
    return s, e


def _unit(p: Plan, costs: _Costs, anchor: Anchor, cap: int, priority: float) -> Unit | None:
    path = anchor.path
    n = len(p.source.lines(path) or [])
    if n == 0:
        return None
    symbols = p.source.symbols(path)
    by_qname = p.qnames(path)
    named = _named(symbols, by_qname, anchor.symbol)
    line_in_named = named is not None and named.start_line <= anchor.start_line <= named.end_line
    if anchor.start_line > 0 and (named is None or line_in_named or anchor.reason == "chunk"):
        # lines past the end (stale evidence) clip to the last one
        lo = min(n, anchor.start_line)
        hi = max(lo, min(n, anchor.end_line))
    elif named is not None:
        lo, hi = named.start_line, min(n, named.end_line)
    else:
        return None
    # a frame's line from another version of the file than the indexed one: its function
    # name is the better guide (the line is dropped when it lies outside that function)
    if anchor.focus and lo <= anchor.focus <= hi:
        focus = anchor.focus
    elif named is not None and named.kind is SymbolKind.CLASS and anchor.start_line <= 0:
        focus = lo  # a class named without a line: its header
    else:
        scan = hi - lo if anchor.reason == "section" else MAX_SCAN_LINES
        focus = p.hottest(path, lo, hi, scan)
    around = _enclosing(symbols, focus)
    inner = around[-1] if around else None
    functions = [s for s in around if s.kind in _FUNCTIONS]
    # the unit's symbol: the named one, else the outermost function below classes, else the
    # innermost symbol
    if named is not None and named.kind in _FUNCTIONS:
        choices = [named, *[f for f in functions if f is not named]]
    else:
        choices = list(functions)
    for sym in choices:
        s, e = max(1, sym.start_line - SYMBOL_MARGIN), min(n, sym.end_line + SYMBOL_MARGIN)
        if costs.estimate(path, s, e) <= cap:
            return Unit(
                path,
                s,
                e,
                focus,
                sym.qname,
                anchor.reason,
                priority,
                anchor.file_rank,
            )
    cls = named if named is not None and named.kind is SymbolKind.CLASS else None
    if cls is None and inner is not None and inner.kind is SymbolKind.CLASS and not functions:
        cls = inner
    if cls is not None and not functions:
        members = [s.start_line for s in symbols if s.parent == cls.qname]
        head_end = min(members) - 1 if members else cls.end_line
        head_end = max(cls.start_line, min(head_end, n))
        if focus > head_end:  # a line in the class body between its methods
            head_lo, head_hi = max(cls.start_line, focus - WINDOW_LINES), min(cls.end_line, n)
        else:
            head_lo, head_hi = cls.start_line, head_end
        s, e = _window(
            p, costs, path, head_lo, head_hi, focus if focus > head_end else head_lo, cap
        )
        if e >= s:
            return Unit(
                path,
                s,
                e,
                focus,
                cls.qname,
                anchor.reason,
                priority,
                anchor.file_rank,
            )
        return None
    # a window around the hottest line, inside the innermost function if there is one
    if functions:
        inside = functions[-1]
        lo, hi = max(1, inside.start_line), min(n, inside.end_line)
    s, e = _window(p, costs, path, lo, hi, focus, cap)
    if e < s:
        return None
    qname = functions[-1].qname if functions else (inner.qname if inner else None)
    return Unit(path, s, e, focus, qname, anchor.reason, priority, anchor.file_rank)


def unit_priority(file_rank: int, anchor_rank: int, tokens: int = 1) -> float:
    """The priority of a file's ``anchor_rank``-th anchor (both 0-based) whose unit is about
    ``tokens`` long: steeper across files than within one (the second file's best,
    ``2 ** -1.5`` = 0.35, ranks between the best file's second and third places at equal
    sizes), divided by ``tokens ** SIZE_DECAY``: value per token, as a knapsack fills, but
    damped (a long function is hardly less likely to hold the answer than a short one, it
    just costs more), so of two places ranked alike the shorter comes first, and a unit 16
    times longer needs twice the rank priority."""
    base = (1 + file_rank) ** -FILE_DECAY / (1 + anchor_rank)
    return float(base / max(1, tokens) ** SIZE_DECAY)


def units(p: Plan, costs: _Costs, cap: int) -> list[Unit]:
    """Every anchor's unit, in priority order."""
    out: list[Unit] = []
    for rank, path in enumerate(p.paths):
        found = 0
        anchors = list(p.anchors.get(path, ()))
        for j, anchor in enumerate(anchors):
            u = _unit(p, costs, anchor, cap, 0.0)
            if u is not None:
                out.append(_ranked(costs, u, j))
                found += 1
        if not found:  # no anchor made a unit: the file's head
            n = len(p.source.lines(path) or [])
            head = Anchor(path, rank, 1, min(n, HEAD_LINES), "head")
            u = _unit(p, costs, head, cap, 0.0)
            if u is not None:
                out.append(_ranked(costs, u, len(anchors)))
    out += symbol_units(p, costs, cap)
    out.sort(key=lambda u: -u.priority)  # stable: file order, then anchor order
    return out


def symbol_units(p: Plan, costs: _Costs, cap: int) -> list[Unit]:
    """Units of the answer's first :data:`SYMBOL_PLACES` ranked symbols, the ``g``-th
    (0-based) with the priority of the best file's ``g``-th place, ``1 / (1 + g)`` divided by
    its size ``** SIZE_DECAY``: the symbol ranking reads the question's identifiers and each
    symbol's own chunks across the files with a gentler file prior than the places, so a
    function of the second or third file that it puts first is taken as early as the best
    file's best place. A symbol whose lines are already taken costs nothing more."""
    out: list[Unit] = []
    rank_of = {path: i for i, path in enumerate(p.paths)}
    for g, name in enumerate(p.symbols[:SYMBOL_PLACES]):
        path, _, qname = name.partition("::")
        rank = rank_of.get(path)
        if rank is None or not qname:
            continue
        if qname not in p.qnames(path):
            continue
        u = _unit(p, costs, Anchor(path, rank, 0, 0, "symbol", qname), cap, 0.0)
        if u is not None:
            out.append(_ranked(costs, u, g, file_rank=0))
    return out


# -- selection ---------------------------------------------------------------------------------


def _ranked(costs: _Costs, u: Unit, anchor_rank: int, file_rank: int | None = None) -> Unit:
    """``u`` with the priority of its file's (or file ``file_rank``'s) ``anchor_rank``-th
    place at its estimated size."""
    size = costs.estimate(u.path, u.start, u.end)
    rank = u.file_rank if file_rank is None else file_rank
    return dataclasses.replace(u, priority=unit_priority(rank, anchor_rank, size))


def unit_cap(budget: int) -> int:
    return min(MAX_UNIT_TOKENS, max(MIN_UNIT_TOKENS, int(budget * UNIT_SHARE)))


def select(p: Plan, budget: int, counter: TokenCounter | None = None) -> Selection:
    """The spans of ``p``'s files that fit ``budget`` tokens, best first (see the module)."""
    counter = counter or default_counter()
    if budget < 0:
        raise ValueError("a budget cannot be negative")
    costs = _Costs(p.source, counter)
    cap = min(unit_cap(budget), budget)
    order: dict[str, dict[int, int]] = {}  # path -> line -> order of the unit that took it
    taken: list[Unit] = []
    used = 0
    candidates = units(p, costs, cap)
    best = p.paths[0] if p.paths else ""
    for u in candidates:
        lines = order.setdefault(u.path, {})
        new = [i for i in range(u.start, u.end + 1) if i not in lines]
        if not new:
            if u.start <= u.focus <= u.end:
                taken.append(u)  # already shown: still ranks its symbol
            continue
        cost = sum(costs.line(u.path, i) for i in new)
        # until the best file has a span, other files leave room for its cut (a symbol of
        # another file can rank first: see symbol_units)
        room = budget
        if u.path != best and not order.get(best):
            room = budget - MIN_CUT_TOKENS
        if used + cost > room:
            remaining = room - used
            # cut to fit: the best file always, another file when enough budget is left
            if remaining < MIN_CUT_TOKENS and (lines or u.file_rank > 0):
                continue
            s, e = _window(p, costs, u.path, u.start, u.end, u.focus, remaining)
            new = [i for i in range(s, e + 1) if i not in lines]
            cost = sum(costs.line(u.path, i) for i in new)
            if not new or used + cost > room:
                continue
            u = dataclasses.replace(u, start=s, end=e)
        for i in new:
            lines[i] = len(taken)
        taken.append(u)
        used += cost
    spans = _spans(p, order, taken, counter)
    spans = _enforce(spans, budget, counter)
    return Selection(
        spans, list(p.symbols), Budget(budget, sum(s.tokens for s in spans), counter.name)
    )


def _spans(
    p: Plan, order: dict[str, dict[int, int]], taken: list[Unit], counter: TokenCounter
) -> list[Span]:
    """Maximal runs of taken lines per file, best first (by the best unit in each run)."""
    found: list[tuple[int, Span]] = []
    for path, lines in order.items():
        if not lines:
            continue
        text_lines = p.source.lines(path) or []
        numbers = sorted(lines)
        runs: list[tuple[int, int]] = []
        start = prev = numbers[0]
        for i in numbers[1:]:
            if i != prev + 1:
                runs.append((start, prev))
                start = i
            prev = i
        runs.append((start, prev))
        for s, e in runs:
            best = min(lines[i] for i in range(s, e + 1))
            unit = taken[best]
            text = "\n".join(text_lines[s - 1 : e])
            sym = symbol_id(path, unit.symbol) if unit.symbol else None
            found.append((best, Span(path, s, e, sym, counter.count(text), text, unit.reason)))
    found.sort(key=lambda x: x[0])
    return [s for _, s in found]


def _enforce(spans: list[Span], budget: int, counter: TokenCounter) -> list[Span]:
    """Trim spans from the last (lowest priority) until the exact total fits ``budget``."""
    spans = list(spans)
    while spans and sum(s.tokens for s in spans) > budget:
        last = spans[-1]
        over = sum(s.tokens for s in spans) - budget
        if last.tokens <= over or last.start_line == last.end_line:
            spans.pop()
            continue
        lines = last.text.split("\n")[:-1]
        text = "\n".join(lines)
        spans[-1] = Span(
            last.path,
            last.start_line,
            last.start_line + len(lines) - 1,
            last.symbol,
            counter.count(text),
            text,
            last.reason,
        )
    return spans


# -- the whole-file baseline -------------------------------------------------------------------


def whole_files(
    source: TreeSource, hits: Sequence[Any], budget: int, counter: TokenCounter | None = None
) -> Selection:
    """The top files, whole, in rank order until the budget is spent: the first file that
    does not fit is cut to its first lines that do, and nothing follows it."""
    counter = counter or default_counter()
    costs = _Costs(source, counter)
    spans: list[Span] = []
    used = 0
    for hit in hits:
        lines = source.lines(hit.path)
        if not lines:
            continue
        text = "\n".join(lines)
        n = counter.count(text)
        if used + n <= budget:
            spans.append(Span(hit.path, 1, len(lines), None, n, text, "file"))
            used += n
            continue
        room, e = budget - used, 0
        total = 0
        while e < len(lines) and total + costs.line(hit.path, e + 1) <= room:
            e += 1
            total += costs.line(hit.path, e)
        if e:
            cut = "\n".join(lines[:e])
            spans.append(Span(hit.path, 1, e, None, counter.count(cut), cut, "file"))
        break
    spans = _enforce(spans, budget, counter)
    return Selection(spans, [], Budget(budget, sum(s.tokens for s in spans), counter.name))
