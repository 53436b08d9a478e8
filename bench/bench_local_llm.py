"""The local navigator measured: prompt processing cold vs a reused prefix, and retrieval quality.

Part 1 (``--speed``): one ~1.5k-token Block-like prompt (a real tree's paths as the cached
segment, a question as the message) sent cold (empty KV cache, no saved states), then again
with another question: prompt tokens evaluated, seconds and CPU-seconds per call, and prompt
tokens per second and per CPU-second (the machine may be shared: CPU time is the stable measure).

Part 2 (``--rows``): a seeded sample of a dataset with contents (per-commit databases built by
``treeseek eval run --repo ... --db DB``), the same instances for every row; each row is a
strategy and a navigator:

    flat                    flat retrieval alone (no LLM)
    block-lexical           Block with the lexical navigator
    rerank-local            flat's top 20 reranked by the local model (one call per query)
    beam-local, block-local LLM tree search with the local model
    beam-local-hints, block-local-hints   ... with flat's top 10 files as hints

Per row: recall@gold, MRR, Acc@1, Acc@5, LLM calls, prompt tokens and the share of them served
from the KV cache per query, seconds per query. Each row is bounded by ``--row-seconds``: a row
that runs out of time stops, and the table is computed over the instances that every row
answered (the same ones), with the count. ``--interleave`` runs the rows instance by instance
instead (every row answers instance 1, then instance 2, ...), each local row with a llama.cpp
model of its own (so no row reads another's KV state), and stops at ``--stop-at`` (UTC):
whatever finished, every row has answered the same instances. ``--per-instance FILE`` appends
one JSON line per answered (row, instance) as it finishes, so a stopped run keeps them, and
``--resume`` continues it later (instances every row answered are skipped). The
databases are opened only if their schema is current (checked on a read-only connection), so a
shared cache is never migrated. ``--trees LISTINGS`` measures the path-only split instead: the
same seeded sample of the dataset (the same instances as with contents when every one has its
per-commit database), each tree built from the benchmark's path listing into the one database
``--db`` (created if missing; never a shared cache), flat ranking paths alone. Usage::

    PYTHONPATH=src python bench/bench_local_llm.py --speed --dataset /work/runs/dev-173.jsonl \\
        --db /work/runs/contents/eval.db --layers treeseek.code.index_hook.CodeIndexHook:2 \\
        --sample 40 --rows flat,rerank-local,block-local \\
        --model smollm2-135m --out /work/runs/local-bench/run.json
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sqlite3
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import treeseek
from treeseek.eval.datasets import Instance, load_instances, load_path_lists
from treeseek.eval.metrics import score
from treeseek.eval.universes import PathUniverse, UniverseKind, eval_tree_name, layers_of
from treeseek.index.run import default_hooks
from treeseek.llm.base import Navigator, Usage
from treeseek.search.base import QueryOptions
from treeseek.search.strategy import run_query
from treeseek.store.migrations import MIGRATIONS


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    strategy: str
    navigator: str  # "lexical" | "local"
    hints: int = 0


ROWS: dict[str, Row] = {
    r.name: r
    for r in (
        Row("flat", "flat", "lexical"),
        Row("block-lexical", "block", "lexical"),
        Row("rerank-local", "rerank", "local"),
        Row("beam-local", "beam", "local"),
        Row("beam-local-hints", "beam", "local", hints=10),
        Row("block-local", "block", "local"),
        Row("block-local-hints", "block", "local", hints=10),
    )
}


@dataclass(slots=True)
class Done:
    instance_id: str
    preds: list[str]
    usage: Usage
    seconds: float
    error: str | None = None
    cpu_seconds: float = 0.0
    scores: dict[str, float] = field(default_factory=dict)


def _navigator(kind: str, model: str, *, own_model: bool = False) -> Navigator:
    """The row's navigator; ``own_model``: a local navigator with a llama.cpp model of its own
    (its own KV cache and saved prompt states) instead of the process-wide instance."""
    from treeseek.llm.select import navigator_from_spec

    nav = navigator_from_spec("lexical" if kind == "lexical" else f"local:{model}", env={})
    if kind == "local" and own_model:
        from treeseek.llm.local import LocalModel, LocalNavigator, resolve_model

        assert isinstance(nav, LocalNavigator)
        _, path, swa_full = resolve_model(model)
        nav.model = LocalModel(path, name=nav.name, n_ctx=nav.model.n_ctx, swa_full=swa_full)
    return nav


def _schema_current(db_file: Path) -> bool:
    """Whether the database's schema is this code's (read on a read-only connection): opening
    an older one would migrate it, and the per-commit databases may be a shared cache."""
    conn = sqlite3.connect(f"file:{db_file}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
    except sqlite3.Error:
        return False
    finally:
        conn.close()
    return row is not None and row[0] == MIGRATIONS[-1].version


def _options(row: Row, args: argparse.Namespace) -> QueryOptions:
    return QueryOptions(
        strategy=row.strategy,
        k=10,
        hints=row.hints,
        block_tokens=args.block_tokens if row.strategy != "rerank" else args.rerank_tokens,
        cache_window_tokens=args.cache_window_tokens,
        max_rounds=args.max_rounds,
        include_content=False,
        deadline_s=args.deadline,
    )


def answer(
    row: Row, nav: Navigator, inst: Instance, db_file: Path, args: argparse.Namespace
) -> Done:
    """One row's answer to one instance, scored (an error is a scored miss)."""
    t0, cpu0 = time.perf_counter(), _cpu_seconds()
    try:
        with treeseek.open(db_file, create=False) as db:
            tree = _tree(db, inst, args)
            result = run_query(db.store, tree, inst.query, _options(row, args), nav)
        item = Done(inst.instance_id, [f.path for f in result.files], result.usage, 0.0)
    except Exception as exc:  # an error is a scored miss
        item = Done(inst.instance_id, [], Usage(), 0.0, f"{type(exc).__name__}: {exc}")
    item.seconds = time.perf_counter() - t0
    item.cpu_seconds = _cpu_seconds() - cpu0
    item.scores = score(item.preds, inst.gold_files).as_dict()
    if args.per_instance:
        with args.per_instance.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"row": row.name, **asdict(item)}) + "\n")
    return item


def _tree(db: treeseek.Database, inst: Instance, args: argparse.Namespace) -> Any:
    """The instance's tree: the only one of its per-commit database, or (``--trees``) its
    path-only tree in the shared one."""
    if args.trees is None:
        return db.trees()[0]
    name = eval_tree_name(UniverseKind.PATHS, inst.commit_key)
    return next(t for t in db.trees() if t.name == name)


def _path_trees(instances: list[Instance], args: argparse.Namespace) -> list[tuple[Instance, Path]]:
    """The instances' path-only trees in ``--db``, built from ``--trees`` where missing."""
    keys = [inst.commit_key for inst in instances]
    universe = PathUniverse(load_path_lists(args.trees, set(keys)))
    with treeseek.open(args.db) as db:
        for built in universe.build(db, keys):
            if not built.ok:
                sys.exit(f"{built.key}: {built.error}")
    return [(inst, args.db) for inst in instances]


def _log(row: Row, item: Done, i: int, n: int) -> None:
    print(
        f"  {row.name} {i}/{n} {item.instance_id}"
        f" R@g {item.scores['recall_at_gold']:.2f} {item.seconds:.1f}s"
        f" calls {item.usage.calls} prompt {item.usage.total_input_tokens}"
        f" cached {item.usage.cache_read_tokens}" + (f" ERROR {item.error}" if item.error else ""),
        file=sys.stderr,
        flush=True,
    )


def _cpu_seconds() -> float:
    """CPU time of this process (user + system, all threads): the machine is shared, so
    wall time alone says little about llama.cpp's speed."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def speed(model: str, db_file: Path, query: str) -> dict[str, Any]:
    """Cold vs reused-prefix prompt processing on one Block-like prompt of ~1.5k tokens (the
    first calls of a freshly loaded model: the KV cache and the prompt cache are empty)."""
    from treeseek.llm.base import Candidate, RankRequest, Segment
    from treeseek.llm.local import LocalNavigator

    nav = LocalNavigator(model)
    with treeseek.open(db_file) as db:
        tree = db.trees()[0].name
        paths = [n.path for n in db.store.subtree(tree) if n.path][:400]
    lines, entries = ["=== REPOSITORY DIRECTORY TREE ===", ""], []
    for i, path in enumerate(paths, 1):
        entries.append(Candidate(f"n{i}", path, "file"))
        lines.append(f"- id: n{i}\n  path: {path}\n  type: file")
        if len("\n".join(lines).encode()) > 1400 * 3.5:  # ~1.4k tokens of paths
            break
    segment = Segment("\n".join(lines) + "\n")
    questions = [query[:300], "Where is the configuration file parsed and validated?"]
    out: list[dict[str, Any]] = []
    for label, question in zip(("cold", "reused prefix"), questions, strict=True):
        request = RankRequest(
            segments=(segment,),
            message=f"Query: {question}\n\nPick up to 3 ids, best first.",
            query=question,
            candidates=tuple(entries),
            pick_limit=3,
        )
        started, cpu0 = time.perf_counter(), _cpu_seconds()
        reply = nav.rank(request)
        wall, cpu = time.perf_counter() - started, _cpu_seconds() - cpu0
        u = reply.usage
        evaluated = u.input_tokens + u.cache_write_tokens
        out.append(
            {
                "call": label,
                "prompt_tokens": u.total_input_tokens,
                "evaluated_tokens": evaluated,
                "cache_read_tokens": u.cache_read_tokens,
                "output_tokens": u.output_tokens,
                "seconds": round(wall, 3),
                "cpu_seconds": round(cpu, 3),
                "prompt_tokens_per_s": round(u.total_input_tokens / wall, 1),
                "prompt_tokens_per_cpu_s": round(u.total_input_tokens / cpu, 1) if cpu else None,
                "ranked": reply.ranked_ids,
            }
        )
    return {"model": nav.name, "calls": out}


def run_row(
    row: Row,
    instances: list[tuple[Instance, Path]],
    model: str,
    args: argparse.Namespace,
) -> list[Done]:
    nav = _navigator(row.navigator, model)
    done: list[Done] = []
    started = time.perf_counter()
    for inst, db_file in instances:
        if time.perf_counter() - started > args.row_seconds:
            print(f"  {row.name}: time budget spent after {len(done)} instances", file=sys.stderr)
            break
        done.append(answer(row, nav, inst, db_file, args))
        _log(row, done[-1], len(done), len(instances))
    return done


def run_interleaved(
    rows: list[Row],
    instances: list[tuple[Instance, Path]],
    model: str,
    args: argparse.Namespace,
) -> dict[str, list[Done]]:
    """Every row answers each instance in turn, until ``--stop-at``: the rows always cover the
    same instances (a started instance is finished by every row; none starts after the stop)."""
    navs = {row.name: _navigator(row.navigator, model, own_model=True) for row in rows}
    done: dict[str, list[Done]] = {row.name: [] for row in rows}
    for i, (inst, db_file) in enumerate(instances, 1):
        if args.stop_at is not None and datetime.now(UTC) >= args.stop_at:
            print(f"stop time reached after {i - 1} instances", file=sys.stderr)
            break
        for row in rows:
            done[row.name].append(answer(row, navs[row.name], inst, db_file, args))
            _log(row, done[row.name][-1], i, len(instances))
    return done


def summarize(rows: dict[str, list[Done]]) -> dict[str, Any]:
    common = set.intersection(*({d.instance_id for d in v} for v in rows.values()))
    table: dict[str, Any] = {}
    for name, items in rows.items():
        got = [d for d in items if d.instance_id in common]
        n = max(1, len(got))
        usage = Usage()
        for d in got:
            usage = usage + d.usage
        prompt = usage.total_input_tokens
        table[name] = {
            "n": len(got),
            "recall_at_gold": round(sum(d.scores["recall_at_gold"] for d in got) / n, 3),
            "mrr": round(sum(d.scores["mrr"] for d in got) / n, 3),
            "acc_at_1": round(sum(d.scores["acc_at_1"] for d in got) / n, 3),
            "acc_at_5": round(sum(d.scores["acc_at_5"] for d in got) / n, 3),
            "llm_calls_per_query": round(usage.calls / n, 2),
            "prompt_tokens_per_query": round(prompt / n),
            "kv_cache_share": round(usage.cache_read_tokens / prompt, 3) if prompt else None,
            "seconds_per_query": round(sum(d.seconds for d in got) / n, 2),
            "cpu_seconds_per_query": round(sum(d.cpu_seconds for d in got) / n, 2),
            "errors": sum(1 for d in got if d.error),
        }
    return {"instances": len(common), "rows": table}


def read_per_instance(path: Path) -> dict[str, list[Done]]:
    """The answers a ``--per-instance`` file holds, by row (in the order they were written).

    An instance answered twice by a row (a run stopped inside it, then ``--resume``d, answers
    it again with every row) counts once: its first answer."""
    rows: dict[str, list[Done]] = {}
    seen: set[tuple[str, str]] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        usage = Usage(**d.pop("usage"))
        row = d.pop("row")
        if (row, d["instance_id"]) not in seen:
            seen.add((row, d["instance_id"]))
            rows.setdefault(row, []).append(Done(usage=usage, **d))
    return rows


def _utc_time(text: str) -> datetime:
    """Today's ``HH:MM`` in UTC."""
    hour, minute = (int(x) for x in text.split(":"))
    return datetime.now(UTC).replace(hour=hour, minute=minute, second=0, microsecond=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", type=Path, required=True)
    ap.add_argument("--db", type=Path, required=True, help="the eval database of the run")
    ap.add_argument("--sample", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rows", default="", help=f"comma-separated: {', '.join(ROWS)}")
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--speed", action="store_true", help="measure cold vs reused prefix")
    ap.add_argument("--block-tokens", type=int, default=1500, help="Block's tau for local rows")
    ap.add_argument("--rerank-tokens", type=int, default=3000, help="rerank's per-call budget")
    ap.add_argument("--cache-window-tokens", type=int, default=3000)
    ap.add_argument("--max-rounds", type=int, default=6)
    ap.add_argument("--row-seconds", type=float, default=900.0)
    ap.add_argument("--deadline", type=float, default=0.0, help="per-query seconds (0: none)")
    ap.add_argument("--interleave", action="store_true", help="rows instance by instance")
    ap.add_argument("--stop-at", type=_utc_time, help="HH:MM UTC: no instance starts after it")
    ap.add_argument("--per-instance", type=Path, help="append one JSON line per answer")
    ap.add_argument(
        "--resume",
        action="store_true",
        help="skip the instances every row already answered in the --per-instance file",
    )
    ap.add_argument(
        "--reverse",
        action="store_true",
        help="answer the sample from its last instance (a second process resuming a copy of the"
        " --per-instance file from the other end; the summary counts an instance once)",
    )
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--layers",
        default=layers_of(default_hooks()),
        help="the index layers the per-commit databases were built with (their file names)",
    )
    ap.add_argument("--summarize", type=Path, help="the table of a --per-instance file, and exit")
    ap.add_argument(
        "--trees", type=Path, help="path listings: measure the path-only split (trees in --db)"
    )
    args = ap.parse_args()
    if args.summarize:
        print(json.dumps(summarize(read_per_instance(args.summarize)), indent=1))
        return

    instances = []
    for inst in load_instances(args.dataset):
        digest = eval_tree_name(UniverseKind.CONTENTS, inst.commit_key, args.layers)
        db_file = args.db.with_name(f"{args.db.stem}.{digest.removeprefix('eval-')}.db")
        if args.trees is not None or db_file.is_file():
            instances.append((inst, db_file))
    random.Random(args.seed).shuffle(instances)
    instances = instances[: args.sample]
    if args.trees is not None:
        instances = _path_trees([inst for inst, _ in instances], args)
    for _, db_file in [] if args.trees is not None else instances:
        if not _schema_current(db_file):
            sys.exit(f"{db_file}: schema not current; opening it would migrate it")
    names = [r for r in args.rows.split(",") if r]
    if args.resume and args.per_instance and args.per_instance.is_file():
        earlier = read_per_instance(args.per_instance)
        answered = set.intersection(
            *({d.instance_id for d in earlier.get(n, [])} for n in names or [""])
        )
        instances = [(i, f) for i, f in instances if i.instance_id not in answered]
    if args.reverse:
        instances.reverse()
        print(f"resuming: {len(answered)} answered, {len(instances)} to go", file=sys.stderr)
    report: dict[str, Any] = {"model": args.model, "sample": len(instances), "seed": args.seed}
    if args.speed:
        report["speed"] = speed(args.model, instances[0][1], instances[0][0].query)
        print(json.dumps(report["speed"], indent=1), file=sys.stderr)
    rows: dict[str, list[Done]] = {}
    if args.interleave and names:
        rows = run_interleaved([ROWS[n] for n in names], instances, args.model, args)
    for name in [] if args.interleave else names:
        print(f"row {name}", file=sys.stderr)
        rows[name] = run_row(ROWS[name], instances, args.model, args)
    if args.out and rows:
        report.update(summarize(rows))
        report["per_instance"] = {
            k: [[d.instance_id, d.scores["recall_at_gold"], d.usage.calls, d.error] for d in v]
            for k, v in rows.items()
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1))
    if rows:
        report.update(summarize(rows))
    print(json.dumps({k: v for k, v in report.items() if k != "per_instance"}, indent=1))


if __name__ == "__main__":
    main()
