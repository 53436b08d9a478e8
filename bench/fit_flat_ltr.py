"""Fit the flat retriever's learned ranking (a linear model, listwise softmax loss) on dumped
candidate features (bench/dump_flat_features.py), with cross-validation folds by repository.
``--trees`` compares boosted trees (LambdaMART over oblivious trees of depth 1-3, on top of the
shipped linear score) with the linear score on the same folds; they did not earn their place
(README "Boosted trees and text-match features"), so nothing writes them.

    python bench/fit_flat_ltr.py /tmp/rank/dev.npz --check /tmp/rank/mdev.npz
        # leave-one-repository-out metrics on the dev dump (each repository ranked by a model
        # fitted on the others), and the model fitted on the whole dev dump scored on --check
    python bench/fit_flat_ltr.py /tmp/rank/dev.npz --write src/treeseek/search/flat/ltr_weights.py

Metrics are treeseek.eval.metrics over the top 10 of each reordered candidate list (gold files
outside the candidates count as missed), next to the fused order of the same candidates.
"""

from __future__ import annotations

import argparse
import itertools
import json
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from treeseek.eval.metrics import mean_scores, score

Array = npt.NDArray[np.float64]


@dataclass
class Dump:
    x: Array
    query: npt.NDArray[np.int64]
    label: Array
    repo: npt.NDArray[np.str_]
    gold: npt.NDArray[np.int64]
    features: list[str]

    @classmethod
    def load(cls, path: Path) -> Dump:
        d = np.load(path)
        x, features = d["x"], [str(f) for f in d["features"]]
        if "fused.log" not in features:  # a dump written before that column existed
            fused = x[:, features.index("fused.norm")]
            x = np.c_[x, np.log(np.maximum(fused, 1e-9))]
            features.append("fused.log")
        return cls(x, d["query"], d["label"], d["repo"], d["gold"], features)

    def subset(self, queries: npt.NDArray[np.int64]) -> Dump:
        keep = np.isin(self.query, queries)
        remap = {int(q): i for i, q in enumerate(queries)}
        return Dump(
            self.x[keep],
            np.asarray([remap[int(q)] for q in self.query[keep]], dtype=np.int64),
            self.label[keep],
            self.repo[queries],
            self.gold[queries],
            self.features,
        )


def fit(d: Dump, l2: float, iters: int = 600, lr: float = 0.05) -> tuple[Array, Array, Array]:
    """Standardize, then minimize the mean listwise softmax loss (+ l2) with Adam."""
    mean = d.x.mean(axis=0)
    scale = d.x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = (d.x - mean) / scale
    starts = np.flatnonzero(np.r_[True, d.query[1:] != d.query[:-1]])
    pos = np.add.reduceat(d.label, starts)
    useful = pos > 0
    target = d.label / np.repeat(np.where(pos > 0, pos, 1.0), np.diff(np.r_[starts, len(d.x)]))
    qrow = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(d.x)]))
    rowmask = useful[qrow]
    w = np.zeros(z.shape[1])
    w[d.features.index("fused.norm")] = 1.0
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    nq = max(1, int(useful.sum()))
    for t in range(1, iters + 1):
        s = z @ w
        smax = np.maximum.reduceat(s, starts)
        e = np.exp(s - smax[qrow])
        p = e / np.add.reduceat(e, starts)[qrow]
        g = z[rowmask].T @ (p - target)[rowmask] / nq + l2 * w
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w -= lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return mean, scale, w


def metrics(d: Dump, s: Array) -> dict[str, float]:
    rows = []
    starts = np.flatnonzero(np.r_[True, d.query[1:] != d.query[:-1]])
    ends = np.r_[starts[1:], len(d.x)]
    for q, (a, b) in enumerate(zip(starts, ends, strict=True)):
        order = np.argsort(-s[a:b], kind="stable")[:10]
        preds = [f"c{i}" for i in order.tolist()]
        gold = [f"c{i}" for i in np.flatnonzero(d.label[a:b]).tolist()]
        gold += [f"missing{i}" for i in range(int(d.gold[q]) - len(gold))]
        rows.append(score(preds, gold))
    means = mean_scores(rows).means
    return {k: means[k] for k in ("recall_at_gold", "mrr", "acc_at_1", "acc_at_5", "acc_at_10")}


def show(label: str, m: dict[str, float]) -> None:
    print(
        f"| {label} | {m['recall_at_gold']:.3f} | {m['mrr']:.3f} | {m['acc_at_1']:.3f} |"
        f" {m['acc_at_5']:.3f} | {m['acc_at_10']:.3f} |"
    )


def show_baselines(
    names: list[str], dumps: list[Dump], label: str, weights: dict[str, float]
) -> None:
    """A table's head, then per dump the fused order's row and the linear score's."""
    print("| ranking | recall@gold | MRR | Acc@1 | Acc@5 | Acc@10 |")
    print("|---|---|---|---|---|---|")
    for name, dump in zip(names, dumps, strict=True):
        show(f"fused ({name})", metrics(dump, fused(dump)))
        show(f"{label} ({name})", metrics(dump, linear(dump, weights)))


def fused(d: Dump) -> Array:
    return -np.asarray(np.arange(len(d.x)), dtype=np.float64)


def apply(d: Dump, mean: Array, scale: Array, w: Array) -> Array:
    return np.asarray(((d.x - mean) / scale) @ w, dtype=np.float64)


def cross_validate(d: Dump, l2: float) -> Array:
    """Every instance scored by a model fitted on the other repositories' instances."""
    out = np.zeros(len(d.x))
    for repo in sorted(set(d.repo.tolist())):
        test = np.flatnonzero(d.repo == repo)
        train = np.flatnonzero(d.repo != repo)
        mean, scale, w = fit(d.subset(train), l2)
        rows = np.isin(d.query, test)
        out[rows] = apply(d.subset(test), mean, scale, w)
    return out


def write(path: Path, d: Dump, mean: Array, scale: Array, w: Array) -> None:
    def tup(a: Array) -> str:
        return "(\n" + "".join(f"        {float(v)!r},\n" for v in a) + "    )"

    names = "".join(f"#   {f}: {float(x):+.4f}\n" for f, x in zip(d.features, w, strict=True))
    path.write_text(
        '"""The learned ranking\'s weights (written by ``bench/fit_flat_ltr.py`` from the'
        ' dev split\'s\ncandidate features; do not edit by hand)."""\n\n'
        "from treeseek.search.flat.learned import FEATURES, LinearModel\n\n"
        f"# weights per standardized feature:\n{names}"
        "LEARNED_MODEL = LinearModel(\n"
        "    features=FEATURES,\n"
        f"    mean={tup(mean)},\n"
        f"    scale={tup(scale)},\n"
        f"    weights={tup(w)},\n"
        ")\n"
        "HYBRID_NOTE = LEARNED_NOTE = 'a logistic model over standardized features'\n"
        "HYBRID_MODEL = LEARNED_MODEL\n"
    )


#: the grid of ``--grid``: weights added to the log of the fused score (relative to the best)
GRID: dict[str, tuple[float, ...]] = {
    "files.norm": (0.0, 0.1, 0.2, 0.3, 0.5),
    "chunks.norm": (0.0, 0.1, 0.2, 0.3),
    "paths.norm": (0.0, 0.1, 0.2),
    "best.rr": (0.0, 0.1, 0.2),
    "title.norm": (0.0, 0.1, 0.2),
}
KEYS = ("recall_at_gold", "mrr", "acc_at_5")


def grid(dumps: list[Dump]) -> tuple[dict[str, float], list[dict[str, float]]]:
    """The grid point (weights over ``log fused``) with the best summed recall@gold, then MRR,
    over all dumps, among the points that lower none of recall@gold, MRR and Acc@5 on any
    dump against the fused order; the fused order itself when none does."""
    base = [metrics(d, fused(d)) for d in dumps]
    best: tuple[tuple[float, float], dict[str, float], list[dict[str, float]]] | None = None
    for values in itertools.product(*GRID.values()):
        weights = dict(zip(GRID, values, strict=True))
        got = [metrics(d, linear(d, weights)) for d in dumps]
        if any(g[k] < b[k] - 1e-9 for g, b in zip(got, base, strict=True) for k in KEYS):
            continue
        key = (sum(g["recall_at_gold"] for g in got), sum(g["mrr"] for g in got))
        if best is None or key > best[0]:
            best = (key, weights, got)
    if best is None:
        return {}, base
    return best[1], best[2]


def linear(d: Dump, weights: dict[str, float]) -> Array:
    s = d.x[:, d.features.index("fused.log")].copy()
    for f, w in weights.items():
        s += w * d.x[:, d.features.index(f)]
    return s


#: the features coordinate ascent may weigh (over ``log fused``), and its steps
ASCENT_FEATURES: tuple[str, ...] = (
    "files.norm",
    "title.norm",
    "chunks.norm",
    "paths.norm",
    "symbols.norm",
    "symbols.rr",
    "best.rr",
    "graph.link",
    "graph.ppr",
    "dir.top",
    "dir.mention",
    "stem.named",
    "parent.named",
    "mentions.log",
    "agree.top3",
    "length.log",
    "aux_dir",
)
STEPS = (0.2, 0.1, 0.05)


def objective(dumps: list[Dump], weights: dict[str, float]) -> float:
    """Summed recall@gold + MRR over the dumps (each dump counts the same)."""
    return sum(
        m["recall_at_gold"] + m["mrr"] for m in (metrics(d, linear(d, weights)) for d in dumps)
    )


def ascend(
    dumps: list[Dump], start: dict[str, float], rounds: int = 3
) -> tuple[dict[str, float], float]:
    """Coordinate ascent of the weights over ``log fused`` (RankLib's way): each feature of
    :data:`ASCENT_FEATURES` in turn moves by the steps of :data:`STEPS` either way while the
    objective rises by more than 0.002; stops after ``rounds`` passes or a pass with no move."""
    weights = dict(start)
    best = objective(dumps, weights)
    for _ in range(rounds):
        moved = False
        for f in ASCENT_FEATURES:
            if f not in dumps[0].features:
                continue
            for step in STEPS:
                for sign in (1.0, -1.0):
                    trial = {**weights, f: round(weights.get(f, 0.0) + sign * step, 4)}
                    got = objective(dumps, trial)
                    if got > best + 0.002:
                        weights, best, moved = trial, got, True
        if not moved:
            break
    return {f: w for f, w in weights.items() if w != 0.0}, best


def ascend_by_repository(dumps: list[Dump], start: dict[str, float]) -> list[Array]:
    """Every instance scored by weights ascended on the other repositories' instances (of
    every dump): the honest estimate of what :func:`ascend` gains."""
    repos = sorted({r for d in dumps for r in d.repo.tolist()})
    scores = [np.zeros(len(d.x)) for d in dumps]
    for repo in repos:
        train = [d.subset(np.flatnonzero(d.repo != repo)) for d in dumps]
        weights, _ = ascend([t for t in train if len(t.gold)], start)
        for d, out in zip(dumps, scores, strict=True):
            test = np.flatnonzero(d.repo == repo)
            if len(test):
                rows = np.isin(d.query, test)
                out[rows] = linear(d.subset(test), weights)
    return scores


def extend(
    dumps: list[Dump], start: dict[str, float], feature: str, values: tuple[float, ...]
) -> tuple[float, list[float], list[Array]]:
    """The weight of one more ``feature`` over the ``start`` point: the value of ``values``
    with the best :func:`objective` on all dumps (the smaller on a tie), the values chosen
    with each repository held out, and every instance scored by its held-out choice."""

    def pick(ds: list[Dump]) -> float:
        return max(values, key=lambda v: (objective(ds, {**start, feature: v}), -abs(v)))

    scores = [np.zeros(len(d.x)) for d in dumps]
    picks: list[float] = []
    for repo in sorted({r for d in dumps for r in d.repo.tolist()}):
        train = [d.subset(np.flatnonzero(d.repo != repo)) for d in dumps]
        v = pick([t for t in train if len(t.gold)])
        picks.append(v)
        for d, out in zip(dumps, scores, strict=True):
            test = np.flatnonzero(d.repo == repo)
            if len(test):
                out[np.isin(d.query, test)] = linear(d.subset(test), {**start, feature: v})
    return pick(dumps), picks, scores


def constrained_search(
    dumps: list[Dump],
    start: dict[str, float],
    space: dict[str, tuple[float, ...]],
    baseline: list[Dump] | None = None,
) -> dict[str, float]:
    """The point of ``space`` (each feature's weight set to one of its values, over ``start``)
    with the best summed recall@gold, then MRR, over ``dumps``, among the points that lower
    none of recall@gold, MRR and Acc@5 on any dump against ``start`` scored on ``baseline``
    (the same instances dumped under another configuration, e.g. today's fused order; default:
    ``dumps`` themselves); ``start`` when none does (ties: the earlier point)."""
    base = [metrics(d, linear(d, start)) for d in (baseline or dumps)]
    best_key = (-1.0, -1.0)
    chosen = dict(start)
    got = [metrics(d, linear(d, start)) for d in dumps]
    if not any(g[k] < b[k] - 1e-9 for g, b in zip(got, base, strict=True) for k in KEYS):
        best_key = (sum(g["recall_at_gold"] for g in got), sum(g["mrr"] for g in got))
    for values in itertools.product(*space.values()):
        weights = {**start, **dict(zip(space, values, strict=True))}
        got = [metrics(d, linear(d, weights)) for d in dumps]
        if any(g[k] < b[k] - 1e-9 for g, b in zip(got, base, strict=True) for k in KEYS):
            continue
        key = (sum(g["recall_at_gold"] for g in got), sum(g["mrr"] for g in got))
        if key > best_key:
            best_key, chosen = key, weights
    return {f: w for f, w in chosen.items() if w}


def search_by_repository(
    dumps: list[Dump],
    start: dict[str, float],
    space: dict[str, tuple[float, ...]],
    baseline: list[Dump] | None = None,
) -> tuple[list[Array], list[dict[str, float]]]:
    """Every instance scored by the point :func:`constrained_search` picks on the other
    repositories' instances (of every dump); and the point picked per held-out repository."""
    scores = [np.zeros(len(d.x)) for d in dumps]
    picks: list[dict[str, float]] = []
    for repo in sorted({r for d in dumps for r in d.repo.tolist()}):
        train = [d.subset(np.flatnonzero(d.repo != repo)) for d in dumps]
        held = [d.subset(np.flatnonzero(d.repo != repo)) for d in baseline or dumps]
        keep = [i for i, t in enumerate(train) if len(t.gold)]
        weights = constrained_search(
            [train[i] for i in keep], start, space, [held[i] for i in keep]
        )
        picks.append(weights)
        for d, out in zip(dumps, scores, strict=True):
            test = np.flatnonzero(d.repo == repo)
            if len(test):
                out[np.isin(d.query, test)] = linear(d.subset(test), weights)
    return scores, picks


def run_hybrid(args: argparse.Namespace, d: Dump) -> None:
    """``--hybrid``: the model of hybrid mode, searched over the shipped lexical weights on
    dumps written with ``--vectors`` (README "Learned ranking for the hybrid mode")."""
    dumps = [d, *(Dump.load(p) for p in args.check)]
    names = [p.name for p in [args.dump, *args.check]]
    start = shipped_weights()
    space: dict[str, tuple[float, ...]] = {}
    for spec in args.hybrid:
        feature, _, raw = spec.partition("=")
        space[feature] = tuple(float(v) for v in raw.split(","))
    baseline = [Dump.load(p) for p in args.baseline] or None
    if baseline is not None and [len(b.gold) for b in baseline] != [len(x.gold) for x in dumps]:
        raise SystemExit("--baseline: one dump per dump and --check, of the same instances")
    print(f"start (the shipped lexical model): {start}")
    cv, picks = search_by_repository(dumps, start, space, baseline)
    chosen = constrained_search(dumps, start, space, baseline)
    print(f"chosen on all: {chosen}")
    print("held out by repository:")
    for p in picks:
        print(f"   {dict((f, w) for f, w in p.items() if start.get(f) != w)}")
    print("| ranking | recall@gold | MRR | Acc@1 | Acc@5 | Acc@10 |")
    print("|---|---|---|---|---|---|")
    for i, (name, dump, s) in enumerate(zip(names, dumps, cv, strict=True)):
        if baseline is not None:
            show(
                f"baseline: shipped lexical model ({args.baseline[i].name})",
                metrics(baseline[i], linear(baseline[i], start)),
            )
        show(f"fused ({name})", metrics(dump, fused(dump)))
        show(f"shipped lexical model ({name})", metrics(dump, linear(dump, start)))
        show(f"hybrid search, leave-one-repository-out ({name})", metrics(dump, s))
        show(f"hybrid search on all ({name})", metrics(dump, linear(dump, chosen)))
    if args.write is not None and chosen != start:
        note = (
            f"Score: log(fused / best fused) + {chosen} (the features of"
            f" :mod:`treeseek.search.flat.learned`): the shipped lexical weights, then the"
            f" point of {', '.join(args.hybrid)} with the best summed recall@gold (then MRR)"
            f" on {', '.join(names)} that lowers none of recall@gold, MRR, Acc@5 on either"
            f" against the lexical model ({args.note})."
        )
        from treeseek.search.flat import ltr_weights

        write_models(args.write, (start, ltr_weights.LEARNED_NOTE), (chosen, note))
        print(f"wrote {args.write}")


def write_chosen(args: argparse.Namespace, chosen: dict[str, float], how: str) -> None:
    """With ``--write``, the weights module with ``chosen`` as the lexical model (the hybrid
    model kept as shipped), its note saying ``how`` they were chosen (text following the
    features' mention) and ``--note``."""
    if args.write is None:
        return
    note = (
        f"Score: log(fused / best fused) + {chosen} (the features of"
        f" :mod:`treeseek.search.flat.learned`){how} ({args.note})."
    )
    write_models(args.write, (chosen, note), shipped_hybrid())
    print(f"wrote {args.write}")


#: a model's weights over ``log fused`` and the note saying how they were chosen
Chosen = tuple[dict[str, float], str]


def _model_source(constant: str, name: str, weights: dict[str, float], note: str) -> str:
    from treeseek.search.flat.learned import FEATURES

    w = [1.0 if f == "fused.log" else weights.get(f, 0.0) for f in FEATURES]
    lines = "".join(f"        {v!r},  # {f}\n" for f, v in zip(FEATURES, w, strict=True))
    chunks = textwrap.wrap(note, 84)
    quoted = "".join(
        f"    {json.dumps(c + ' ' if i < len(chunks) - 1 else c)}\n" for i, c in enumerate(chunks)
    )
    return (
        f"{constant}_NOTE = (\n{quoted})\n"
        f"{constant}_MODEL = LinearModel(\n"
        "    features=FEATURES,\n"
        "    mean=tuple(0.0 for _ in FEATURES),\n"
        "    scale=tuple(1.0 for _ in FEATURES),\n"
        f"    weights=(\n{lines}    ),\n"
        f"    name={json.dumps(name)},\n"
        ")\n"
    )


def write_models(path: Path, lexical: Chosen, hybrid: Chosen | None) -> None:
    """The weights module: ``LEARNED_MODEL`` (lexical mode) and ``HYBRID_MODEL`` (vectors took
    part; the lexical model itself when ``hybrid`` is None), each with its note."""
    hybrid_source = (
        _model_source("HYBRID", "hybrid", *hybrid)
        if hybrid is not None
        else "#: no hybrid model earned its place: hybrid mode ranks with the lexical model\n"
        "HYBRID_NOTE = LEARNED_NOTE\nHYBRID_MODEL = LEARNED_MODEL\n"
    )
    path.write_text(
        '"""The learned ranking\'s weights (written by ``bench/fit_flat_ltr.py``; do not edit by'
        " hand).\n\n"
        "Each model scores a candidate by log(fused / best fused) plus its weights over the\n"
        "features of :mod:`treeseek.search.flat.learned`; ``LEARNED_MODEL`` ranks in lexical\n"
        "mode, ``HYBRID_MODEL`` when the vector signal took part (the trace's ``ranked_by``).\n"
        "How each was chosen: its ``*_NOTE``.\n"
        '"""\n\n'
        "from treeseek.search.flat.learned import FEATURES, LinearModel\n\n"
        f"{_model_source('LEARNED', 'lexical', *lexical)}\n{hybrid_source}"
    )


def shipped_hybrid() -> Chosen | None:
    """The shipped hybrid model's weights and note (None: it is the lexical model)."""
    from treeseek.search.flat import ltr_weights

    if ltr_weights.HYBRID_MODEL is ltr_weights.LEARNED_MODEL:
        return None
    return weights_of(ltr_weights.HYBRID_MODEL), ltr_weights.HYBRID_NOTE


def weights_of(model: object) -> dict[str, float]:
    """A shipped linear model's weights over ``log fused``."""
    from treeseek.search.flat.learned import FEATURES, LinearModel

    assert isinstance(model, LinearModel)
    return {f: w for f, w in zip(FEATURES, model.weights, strict=True) if f != "fused.log" and w}


# -- boosted trees (LambdaMART over oblivious trees, on top of the linear score) --------------


def stack(dumps: list[Dump]) -> Dump:
    """The dumps as one (their instances numbered one after the other)."""
    offset = 0
    queries = []
    for d in dumps:
        queries.append(d.query + offset)
        offset += len(d.gold)
    return Dump(
        np.concatenate([d.x for d in dumps]),
        np.concatenate(queries),
        np.concatenate([d.label for d in dumps]),
        np.concatenate([d.repo for d in dumps]),
        np.concatenate([d.gold for d in dumps]),
        dumps[0].features,
    )


def shipped_weights() -> dict[str, float]:
    """The shipped lexical model's weights over ``log fused`` (ltr_weights.py)."""
    from treeseek.search.flat.ltr_weights import LEARNED_MODEL

    return weights_of(LEARNED_MODEL)


@dataclass
class Padded:
    """A dump's instances as a (queries x depth) grid (-1: no candidate)."""

    row: npt.NDArray[np.int64]
    label: Array

    @classmethod
    def of(cls, d: Dump) -> Padded:
        starts = np.flatnonzero(np.r_[True, d.query[1:] != d.query[:-1]])
        sizes = np.diff(np.r_[starts, len(d.x)])
        width = int(sizes.max()) if len(sizes) else 1
        row = -np.ones((len(starts), width), dtype=np.int64)
        for q, (a, n) in enumerate(zip(starts.tolist(), sizes.tolist(), strict=True)):
            row[q, :n] = np.arange(a, a + n)
        label = np.where(row >= 0, d.label[np.maximum(row, 0)], 0.0)
        return cls(row, label)


def lambda_gradients(p: Padded, s: Array, n: int, cut: int = 30) -> tuple[Array, Array]:
    """LambdaRank gradients and second derivatives of every row (pairs of a gold and a
    non-gold candidate, weighted by the change of nDCG@``cut`` their swap makes)."""
    ok = p.row >= 0
    ss = np.where(ok, s[np.maximum(p.row, 0)], -1e9)
    order = np.argsort(-ss, axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(ss.shape[1])[None, :].repeat(len(ss), 0), axis=1)
    disc = np.where(rank < cut, 1.0 / np.log2(rank + 2.0), 0.0)
    npos = p.label.sum(axis=1)
    ideal = np.array([sum(1.0 / np.log2(k + 2.0) for k in range(min(int(m), cut))) for m in npos])
    ideal[ideal == 0] = 1.0
    pos = p.label > 0
    neg = ok & ~pos
    pair = pos[:, :, None] & neg[:, None, :]
    delta = np.abs(disc[:, :, None] - disc[:, None, :]) / ideal[:, None, None]
    rho = 1.0 / (1.0 + np.exp(np.clip(ss[:, :, None] - ss[:, None, :], -50, 50)))
    lam = np.where(pair, rho * delta, 0.0)
    hess = np.where(pair, rho * (1.0 - rho) * delta, 0.0)
    g_grid = -lam.sum(axis=2) + lam.sum(axis=1)
    h_grid = hess.sum(axis=2) + hess.sum(axis=1)
    g = np.zeros(n)
    h = np.zeros(n)
    g[p.row[ok]] = g_grid[ok]
    h[p.row[ok]] = h_grid[ok]
    return g, h


def candidate_splits(x: Array, bins: int = 16) -> tuple[npt.NDArray[np.int64], Array]:
    """(feature, threshold) pairs: each feature's distinct quantiles (``x > t`` splits)."""
    feats: list[int] = []
    thresholds: list[float] = []
    for f in range(x.shape[1]):
        values = np.unique(np.quantile(x[:, f], np.linspace(0.0, 1.0, bins + 1)[:-1]))
        for t in values.tolist():
            if (x[:, f] > t).any():
                feats.append(f)
                thresholds.append(t)
    return np.asarray(feats, dtype=np.int64), np.asarray(thresholds)


def fit_tree(
    above: npt.NDArray[np.bool_],
    splits: tuple[npt.NDArray[np.int64], Array],
    g: Array,
    h: Array,
    depth: int,
    reg: float,
    min_leaf: int,
    lr: float,
) -> tuple[list[int], list[float], list[float]]:
    """One oblivious tree by greedy levels (the split of the best Newton gain over all
    current leaves), leaf values ``-lr * G / (H + reg)``."""
    n = len(g)
    leaf = np.zeros(n, dtype=np.int64)
    af = above.astype(np.float64)
    feats: list[int] = []
    thresholds: list[float] = []
    for level in range(depth):
        width = 1 << level
        member = np.zeros((width, n))
        member[leaf, np.arange(n)] = 1.0
        g1 = (member * g) @ af
        h1 = (member * h) @ af
        c1 = member @ af
        g0 = (member @ g)[:, None] - g1
        h0 = (member @ h)[:, None] - h1
        c0 = member.sum(axis=1)[:, None] - c1
        gain = (g1**2 / (h1 + reg) + g0**2 / (h0 + reg)).sum(axis=0)
        small = (((c1 > 0) & (c1 < min_leaf)) | ((c0 > 0) & (c0 < min_leaf))).any(axis=0)
        gain[small] = -np.inf
        best = int(np.argmax(gain))
        if not np.isfinite(gain[best]):
            break
        feats.append(int(splits[0][best]))
        thresholds.append(float(splits[1][best]))
        leaf |= above[:, best].astype(np.int64) << level
    width = 1 << len(feats)
    gs = np.bincount(leaf, weights=g, minlength=width)
    hs = np.bincount(leaf, weights=h, minlength=width)
    return feats, thresholds, (-lr * gs / (hs + reg)).tolist()


@dataclass
class Boosted:
    trees: list[tuple[list[int], list[float], list[float]]]

    def correction(self, x: Array) -> Array:
        out = np.zeros(len(x))
        for feats, thresholds, leaves in self.trees:
            leaf = np.zeros(len(x), dtype=np.int64)
            for level, (f, t) in enumerate(zip(feats, thresholds, strict=True)):
                leaf |= (x[:, f] > t).astype(np.int64) << level
            out += np.asarray(leaves)[leaf]
        return out


@dataclass(frozen=True)
class TreeParams:
    trees: int = 30
    depth: int = 2
    lr: float = 0.1
    reg: float = 1.0
    min_leaf: int = 20
    #: the nDCG cut of the LambdaRank weights
    cut: int = 30

    def __str__(self) -> str:
        return (
            f"{self.trees} trees, depth {self.depth}, lr {self.lr}, reg {self.reg},"
            f" min leaf {self.min_leaf}, nDCG@{self.cut}"
        )


def fit_boosted(
    d: Dump, base: dict[str, float], params: TreeParams, columns: list[int] | None = None
) -> Boosted:
    """LambdaMART: trees fitted one after the other to the LambdaRank gradients of
    ``linear(base) + trees so far`` (only instances with a gold candidate count)."""
    starts = np.flatnonzero(np.r_[True, d.query[1:] != d.query[:-1]])
    pos = np.add.reduceat(d.label, starts)
    sub = d.subset(np.flatnonzero(pos > 0))
    x = sub.x
    splits = candidate_splits(x)
    if columns is not None:
        keep = np.isin(splits[0], columns)
        splits = (splits[0][keep], splits[1][keep])
    above = x[:, splits[0]] > splits[1][None, :]
    padded = Padded.of(sub)
    s = linear(sub, base)
    model = Boosted([])
    for _ in range(params.trees):
        g, h = lambda_gradients(padded, s, len(s), params.cut)
        tree = fit_tree(above, splits, g, h, params.depth, params.reg, params.min_leaf, params.lr)
        model.trees.append(tree)
        s = s + Boosted([tree]).correction(sub.x)
    return model


def boosted_by_repository(
    dumps: list[Dump], base: dict[str, float], params: TreeParams, columns: list[int] | None = None
) -> list[Array]:
    """Every instance scored by trees fitted on the other repositories' instances (of every
    dump, stacked)."""
    repos = sorted({r for d in dumps for r in d.repo.tolist()})
    scores = [np.zeros(len(d.x)) for d in dumps]
    for repo in repos:
        train = stack([d.subset(np.flatnonzero(d.repo != repo)) for d in dumps])
        model = fit_boosted(train, base, params, columns)
        for d, out in zip(dumps, scores, strict=True):
            test = np.flatnonzero(d.repo == repo)
            if len(test):
                rows = np.isin(d.query, test)
                sub = d.subset(test)
                out[rows] = linear(sub, base) + model.correction(sub.x)
    return scores


def parse_params(spec: str) -> TreeParams:
    """``trees=30,depth=2,lr=0.1,reg=1,min_leaf=20`` (any subset)."""
    fields: dict[str, float] = {}
    for kv in filter(None, spec.split(",")):
        k, _, v = kv.partition("=")
        fields[k] = float(v)
    return TreeParams(
        trees=int(fields.get("trees", 30)),
        depth=int(fields.get("depth", 2)),
        lr=fields.get("lr", 0.1),
        reg=fields.get("reg", 1.0),
        min_leaf=int(fields.get("min_leaf", 20)),
        cut=int(fields.get("cut", 30)),
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dump", type=Path)
    ap.add_argument("--check", type=Path, action="append", default=[])
    ap.add_argument("--l2", type=float, action="append", default=[])
    ap.add_argument("--write", type=Path, default=None)
    ap.add_argument("--drop", action="append", default=[], help="feature name prefix to zero")
    ap.add_argument(
        "--grid",
        action="store_true",
        help="grid search of a few weights over log(fused) on the dump and the --check dumps"
        " together (with --write: write the chosen weights)",
    )
    ap.add_argument(
        "--ascent",
        action="store_true",
        help="coordinate ascent of weights over log(fused) from the --grid point, on the dump"
        " and the --check dumps together, with a leave-one-repository-out estimate (with"
        " --write: write the weights ascended on all of them)",
    )
    ap.add_argument(
        "--extend",
        action="append",
        default=[],
        help="FEATURE=v1,v2,...: after --grid, add FEATURE's weight, chosen among the values"
        " on all dumps, with a leave-one-repository-out estimate (repeatable, in order)",
    )
    ap.add_argument("--note", default="", help="what the dumps are, for the weights' docstring")
    ap.add_argument(
        "--trees",
        action="append",
        default=[],
        help="trees=N,depth=D,lr=R,reg=L,min_leaf=M: boosted trees over the shipped linear"
        " score, leave-one-repository-out on the dump and the --check dumps stacked, next to"
        " the linear score (repeatable)",
    )
    ap.add_argument(
        "--base",
        default="shipped",
        help="the linear score the trees correct: 'shipped' (ltr_weights.py) or"
        " f=w,f=w over log(fused)",
    )
    ap.add_argument(
        "--from-shipped",
        action="store_true",
        help="--extend from the shipped weights (ltr_weights.py) instead of a new --grid",
    )
    ap.add_argument("--columns", default="", help="f,f,...: the only features trees may split on")
    ap.add_argument(
        "--hybrid",
        action="append",
        default=[],
        help="FEATURE=v1,v2,...: the hybrid-mode model, a joint grid of these weights over the"
        " shipped lexical model on dumps written with --vectors, with a leave-one-repository-"
        "out estimate (repeatable; with --write: write HYBRID_MODEL when a point earns its"
        " place on every dump)",
    )
    ap.add_argument(
        "--baseline",
        type=Path,
        action="append",
        default=[],
        help="with --hybrid: per dump (the dump, then each --check) a dump of the same"
        " instances under today's configuration; the points must lower nothing against the"
        " shipped lexical model on these (e.g. the fused order's vector weight refitted)",
    )
    args = ap.parse_args()
    d = Dump.load(args.dump)
    if args.hybrid:
        run_hybrid(args, d)
        return
    if args.trees:
        run_trees(args, d)
        return
    if args.grid and args.extend:
        dumps = [d, *(Dump.load(p) for p in args.check)]
        names = [p.name for p in [args.dump, *args.check]]
        chosen = shipped_weights() if args.from_shipped else grid(dumps)[0]
        print(f"{'shipped' if args.from_shipped else 'grid'} point: {chosen}")
        show_baselines(names, dumps, "start", chosen)
        for spec in args.extend:
            feature, _, raw = spec.partition("=")
            values = tuple(float(v) for v in raw.split(","))
            value, picks, cv = extend(dumps, chosen, feature, values)
            print(f"{feature}: {value} on all; held out by repository: {picks}")
            for name, dump, s in zip(names, dumps, cv, strict=True):
                show(f"+ {feature}, leave-one-repository-out ({name})", metrics(dump, s))
            chosen = {**chosen, feature: value} if value else chosen
            for name, dump in zip(names, dumps, strict=True):
                show(f"+ {feature} {value} ({name})", metrics(dump, linear(dump, chosen)))
        write_chosen(
            args,
            chosen,
            f": the grid point chosen on {', '.join(names)}, then {', '.join(args.extend)}",
        )
        return
    if args.ascent:
        dumps = [d, *(Dump.load(p) for p in args.check)]
        names = [p.name for p in [args.dump, *args.check]]
        start, _ = grid(dumps)
        print(f"grid point: {start}")
        cv = ascend_by_repository(dumps, start)
        chosen, _ = ascend(dumps, start)
        print(f"ascended weights over log(fused): {chosen}")
        print("| ranking | recall@gold | MRR | Acc@1 | Acc@5 | Acc@10 |")
        print("|---|---|---|---|---|---|")
        for name, dump, s in zip(names, dumps, cv, strict=True):
            show(f"fused ({name})", metrics(dump, fused(dump)))
            show(f"grid ({name})", metrics(dump, linear(dump, start)))
            show(f"ascent, leave-one-repository-out ({name})", metrics(dump, s))
            show(f"ascent on all ({name})", metrics(dump, linear(dump, chosen)))
        write_chosen(args, chosen, f", coordinate ascent from the grid point on {', '.join(names)}")
        return
    if args.grid:
        dumps = [d, *(Dump.load(p) for p in args.check)]
        names = [p.name for p in [args.dump, *args.check]]
        chosen, got = grid(dumps)
        print(f"chosen weights over log(fused): {chosen}")
        for name, dump, m in zip(names, dumps, got, strict=True):
            show(f"fused ({name})", metrics(dump, fused(dump)))
            show(f"learned ({name})", m)
        write_chosen(args, chosen, f", chosen on {', '.join(names)}")
        return
    checks = [Dump.load(p) for p in args.check]
    for dump in [d, *checks]:
        for prefix in args.drop:
            for i, f in enumerate(dump.features):
                if f.startswith(prefix):
                    dump.x[:, i] = 0.0
    print("| ranking | recall@gold | MRR | Acc@1 | Acc@5 | Acc@10 |")
    print("|---|---|---|---|---|---|")
    show(f"fused ({args.dump.name}, {len(d.gold)} instances)", metrics(d, fused(d)))
    for c, p in zip(checks, args.check, strict=True):
        show(f"fused ({p.name}, {len(c.gold)} instances)", metrics(c, fused(c)))
    for l2 in args.l2 or [1e-3]:
        show(f"learned, l2={l2}, leave-one-repository-out", metrics(d, cross_validate(d, l2)))
        mean, scale, w = fit(d, l2)
        for c, p in zip(checks, args.check, strict=True):
            show(
                f"learned, l2={l2}, fitted on all of {args.dump.name} -> {p.name}",
                metrics(c, apply(c, mean, scale, w)),
            )
        if args.write is not None:
            write(args.write, d, mean, scale, w)
            print(f"wrote {args.write}")


def run_trees(args: argparse.Namespace, d: Dump) -> None:
    dumps = [d, *(Dump.load(p) for p in args.check)]
    names = [p.name for p in [args.dump, *args.check]]
    if args.base == "shipped":
        base = shipped_weights()
    else:
        base = {f: float(w) for f, _, w in (kv.partition("=") for kv in args.base.split(",") if kv)}
    drop = [i for i, f in enumerate(d.features) if any(f.startswith(p) for p in args.drop)]
    if args.columns:
        keep = args.columns.split(",")
        drop += [i for i, f in enumerate(d.features) if f not in keep and i not in drop]
    columns = [i for i in range(len(d.features)) if i not in drop] if drop else None
    print(f"base: log(fused) + {base}; dropped columns: {[d.features[i] for i in drop]}")
    show_baselines(names, dumps, "linear", base)
    for spec in args.trees:
        params = parse_params(spec)
        cv = boosted_by_repository(dumps, base, params, columns)
        for name, dump, s in zip(names, dumps, cv, strict=True):
            show(f"linear + {params}, leave-one-repository-out ({name})", metrics(dump, s))


if __name__ == "__main__":
    main()
