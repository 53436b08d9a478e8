"""Text renderings of contexts and outlines (the JSON form is each value's ``to_dict()``).

Spans print like ripgrep's: a ``path:start-end`` header (with the symbol and the token count),
then each line with its 1-based number, ``NUMBER:text``, right-aligned numbers. Lines are
printed as they are: never wrapped, whatever the terminal's width.
"""

from __future__ import annotations

from collections.abc import Iterable

from treeseek.context.model import Context, Level, Outline, RankedFile, Span
from treeseek.context.outline import render_file_outline


def span_header(span: Span) -> str:
    extras = []
    if span.symbol:
        extras.append(span.symbol.partition("::")[2] or span.symbol)
    extras.append(f"{span.tokens} tokens")
    return f"{span.path}:{span.start_line}-{span.end_line}  ({', '.join(extras)})"


def render_span(span: Span) -> str:
    width = len(str(max(span.end_line, 1)))
    out = [span_header(span)]
    if span.end_line >= span.start_line:
        for number, line in enumerate(span.text.split("\n"), span.start_line):
            out.append(f"{number:>{width}}:{line}")
    return "\n".join(out)


def render_spans(spans: Iterable[Span]) -> str:
    return "\n\n".join(render_span(s) for s in spans)


def render_file(f: RankedFile) -> str:
    score = f"  {f.score:.4f}" if f.score is not None else ""
    why = ", ".join(f"{k} {v}" for k, v in f.why.items())
    spans = f"  [{f.spans} span{'s' if f.spans != 1 else ''}]" if f.spans else ""
    return f"{f.rank:>2}. {f.path}{score}{spans}" + (f"  ({why})" if why else "")


def render_outline(outline: Outline) -> str:
    return "\n\n".join(
        render_file_outline(f.path, f.lines, f.items, f.omitted, f.unit) for f in outline.files
    )


def render_context(ctx: Context) -> str:
    """The text answer at the context's level (no trailing newline)."""
    if ctx.level is Level.PATHS:
        return "\n".join(render_file(f) for f in ctx.files)
    if ctx.level is Level.OUTLINE:
        return "\n\n".join(
            render_file_outline(o.path, o.lines, o.items, o.omitted, o.unit) for o in ctx.outlines
        )
    return render_spans(ctx.context)


def budget_line(ctx: Context) -> str:
    b = ctx.budget
    what = {
        Level.PATHS: f"{len(ctx.files)} files",
        Level.OUTLINE: f"{len(ctx.outlines)} outlines",
    }.get(ctx.level, f"{len(ctx.context)} spans")
    return f"{ctx.level} · {what} · {b.used} of {b.limit} tokens ({b.tokenizer})"
