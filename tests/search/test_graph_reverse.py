"""Importers and subclasses without the whole graph (:mod:`treeseek.search.graph.reverse`,
:meth:`TreeLookup.importers <treeseek.search.graph.lookup.TreeLookup.importers>`,
:meth:`~treeseek.search.graph.lookup.TreeLookup.subclasses`) answer exactly as the whole graph
does: real trees (this package's source, the ``click`` package, pytest's own repository from
its mirror when this machine has it, and a tree of aliases, re-exports, star and relative
imports and unnamed bases in several languages) in a real SQLite file and a real PostgreSQL
database, every file and every class asked both ways. Leaving any one kind of row out of the
candidates changes an answer here."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tarfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from typer.testing import CliRunner

import treeseek
from treeseek.cli.app import load_commands
from treeseek.code.graph import CodeGraph
from treeseek.database import Database
from treeseek.search.graph import reverse
from treeseek.search.graph.lookup import TreeLookup
from treeseek.search.graph.tree_graph import tree_code_graph

#: every way the resolvers reach a file or a class without naming it plainly: aliases of
#: aliases, re-exports in ``__init__.py``, star imports, relative imports whose package is the
#: importer's (``from .. import *``, ``from ..missing import *``), a module alias walked
#: (``rb.Base.Missing`` stops at ``Base``), a base through a function's typed parameter and
#: through ``self``, JavaScript barrels re-exporting under another name and ``'..'``
#: specifiers, Rust ``use ... as``, Java packages
REEXPORTS = {
    "rx/__init__.py": """\
        from .base import Base as PublicBase
        from .base import *
        from . import util
        from .shapes import Shape
        """,
    "rx/base.py": """\
        class Base:
            class Inner:
                pass


        class Other(Base):
            pass


        def helper():
            return 1
        """,
    "rx/shapes.py": """\
        from rx import PublicBase as PB
        import rx.base as rb


        class Shape(PB):
            pass


        class Circle(rb.Base):
            pass


        class Square(rb.Base.Inner):
            pass


        class Broken(rb.Base.Missing):
            pass
        """,
    "rx/util.py": "from .base import helper as assist\n",
    "rx/sub/__init__.py": "from .. import *\nfrom ..base import Base as B2\n",
    "rx/sub/deep.py": """\
        from . import *
        from .. import util
        from ..missing import *
        from rx.sub import B2 as Again
        from rx.base import Base


        class Deep(Again):
            pass


        def factory(p: Base):
            class Local(p.Missing):
                pass

            return Local


        class Holder(Base):
            class Made(self.Nope):  # what the resolver makes of it: the enclosing class
                pass
        """,
    "rx/sub/leaf.py": """\
        from rx.util import assist as again
        from rx.sub.deep import Holder as H


        class Grand(H):
            pass
        """,
    "web/base.js": "export class Widget {}\n",
    "web/barrel.js": """\
        export { Widget as Gadget } from './base.js';
        export * from './more.js';
        """,
    "web/more.js": "export class Extra {}\n",
    "web/app.js": """\
        import { Gadget } from './barrel.js';
        import * as ns from './barrel.js';
        export class Button extends Gadget {}
        export class Fancy extends ns.Extra {}
        """,
    "web/index.js": "export const x = 1;\n",
    "web/sub/use.js": "import { x } from '..';\nexport function f() { return x; }\n",
    "rs/src/lib.rs": "mod shapes;\npub trait Draw {}\n",
    "rs/src/shapes.rs": """\
        use crate::Draw as Paint;
        use super::*;
        pub struct Dot;
        impl Paint for Dot {}
        """,
    "java/com/ex/Animal.java": "package com.ex;\npublic class Animal {}\n",
    "java/com/ex/Dog.java": """\
        package com.ex;
        import com.ex.Animal;
        public class Dog extends Animal {}
        """,
}

#: a real repository: pytest's, from this machine's mirror (skipped where there is none)
MIRROR = Path("/work/.mirror/pytest-dev+pytest/repo")


def _source(tmp_path: Path, which: str) -> Path:
    root = tmp_path / which
    if which in ("treeseek", "click"):  # the package under the tree root, as it is imported
        package = Path((treeseek if which == "treeseek" else click).__file__).parent
        shutil.copytree(package, root / which, ignore=shutil.ignore_patterns("__pycache__"))
    elif which == "pytest":
        if not MIRROR.is_dir():
            pytest.skip(f"no mirror at {MIRROR}")
        archive = subprocess.run(
            ["git", f"--git-dir={MIRROR}", "archive", "HEAD"], check=True, capture_output=True
        ).stdout
        root.mkdir()
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(root, filter="data")
    else:
        for rel, text in REEXPORTS.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(textwrap.dedent(text))
    return root


@pytest.fixture(params=["treeseek", "click", "pytest", "reexports"])
def indexed(
    request: pytest.FixtureRequest, tmp_path: Path, db_location: Callable[[str], Any]
) -> Iterator[tuple[Database, CodeGraph]]:
    with treeseek.open(db_location("graph")) as db:
        db.index(_source(tmp_path, str(request.param)), name="t")
        yield db, tree_code_graph(db.store, "t").graph


def _classes(graph: CodeGraph) -> list[str]:
    """Every node that is a base or has one, and a spread of the other symbols."""
    bases = set(graph.into["inherits"]) | set(graph.out["inherits"])
    others = sorted(graph.symbols - bases)
    return sorted(bases) + others[:: max(1, len(others) // 60)]


def test_importers_are_those_of_the_whole_graph(indexed: tuple[Database, CodeGraph]) -> None:
    db, graph = indexed
    files = sorted(graph.files)
    with db.store.snapshot():
        shared = TreeLookup(db.store, "t")  # its tables fill as it goes: the same answers
        got = {f: shared.importers(f) for f in files}
    assert got == {f: graph.importers(f) for f in files}
    assert sum(bool(found) for found in got.values()) >= 3
    for f in files[:: max(1, len(files) // 15)]:  # each in a lookup of its own
        with db.store.snapshot():
            assert TreeLookup(db.store, "t").importers(f) == got[f], f


def test_subclasses_are_those_of_the_whole_graph(indexed: tuple[Database, CodeGraph]) -> None:
    db, graph = indexed
    asked = _classes(graph) + sorted(graph.files)[:5]
    with db.store.snapshot():
        shared = TreeLookup(db.store, "t")
        got = {n: (shared.subclasses(n), shared.subclasses(n, transitive=True)) for n in asked}
    assert got == {n: (graph.subclasses(n), graph.subclasses(n, transitive=True)) for n in asked}
    assert sum(bool(direct) for direct, _ in got.values()) >= 3
    for n in asked[:: max(1, len(asked) // 15)]:
        with db.store.snapshot():
            lookup = TreeLookup(db.store, "t")
            assert (lookup.subclasses(n, transitive=True), lookup.subclasses(n)) == (
                got[n][1],
                got[n][0],
            ), n


def test_the_database_answers_reverse_relations_from_the_name(
    indexed: tuple[Database, CodeGraph],
) -> None:
    db, graph = indexed
    classes = sorted(c for c in graph.into["inherits"] if "::" in c)[:5]
    for name in classes:
        node, found = db.code_relation("t", "subclasses", name, transitive=True)
        assert (node, found) == (name, graph.subclasses(name, transitive=True))
    for path in sorted(graph.into["imports"])[:5]:
        assert db.code_relation("t", "importers", path) == (path, graph.importers(path))


def test_the_tricky_rows_are_answers_here(tmp_path: Path) -> None:
    """The reexports tree exercises every rule: each of these answers is reached only
    through the row form named beside it."""
    with treeseek.open(tmp_path / "t.db") as db:
        db.index(_source(tmp_path, "reexports"), name="t")
        graph = tree_code_graph(db.store, "t").graph
    assert set(graph.subclasses("rx/base.py::Base")) >= {
        "rx/shapes.py::Shape",  # an alias of an alias re-exported by the package
        "rx/sub/deep.py::Deep",  # re-exported again under another name
        "rx/shapes.py::Broken",  # a walk that stops at the class
        "rx/sub/deep.py::factory.Local",  # a function's parameter `p: Base`
    }
    assert graph.subclasses("rx/sub/deep.py::Holder") == [
        "rx/sub/deep.py::Holder.Made",  # `self.Nope`: the enclosing class
        "rx/sub/leaf.py::Grand",
    ]
    assert graph.subclasses("web/base.js::Widget") == ["web/app.js::Button"]  # a barrel's alias
    assert graph.subclasses("rs/src/lib.rs::Draw") == ["rs/src/shapes.rs::Dot"]  # `use as`
    assert "rx/sub/deep.py" in graph.importers("rx/__init__.py")  # `from ..missing import *`
    assert graph.importers("web/index.js") == ["web/sub/use.js"]  # `from '..'`


@pytest.mark.parametrize(
    "blind",
    ["aliases", "self", "parameters", "relative"],
)
def test_a_candidate_set_missing_a_kind_of_row_changes_an_answer(
    blind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The comparison above would see a superset that is not one: with any one rule of
    :mod:`~treeseek.search.graph.reverse` switched off, some answer on the reexports tree
    differs from the whole graph's."""
    with treeseek.open(tmp_path / "t.db") as db:
        db.index(_source(tmp_path, "reexports"), name="t")
        graph = tree_code_graph(db.store, "t").graph
        if blind == "aliases":
            monkeypatch.setattr(reverse.ReverseIndex, "aliases", lambda self, names: set(names))
        elif blind == "self":
            monkeypatch.setattr(reverse, "_SELF_HEADS", frozenset())
        elif blind == "parameters":
            monkeypatch.setattr(reverse, "_under_a_function", lambda scope, kinds: False)
        else:
            monkeypatch.setattr(reverse, "_relative_base_named", lambda importer, keys: False)
        with db.store.snapshot():
            lookup = TreeLookup(db.store, "t")
            importers = {f: lookup.importers(f) for f in sorted(graph.files)}
            subclasses = {c: lookup.subclasses(c) for c in _classes(graph)}
    assert importers != {f: graph.importers(f) for f in importers} or subclasses != {
        c: graph.subclasses(c) for c in subclasses
    }


def test_a_reverse_lookup_reads_a_few_files_of_a_large_tree(tmp_path: Path) -> None:
    with treeseek.open(tmp_path / "t.db") as db:
        db.index(_source(tmp_path, "treeseek"), name="t")
        graph = tree_code_graph(db.store, "t").graph
        with db.store.snapshot():
            lookup = TreeLookup(db.store, "t")
            found = lookup.importers("treeseek/search/graph/reverse.py")
            subclasses = lookup.subclasses("treeseek/errors.py::TreeseekError", transitive=True)
            read = lookup.layers.read_files()
    assert found == graph.importers("treeseek/search/graph/reverse.py") != []
    assert subclasses == graph.subclasses("treeseek/errors.py::TreeseekError", transitive=True)
    assert len(subclasses) > 5
    assert read < len(graph.files) / 3


def test_the_command_answers_reverse_relations_as_the_whole_graph(tmp_path: Path) -> None:
    with treeseek.open(tmp_path / "t.db") as db:
        db.index(_source(tmp_path, "reexports"), name="t")
        graph = tree_code_graph(db.store, "t").graph
    app = load_commands()
    runner = CliRunner()
    asked = [
        ("importers", "rx.base", [], graph.importers("rx/base.py")),
        ("importers", "web/index.js", [], graph.importers("web/index.js")),
        ("subclasses", "Base", ["--transitive"], graph.subclasses("rx/base.py::Base", True)),
        ("subclasses", "rx.sub.deep.Holder", [], graph.subclasses("rx/sub/deep.py::Holder")),
    ]
    for relation, name, options, expected in asked:
        args = ["graph", "t", relation, name, *options, "--db", str(tmp_path / "t.db")]
        result = runner.invoke(app, [*args, "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)[relation] == expected != []
        text = runner.invoke(app, args)
        assert text.stdout.splitlines() == expected


def test_a_built_graph_answers_the_reverse_relations_without_a_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that has this version's whole graph (a server answered `neighbours`) reads
    importers and subclasses from it; a fresh process's lookup gives the same answers."""
    root = _source(tmp_path, "reexports")
    with treeseek.open(tmp_path / "g.db") as db:
        db.index(root, name="t")
        graph = db.code_graph("t").graph  # built and kept for this version
        asked = [(r, n) for n in sorted(graph.into["inherits"])[:5] for r in ("subclasses",)]
        asked += [("importers", p) for p in sorted(graph.into["imports"])[:5]]
        assert asked
        with monkeypatch.context() as patched:

            def no_lookup(*args: Any, **kwargs: Any) -> None:
                raise AssertionError("the built graph should have answered")

            patched.setattr(TreeLookup, "__init__", no_lookup)
            from_graph = [db.code_relation("t", r, n, transitive=True) for r, n in asked]
    with treeseek.open(tmp_path / "g.db") as fresh:
        from_lookup = [fresh.code_relation("t", r, n, transitive=True) for r, n in asked]
    assert from_graph == from_lookup
