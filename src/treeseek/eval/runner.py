"""Runs benchmark instances against a retrieval strategy and records every outcome.

The harness's one rule: a retriever is given the query text and an (opaquely named) tree,
nothing else. Instance ids, repository names and gold files stay in this process and are used
only to score and to report; a worker receives a :class:`Job` with a job number, a tree name
and the query.

- **Parallel**: ``workers > 1`` runs queries in a process pool (:mod:`treeseek.eval._worker`;
  each worker opens its own database connections; SQLite in WAL mode lets them read while trees
  are still being indexed). ``workers == 1`` runs inline. Contents trees are built by
  ``index_jobs`` processes, one repository each (:mod:`treeseek.eval.parallel`), and every tree
  is queried as soon as it is ready.
- **Resumable**: records are appended to ``per_query.jsonl`` as instances finish; a rerun into
  the same directory with the same settings skips the ids already recorded.
- **Errors are misses**: an instance whose tree cannot be built or whose query fails is scored
  as an empty prediction and keeps its error text.
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import json
import logging
import multiprocessing
import os
import platform
import resource
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import treeseek
from treeseek.embed.cache import EmbedCacheStats
from treeseek.errors import ConfigError
from treeseek.eval._worker import (
    Answer,
    Answerer,
    Job,
    RunSettings,
    answer_in_worker,
    init_worker,
    navigator_for,
)
from treeseek.eval.contents import ContentsUniverse
from treeseek.eval.datasets import Instance
from treeseek.eval.metrics import normalize_predictions, score
from treeseek.eval.parallel import build_parallel
from treeseek.eval.records import PER_QUERY_FILE, QueryRecord, RecordWriter, read_records
from treeseek.eval.report import write_report
from treeseek.eval.summary import Summary, summarize, write_summary
from treeseek.eval.universes import BuiltTree, CommitKey, PathUniverse
from treeseek.llm.base import Navigator
from treeseek.search.strategy import RANKERS, strategies

__all__ = ["RunOutcome", "RunSettings", "run_eval", "write_outputs"]

log = logging.getLogger("treeseek.eval")

RUN_FILE = "run.json"


@dataclass(slots=True)
class RunOutcome:
    out_dir: Path
    summary: Summary
    ran: int  # instances answered in this session
    skipped: int  # instances already recorded by an earlier session
    seconds: float
    index_seconds: float
    retried: int = 0  # errored records of earlier sessions answered again (retry_errors)


ProgressHook = Callable[[QueryRecord, Sequence[QueryRecord]], None]


def _check_run_file(out_dir: Path, settings: RunSettings) -> dict[str, Any]:
    path = out_dir / RUN_FILE
    if path.is_file():
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
            raise ConfigError(
                f"{path} is not valid JSON ({exc}): the settings of the run in {out_dir} are"
                " unknown; give another --out"
            ) from exc
        if not isinstance(stored, dict):
            raise ConfigError(f"{path} is not a run file (a JSON object); give another --out")
        wanted = settings.to_dict()
        if stored.get("settings") != wanted:
            had = stored.get("settings") or {}
            differ = ", ".join(
                f"{key} {had.get(key)!r} (now {wanted.get(key)!r})"
                for key in sorted(set(had) | set(wanted))
                if had.get(key) != wanted.get(key)
            )
            raise ConfigError(
                f"{out_dir} holds a run with other settings: {differ};"
                " give another --out, or rerun with the same settings to resume it"
            )
        return stored
    return {"settings": settings.to_dict(), "sessions": []}


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _machine() -> dict[str, Any]:
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def _record(instance: Instance, answer: Answer) -> QueryRecord:
    preds = normalize_predictions(answer.preds)
    return QueryRecord(
        instance_id=instance.instance_id,
        repo=instance.repo,
        tier=instance.tier,
        gold_files=list(instance.gold_files),
        preds=preds,
        scores=score(preds, instance.gold_files),
        strategy=answer.strategy,
        navigator=answer.navigator,
        calls=answer.usage.calls,
        input_tokens=answer.usage.input_tokens,
        cache_write_tokens=answer.usage.cache_write_tokens,
        cache_read_tokens=answer.usage.cache_read_tokens,
        output_tokens=answer.usage.output_tokens,
        llm_latency_s=answer.usage.latency_s,
        cost_usd=answer.cost_usd,
        wall_s=answer.wall_s,
        error=answer.error,
        trace=answer.trace,
        contexts=score_contexts(instance, answer.contexts),
    )


def score_contexts(instance: Instance, contexts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each budgeted answer (and its baseline) with its line/symbol scores added."""
    from treeseek.eval.context_metrics import score_context

    out: list[dict[str, Any]] = []
    for c in contexts:
        scored = dict(c)
        scored["scores"] = score_context(
            c["context"],
            c.get("symbols", []),
            c["budget"]["used"],
            instance.gold_spans,
            instance.gold_symbols,
        )
        if c.get("baseline"):
            base = dict(c["baseline"])
            base["scores"] = score_context(
                base["context"], [], base["budget"]["used"], instance.gold_spans, ()
            )
            scored["baseline"] = base
        out.append(scored)
    return out


Universe = PathUniverse | ContentsUniverse


def run_eval(
    instances: Sequence[Instance],
    settings: RunSettings,
    universe: Universe,
    *,
    db_path: Path,
    out_dir: Path,
    workers: int = 1,
    navigator: Navigator | None = None,
    on_record: ProgressHook | None = None,
    on_status: Callable[[str], None] | None = None,
    max_instances: int | None = None,
    index_jobs: int = 1,
    retry_errors: bool = False,
) -> RunOutcome:
    """Answer every instance not yet recorded in ``out_dir``, then write the summary.

    ``retry_errors``: instances an earlier session recorded with an error (a rate limit, a
    commit fetched since) are answered again: their records are dropped from the file first
    (so an interrupted retry leaves them to be answered by the next resume), the others kept.

    ``navigator``: used as is (inline only; tests); otherwise each worker builds its own from
    ``settings.llm``. ``max_instances`` stops after that many new answers (to test resuming).
    ``index_jobs``: processes building contents trees of different repositories at once
    (see :mod:`treeseek.eval.parallel`; each commit's tree has its own database file).
    """
    if workers < 1:
        raise ConfigError("--workers must be at least 1")
    if index_jobs < 1:
        raise ConfigError("--index-jobs must be at least 1")
    if settings.k < 1:
        raise ConfigError(f"-k must be at least 1, got {settings.k}")
    # a name every query would refuse: said once, before any tree is built
    if settings.strategy and settings.strategy not in strategies():
        raise ConfigError(
            f"unknown strategy {settings.strategy!r}; choose one of {', '.join(strategies())}"
        )
    if settings.ranker not in (None, *RANKERS):
        raise ConfigError(f"unknown ranker {settings.ranker!r}; choose one of {', '.join(RANKERS)}")
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(
            f"--out {out_dir} is a file; give a directory (a new one, or a run's to resume it)"
        )
    if navigator is not None and workers != 1:
        raise ConfigError("a navigator object can only be used with workers=1")
    universe_vectors = universe.vectors if isinstance(universe, ContentsUniverse) else None
    if settings.vectors != universe_vectors:
        raise ConfigError(
            "--vectors needs trees with contents (--repo) given the same embedder"
            f" (settings: {settings.vectors}, trees: {universe_vectors})"
        )
    started_at = datetime.now(UTC)
    started = time.perf_counter()
    cpu_started = _cpu_seconds()
    load_at_start = os.getloadavg()[0]
    out_dir.mkdir(parents=True, exist_ok=True)
    run_info = _check_run_file(out_dir, settings)
    per_query = out_dir / PER_QUERY_FILE
    done = {r.instance_id: r for r in read_records(per_query, repair=True)}
    wanted = {i.instance_id for i in instances}
    stale = set(done) - wanted
    if stale:
        raise ConfigError(
            f"{per_query} has {len(stale)} record(s) for instances not selected now"
            f" (e.g. {sorted(stale)[0]}); give another --out"
        )
    retried = 0
    if retry_errors:
        errored = {key for key, record in done.items() if record.error is not None}
        if errored:
            _drop_records(per_query, errored)
            done = {key: record for key, record in done.items() if key not in errored}
            retried = len(errored)
        if on_status is not None:
            on_status(f"retrying {retried} errored instance(s) of earlier sessions")
    todo = [i for i in instances if i.instance_id not in done]
    if max_instances is not None:
        todo = todo[:max_instances]
    records: list[QueryRecord] = list(done.values())
    by_key: dict[CommitKey, list[Instance]] = {}
    for instance in todo:
        by_key.setdefault(instance.commit_key, []).append(instance)
    (out_dir / RUN_FILE).write_text(json.dumps(run_info, indent=2) + "\n", encoding="utf-8")

    writer = RecordWriter(per_query)
    index_seconds = 0.0
    vector_work: list[EmbedCacheStats] = []
    ran = 0

    def finish(instance: Instance, answer: Answer) -> None:
        nonlocal ran
        record = _record(instance, answer)
        writer.write(record)
        records.append(record)
        ran += 1
        if on_record is not None:
            on_record(record, records)

    try:
        with treeseek.open(db_path) as db:
            trees: Iterator[BuiltTree]
            if isinstance(universe, ContentsUniverse):
                trees = build_parallel(universe, db_path, list(by_key), index_jobs)
            else:
                trees = universe.build(db, list(by_key))
            trees = _counting_vectors(trees, vector_work)
            if workers == 1:
                answerer = Answerer(db, settings, navigator or navigator_for(settings))
                for built in trees:
                    index_seconds += built.seconds
                    for instance in by_key[built.key]:
                        if built.error is not None:
                            finish(instance, Answer(0, [], error=built.error))
                        else:
                            finish(instance, answerer.answer(_job(0, built, instance)))
                answerer.close()
            else:
                index_seconds = _run_pool(
                    db_path, settings, workers, trees, by_key, finish, on_status
                )
    finally:
        writer.close()

    seconds = time.perf_counter() - started
    vectors_info: dict[str, Any] = {}
    if settings.vectors is not None:
        total = sum(vector_work, EmbedCacheStats())
        vectors_info["vectors"] = {
            "embedder": settings.vectors,
            "trees": len(vector_work),
            "texts": total.texts,
            "embedded": total.embedded,
            "reused": total.reused,
            "embed_seconds": round(total.embed_seconds, 3),
        }
    run_info["sessions"].append(
        {
            "started_at": started_at.isoformat(timespec="seconds"),
            "seconds": round(seconds, 3),
            # this process and every finished child (pools, build and index processes): a
            # measure of the work that does not depend on what else the machine was doing
            "cpu_seconds": round(_cpu_seconds() - cpu_started, 3),
            # 1-minute load average: the machine is shared; a busy one stretches wall time
            "load_average": [round(load_at_start, 2), round(os.getloadavg()[0], 2)],
            "index_seconds": round(index_seconds, 3),
            "answered": ran,
            "workers": workers,
            "treeseek": treeseek.__version__ if hasattr(treeseek, "__version__") else "",
            # --vectors: outlines handed to the embedder, embedded by the model, from the cache
            **vectors_info,
        }
    )
    (out_dir / RUN_FILE).write_text(json.dumps(run_info, indent=2) + "\n", encoding="utf-8")
    order = {i.instance_id: n for n, i in enumerate(instances)}
    records.sort(key=lambda r: order[r.instance_id])
    summary = summarize(records, _run_description(out_dir, settings, run_info, len(instances)))
    write_outputs(summary, out_dir)
    return RunOutcome(out_dir, summary, ran, len(done), seconds, index_seconds, retried)


def _drop_records(per_query: Path, instance_ids: set[str]) -> None:
    """Rewrite ``per_query`` without the records of ``instance_ids`` (the others' lines kept
    byte for byte, in order); replaced atomically, so a crash leaves the old file or the new."""
    kept = [
        line
        for line in per_query.read_bytes().split(b"\n")
        if line.strip() and json.loads(line).get("instance_id") not in instance_ids
    ]
    scratch = per_query.with_name(per_query.name + ".retry")
    scratch.write_bytes(b"".join(line + b"\n" for line in kept))
    os.replace(scratch, per_query)


def write_outputs(summary: Summary, out_dir: Path) -> None:
    """``summary.json``, ``report.md`` and the plots of one run (the plots only with
    matplotlib, the ``eval`` extra)."""
    from treeseek.eval import plots

    write_summary(summary, out_dir)
    data = summary.to_dict()
    write_report(data, out_dir)
    if plots.available():
        plots.write_plots([data], out_dir)
    else:
        log.warning("no plots for %s: matplotlib is not installed (%s)", out_dir, plots.EXTRA)


def _counting_vectors(
    trees: Iterator[BuiltTree], work: list[EmbedCacheStats]
) -> Iterator[BuiltTree]:
    """``trees`` unchanged, each one's vector work appended to ``work`` as it passes."""
    for built in trees:
        if built.vectors is not None:
            work.append(built.vectors)
        yield built


def _job(number: int, built: BuiltTree, instance: Instance) -> Job:
    """The worker's view of an instance: its query and its tree, nothing more."""
    db_file = "" if built.db_path is None else str(built.db_path)
    return Job(number, built.name, instance.query, db_file)


def _run_pool(
    db_path: Path,
    settings: RunSettings,
    workers: int,
    trees: Iterator[BuiltTree],
    by_key: dict[CommitKey, list[Instance]],
    finish: Callable[[Instance, Answer], None],
    on_status: Callable[[str], None] | None,
) -> float:
    """Build trees in this process and answer their instances in a pool as each is ready."""
    index_seconds = 0.0
    jobs: dict[int, Instance] = {}
    numbers = itertools.count()
    pending: set[cf.Future[Answer]] = set()
    context = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(
        workers, mp_context=context, initializer=init_worker, initargs=(str(db_path), settings)
    ) as pool:

        def drain(block: bool) -> None:
            nonlocal pending
            if not pending:
                return
            finished, pending = cf.wait(
                pending, timeout=None if block else 0, return_when=cf.FIRST_COMPLETED
            )
            for future in finished:
                answer = future.result()
                finish(jobs.pop(answer.number), answer)

        for built in trees:
            index_seconds += built.seconds
            for instance in by_key[built.key]:
                if built.error is not None:
                    finish(instance, Answer(0, [], error=built.error))
                    continue
                number = next(numbers)
                jobs[number] = instance
                pending.add(pool.submit(answer_in_worker, _job(number, built, instance)))
            drain(block=False)
        if on_status is not None:
            on_status("all trees ready; answering the remaining queries")
        while pending:
            drain(block=True)
    return index_seconds


def _run_description(
    out_dir: Path, settings: RunSettings, run_info: dict[str, Any], selected: int
) -> dict[str, Any]:
    sessions = run_info["sessions"]
    return {
        "name": out_dir.name,
        **settings.to_dict(),
        "selected": selected,
        "seconds": round(sum(s["seconds"] for s in sessions), 3),
        "index_seconds": round(sum(s["index_seconds"] for s in sessions), 3),
        "cpu_seconds": round(sum(s.get("cpu_seconds", 0.0) for s in sessions), 3),
        "load_average": sessions[-1].get("load_average") if sessions else None,
        "sessions": len(sessions),
        "workers": sessions[-1]["workers"] if sessions else 1,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": _machine(),
    }
