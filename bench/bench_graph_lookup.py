"""Benchmark ``treeseek graph callers|callees|importers|subclasses``: the name-first lookup
against the whole graph.

For each ``RELATION:NAME`` asked, in one process, as medians over ``--runs``: the lookup
(:class:`~treeseek.search.graph.lookup.TreeLookup`, what the command does: find the name,
read and resolve only the files that may matter) and the whole-graph path it replaced
(build the tree's graph, find the name, the same call sites or related nodes), with the
ratio, how many files the lookup read, and whether the two answers (node and call sites or
nodes, or the same error) are identical. ``RELATION`` is ``callers``, ``callees``,
``importers``, ``subclasses`` or ``all-subclasses`` (``--transitive``). Prints one JSON line
per name.

    python bench/bench_graph_lookup.py DB --tree django \\
        --ask callers:QuerySet.filter --ask callees:QuerySet.filter \\
        --ask importers:django/db/models/query.py --ask all-subclasses:Field \\
        [--runs 3] [--whole-runs 1]

The whole graph of a 50,000-file tree takes over a minute and gigabytes to build:
``--whole-runs 0`` skips it (no ratio, no comparison). Run it nice'd on a shared machine.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
from collections.abc import Callable
from typing import TypeVar

import treeseek
from treeseek.errors import NodeNotFound
from treeseek.search.graph import call_sites
from treeseek.search.graph.lookup import TreeLookup
from treeseek.search.graph.tree_graph import tree_code_graph
from treeseek.store.base import Store

Answer = tuple[str, object]


RELATIONS = ("callers", "callees", "importers", "subclasses", "all-subclasses")
Found = tuple[str, "list[call_sites.CallSite] | list[str]"]


def _answer(ask: Callable[[], Found]) -> Answer:
    try:
        return "found", ask()
    except NodeNotFound as exc:  # AmbiguousSymbol too: the candidates are in the message
        return type(exc).__name__, str(exc)


def _sites(answer: Answer) -> int | None:
    kind, found = answer
    return len(found[1]) if kind == "found" and isinstance(found, tuple) else None


def _lookup(store: Store, tree: str, relation: str, name: str) -> tuple[Answer, int]:
    read = 0

    def ask() -> Found:
        nonlocal read
        lookup = TreeLookup(store, tree)
        try:
            node = lookup.find(name)
            found: list[call_sites.CallSite] | list[str]
            if relation == "callers":
                found = lookup.callers(node)
            elif relation == "callees":
                found = lookup.callees(node)
            elif relation == "importers":
                found = lookup.importers(node)
            else:
                found = lookup.subclasses(node, transitive=relation == "all-subclasses")
        finally:
            read = lookup.layers.read_files()
        return node, found

    with store.snapshot():
        return _answer(ask), read


def _whole(store: Store, tree: str, relation: str, name: str) -> Answer:
    def ask() -> Found:
        loaded = tree_code_graph(store, tree)
        node = loaded.graph.find(name)
        if relation == "importers":
            return node, loaded.graph.importers(node)
        if relation in ("subclasses", "all-subclasses"):
            return node, loaded.graph.subclasses(node, transitive=relation == "all-subclasses")
        find = call_sites.callers if relation == "callers" else call_sites.callees
        return node, find(loaded, store, tree, node)

    with store.snapshot():
        return _answer(ask)


T = TypeVar("T")


def _timed(fn: Callable[[], T], runs: int) -> tuple[float, T]:
    walls: list[float] = []
    out: T | None = None
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        walls.append(time.perf_counter() - start)
    assert out is not None
    return statistics.median(walls), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("db")
    ap.add_argument("--tree", required=True)
    ap.add_argument("--ask", action="append", required=True, help="RELATION:NAME")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--whole-runs", type=int, default=1)
    args = ap.parse_args()
    with treeseek.open(args.db) as db:
        files = db.tree(args.tree).file_count
        for ask in args.ask:
            relation, _, name = ask.partition(":")
            if relation not in RELATIONS:
                ap.error(f"--ask RELATION:NAME with RELATION one of {RELATIONS}, not {ask!r}")
            wall, (answer, read) = _timed(
                functools.partial(_lookup, db.store, args.tree, relation, name), args.runs
            )
            row: dict[str, object] = {
                "ask": ask,
                "files": files,
                "lookup_s": round(wall, 3),
                "files_read": read,
                "answer": answer[0],
                "found": _sites(answer),
            }
            if args.whole_runs > 0:
                whole_wall, whole = _timed(
                    functools.partial(_whole, db.store, args.tree, relation, name), args.whole_runs
                )
                row.update(
                    whole_graph_s=round(whole_wall, 3),
                    ratio=round(whole_wall / wall, 1),
                    identical=whole == answer,
                )
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
