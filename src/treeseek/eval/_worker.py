"""The worker side of an eval run: answer a :class:`Job` (tree + query) with a retriever.

A worker never sees an instance: no id, no repository name, no gold files. It gets a job
number (to hand the answer back), an opaque tree name, the database file holding the tree and
the query text, and returns the ranked paths with usage, cost, wall time and any error.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from typing import Any

import treeseek
from treeseek.database import Database
from treeseek.llm.base import Navigator, Usage, usage_spent
from treeseek.llm.prices import estimate_cost
from treeseek.llm.select import default_spec
from treeseek.search.base import QueryOptions, Result
from treeseek.search.strategy import default_strategy, run_query

#: per-commit database files a worker keeps open (instances come grouped by commit)
_OPEN_FILES = 4


@dataclass(frozen=True, slots=True)
class RunSettings:
    """What defines a run; a resumed run must have the same settings (workers aside)."""

    dataset: str
    universe: str  # "paths" | "contents"
    #: "" = what `treeseek query` runs when none is named: flat without an LLM (``lexical``),
    #: LLM tree search (``auto``) with one; resolved when the settings are made
    strategy: str = ""
    llm: str = "lexical"
    ranker: str | None = None
    k: int = 10
    tiers: tuple[str, ...] = ()
    sample: int | None = None
    seed: int = 0
    limit: int | None = None
    hints: int = 0  # tree search: flat retrieval's top-N files as hints (QueryOptions.hints)
    top_layer_tokens: int = 0  # Block turn 0 widened to this token budget (QueryOptions)
    #: token budgets at which each answer is also selected as line spans (and as whole files,
    #: the baseline) and scored at line and symbol level; () = file level only
    budgets: tuple[int, ...] = ()
    #: flat: the embedder ("minilm") whose file vectors every tree is given and every query
    #: fuses (as `treeseek index --vectors` / `treeseek query --vectors`); None = lexical
    vectors: str | None = None
    #: contents: the layer string the per-commit files are named by, when not the current
    #: hooks' (`treeseek eval run --layers`: files an older hook version built)
    layers: str | None = None

    def __post_init__(self) -> None:
        if not self.strategy:
            llm = self.llm.strip() or default_spec(os.environ)
            object.__setattr__(self, "strategy", default_strategy(llm))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tiers"] = list(self.tiers)
        data["budgets"] = list(self.budgets)
        for later in ("hints", "top_layer_tokens", "budgets", "vectors", "layers"):
            if not data[later]:
                del data[later]  # runs recorded before the option existed still resume
        return data


@dataclass(frozen=True, slots=True)
class Job:
    """Everything a worker gets: a job number, a tree (its name, and the database file holding
    it when that is not the run's database) and the query. No instance id, no repository name,
    no gold."""

    number: int
    tree: str
    query: str
    db_path: str = ""  # "" = the run's database


@dataclass(slots=True)
class Answer:
    number: int
    preds: list[str]
    strategy: str = ""
    navigator: str = ""
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    wall_s: float = 0.0
    error: str | None = None
    trace: dict[str, Any] = field(default_factory=dict)
    #: per budget: the selected spans (without text), ranked symbols and the whole-file
    #: baseline's spans (see :func:`budgeted_contexts`)
    contexts: list[dict[str, Any]] = field(default_factory=list)


def budgeted_contexts(
    db: Database, tree: str, query: str, result: Result, budgets: tuple[int, ...]
) -> list[dict[str, Any]]:
    """The answer as budgeted context at each budget, and the whole-file baseline, without
    texts (what a record keeps; scored by the runner, which holds the gold)."""
    from treeseek.context import TreeSource, plan, select, whole_files

    source = TreeSource(db.store, tree)
    chosen = plan(source, result.files, query, terms=result.trace.params.get("terms"))
    out: list[dict[str, Any]] = []
    for budget in budgets:
        selection = select(chosen, budget)
        baseline = whole_files(source, result.files, budget)
        out.append(
            {
                "budget": selection.budget.to_dict(),
                "context": [s.to_dict(text=False) for s in selection.spans],
                "symbols": selection.symbols,
                "baseline": {
                    "budget": baseline.budget.to_dict(),
                    "context": [s.to_dict(text=False) for s in baseline.spans],
                },
            }
        )
    return out


class Answerer:
    """Answers jobs with its own database connections (one per file) and one navigator."""

    def __init__(self, db: Database, settings: RunSettings, navigator: Navigator) -> None:
        self.db = db
        #: connections to per-commit database files, most recently used last
        self._files: OrderedDict[str, Database] = OrderedDict()
        self.navigator = navigator
        self.budgets = settings.budgets
        self.options = QueryOptions(
            strategy=settings.strategy,
            k=settings.k,
            ranker=settings.ranker,
            hints=settings.hints,
            top_layer_tokens=settings.top_layer_tokens,
            vectors=settings.vectors,
            include_content=False,  # scoring needs paths only
        )

    def answer(self, job: Job) -> Answer:
        started = time.perf_counter()
        try:
            db = self._database(job.db_path)
            result = run_query(
                db.store,
                db.tree(job.tree),
                job.query,
                self.options,
                self.navigator,
                caches=db.caches,
            )
            contexts = (
                budgeted_contexts(db, job.tree, job.query, result, self.budgets)
                if self.budgets
                else []
            )
        except Exception as exc:  # an error is a scored miss, never a dropped query
            spent = usage_spent(exc)  # what its LLM calls cost before it failed
            return Answer(
                job.number,
                [],
                navigator=self.navigator.name,
                usage=spent,
                cost_usd=estimate_cost(self.navigator.name, spent),
                wall_s=time.perf_counter() - started,
                error=f"{type(exc).__name__}: {exc}",
            )
        return Answer(
            number=job.number,
            preds=[hit.path for hit in result.files],
            strategy=result.strategy,
            navigator=result.navigator,
            usage=result.usage,
            cost_usd=(
                result.cost_usd
                if result.cost_usd is not None
                else estimate_cost(result.navigator, result.usage)
            ),
            wall_s=time.perf_counter() - started,
            trace=_trace_summary(result),
            contexts=contexts,
        )

    def _database(self, db_path: str) -> Database:
        if not db_path:
            return self.db
        if db_path in self._files:
            self._files.move_to_end(db_path)
            return self._files[db_path]
        if len(self._files) >= _OPEN_FILES:
            self._files.popitem(last=False)[1].close()
        self._files[db_path] = treeseek.open(db_path)
        return self._files[db_path]

    def close(self) -> None:
        for db in self._files.values():
            db.close()
        self._files.clear()


def _trace_summary(result: Result) -> dict[str, Any]:
    rounds = result.trace.rounds
    mode = result.trace.params.get("mode")  # flat: "hybrid" when vectors took part
    return {
        **({"mode": mode} if mode else {}),
        "rounds": len(rounds),
        "blocks": sum(len(r.blocks) for r in rounds),
        "rankers": sorted({r.ranker for r in rounds if r.ranker}),
        "events": result.trace.events[:20],
    }


def navigator_for(settings: RunSettings) -> Navigator:
    from treeseek.llm.select import navigator_from_spec

    return navigator_from_spec(settings.llm)


_WORKER: Answerer | None = None


def init_worker(db_path: str, settings: RunSettings) -> None:
    """Process-pool initializer: one Answerer (own connection, own navigator) per process."""
    global _WORKER
    _WORKER = Answerer(treeseek.open(db_path), settings, navigator_for(settings))


def answer_in_worker(job: Job) -> Answer:
    assert _WORKER is not None, "worker not initialized"
    return _WORKER.answer(job)
