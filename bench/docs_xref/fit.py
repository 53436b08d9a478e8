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

With ``--trees``, boosted regression trees are fitted on top of the linear score (a stacked
model, :mod:`treeseek.search.document.trees`): scikit-learn's histogram gradient boosting with a
binary gold-or-not loss over the features and the linear score (of weights fitted on the same
questions), added to the linear score with weight ``TREE_WEIGHT``; the script prints the CV of
the linear score alone and of the stacked one (inside each fold both the weights and the trees
are fitted on the other folds), and ``--write`` replaces the named model (``lexical``, or
``vectors`` with ``--vectors``) in the package's ``section_trees.json``.

Needs SciPy (L-BFGS) and, for ``--trees``, scikit-learn, which treeseek does not depend on: both
come with the ``vectors`` extra's dependencies, or ``pip install scipy scikit-learn``. Only this
fitting script uses them; the fitted weights are a constant in the package, the trees a data
file.
"""

from __future__ import annotations

import argparse
import json
import zlib
from pathlib import Path
from typing import Any

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
from treeseek.search.document.trees import LINEAR_COLUMN, MODEL_FILE, TREE_WEIGHT, BoostedTrees

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


#: the boosting's settings (chosen on dev by 5-fold CV, bench/docs_xref/README.md)
TREE_PARAMS: dict[str, Any] = {
    "max_iter": 200,
    "learning_rate": 0.05,
    "max_leaf_nodes": 15,
    "min_samples_leaf": 50,
    "l2_regularization": 1.0,
    "early_stopping": False,
    "random_state": 0,
}
#: columns the trees' output may only grow with: more lexical or semantic evidence for the
#: section itself never lowers its score. Unconstrained, the trees learned that the
#: question's words in a section's title (and in its document's path, which often repeats the
#: title) make it *less* likely the gold: the benchmark drops questions that name the gold's
#: title verbatim, a rule of its construction, not of questions. They then ranked a section
#: its title and text both match below its parent, and a document named by the question's
#: words below an unnamed one with the same text.
MONOTONE = frozenset(
    {
        "subtree",
        "log_subtree",
        "own",
        "subtree_rank",
        "own_rank",
        "document",
        "document_coverage",
        "title_coverage",
        "labels",
        "path",
        "top_path",
        "cosine",
        LINEAR_COLUMN,
    }
)


def fit_trees(items: list[Item], w: Array, names: list[str]) -> tuple[BoostedTrees, dict[str, Any]]:
    """Trees over the features and the linear score ``features @ w``, fitted as a gold-or-not
    classifier on every candidate of ``items``: as :class:`BoostedTrees` (whose output is
    checked against scikit-learn's own) and as ``section_trees.json`` stores them."""
    from sklearn.ensemble import HistGradientBoostingClassifier  # type: ignore[import-untyped]

    usable = [it for it in items if len(it[0])]
    x = np.vstack([f for _, f, _ in usable])
    x = np.hstack([x, (x @ w)[:, None]])
    y = np.concatenate([g for _, _, g in usable])
    monotone = [int(name in MONOTONE) for name in [*names, LINEAR_COLUMN]]
    model = HistGradientBoostingClassifier(**TREE_PARAMS, monotonic_cst=monotone).fit(x, y)
    trees = []
    for (predictor,) in model._predictors:
        nodes = predictor.nodes
        trees.append(
            {
                "feature": [int(v) for v in nodes["feature_idx"]],
                "threshold": [float(v) for v in nodes["num_threshold"]],
                "left": [int(v) for v in nodes["left"]],
                "right": [int(v) for v in nodes["right"]],
                "value": [float(v) for v in nodes["value"]],
                "leaf": [bool(v) for v in nodes["is_leaf"]],
            }
        )
    data = {
        "features": [*names, LINEAR_COLUMN],
        "baseline": float(np.ravel(model._baseline_prediction)[0]),
        "trees": trees,
    }
    ours = BoostedTrees.from_json(data)
    gap = float(np.abs(ours.predict(x) - model.decision_function(x)).max())
    if gap > 1e-9:
        raise SystemExit(f"exported trees differ from scikit-learn's by {gap}")
    return ours, data


def stacked(items: list[Item], w: Array, trees: BoostedTrees) -> list[Item]:
    """``items`` with one feature column, the stacked score (weight 1 scores by it)."""
    out: list[Item] = []
    for paths, feats, gold in items:
        linear = feats @ w
        score = linear + TREE_WEIGHT * trees.predict(np.hstack([feats, linear[:, None]]))
        out.append((paths, score[:, None], gold))
    return out


def cross_validated_trees(items: list[Item], folds: list[int], names: list[str]) -> Array:
    """The stacked model's recall@1/@5 and MRR, each fold scored by weights and trees fitted
    on the others."""
    total = np.zeros(3)
    for k in range(FOLDS):
        train = [it for it, f in zip(items, folds, strict=True) if f != k]
        w = fit(train)
        trees, _ = fit_trees(train, w, names)
        held = [it for it, f in zip(items, folds, strict=True) if f == k]
        total += np.array(scored(stacked(held, w, trees), np.ones(1))) * len(held)
    return total / max(1, len(items))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("docs", type=Path)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--name", default="docs")
    ap.add_argument("--vectors", default=None, help="embedder of the section vectors (minilm)")
    ap.add_argument("--trees", action="store_true", help="also fit the stacked trees")
    ap.add_argument("--write", action="store_true", help="with --trees: write the package file")
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
    if args.trees:
        cv = cross_validated_trees(items, folds, names)
        print(f"+ trees x {TREE_WEIGHT}, CV: R@1 {cv[0]:.3f} R@5 {cv[1]:.3f} MRR {cv[2]:.3f}")
        trees, data = fit_trees(items, w, names)
        r1, r5, mrr = scored(stacked(items, w, trees), np.ones(1))
        print(f"+ trees, fit on all dev: R@1 {r1:.3f} R@5 {r5:.3f} MRR {mrr:.3f}")
        if args.write:
            target = Path(treeseek.__file__).parent / "search" / "document" / MODEL_FILE
            stored = json.loads(target.read_text()) if target.exists() else {"models": {}}
            stored["models"]["vectors" if args.vectors else "lexical"] = data
            target.write_text(json.dumps(stored, separators=(",", ":")) + "\n")
            print(f"wrote {target}")


if __name__ == "__main__":
    main()
