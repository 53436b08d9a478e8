"""The traverse operator: safety (cycles, depth cap, budget, adversarial policies) and the
code-graph policy on a real parsed tree."""

from __future__ import annotations

import itertools
import math
import textwrap
from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import Any

import pytest

from treeseek.code.graph import CodeGraph
from treeseek.code.parse import index_file
from treeseek.errors import ConfigError
from treeseek.search.graph.traverse import (
    Scored,
    SearchHit,
    WalkPolicy,
    WalkState,
    WalkStep,
    code_graph_policy,
    files_from_hits,
    traverse,
)


class DictPolicy(WalkPolicy):
    """Walks a plain ``{node: [neighbours]}`` dict; score decays with depth."""

    def __init__(self, seeds: list[str]) -> None:
        self.seeds = seeds
        self.expanded: list[str] = []

    def seed(self, query: str, store: Any, state: WalkState) -> Iterable[Any]:
        return list(self.seeds)

    def score(self, node: Any, step: WalkStep, store: Any, state: WalkState) -> float:
        return 1.0 / (1 + step.depth)

    def expand(self, node: Any, store: Any, state: WalkState) -> Iterable[Any]:
        self.expanded.append(node)
        return store.get(node, [])

    def node_id(self, node: Any) -> Hashable:
        return str(node)

    def to_hit(self, node: Any, scored: Scored, store: Any, state: WalkState) -> SearchHit | None:
        return SearchHit(node_id=str(node), path=str(node), score=scored.score)


def test_cycles_commit_each_node_once() -> None:
    graph = {"a": ["b"], "b": ["c", "a"], "c": ["a", "b", "c"]}
    policy = DictPolicy(["a"])
    hits = traverse("q", graph, policy=policy, max_depth=10, node_budget=100, k=10)
    assert sorted(h.node_id for h in hits) == ["a", "b", "c"]
    assert sorted(policy.expanded) == ["a", "b", "c"]
    depth = {h.node_id: h.metadata["walk_depth"] for h in hits}
    assert depth == {"a": 0, "b": 1, "c": 2}
    assert {h.metadata["seed"] for h in hits} == {"a"}


def test_depth_cap_on_a_long_chain() -> None:
    chain = {f"n{i}": [f"n{i + 1}"] for i in range(100)}
    hits = traverse("q", chain, policy=DictPolicy(["n0"]), max_depth=2, node_budget=64, k=100)
    assert [h.node_id for h in hits] == ["n0", "n1", "n2"]
    only_seed = traverse("q", chain, policy=DictPolicy(["n0"]), max_depth=0, k=100)
    assert [h.node_id for h in only_seed] == ["n0"]


def test_node_budget_on_a_wide_star_and_k() -> None:
    star = {"hub": [f"leaf{i}" for i in range(10_000)]}
    policy = DictPolicy(["hub"])
    hits = traverse("q", star, policy=policy, max_depth=3, node_budget=5, k=100)
    assert len(hits) == 5 and hits[0].node_id == "hub"
    assert len(traverse("q", star, policy=DictPolicy(["hub"]), node_budget=50, k=3)) == 3
    assert traverse("q", star, policy=DictPolicy(["hub"]), node_budget=0) == []


def test_provenance_names_the_seed_each_hit_came_from() -> None:
    graph = {"s1": ["x"], "s2": ["y"], "x": [], "y": []}
    hits = traverse("q", graph, policy=DictPolicy(["s1", "s2"]), k=10)
    seeds = {h.node_id: (h.metadata["seed"], h.metadata["walk_depth"]) for h in hits}
    assert seeds == {"s1": ("s1", 0), "s2": ("s2", 0), "x": ("s1", 1), "y": ("s2", 1)}


class Adversary(WalkPolicy):
    """Never stops, expands forever into fresh nodes, scores NaN, and selects nodes it invents
    with depth 0 (trying to reset the depth cap) from an endless iterator."""

    def __init__(self) -> None:
        self.counter = itertools.count()

    def seed(self, query: str, store: Any, state: WalkState) -> Iterable[Any]:
        return (f"seed{next(self.counter)}" for _ in itertools.count())  # endless seeds

    def score(self, node: Any, step: WalkStep, store: Any, state: WalkState) -> float:
        return math.nan

    def select(self, scored: Sequence[Scored], state: WalkState) -> Iterator[Scored]:  # type: ignore[override]
        for item in scored:
            yield Scored(item.node, item.node_id, 99.0, WalkStep(depth=0, seed="forged"))
            yield Scored("invented", "invented", 1.0, WalkStep(depth=0, seed="forged"))
        yield from (Scored(f"x{i}", f"x{i}", 1.0, WalkStep(0, "forged")) for i in itertools.count())

    def expand(self, node: Any, store: Any, state: WalkState) -> Iterable[Any]:
        while True:
            yield f"fresh{next(self.counter)}"

    def node_id(self, node: Any) -> Hashable:
        return str(node)

    def stop(self, state: WalkState) -> bool:
        return False

    def to_hit(self, node: Any, scored: Scored, store: Any, state: WalkState) -> SearchHit | None:
        return SearchHit(node_id=str(node), path=str(node), score=scored.score)


def test_adversarial_policy_still_terminates_within_budget_and_depth() -> None:
    hits = traverse("q", None, policy=Adversary(), max_depth=2, node_budget=40, k=1000)
    assert len(hits) == 40
    assert all(h.metadata["walk_depth"] <= 2 for h in hits)
    assert not any(h.node_id == "invented" or h.node_id.startswith("x") for h in hits)
    assert all(h.metadata["seed"] != "forged" for h in hits)
    assert all(h.score == -math.inf for h in hits)  # NaN scores sink, never crash


def test_stop_is_the_policy_sufficiency_check() -> None:
    class StopAfterTwo(DictPolicy):
        def stop(self, state: WalkState) -> bool:
            return len(state.results) >= 2

    chain = {f"n{i}": [f"n{i + 1}"] for i in range(10)}
    hits = traverse("q", chain, policy=StopAfterTwo(["n0"]), max_depth=9, k=10)
    assert [h.node_id for h in hits] == ["n0", "n1"]


def test_bad_bounds_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        traverse("q", {}, policy=DictPolicy([]), max_depth=-1)
    with pytest.raises(ConfigError):
        traverse("q", {}, policy=DictPolicy([]), node_budget=-5)


TREE = {
    "app/views.py": """\
        from app.services import checkout

        def cart_view(request):
            return checkout(request.user)
        """,
    "app/services.py": """\
        from app.payment import charge_card

        def checkout(user):
            return charge_card(user.card)
        """,
    "app/payment.py": """\
        class Gateway:
            def send(self):
                return 1

        class StripeGateway(Gateway):
            pass

        def charge_card(card):
            return StripeGateway().send()
        """,
    "app/unrelated.py": "def noise():\n    return 0\n",
}


def _graph() -> CodeGraph:
    return CodeGraph.build({p: index_file(p, textwrap.dedent(t).encode()) for p, t in TREE.items()})


def test_code_graph_policy_walks_calls_and_imports_from_a_seed() -> None:
    graph = _graph()
    policy = code_graph_policy([("app/views.py::cart_view", 5.0)])
    hits = traverse("payment card charge", graph, policy=policy, max_depth=3, k=50)
    by_id = {h.node_id: h for h in hits}
    assert by_id["app/views.py::cart_view"].metadata == {
        "via": "seed",
        "walk_depth": 0,
        "seed": "app/views.py::cart_view",
    }
    assert by_id["app/services.py::checkout"].metadata["walk_depth"] == 1
    assert by_id["app/payment.py::charge_card"].metadata["walk_depth"] == 2
    # lexical overlap with the query lifts charge_card above its depth-2 peers
    assert by_id["app/payment.py::charge_card"].score > by_id["app/services.py"].score
    files = [path for path, _ in files_from_hits(hits)]
    assert files[0] == "app/views.py"
    assert {"app/services.py", "app/payment.py"} <= set(files)
    assert "app/unrelated.py" not in files


def test_code_graph_policy_seeds_by_module_name_and_beam() -> None:
    graph = _graph()
    policy = code_graph_policy([("app.payment", 1.0), ("no.such.module", 9.0)], beam=2)
    hits = traverse("gateway", graph, policy=policy, max_depth=2, node_budget=10, k=10)
    assert hits and all(h.metadata["seed"] == "app/payment.py" for h in hits)
    assert len(hits) <= 1 + 2 + 2  # beam of 2 per step after the seed
    with pytest.raises(ConfigError):
        traverse("x", {"not": "a graph"}, policy=code_graph_policy([("a", 1.0)]))
