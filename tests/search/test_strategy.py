"""Strategy selection (spec section 1) and dispatch."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import pytest
from scripting import scripted

from treeseek.database import Database
from treeseek.errors import ConfigError, RetrievalError
from treeseek.search import strategy
from treeseek.search.base import QueryOptions
from treeseek.search.strategy import register, run_query, select_strategy
from treeseek.search.tree.beam import BeamRetriever
from treeseek.trees.model import TreeInfo, TreeSource

TreeFactory = Callable[[Sequence[str]], TreeInfo]


def _files(n: int) -> list[str]:
    return [f"f{i:03d}.py" for i in range(n)]


def test_auto_uses_beam_up_to_50_nodes_and_block_above(make_tree: TreeFactory) -> None:
    small = make_tree(_files(49))  # 49 files + the root = 50 nodes
    large = make_tree(_files(50))  # 51 nodes
    assert small.node_count == 50 and large.node_count == 51
    assert select_strategy(small, "auto") == "beam"
    assert select_strategy(large, "auto") == "block"
    assert select_strategy(small, "block") == "block"
    assert select_strategy(large, "beam") == "beam"


def test_auto_runs_the_selected_retriever(db: Database, make_tree: TreeFactory) -> None:
    for n, expected in ((10, "beam"), (60, "block")):
        info = make_tree(_files(n))
        nav = scripted(lambda r: (["f001.py"], True))
        result = run_query(db.store, info, "f001", QueryOptions(k=1), nav)
        assert result.strategy == expected == result.trace.strategy
        assert [f.path for f in result.files] == ["f001.py"]


def test_document_trees_need_the_document_retriever(
    make_tree: TreeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = {k: v for k, v in strategy._registry.items() if k != "document"}
    monkeypatch.setattr(strategy, "_registry", registry)
    doc = replace(make_tree(_files(3)), source=TreeSource.DOCUMENT)
    with pytest.raises(RetrievalError, match="document retriever"):
        select_strategy(doc, "block")


def test_document_trees_dispatch_to_a_registered_document_retriever(
    db: Database, make_tree: TreeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(strategy, "_registry", dict(strategy._registry))
    register("document", lambda options: BeamRetriever())
    doc = replace(make_tree(_files(3)), source=TreeSource.DOCUMENT)
    assert select_strategy(doc, "block") == "document"


def test_other_registered_strategies_dispatch_by_name(
    db: Database, make_tree: TreeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(strategy, "_registry", dict(strategy._registry))
    seen: list[QueryOptions] = []

    def factory(options: QueryOptions) -> BeamRetriever:
        seen.append(options)
        return BeamRetriever()

    register("flat", factory)
    info = make_tree(_files(3))
    nav = scripted(lambda r: (["f002.py"], True))
    result = run_query(db.store, info, "f002", QueryOptions(strategy="flat", k=1), nav)
    assert seen[0].strategy == "flat" and [f.path for f in result.files] == ["f002.py"]
    assert "flat" in strategy.strategies()


@pytest.mark.parametrize(
    ("question", "options", "message"),
    [
        ("   ", QueryOptions(), "question is empty"),
        ("q", QueryOptions(k=0), "k must be at least 1"),
        ("q", QueryOptions(beam_width=0), "beam width"),
        ("q", QueryOptions(strategy="nope"), "unknown strategy 'nope'"),
        ("q", QueryOptions(ranker="magic"), "unknown ranker"),
        ("q", QueryOptions(block_tokens=0), "block token budget"),
    ],
)
def test_bad_input_is_a_clear_error(
    db: Database, make_tree: TreeFactory, question: str, options: QueryOptions, message: str
) -> None:
    info = make_tree(_files(3))
    with pytest.raises(ConfigError, match=message):
        run_query(db.store, info, question, options, scripted(lambda r: ([], True)))


def test_default_strategy_is_flat_without_an_llm_once_registered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from treeseek.llm.lexical import LexicalNavigator

    monkeypatch.setattr(strategy, "_registry", dict(strategy._registry))
    strategy._registry.pop("flat", None)
    lexical = LexicalNavigator()
    llm = scripted(lambda r: ([], True))
    assert strategy.default_strategy(lexical) == "auto"
    register("flat", lambda options: BeamRetriever())
    assert strategy.default_strategy(lexical) == "flat"
    assert strategy.default_strategy(llm) == "auto"  # with an LLM: tree search


def test_a_ranker_the_strategy_does_not_use_is_noted(db: Database, make_tree: TreeFactory) -> None:
    """``--ranker`` orders Block search's blocks: Beam (and flat, traverse, rerank) do not use
    it, and the trace's notes say so instead of dropping it silently."""
    nav = scripted(lambda r: (["f001.py"], True))
    small, large = make_tree(_files(10)), make_tree(_files(60))
    beam = run_query(db.store, small, "f001", QueryOptions(k=1, ranker="bm25"), nav)
    assert beam.strategy == "beam"
    assert beam.trace.params["notes"] == [
        "--ranker bm25 orders Block search's blocks; the beam strategy does not use it"
    ]
    block = run_query(db.store, large, "f001", QueryOptions(k=1, ranker="bm25"), nav)
    assert block.strategy == "block" and "notes" not in block.trace.params
    plain = run_query(db.store, small, "f001", QueryOptions(k=1), nav)
    assert "notes" not in plain.trace.params
