"""Callers, callees and names without the whole graph (:mod:`treeseek.search.graph.lookup`)
answer exactly as the whole graph does: real trees (this package's own source, the ``click``
package this project installs, a small tree in several languages) indexed into a real SQLite
file and a real PostgreSQL database, every name and a spread of symbols asked both ways."""

from __future__ import annotations

import shutil
import sqlite3
import textwrap
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import click
import pytest

import treeseek
from treeseek.code.graph import CodeGraph
from treeseek.database import Database
from treeseek.errors import AmbiguousSymbol, ConfigError, NodeNotFound
from treeseek.search.graph import call_sites
from treeseek.search.graph.lookup import TreeLookup
from treeseek.search.graph.tree_graph import TreeCodeGraph, tree_code_graph
from treeseek.store.migrations import MIGRATIONS, last_part_sql

#: a tree in several languages: each resolver is made when one of its files is resolved
MIXED = {
    "web/app.js": """\
        import { helper } from './util.js';
        export function start() { return helper(); }
        export class Server { listen() { return start(); } }
        """,
    "web/util.js": "export function helper() { return 1; }\n",
    "web/main.ts": """\
        import { Server, start } from './app.js';
        const s = new Server();
        s.listen();
        start();
        """,
    "go/pkg/run.go": """\
        package pkg

        func Run() int { return helper() }
        func helper() int { return 1 }
        """,
    "go/cmd/main.go": """\
        package main

        import "example.com/go/pkg"

        func main() { pkg.Run() }
        """,
    "c/util.h": "int helper(void);\n",
    "c/util.c": '#include "util.h"\nint helper(void) { return 1; }\n',
    "c/main.c": '#include "util.h"\nint start(void) { return helper(); }\n',
    "java/com/ex/Util.java": """\
        package com.ex;
        public class Util { public static int helper() { return 1; } }
        """,
    "java/com/ex/Main.java": """\
        package com.ex;
        public class Main { int start() { return Util.helper(); } }
        """,
    "rb/util.rb": "module Util\n  def self.helper\n    1\n  end\nend\n",
    "rb/main.rb": "require_relative 'util'\ndef start\n  Util.helper\nend\n",
    "rs/src/lib.rs": "mod util;\npub fn start() -> i32 { util::helper() }\n",
    "rs/src/util.rs": "pub fn helper() -> i32 { 1 }\n",
    "py/pkg/__init__.py": "from .core import helper as helper\nfrom .core import *\n",
    "py/pkg/core.py": """\
        class Base:
            def helper(self):
                return 1

        class Child(Base):
            def start(self):
                return self.helper()

        def helper():
            return Child().start()
        """,
    "py/main.py": """\
        from pkg import helper
        import pkg

        def start():
            helper()
            pkg.helper()
            return pkg.core.Child().helper()
        """,
}


def _source(tmp_path: Path, which: str) -> Path:
    root = tmp_path / which
    if which in ("treeseek", "click"):  # the package under the tree root, as it is imported
        package = Path((treeseek if which == "treeseek" else click).__file__).parent
        shutil.copytree(package, root / which, ignore=shutil.ignore_patterns("__pycache__"))
        # console scripts: one re-exported by a package __init__, one a module, one missing
        (root / "pyproject.toml").write_text(
            f'[project.scripts]\n{which} = "{which}.cli:main"\n'
            f'{which}-mod = "{which}.testing"\nnone = "nowhere:main"\n'
        )
    else:
        for rel, text in MIXED.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(textwrap.dedent(text))
    return root


@pytest.fixture(params=["treeseek", "click", "mixed"])
def indexed(
    request: pytest.FixtureRequest, tmp_path: Path, db_location: Callable[[str], Any]
) -> Iterator[tuple[Database, TreeCodeGraph]]:
    with treeseek.open(db_location("graph")) as db:
        db.index(_source(tmp_path, str(request.param)), name="t")
        yield db, tree_code_graph(db.store, "t")


def _found(find: Callable[[str], str], name: str) -> tuple[str, str]:
    try:
        return "node", find(name)
    except AmbiguousSymbol as exc:
        return "ambiguous", str(exc)
    except NodeNotFound as exc:
        return "not found", str(exc)
    except ConfigError as exc:  # nothing to look up (""): bad input, as both say
        return "bad input", str(exc)


def _names(graph: CodeGraph) -> list[str]:
    """Every symbol's name and qualified name, symbol ids, module.qname forms, paths, path
    suffixes, modules and names that are in no tree."""
    names = {"no_such_name", "x.no_such_name", "nowhere.py", "a/b::c", "::", ""}
    by_path = {v: k for k, v in graph.modules.items()}
    for sid in graph.symbols:
        path, _, qname = sid.partition("::")
        names.update({sid, qname, qname.rsplit(".", 1)[-1], f"{path.rsplit('/', 1)[-1]}::{qname}"})
        if path in by_path:
            names.add(f"{by_path[path]}.{qname}")
    for path in graph.files:
        names.update({path, path.rsplit("/", 1)[-1], path.split("/", 1)[-1]})
    names.update(graph.modules)
    return sorted(names)


def test_names_are_found_as_the_whole_graph_finds_them(
    indexed: tuple[Database, TreeCodeGraph],
) -> None:
    db, loaded = indexed
    with db.store.snapshot():
        lookup = TreeLookup(db.store, "t")
        names = _names(loaded.graph)
        assert len(names) > 40
        outcomes = {n: _found(lookup.find, n) for n in names}
    assert outcomes == {n: _found(loaded.graph.find, n) for n in names}
    assert {kind for kind, _ in outcomes.values()} == {
        "node",
        "ambiguous",
        "not found",
        "bad input",
    }


def test_callers_and_callees_are_those_of_the_whole_graph(
    indexed: tuple[Database, TreeCodeGraph],
) -> None:
    db, loaded = indexed
    symbols = sorted(loaded.graph.symbols)
    asked = symbols[:: max(1, len(symbols) // 150)] + sorted(loaded.graph.files)[:20]
    statuses: set[str] = set()
    for node in asked:
        with db.store.snapshot():
            lookup = TreeLookup(db.store, "t")
            got_callers = lookup.callers(node)
            got_callees = lookup.callees(node)
            read = lookup.layers.read_files()
        assert got_callers == call_sites.callers(loaded, db.store, "t", node), node
        assert got_callees == call_sites.callees(loaded, db.store, "t", node), node
        statuses.update(s.status for s in got_callers + got_callees)
        assert read <= len(loaded.indexes)
    assert {"resolved", "unresolved"} <= statuses


def test_imports_superclasses_and_members_are_those_of_the_whole_graph(
    indexed: tuple[Database, TreeCodeGraph],
) -> None:
    db, loaded = indexed
    graph = loaded.graph
    classes = sorted(graph.out["inherits"])
    asked = (
        sorted(graph.files) + classes + sorted(graph.symbols)[:: max(1, len(graph.symbols) // 100)]
    )
    seen = {"imports": 0, "superclasses": 0, "members": 0}
    for node in asked:
        with db.store.snapshot():
            lookup = TreeLookup(db.store, "t")
            got = {
                "imports": lookup.imports(node),
                "superclasses": lookup.superclasses(node),
                "members": lookup.members(node),
            }
            every_level = lookup.superclasses(node, transitive=True)
        assert got == {
            "imports": graph.imports(node),
            "superclasses": graph.superclasses(node),
            "members": graph.members(node),
        }, node
        assert every_level == graph.superclasses(node, transitive=True), node
        for relation, found in got.items():
            seen[relation] += bool(found)
    assert all(seen.values()), seen


def test_database_call_sites_find_the_name_first(
    indexed: tuple[Database, TreeCodeGraph],
) -> None:
    db, loaded = indexed
    counts: dict[str, int] = {}
    for sid in loaded.graph.symbols:
        name = sid.rsplit(".", 1)[-1].rsplit("::", 1)[-1]
        counts[name] = counts.get(name, 0) + 1
    unique = sorted(n for n, c in counts.items() if c == 1 and loaded.graph._named(n))[:10]
    assert unique
    for name in unique:
        node, sites = db.call_sites("t", "callers", name)
        assert node == loaded.graph.find(name)
        assert sites == call_sites.callers(loaded, db.store, "t", node)
        node, sites = db.call_sites("t", "callees", name)
        assert sites == call_sites.callees(loaded, db.store, "t", node)
    for name in unique[:3]:
        node, related = db.code_relation("t", "members", name)
        assert (node, related) == (loaded.graph.find(name), loaded.graph.members(node))
    shared = sorted(n for n, c in counts.items() if c > 1 and len(loaded.graph._named(n)) > 1)
    if shared:
        with pytest.raises(AmbiguousSymbol) as caught:
            db.call_sites("t", "callers", shared[0])
        assert caught.value.candidates == loaded.graph._named(shared[0])


def test_entrypoints_are_those_of_the_whole_graph(
    indexed: tuple[Database, TreeCodeGraph],
) -> None:
    db, loaded = indexed
    with db.store.snapshot():
        lookup = TreeLookup(db.store, "t")
        got = lookup.entrypoints()
        read = lookup.layers.read_files()
    assert got == loaded.resolved.entrypoints
    assert db.code_entrypoints("t") == loaded.resolved.entrypoints
    if len(lookup.layers) > 50:  # the packages: a few files read, not the tree
        assert read < len(lookup.layers) / 3
        scripts = {e.entrypoint.route_or_command: e for e in got if e.path == "pyproject.toml"}
        assert len(scripts) == 3 and scripts["none"].handler_path is None
    db.code_graph("t")  # built in this process: answered from it, the same
    assert db.code_entrypoints("t") == loaded.resolved.entrypoints


def test_a_lookup_reads_a_few_files_of_a_large_tree(tmp_path: Path) -> None:
    with treeseek.open(tmp_path / "t.db") as db:
        db.index(_source(tmp_path, "treeseek"), name="t")
        with db.store.snapshot():
            lookup = TreeLookup(db.store, "t")
            node = lookup.find("split_symbol_id")
            sites = lookup.callers(node)
            read = lookup.layers.read_files()
        assert node == "treeseek/code/model.py::split_symbol_id"
        assert len(sites) > 5
        assert read < len(lookup.layers) / 3


def test_the_name_lookups_use_their_indexes(tmp_path: Path) -> None:
    """On SQLite: the callee-name and last-name reads are index searches (migration 7), so
    they cost what the matches cost, not what the database holds."""
    with treeseek.open(tmp_path / "t.db") as db:
        db.index(_source(tmp_path, "mixed"), name="t")
    queries = {
        "code_edges_calls_by_name": "SELECT DISTINCT content_hash FROM code_edges"
        f" WHERE type = 'calls' AND {last_part_sql('dst_ref')} = ?",
        "code_symbols_by_last": "SELECT content_hash, qname FROM code_symbols"
        f" WHERE {last_part_sql('qname')} = ? ORDER BY content_hash, ord",
    }
    with closing(sqlite3.connect(tmp_path / "t.db")) as conn:
        assert conn.execute("SELECT max(version) FROM schema_version").fetchone() == (
            MIGRATIONS[-1].version,
        )
        for index, sql in queries.items():
            plan = " ".join(str(r[-1]) for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", ("x",)))
            assert f"USING INDEX {index}" in plan, plan
