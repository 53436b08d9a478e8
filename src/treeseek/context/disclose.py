"""Progressive disclosure of ranked files, and follow-up expansion of one item.

:func:`disclose` turns ranked files (a query's hits) into a :class:`Context` at one level:

- ``paths``: the ranked files with their scores and the signals that ranked them;
- ``outline``: each ranked file's outline, best file first, while the outlines fit the budget
  (the best file's cut to its first symbols when the whole does not fit);
- ``spans``: :func:`treeseek.context.select.select`: line spans within the budget;
- ``full``: whole files, best first, until the budget is spent (the last one cut).

:func:`expand` shows one item without searching again: a symbol by name path (its whole body),
a line range ``path:A-B`` (with ``margin`` lines either side) or a whole file, optionally cut
to a budget around its start.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from treeseek.code.model import symbol_id
from treeseek.context.model import Budget, Context, FileOutline, Level, RankedFile, Span
from treeseek.context.names import check_range, parse_range, resolve_file, resolve_symbol
from treeseek.context.outline import cut_outline, outline_file
from treeseek.context.select import Selection, evidence_dict, plan, select, whole_files
from treeseek.context.source import SectionPlace, TreeSource
from treeseek.errors import AmbiguousSymbol, ConfigError, NodeNotFound, PathError
from treeseek.llm.tokens import TokenCounter, default_counter

_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,5}$")

#: the budget of a budgeted answer when none is given
DEFAULT_BUDGET = 8000


def level_of(value: str | Level) -> Level:
    try:
        return Level(value)
    except ValueError:
        known = ", ".join(lv.value for lv in Level)
        raise ConfigError(f"unknown disclosure level {value!r}; one of {known}") from None


def check_budget(budget: int) -> int:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ConfigError(f"a budget is a positive number of tokens, not {budget!r}")
    return budget


def check_margin(margin: int) -> int:
    if isinstance(margin, bool) or not isinstance(margin, int) or margin < 0:
        raise ConfigError(f"a margin is a number of lines, 0 or more, not {margin!r}")
    return margin


def _ranked(hits: Sequence[Any], spans: Sequence[Span] = ()) -> list[RankedFile]:
    count: dict[str, int] = {}
    for s in spans:
        count[s.path] = count.get(s.path, 0) + 1
    out: list[RankedFile] = []
    for rank, hit in enumerate(hits, 1):
        why = evidence_dict(hit).get("why")
        out.append(
            RankedFile(
                path=hit.path,
                rank=rank,
                score=getattr(hit, "score", None),
                why=dict(why) if isinstance(why, dict) else {},
                spans=count.get(hit.path, 0),
            )
        )
    return out


def _path_line(f: RankedFile) -> str:
    score = f" {f.score:.4f}" if f.score is not None else ""
    why = " ".join(f"{k}:{v}" for k, v in f.why.items())
    return f"{f.rank:>2}. {f.path}{score}" + (f"  ({why})" if why else "")


def disclose(
    source: TreeSource,
    hits: Sequence[Any],
    *,
    query: str = "",
    level: str | Level = Level.SPANS,
    budget: int = DEFAULT_BUDGET,
    terms: Sequence[str] | None = None,
    counter: TokenCounter | None = None,
) -> Context:
    """``hits`` (ranked FileHits, or anything with ``path``, ``score``, ``evidence``) at
    ``level`` within ``budget`` tokens (``terms``: the retriever's ranked query terms, see
    :func:`~treeseek.context.select.plan`)."""
    lv = level_of(level)
    budget = check_budget(budget)
    counter = counter or default_counter()
    ranked = _ranked(hits)
    ctx = Context(tree=source.tree, query=query, level=lv, budget=Budget(budget, 0, counter.name))
    if lv is Level.PATHS:
        used = 0
        for f in ranked:
            cost = counter.count(_path_line(f) + "\n")
            if used + cost > budget:
                break
            ctx.files.append(f)
            used += cost
        ctx.budget = Budget(budget, used, counter.name)
        return ctx
    if lv is Level.OUTLINE:
        used = 0
        best = True
        for f in ranked:
            if not source.lines(f.path):
                continue
            o: FileOutline | None = outline_file(source, f.path, counter)
            if best and o is not None:  # the best file is always represented: its first
                o = cut_outline(o, budget, counter)  # symbols when not all fit (only it:
            best = False  # a worse file is never cut into the place the best did not fit)
            if o is not None and used + o.tokens <= budget:
                ctx.outlines.append(o)
                used += o.tokens
        ctx.files = ranked
        ctx.budget = Budget(budget, used, counter.name)
        return ctx
    selection: Selection
    if lv is Level.FULL:
        selection = whole_files(source, hits, budget, counter)
    else:
        selection = select(plan(source, hits, query, terms=terms), budget, counter)
    ctx.context = [document_lines(source, span) for span in selection.spans]
    ctx.symbols = selection.symbols
    ctx.budget = selection.budget
    ctx.files = _ranked(hits, selection.spans)
    return ctx


def _cut(span: Span, budget: int | None, counter: TokenCounter) -> Span:
    """``span`` cut to its first lines that fit ``budget`` (None: whole): the longest such
    prefix, found by doubling then bisecting the number of lines (a few counts of prefixes
    about the answer's size, not one count of every prefix of a long span)."""
    if budget is None or span.tokens <= budget:
        return span
    lines = span.text.split("\n")

    def fits(k: int) -> bool:
        return counter.count("\n".join(lines[:k])) <= budget

    if len(lines) < 2 or not fits(1):  # at least its first line, or an error
        raise ConfigError(f"a budget of {budget} tokens cannot hold the first line of {span.path}")
    lo, hi = 1, 2  # the first lo lines fit; the first hi do not (all of them do not)
    while hi < len(lines) and fits(hi):
        lo, hi = hi, hi * 2
    hi = min(hi, len(lines))
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    text = "\n".join(lines[:lo])
    return Span(
        span.path,
        span.start_line,
        span.start_line + lo - 1,
        span.symbol,
        counter.count(text),
        text,
        span.reason,
    )


def document_lines(source: TreeSource, span: Span) -> Span:
    """``span`` with its document's line numbers when it is a section of a document tree
    (its path is the section's, which starts with the document's path); else as it is."""
    place = source.section(span.path)
    if place is None or place.offset == 0:
        return span
    return dataclasses.replace(
        span, start_line=span.start_line + place.offset, end_line=span.end_line + place.offset
    )


def line_span(
    source: TreeSource,
    path: str,
    start: int | None = None,
    end: int | None = None,
    *,
    margin: int = 0,
    counter: TokenCounter | None = None,
    reason: str = "lines",
) -> Span:
    """Lines ``start..end`` of a file (whole file when both are None), ``margin`` lines more
    each side (clipped to the file); bad ranges raise PathError. A section of a document tree
    is addressed, and answered, by its document's line numbers."""
    counter = counter or default_counter()
    place = source.section(path)
    if place is not None and margin and source.lines(place.document) is not None:
        # a margin reaches past the section: the lines around it are its document's
        check_margin(margin)
        first, last = _check_section_range(source, path, place, start, end)
        return _line_span(
            source,
            place.document,
            first,
            last,
            margin=margin,
            counter=counter,
            reason=reason,
        )
    if place is not None and place.offset:
        if start is not None or end is not None:
            _check_section_range(source, path, place, start, end)
        local = _line_span(
            source,
            path,
            None if start is None else start - place.offset,
            None if end is None else end - place.offset,
            margin=margin,
            counter=counter,
            reason=reason,
        )
        return document_lines(source, local)
    return _line_span(source, path, start, end, margin=margin, counter=counter, reason=reason)


def _check_section_range(
    source: TreeSource, path: str, place: SectionPlace, start: int | None, end: int | None
) -> tuple[int, int]:
    """A range of a section is in its document's line numbers: one that falls outside the
    section says so in those numbers (not in the section's own, which nobody typed). Returns
    the range (the whole section's when neither end is given)."""
    lines = source.lines(path)
    if lines is None:
        raise NodeNotFound(f"{path} has no stored text to show")
    first, last = place.first_line, place.first_line + len(lines) - 1
    s = first if start is None else start
    e = last if end is None else end
    if e < s:
        raise PathError(f"bad line range {s}-{e}: the end is before the start; write START-END")
    if s < first or e > last:
        raise PathError(
            f"lines {s}-{e} are outside {path}, which is lines {first}-{last} of"
            f" {place.document}; give a range within {first}-{last}"
        )
    return s, e


def _line_span(
    source: TreeSource,
    path: str,
    start: int | None,
    end: int | None,
    *,
    margin: int,
    counter: TokenCounter,
    reason: str,
) -> Span:
    lines = source.lines(path)
    if lines is None:
        node = source.node(path)
        why = node.content_status.missing_because if node is not None else "no content was stored"
        raise NodeNotFound(f"{path} has no stored content: {why}")
    n = len(lines)
    if start is None and end is None:
        s, e = 1, n
        if n == 0:
            return Span(path, 1, 0, None, 0, "", reason)
    else:
        s, e = check_range(path, n, 1 if start is None else start, end)
    check_margin(margin)
    s, e = max(1, s - margin), min(n, e + margin)
    text = "\n".join(lines[s - 1 : e])
    return Span(path, s, e, _symbol_at(source, path, s, e), counter.count(text), text, reason)


def _symbol_at(source: TreeSource, path: str, start: int, end: int) -> str | None:
    """The innermost symbol containing lines ``start..end``, as a name path."""
    best = None
    for s in source.symbols(path):
        inside = s.start_line <= start and end <= s.end_line
        if inside and (best is None or s.start_line >= best.start_line):
            best = s
    return symbol_id(path, best.qname) if best is not None else None


def expand(
    source: TreeSource,
    item: str,
    *,
    margin: int = 0,
    budget: int | None = None,
    counter: TokenCounter | None = None,
) -> Context:
    """One item in full: ``path::Qual.name`` or a unique short symbol name (the symbol's
    lines), ``path:A-B`` (those lines), or ``path`` (the whole file); ``margin`` lines more
    each side; cut to ``budget`` tokens from its start when given."""
    counter = counter or default_counter()
    if budget is not None:
        check_budget(budget)
    check_margin(margin)
    span = _expand_span(source, item.strip(), margin, counter)
    span = _cut(span, budget, counter)
    limit = budget if budget is not None else span.tokens
    return Context(
        tree=source.tree,
        query="",
        level=Level.SPANS,
        budget=Budget(limit, span.tokens, counter.name),
        context=[span],
        symbols=[span.symbol] if span.symbol else [],
    )


def _expand_span(source: TreeSource, item: str, margin: int, counter: TokenCounter) -> Span:
    if "::" in item:
        found = resolve_symbol(source, item)
        return _symbol_span(source, found.path, found.symbol.qname, margin, counter)
    node = source.node(item.strip("/"))
    if node is not None and node.is_file:
        return line_span(source, node.path, margin=margin, counter=counter, reason="file")
    path, start, end = parse_range(item)
    if start is not None:
        resolved = resolve_file(source, path)
        return line_span(source, resolved, start, end, margin=margin, counter=counter)
    if "/" in item or _SUFFIX.search(item):  # looks like a path: a unique path suffix
        try:
            resolved = resolve_file(source, item)
            return line_span(source, resolved, margin=margin, counter=counter, reason="file")
        except AmbiguousSymbol:
            raise
        except NodeNotFound:
            pass
    try:
        found = resolve_symbol(source, item)
    except NodeNotFound:
        if node is not None and node.is_dir:  # not a symbol's name either
            shown = node.path or "."
            raise NodeNotFound(
                f"{shown} is a directory: expand takes a file, a line range (PATH:A-B) or a"
                f" symbol; `treeseek outline {source.tree} {shown}` lists its symbols"
            ) from None
        raise
    return _symbol_span(source, found.path, found.symbol.qname, margin, counter)


def _symbol_span(
    source: TreeSource, path: str, qname: str, margin: int, counter: TokenCounter
) -> Span:
    sym = next(s for s in source.symbols(path) if s.qname == qname)
    n = len(source.lines(path) or [])
    span = line_span(
        source,
        path,
        min(sym.start_line, n),
        min(sym.end_line, n),
        margin=margin,
        counter=counter,
        reason="symbol",
    )
    return Span(
        span.path,
        span.start_line,
        span.end_line,
        symbol_id(path, qname),
        span.tokens,
        span.text,
        span.reason,
    )
