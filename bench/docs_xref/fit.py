"""Fit the flat section ranking's weights on the dev split (never the held-out one).

For every dev question: the flat ranking's candidates and their features
(:meth:`~treeseek.search.document.corpus.SectionCorpus.candidate_features`), the citing
document's sections removed, questions whose gold is not a candidate left out. The weights
minimize the listwise softmax loss (the gold's negative log-probability among its question's
candidates) plus ``L2 / 2 |w|^2`` by L-BFGS from zero. Prints 5-fold cross-validated section
recall@1/@5 and MRR (folds by citing document) and the weights over all dev questions, in the
form of :data:`~treeseek.search.document.ranking.WEIGHTS`.

    python bench/docs_xref/fit.py DOCS --questions Q.jsonl --db x.db [--vectors minilm]

With ``--vectors``, DOCS is indexed with section vectors of that embedder (the ones a tree
already has are kept), every candidate also gets the semantic features
(:data:`~treeseek.search.document.ranking.SEMANTIC_FEATURES`: the question's cosine to the
section, its document, its best child...), and the weights printed are those of
:data:`~treeseek.search.document.ranking.VECTOR_WEIGHTS`; the lexical features' CV is printed
first, on the same questions, for comparison.

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
from treeseek.embed.base import Embedder
from treeseek.embed.neural import load_embedder
from treeseek.index.code_hook import CodeIndexHook
from treeseek.index.run import IndexHook
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import SearchContext
from treeseek.search.document.ranking import SEMANTIC_FEATURES, WEIGHTS
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


def cross_validated(items: list[Item], folds: list[int]) -> Array:
    """Section recall@1/@5 and MRR, each fold scored by weights fitted on the others."""
    total = np.zeros(3)
    for k in range(FOLDS):
        w = fit([it for it, f in zip(items, folds, strict=True) if f != k])
        held = [it for it, f in zip(items, folds, strict=True) if f == k]
        total += np.array(scored(held, w)) * len(held)
    return total / max(1, len(items))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("docs", type=Path)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--name", default="docs")
    ap.add_argument("--vectors", default=None, help="embedder of the section vectors (minilm)")
    args = ap.parse_args()
    qs = [json.loads(x) for x in args.questions.read_text().splitlines() if x.strip()]
    qs = [q for q in qs if q["split"] == "dev"]
    hooks: list[IndexHook] = []
    embedders: dict[str, Embedder] = {}
    if args.vectors is not None:
        embedders[args.vectors] = load_embedder(args.vectors)  # one model for index and query
        hooks = [CodeIndexHook(embedders[args.vectors])]
    names = list(WEIGHTS) + (list(SEMANTIC_FEATURES) if args.vectors else [])
    with treeseek.open(args.db, hooks=hooks) as db:
        db.index(args.docs, name=args.name, documents=True)
        retriever = DocumentRetriever(embedders)
        ctx = SearchContext(db.store, db.tree(args.name), LexicalNavigator())
        corpus = retriever.corpus(ctx)
        items: list[Item] = []
        for q in qs:
            semantic = retriever.semantic(ctx, q["question"], args.vectors)
            if args.vectors is not None and semantic is None:
                raise SystemExit(f"tree {args.name!r} has no section vectors of {args.vectors}")
            paths, feats = corpus.candidate_features(
                q["question"], semantic[0] if semantic else None
            )
            keep = [
                i
                for i, p in enumerate(paths)
                if corpus.sections[p].info.document != q["citing_document"]
            ]
            paths = [paths[i] for i in keep]
            feats = feats[keep] if len(keep) else np.zeros((0, len(names)))
            items.append(
                (paths, feats, np.array([p == q["gold_section"] for p in paths], dtype=bool))
            )
    folds = [zlib.crc32(q["citing_document"].encode()) % FOLDS for q in qs]
    n = len(items)
    if args.vectors is not None:
        lexical = [(p, f[:, : len(WEIGHTS)], y) for p, f, y in items]
        cv = cross_validated(lexical, folds)
        print(f"lexical features, {FOLDS}-fold CV: R@1 {cv[0]:.3f} R@5 {cv[1]:.3f} MRR {cv[2]:.3f}")
    cv = cross_validated(items, folds)
    print(f"dev {n} questions, {FOLDS}-fold CV: R@1 {cv[0]:.3f} R@5 {cv[1]:.3f} MRR {cv[2]:.3f}")
    w = fit(items)
    r1, r5, mrr = scored(items, w)
    print(f"fit on all dev: R@1 {r1:.3f} R@5 {r5:.3f} MRR {mrr:.3f}")
    print("VECTOR_WEIGHTS = {" if args.vectors else "WEIGHTS = {")
    for name, value in zip(names, w, strict=True):
        print(f'    "{name}": {value:.4f},')
    print("}")


if __name__ == "__main__":
    main()
