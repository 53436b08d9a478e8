"""The boosted trees that refine the section scorer: evaluation, validation, packaged models."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from treeseek.database import Database
from treeseek.errors import ConfigError
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import SearchContext
from treeseek.search.document.ranking import VECTOR_WEIGHTS, WEIGHTS, stacked_trees
from treeseek.search.document.retriever import DocumentRetriever
from treeseek.search.document.trees import LINEAR_COLUMN, BoostedTrees, section_trees


def _stump(feature: int, threshold: float, low: float, high: float) -> dict[str, list[Any]]:
    return {
        "feature": [feature, 0, 0],
        "threshold": [threshold, 0.0, 0.0],
        "left": [1, 0, 0],
        "right": [2, 0, 0],
        "value": [0.0, low, high],
        "leaf": [False, True, True],
    }


def _deep() -> dict[str, list[Any]]:
    """x0 <= 0 ? (x1 <= 5 ? 1 : 2) : 3"""
    return {
        "feature": [0, 1, 0, 0, 0],
        "threshold": [0.0, 5.0, 0.0, 0.0, 0.0],
        "left": [1, 2, 0, 0, 0],
        "right": [4, 3, 0, 0, 0],
        "value": [0.0, 0.0, 1.0, 2.0, 3.0],
        "leaf": [False, False, True, True, True],
    }


def test_the_output_is_the_baseline_plus_the_leaves_reached() -> None:
    model = BoostedTrees.from_trees(["a", "b"], 0.5, [_deep(), _stump(1, 0.0, -1.0, 10.0)])
    assert model.depth == 2
    x = np.array([[-1.0, 5.0], [-1.0, 6.0], [0.0, -3.0], [2.0, 0.0], [0.1, 0.1]])
    # x <= threshold goes left, as scikit-learn's predictor does (rows 0 and 2 sit on one)
    assert model.predict(x).tolist() == [11.5, 12.5, 0.5, 2.5, 13.5]


def test_no_rows_and_no_trees() -> None:
    model = BoostedTrees.from_trees(["a"], 0.25, [_stump(0, 1.0, 1.0, 2.0)])
    assert model.predict(np.zeros((0, 1))).shape == (0,)
    empty = BoostedTrees.from_trees(["a"], 0.25, [])
    assert empty.predict(np.ones((3, 1))).tolist() == [0.25] * 3


def test_rows_of_the_wrong_width_are_refused() -> None:
    model = BoostedTrees.from_trees(["a", "b"], 0.0, [_stump(1, 0.0, 1.0, 2.0)])
    with pytest.raises(ValueError, match="2 features"):
        model.predict(np.zeros((4, 3)))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"value": [0.0, 1.0]}, "unequal length"),
        ({"left": [3, 0, 0]}, "bad child"),
        ({"left": [0, 0, 0]}, "bad child"),  # a node pointing at itself: a cycle
        ({"feature": [2, 0, 0]}, "tests no column"),
    ],
)
def test_a_malformed_tree_is_a_clear_error(change: dict[str, list[Any]], message: str) -> None:
    tree = {**_stump(0, 0.0, 1.0, 2.0), **change}
    with pytest.raises(ConfigError, match=message):
        BoostedTrees.from_trees(["a", "b"], 0.0, [tree])


def test_a_malformed_model_file_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="malformed"):
        BoostedTrees.from_json({"features": ["a"], "trees": []})  # no baseline
    with pytest.raises(ConfigError, match="malformed"):
        BoostedTrees.from_json({"features": ["a"], "baseline": 0, "trees": [{"leaf": [True]}]})


def test_the_packaged_models_read_the_scorers_features_then_the_linear_score() -> None:
    models = section_trees()
    assert set(models) == {"lexical", "vectors"}
    assert stacked_trees("lexical").features == (*WEIGHTS, LINEAR_COLUMN)
    assert stacked_trees("vectors").features == (*VECTOR_WEIGHTS, LINEAR_COLUMN)
    for model in models.values():
        assert len(model.roots) > 0
        rows = np.random.default_rng(0).normal(size=(50, len(model.features)))
        out = model.predict(rows)
        assert np.isfinite(out).all() and out.std() > 0


def test_a_model_over_other_features_is_refused() -> None:
    with pytest.raises(ConfigError, match="no 'other' model"):
        stacked_trees("other")


def test_a_leafs_stored_feature_is_never_read() -> None:
    tree = {**_stump(0, 0.0, 1.0, 2.0), "feature": [0, 7, -3]}  # leaves: any value
    model = BoostedTrees.from_trees(["a"], 0.0, [tree])
    assert model.predict(np.array([[-1.0], [1.0]])).tolist() == [1.0, 2.0]


REPO = Path(__file__).resolve().parents[2]
QUESTIONS = (
    "how are vectors cached by a PostgreSQL reader",
    "budgeted answers for a token budget",
    "flat retrieval with BM25 over files",
    "an offline LLM navigator and rerank",
    "MCP server tools for agents",
    "how the tree is stored in SQLite",
    "boosted trees refine the section scorer",
    "advisory lock serializes two writers of one tree",
)


def test_the_trees_on_the_linear_best_keep_the_full_order_where_it_comes_from_them(
    database: Database, tmp_path: Path
) -> None:
    """Scoring the trees only on the linear scorer's best N: the first N are those, in the
    full scoring's order (same scores), so every prefix of the full ranking made of them is
    the cut ranking's prefix; the others follow in linear order; N at least the candidates is
    the full ranking."""
    root = tmp_path / "docs"
    root.mkdir()
    shutil.copy(REPO / "README.md", root / "README.md")
    for package in sorted(p for p in (REPO / "src" / "treeseek").iterdir() if p.is_dir()):
        sections = [f"# {package.name}\n"]  # a page per package, a section per module
        for module in sorted(package.rglob("*.py")):
            doc = ast.get_docstring(ast.parse(module.read_text()))
            if doc:
                sections.append(f"## {module.stem}\n\n{doc}\n")
        (root / f"{package.name}.md").write_text("\n".join(sections))
    database.index(root, name="docs", documents=True)
    ctx = SearchContext(database.store, database.tree("docs"), LexicalNavigator())
    corpus = DocumentRetriever().corpus(ctx)
    weights = np.array(list(WEIGHTS.values()))
    agreed = []
    for question in QUESTIONS:
        full = corpus.rank(question)
        paths, features = corpus.candidate_features(question)
        linear = dict(zip(paths, features @ weights, strict=True))
        assert len(full) == len(paths) > 40
        assert corpus.rank(question, refined=len(full)) == full
        for n in (5, 20):
            cut = corpus.rank(question, refined=n)
            best = {paths[i] for i in np.argsort(-features @ weights, kind="stable")[:n]}
            assert [p for p, _ in cut[:n]] == [p for p, _ in full if p in best]
            assert [s for _, s in cut[:n]] == [s for p, s in full if p in best]
            rest = [linear[p] for p, _ in cut[n:]]
            assert rest == sorted(rest, reverse=True)
            prefix = next((i for i, (p, _) in enumerate(full) if p not in best), len(full))
            assert cut[:prefix] == full[:prefix]
            agreed.append(prefix)
    assert max(agreed) >= 5  # the fixture has prefixes to agree on
