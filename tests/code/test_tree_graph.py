"""The code graph of a stored tree: index a real directory into a real SQLite database, read
the layers back, resolve, and query them through the API and the ``treeseek graph`` command."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

import treeseek
from treeseek.cli.app import load_commands
from treeseek.code.parse import index_file
from treeseek.code.resolve import resolve_tree
from treeseek.search.graph.tree_graph import load_tree_indexes, tree_code_graph

FILES = {
    "shop/__init__.py": "",
    "shop/models.py": """\
        class Base:
            def save(self):
                return 1

        class Order(Base):
            def total(self):
                return self.save()
        """,
    "shop/views.py": """\
        from shop.models import Order

        def order_view(request):
            return Order().total()
        """,
    "shop/urls.py": """\
        from django.urls import path
        from shop import views

        urlpatterns = [path("orders/", views.order_view, name="orders")]
        """,
    "shop/copy.py": """\
        from shop.models import Order

        def order_view(request):
            return Order().total()
        """,
    "README.md": "# shop\n",
}


@pytest.fixture
def indexed(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    db_path = tmp_path / "t.db"
    with treeseek.open(db_path) as db:
        db.index(root, name="shop")
    return db_path


def test_stored_layers_resolve_like_fresh_ones(indexed: Path) -> None:
    with treeseek.open(indexed) as db:
        stored = load_tree_indexes(db.store, "shop")
        assert set(stored) == set(FILES)  # README.md and the empty __init__.py included
        assert stored["shop/__init__.py"].language == "python"
        fresh = {p: index_file(p, textwrap.dedent(FILES[p]).encode()) for p in stored}
        key = lambda e: (e.src_path, e.src, e.dst_ref, e.line)  # noqa: E731
        assert sorted(resolve_tree(stored).edges, key=key) == sorted(
            resolve_tree(fresh).edges, key=key
        )
        loaded = tree_code_graph(db.store, "shop")
    g = loaded.graph
    assert g.callers("shop/models.py::Order.total") == [
        "shop/copy.py::order_view",
        "shop/views.py::order_view",
    ]
    assert g.callees("shop/models.py::Order.total") == ["shop/models.py::Base.save"]
    assert g.importers("shop.models") == ["shop/copy.py", "shop/views.py"]
    [entry] = loaded.resolved.entrypoints
    assert (entry.handler_path, entry.handler_symbol) == ("shop/views.py", "order_view")


def test_graph_command(indexed: Path) -> None:
    app = load_commands()
    runner = CliRunner()
    db = ["--db", str(indexed)]
    result = runner.invoke(app, ["graph", "shop", "callers", "shop.models.Order.total", *db])
    assert result.exit_code == 0, result.output
    assert [line.split()[:2] for line in result.stdout.splitlines()] == [
        ["resolved", "shop/copy.py::order_view"],
        ["resolved", "shop/views.py::order_view"],
    ]
    result = runner.invoke(
        app, ["graph", "shop", "subclasses", "shop/models.py::Base", "--json", *db]
    )
    assert json.loads(result.stdout)["subclasses"] == ["shop/models.py::Order"]
    result = runner.invoke(
        app, ["graph", "shop", "neighbours", "shop/views.py", "--hops", "2", "--json", *db]
    )
    near = json.loads(result.stdout)["neighbours"]
    assert near["shop/views.py::order_view"] == 1 and near["shop/models.py::Order.total"] == 2
    result = runner.invoke(app, ["graph", "shop", "entrypoints", "--json", *db])
    [row] = json.loads(result.stdout)["entrypoints"]
    assert row["route_or_command"] == "orders/" and row["handler_symbol"] == "order_view"
    result = runner.invoke(
        app, ["graph", "shop", "walk", "shop/views.py", "--hops", "2", "--json", *db]
    )
    files = [f[0] for f in json.loads(result.stdout)["files"]]
    assert files[0] == "shop/views.py" and "shop/models.py" in files


def test_graph_command_errors(indexed: Path) -> None:
    app = load_commands()
    runner = CliRunner()
    db = ["--db", str(indexed)]
    missing = runner.invoke(app, ["graph", "shop", "callers", "shop.models.Nope", *db])
    assert missing.exit_code == 1 and "no file or symbol" in missing.output
    bad = runner.invoke(app, ["graph", "shop", "ancestors", "x", *db])
    assert bad.exit_code == 2
    no_name = runner.invoke(app, ["graph", "shop", "callers", *db])
    assert no_name.exit_code == 2
    no_tree = runner.invoke(app, ["graph", "nope", "entrypoints", *db])
    assert no_tree.exit_code == 1
