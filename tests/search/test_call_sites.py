"""Call sites of a symbol, resolved at query time: index a real directory into a real SQLite
database and ask for callers/callees through the API and ``treeseek graph``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

import treeseek
from treeseek.cli.app import load_commands
from treeseek.errors import AmbiguousSymbol, NodeNotFound
from treeseek.search.graph.call_sites import CallSite, callees, callers
from treeseek.search.graph.tree_graph import tree_code_graph

FILES = {
    "web/__init__.py": "from web.app import App as App\nfrom web.blueprint import Blueprint\n",
    "web/app.py": """\
        from web.blueprint import Blueprint

        class Scaffold:
            def register(self, bp):
                return bp

        class App(Scaffold):
            router: "Router"

            def setup(self):
                self.register(Blueprint("x"))

        class Router:
            def register(self, rule):
                return rule

        def make_app() -> App:
            return App()

        def build():
            app = App()
            return app
        """,
    "web/blueprint.py": """\
        class Blueprint:
            def __init__(self, name):
                self.name = name

            def register(self, child):
                return child
        """,
    "web/main.py": """\
        import web
        from web.app import App, build, make_app

        app = web.App()
        app.register(web.Blueprint("top"))

        def factory():
            made = make_app()
            made.register(None)
            built = build()
            built.register(None)
            with App() as managed:
                managed.register(None)
            app.router.register("/")

        def nested():
            parent = web.Blueprint("parent")
            parent.register(web.Blueprint("child"))

        def typed(target: App, other):
            target.register(None)
            other.register(None)
            App().register(None)
            helper(None)
        """,
    "tests/conftest.py": """\
        import pytest
        from web.app import App

        @pytest.fixture
        def app():
            app = App()
            return app
        """,
    "tests/test_web.py": """\
        def test_register(app):
            app.register(None)

        def test_unknown(client):
            client.register(None)
        """,
}
APP = "web/app.py::Scaffold.register"
BLUEPRINT = "web/blueprint.py::Blueprint.register"


@pytest.fixture
def indexed(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    db_path = tmp_path / "t.db"
    with treeseek.open(db_path) as db:
        db.index(root, name="web")
    return db_path


def _sites(db_path: Path, symbol: str, relation: str = "callers") -> list[CallSite]:
    with treeseek.open(db_path) as db:
        loaded = tree_code_graph(db.store, "web")
        find = callers if relation == "callers" else callees
        return find(loaded, db.store, "web", symbol)


def _by_caller(sites: list[CallSite]) -> dict[tuple[str, str], tuple[str, str]]:
    return {(s.caller, s.callee): (s.status, s.via) for s in sites}


def test_callers_resolve_receivers_by_inference(indexed: Path) -> None:
    found = _by_caller(_sites(indexed, APP))
    assert found == {
        ("web/app.py::App.setup", "self.register"): ("resolved", "index"),
        ("web/main.py", "app.register"): ("resolved", "module"),
        ("web/main.py::factory", "made.register"): ("resolved", "local"),
        ("web/main.py::factory", "built.register"): ("resolved", "local"),
        ("web/main.py::factory", "managed.register"): ("resolved", "local"),
        ("web/main.py::typed", "target.register"): ("resolved", "index"),
        ("web/main.py::typed", "App().register"): ("resolved", "index"),
        ("tests/test_web.py::test_register", "app.register"): ("resolved", "fixture"),
        # receivers of unknown type: listed as candidates, never dropped
        ("web/main.py::typed", "other.register"): ("candidate", "name"),
        ("tests/test_web.py::test_unknown", "client.register"): ("candidate", "name"),
    }


def test_same_name_on_other_classes_goes_to_them(indexed: Path) -> None:
    found = _by_caller(_sites(indexed, BLUEPRINT))
    assert found[("web/main.py::nested", "parent.register")] == ("resolved", "local")
    assert ("web/main.py::factory", "made.register") not in found  # an App, not a Blueprint
    router = _by_caller(_sites(indexed, "web/app.py::Router.register"))
    # app.router through the class-level annotation `router: "Router"`
    assert router[("web/main.py::factory", "app.router.register")] == ("resolved", "attribute")
    assert ("web/main.py", "app.register") not in router


def test_callees_say_what_stays_unresolved(indexed: Path) -> None:
    found = _by_caller(_sites(indexed, "web/main.py::typed", "callees"))
    assert found[("web/main.py::typed", "target.register")] == ("resolved", "index")
    assert found[("web/main.py::typed", "other.register")] == ("unresolved", "name")
    assert found[("web/main.py::typed", "helper")] == ("unresolved", "name")
    made = {s.callee: s.target for s in _sites(indexed, "web/main.py::factory", "callees")}
    assert made["made.register"] == APP and made["make_app"] == "web/app.py::make_app"


def test_short_names_resolve_or_list_candidates(indexed: Path) -> None:
    with treeseek.open(indexed) as db:
        graph = tree_code_graph(db.store, "web").graph
    assert graph.find("make_app") == "web/app.py::make_app"
    assert graph.find("Router.register") == "web/app.py::Router.register"
    assert graph.find("blueprint.py::register") == BLUEPRINT
    assert graph.find("web.app.App") == "web/app.py::App"  # the exact forms still work
    assert graph.find("main.py") == "web/main.py"
    with pytest.raises(AmbiguousSymbol) as ambiguous:
        graph.find("register")
    assert ambiguous.value.candidates == [
        "web/app.py::Router.register",
        "web/app.py::Scaffold.register",
        BLUEPRINT,
    ]
    with pytest.raises(NodeNotFound):
        graph.find("unregister")


def test_graph_command_lists_call_sites(indexed: Path) -> None:
    app = load_commands()
    runner = CliRunner()
    db = ["--db", str(indexed)]
    result = runner.invoke(app, ["graph", "web", "callers", "Scaffold.register", "--json", *db])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["node"] == APP
    assert "tests/test_web.py::test_register" in payload["callers"]  # resolved callers only
    assert "tests/test_web.py::test_unknown" not in payload["callers"]
    statuses = {(r["caller"], r["status"]) for r in payload["sites"]}
    assert ("tests/test_web.py::test_unknown", "candidate") in statuses
    text = runner.invoke(app, ["graph", "web", "callers", "Scaffold.register", *db])
    first = text.stdout.splitlines()[0].split()
    assert first[:3] == ["resolved", "tests/test_web.py::test_register", "app.register"]
    assert "(tests/test_web.py:2, fixture)" in text.stdout
    ambiguous = runner.invoke(app, ["graph", "web", "callers", "register", *db])
    assert ambiguous.exit_code == 1
    assert "matches 3 symbols" in ambiguous.output and BLUEPRINT in ambiguous.output
