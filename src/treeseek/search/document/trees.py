"""Boosted regression trees that refine the linear section score (a stacked model).

The flat section ranking scores a candidate as its linear score plus :data:`TREE_WEIGHT`
times the output of an ensemble of regression trees. The trees read the candidate's features
and, as one more column, its linear score, so they learn where the linear model is wrong (an
interaction, a threshold) rather than the ranking again. They are fitted by
``bench/docs_xref/fit.py --trees`` (scikit-learn's histogram gradient boosting, a binary
gold-or-not loss, on the cross-reference benchmark's dev split) and shipped as data,
``section_trees.json`` beside this module: plain arrays, no pickle, evaluated here with
numpy alone, so treeseek does not depend on the library that fitted them.

A model is a list of trees, each a list of nodes in one flat array per field: the feature a
node tests and its threshold (``x <= threshold`` goes left, as scikit-learn's predictor
does), the left and right children's indices, the leaf values; the output is the baseline
plus the sum of the leaves each row reaches.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from treeseek.errors import ConfigError

#: the trees' output is added to the linear score with this weight (chosen on dev, 5-fold CV)
TREE_WEIGHT = 2.0
#: the package file holding the fitted models
MODEL_FILE = "section_trees.json"
#: the name of the column that carries the linear score (the last one the trees read)
LINEAR_COLUMN = "linear"

_Array = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class BoostedTrees:
    """An ensemble of binary regression trees over named feature columns.

    Node arrays are indexed by a global node number (every tree's nodes, one after the
    other); ``roots`` holds each tree's first node and ``depth`` the longest root-to-leaf
    path, the number of steps evaluation takes."""

    features: tuple[str, ...]
    baseline: float
    feature: npt.NDArray[np.int64]
    threshold: _Array
    left: npt.NDArray[np.int64]
    right: npt.NDArray[np.int64]
    value: _Array
    leaf: npt.NDArray[np.bool_]
    roots: npt.NDArray[np.int64]
    depth: int

    def predict(self, x: _Array) -> _Array:
        """The ensemble's output for each row of ``x`` (columns in :attr:`features` order)."""
        if x.ndim != 2 or x.shape[1] != len(self.features):
            raise ValueError(f"expected rows of {len(self.features)} features, got {x.shape}")
        if len(x) == 0 or len(self.roots) == 0:
            return np.full(len(x), self.baseline)
        rows = np.arange(len(x))[:, None]
        node = np.broadcast_to(self.roots, (len(x), len(self.roots))).copy()
        for _ in range(self.depth):
            go_left = x[rows, self.feature[node]] <= self.threshold[node]
            step = np.where(go_left, self.left[node], self.right[node])
            node = np.where(self.leaf[node], node, step)
        out: _Array = self.baseline + self.value[node].sum(axis=1)
        return out

    @classmethod
    def from_trees(
        cls,
        features: Sequence[str],
        baseline: float,
        trees: Sequence[Mapping[str, Sequence[Any]]],
    ) -> BoostedTrees:
        """A model from per-tree node lists (``feature``, ``threshold``, ``left``, ``right``,
        ``value``, ``leaf``; children indexed within their tree), checked: every child
        inside its tree, every tested feature a column, no cycle."""
        fields: dict[str, list[Any]] = {k: [] for k in ("feature", "threshold", "value", "leaf")}
        left: list[int] = []
        right: list[int] = []
        roots: list[int] = []
        depth = 0
        for t, tree in enumerate(trees):
            n = len(tree["leaf"])
            if n == 0 or any(len(tree[k]) != n for k in (*fields, "left", "right")):
                raise ConfigError(f"section trees: tree {t} has node lists of unequal length")
            base = len(fields["leaf"])
            roots.append(base)
            for k in fields:
                fields[k].extend(tree[k])
            level = [0] * n  # each node's depth: children follow their parent (checked)
            for i in range(n):
                if tree["leaf"][i]:
                    fields["feature"][base + i] = 0  # never read for a value: make it valid
                    left.append(base + i)
                    right.append(base + i)
                    continue
                kids = (int(tree["left"][i]), int(tree["right"][i]))
                if not all(i < c < n for c in kids):
                    raise ConfigError(f"section trees: tree {t} node {i} has a bad child")
                if not 0 <= int(tree["feature"][i]) < len(features):
                    raise ConfigError(f"section trees: tree {t} node {i} tests no column")
                left.append(base + kids[0])
                right.append(base + kids[1])
                for c in kids:
                    level[c] = level[i] + 1
            depth = max(depth, *level)
        return cls(
            features=tuple(features),
            baseline=float(baseline),
            feature=np.array(fields["feature"], dtype=np.int64),
            threshold=np.array(fields["threshold"], dtype=np.float64),
            left=np.array(left, dtype=np.int64),
            right=np.array(right, dtype=np.int64),
            value=np.array(fields["value"], dtype=np.float64),
            leaf=np.array(fields["leaf"], dtype=bool),
            roots=np.array(roots, dtype=np.int64),
            depth=depth,
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BoostedTrees:
        try:
            return cls.from_trees(data["features"], float(data["baseline"]), data["trees"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"section trees: malformed model ({exc!r})") from exc


@cache
def section_trees() -> dict[str, BoostedTrees]:
    """The packaged models by name: ``lexical`` (over :data:`~.ranking.WEIGHTS`' features)
    and ``vectors`` (over :data:`~.ranking.VECTOR_WEIGHTS`'), each with the linear score last."""
    text = resources.files(__package__).joinpath(MODEL_FILE).read_text(encoding="utf-8")
    data = json.loads(text)
    return {name: BoostedTrees.from_json(model) for name, model in data["models"].items()}
