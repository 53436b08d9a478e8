"""Fit the flat section ranking's weights on the dev split (never the held-out one).

For every dev question: the flat ranking's candidates and their features
(:meth:`~treeseek.search.document.corpus.SectionCorpus.candidate_features`), the citing
document's sections removed, questions whose gold is not a candidate left out. The weights
minimize the listwise softmax loss (the gold's negative log-probability among its question's
candidates) plus ``L2 / 2 |w|^2`` by L-BFGS from zero. Prints 5-fold cross-validated section
recall@1/@5 and MRR (folds by citing document) and the weights over all dev questions, in the
form of :data:`~treeseek.search.document.ranking.WEIGHTS`.

    python bench/docs_xref/fit.py DOCS --questions Q.jsonl --db x.db

Needs SciPy (L-BFGS), which treeseek does not depend on: it comes with the ``vectors`` extra's
dependencies, or ``pip install scipy``. Only this fitting script uses it; the fitted weights are
a constant in the package.
"""

from __future__ import annotations

import argparse
import json
import zlib
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy.optimize import minimize  # type: ignore[import-untyped]

import treeseek
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import SearchContext
from treeseek.search.document.ranking import WEIGHTS
from treeseek.search.document.retriever import DocumentRetriever

L2 = 1e-3
FOLDS = 5
DEPTH = 10

Array = npt.NDArray[np.float64]
Item = tuple[list[str], Array, npt.NDArray[np.bool_]]  # candidates, features, gold mask


def fit(items: list[Item]) -> Array:
    usable = [it for it in items if it[2].any()]
    feats = np.vstack([f for _, f, _ in usable])
    gold = np.concatenate([y for _, _, y in usable])
    group = np.concatenate([np.full(len(y), k) for k, (_, _, y) in enumerate(usable)])
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    n = len(usable)

    def loss(w: Array) -> tuple[float, Array]:
        s = feats @ w
        top = np.maximum.reduceat(s, starts)
        e = np.exp(s - top[group])
        z = np.add.reduceat(e, starts)
        p = e / z[group]
        value = float((np.log(z) + top).sum() - s[gold].sum())
        grad = feats.T @ p - feats[gold].sum(0)
        return value / n + L2 * float(w @ w) / 2, grad / n + L2 * w

    result = minimize(loss, np.zeros(feats.shape[1]), jac=True, method="L-BFGS-B")
    return np.asarray(result.x, dtype=np.float64)


def scored(items: list[Item], w: Array) -> tuple[float, float, float]:
    r1 = r5 = mrr = 0.0
    for paths, feats, gold in items:
        if not len(paths):
            continue
        order = np.lexsort((np.arange(len(paths)), -(feats @ w)))[:DEPTH]
        hits = np.flatnonzero(gold[order])
        if len(hits):
            rank = int(hits[0]) + 1
            r1 += rank == 1
            r5 += rank <= 5
            mrr += 1 / rank
    n = len(items) or 1
    return r1 / n, r5 / n, mrr / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("docs", type=Path)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--name", default="docs")
    args = ap.parse_args()
    qs = [json.loads(x) for x in args.questions.read_text().splitlines() if x.strip()]
    qs = [q for q in qs if q["split"] == "dev"]
    with treeseek.open(args.db, hooks=[]) as db:
        db.index(args.docs, name=args.name, documents=True)
        corpus = DocumentRetriever().corpus(
            SearchContext(db.store, db.tree(args.name), LexicalNavigator())
        )
        items: list[Item] = []
        for q in qs:
            paths, feats = corpus.candidate_features(q["question"])
            keep = [
                i
                for i, p in enumerate(paths)
                if corpus.sections[p].info.document != q["citing_document"]
            ]
            paths = [paths[i] for i in keep]
            feats = feats[keep] if len(keep) else np.zeros((0, len(WEIGHTS)))
            items.append(
                (paths, feats, np.array([p == q["gold_section"] for p in paths], dtype=bool))
            )
    folds = [zlib.crc32(q["citing_document"].encode()) % FOLDS for q in qs]
    total = np.zeros(3)
    for k in range(FOLDS):
        w = fit([it for it, f in zip(items, folds, strict=True) if f != k])
        held = [it for it, f in zip(items, folds, strict=True) if f == k]
        total += np.array(scored(held, w)) * len(held)
    cv = total / len(items)
    n = len(items)
    print(f"dev {n} questions, {FOLDS}-fold CV: R@1 {cv[0]:.3f} R@5 {cv[1]:.3f} MRR {cv[2]:.3f}")
    w = fit(items)
    r1, r5, mrr = scored(items, w)
    print(f"fit on all dev: R@1 {r1:.3f} R@5 {r5:.3f} MRR {mrr:.3f}")
    print("WEIGHTS = {")
    for name, value in zip(WEIGHTS, w, strict=True):
        print(f'    "{name}": {value:.4f},')
    print("}")


if __name__ == "__main__":
    main()
