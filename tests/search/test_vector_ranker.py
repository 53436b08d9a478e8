"""``--ranker vector``: the spec's path formula over the packaged embedding model when it is
installed (the ``vectors`` extra), else over feature hashing; the trace names the embedder."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence

import pytest
from scripting import candidate_paths, scripted

from treeseek.database import Database
from treeseek.embed import neural
from treeseek.embed.hashing import HashingEmbedder
from treeseek.rank.paths import VectorPathScorer, path_fields
from treeseek.search import strategy
from treeseek.search.base import QueryOptions
from treeseek.search.strategy import path_scorer, run_query, vector_embedder
from treeseek.trees.model import TreeInfo

TreeFactory = Callable[[Sequence[str]], TreeInfo]
HAS_MODEL = all(importlib.util.find_spec(m) for m in neural.PACKAGED_MODEL_MODULES)
needs_model = pytest.mark.skipif(not HAS_MODEL, reason="the vectors extra is not installed")
PATHS = ["accounts/login.py", "billing/invoice.py", "docs/changelog.md", "shipping/carrier.py"]
TREE = [f"pkg/mod_{i:03d}.py" for i in range(60)] + ["pkg/login.py"]  # root collapses to pkg


def _block_trace_rankers(db: Database, make_tree: TreeFactory) -> tuple[object, object]:
    info = make_tree(TREE)
    nav = scripted(lambda r: (candidate_paths(r)[-2:], False))
    options = QueryOptions(strategy="block", k=100, block_tokens=300, max_rounds=1, ranker="vector")
    result = run_query(db.store, info, "a user cannot sign in", options, nav)
    return result.trace.params["ranker"], result.trace.rounds[0].ranker


@needs_model
def test_the_packaged_model_ranks_when_installed() -> None:
    scorer = path_scorer("vector")
    assert isinstance(scorer, VectorPathScorer)
    model = scorer.embedder
    assert isinstance(model, neural.MiniLMEmbedder) and scorer.label == "vector:all-minilm-l6-v2"
    query = "a user cannot sign in with the right password"
    scores = scorer.score(query, PATHS)
    assert scores is not None
    q = model.embed_query(query)

    def cos(text: str) -> float:
        return float(model.embed([text])[0] @ q) if text else 0.0

    for path, score in zip(PATHS, scores, strict=True):  # the spec's formula, field by field
        base, parent, full = path_fields(path)
        assert score == pytest.approx(3 * cos(base) + 1.5 * cos(parent) + cos(full), abs=1e-4)
    # meaning, not shared letters: no word of the query is in any path; feature hashing
    # ranks these by chance
    assert max(range(len(PATHS)), key=lambda i: scores[i]) == 0
    billing = scorer.score("the bill total is wrong for a customer", PATHS)
    assert billing is not None and max(range(len(PATHS)), key=lambda i: billing[i]) == 1


@needs_model
def test_trace_names_the_model(db: Database, make_tree: TreeFactory) -> None:
    params, ranked = _block_trace_rankers(db, make_tree)
    assert params == ranked == "vector:all-minilm-l6-v2"


def test_feature_hashing_without_a_model(
    db: Database, make_tree: TreeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(strategy, "packaged_model", lambda: None)
    embedder = vector_embedder()
    assert isinstance(embedder, HashingEmbedder)
    params, ranked = _block_trace_rankers(db, make_tree)
    assert params == ranked == f"vector:{embedder.name}"


def test_a_missing_package_means_no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def without_torch(name: str, *args: object) -> object:
        return None if name == "torch" else real(name)

    monkeypatch.setattr(importlib.util, "find_spec", without_torch)
    assert neural.packaged_model.__wrapped__() is None  # type: ignore[attr-defined]
