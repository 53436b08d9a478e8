"""Dump the learned ranking's candidate features per instance (for bench/fit_flat_ltr.py).

For each instance, the fused order's first ``learned_depth`` files of its per-commit database
(the ``--db`` of a `treeseek eval` run with contents) and their feature rows
(:mod:`treeseek.search.flat.learned`) go to one ``.npz``: ``x`` (rows), ``query`` (row ->
instance number), ``label`` (1: a gold file; gold is read only here, to label), and per
instance its id, repository, gold count and latency of the candidate table.

    python bench/dump_flat_features.py --dataset /work/runs/dev-173.jsonl \\
        --contents-db /work/runs/contents/eval.db --out /tmp/rank/dev.npz

With ``--vectors NAME`` (an embedder's short name, as ``treeseek eval run --vectors``) the
retriever runs in hybrid mode: the question is embedded and the vector signal takes part in
the fused order and fills the ``vectors.*`` columns. The per-commit databases must already
hold that embedder's file vectors (a ``treeseek eval run --vectors NAME`` over the same
``--db`` gives them): nothing is embedded here but the questions, and an instance whose tree
has no vectors is dumped in lexical mode and counted on stderr.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from bench_flat import DATASET, EvalContents, _Null, make_embedder

from treeseek.eval.datasets import load_instances
from treeseek.search.base import SearchContext
from treeseek.search.flat.flat import FlatConfig, FlatRetriever
from treeseek.search.flat.learned import FEATURES


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", type=Path, default=DATASET)
    ap.add_argument("--contents-db", type=Path, required=True)
    ap.add_argument("--layers", default=None)
    ap.add_argument("--sample", type=int, default=0)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--set", action="append", default=[], help="FlatConfig override k=v")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--vectors", default=None, help="embedder short name (minilm): hybrid mode")
    args = ap.parse_args()
    instances = load_instances(args.dataset)
    if args.sample:
        instances = random.Random(args.seed).sample(instances, min(args.sample, len(instances)))
    contents = EvalContents(args.contents_db, args.layers)
    cfg = FlatConfig(vectors=args.vectors is not None)
    for kv in args.set:
        k, _, v = kv.partition("=")
        cur = getattr(cfg, k)
        val: object = (v.lower() in ("1", "true", "yes")) if isinstance(cur, bool) else type(cur)(v)
        cfg = replace(cfg, **{k: val})
    retriever = FlatRetriever(cfg, embedder=make_embedder(args.vectors))
    lexical = 0
    xs, qs, labels, paths = [], [], [], []
    ids, repos, golds, seconds = [], [], [], []
    for n, inst in enumerate(instances):
        if not contents.has(inst):
            print(f"skip {inst.instance_id}: no database", file=sys.stderr)
            continue
        db, name = contents.open(inst)
        ctx = SearchContext(
            store=db.store,
            tree=db.store.tree(name),
            navigator=_Null(),  # type: ignore[arg-type]
            caches=db.caches,
        )
        retriever.candidate_table(ctx, inst.query)  # load the tree's files, untimed
        t0 = time.perf_counter()
        table = retriever.candidate_table(ctx, inst.query)
        seconds.append(time.perf_counter() - t0)
        if args.vectors is not None and table.mode != "hybrid":
            lexical += 1
            print(f"{inst.instance_id}: no vectors, lexical", file=sys.stderr)
        db.close()
        q = len(ids)
        gold = set(inst.gold_files)
        xs.append(table.features)
        qs += [q] * len(table.paths)
        labels += [float(p in gold) for p in table.paths]
        paths += table.paths
        ids.append(inst.instance_id)
        repos.append(inst.repo)
        golds.append(len(gold))
        print(f"{n + 1}/{len(instances)} {inst.instance_id}", file=sys.stderr, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        args.out,
        x=np.concatenate(xs) if xs else np.zeros((0, len(FEATURES))),
        query=np.asarray(qs, dtype=np.int64),
        label=np.asarray(labels),
        path=np.asarray(paths),
        ids=np.asarray(ids),
        repo=np.asarray(repos),
        gold=np.asarray(golds, dtype=np.int64),
        seconds=np.asarray(seconds),
        features=np.asarray(FEATURES),
    )
    print(f"{len(ids)} instances, {len(qs)} rows -> {args.out}", file=sys.stderr)
    if args.vectors is not None:
        print(f"{len(ids) - lexical} hybrid, {lexical} lexical (no vectors)", file=sys.stderr)


if __name__ == "__main__":
    main()
