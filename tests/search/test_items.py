"""Reference-shaped layer items from the flat retriever's best files."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import treeseek
from treeseek.errors import ConfigError
from treeseek.index.code_hook import CodeIndexHook
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import SearchContext
from treeseek.search.caches import TreeCaches
from treeseek.search.flat.flat import FlatConfig
from treeseek.search.graph.items import RetrievalItem, retrieve_items
from treeseek.search.graph.lookup import TREE_LOOKUP
from treeseek.search.graph.tree_graph import TREE_GRAPH, cached_tree_graph, tree_code_graph

APP = """from fastapi import FastAPI

app = FastAPI()


@app.get("/users/{user_id}")
async def get_user(user_id: str):
    service = UserService()
    return service.get_user(user_id)


class UserService:
    def get_user(self, user_id):
        return {"id": user_id}
"""


def test_items_have_the_reference_shape_and_order(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "app" / "api").mkdir(parents=True)
    (root / "app" / "api" / "users.py").write_text(APP)
    (root / "tests").mkdir()
    (root / "tests" / "test_users.py").write_text("def test_get_user():\n    get_user('1')\n")
    db = treeseek.open(tmp_path / "i.db", hooks=[CodeIndexHook()])
    try:
        db.index(root, name="app")
        ctx = SearchContext(store=db.store, tree=db.tree("app"), navigator=LexicalNavigator())
        items = retrieve_items(ctx, "where is implemented get_user", limit=20)
        assert items, "expected items"
        first = items[0]
        assert first.source == "app/api/users.py"
        assert first.layer == "C3_ENTRYPOINTS"  # names get_user exactly, C3 ranks first
        assert first.metadata["framework"] == "fastapi"
        layers = [i.layer for i in items]
        assert "C1_SYMBOL_CATALOG" in layers and "C0_SOURCE_CHUNKS" in layers
        sym = next(i for i in items if i.layer == "C1_SYMBOL_CATALOG")
        assert sym.title in ("get_user", "UserService.get_user")
        assert sym.start_line is not None and sym.end_line is not None
        chunk = next(i for i in items if i.layer == "C0_SOURCE_CHUNKS")
        assert chunk.metadata["chunk_type"] in ("symbol_block", "window")
        test_positions = [n for n, i in enumerate(items) if i.source.startswith("tests/")]
        app_positions = [
            n
            for n, i in enumerate(items)
            if i.source == "app/api/users.py" and i.layer == "C1_SYMBOL_CATALOG"
        ]
        assert not test_positions or min(app_positions) < min(test_positions)
        only = retrieve_items(
            ctx,
            "get_user",
            layers=["C1_SYMBOL_CATALOG"],
            config=FlatConfig(exclude_tests=True),
        )
        assert {i.layer for i in only} == {"C1_SYMBOL_CATALOG"}
        assert all(not i.source.startswith("tests/") for i in only)
        with pytest.raises(ConfigError):
            retrieve_items(ctx, "x", layers=["C9"])
    finally:
        db.close()


def test_c2_items_carry_the_resolvers_answer_per_edge(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "app").mkdir(parents=True)
    (root / "app" / "__init__.py").write_text("")
    (root / "app" / "service.py").write_text(
        "class UserService:\n    def get_user(self, user_id):\n        return user_id\n"
    )
    (root / "app" / "views.py").write_text(
        "import os\n"
        "from app.service import UserService\n"
        "from app.service import Missing\n"
        "\n\n"
        "def get_user(user_id):\n"
        "    os.getenv('X')\n"
        "    return UserService().get_user(user_id)\n"
    )
    db = treeseek.open(tmp_path / "i.db", hooks=[CodeIndexHook()])
    try:
        db.index(root, name="app")
        ctx = SearchContext(store=db.store, tree=db.tree("app"), navigator=LexicalNavigator())
        items = retrieve_items(
            ctx,
            "get_user UserService views",
            layers=["C2_DEPENDENCY_GRAPH"],
            limit=100,
        )
        expected = {
            (e.src_path, e.line, str(e.type), e.dst_ref): e
            for e in tree_code_graph(db.store, "app").resolved.edges
        }
        views = [i for i in items if i.source == "app/views.py"]
        assert views, "expected the edges of app/views.py"
        for item in items:
            meta = item.metadata
            edge = expected[(item.source, item.start_line, meta["edge_type"], meta["dst_ref"])]
            assert meta["resolution"] == edge.resolution.value
            assert meta["dst_path"] == edge.dst_path
        by_ref = {i.metadata["dst_ref"]: i.metadata for i in views}
        # a symbol of a module in the tree: resolved, with its destination
        assert by_ref["app.service.UserService"]["resolution"] == "resolved"
        assert by_ref["app.service.UserService"]["dst_symbol_id"] == "app/service.py::UserService"
        # the module is in the tree, the name is not: partial, pointing at the module
        assert by_ref["app.service.Missing"]["resolution"] == "partial"
        assert by_ref["app.service.Missing"]["dst_path"] == "app/service.py"
        assert by_ref["app.service.Missing"]["dst_symbol_id"] == "app/service.py"
        # the standard library is not in the tree: partial, no destination
        assert by_ref["os"]["resolution"] == "partial"
        assert by_ref["os"]["dst_path"] is None and by_ref["os"]["dst_symbol_id"] is None
        call = by_ref["UserService().get_user"]
        assert (call["edge_type"], call["resolution"]) == ("calls", "resolved")
        assert call["dst_symbol_id"] == "app/service.py::UserService.get_user"
    finally:
        db.close()


QUESTIONS = (
    "which command serves the HTTP API",
    "the block cache window trims blocks past its token budget",
    "resolve a python import through re-exports",
    "where are console scripts of pyproject read",
)


def test_items_without_the_graph_are_those_with_it(
    tmp_path: Path, db_location: Callable[[str], Any]
) -> None:
    """C2/C3 items resolve only the chosen files (a kept lookup per tree version), never
    the whole tree: the same items as from the tree's graph, on this package's own source
    (typer commands, re-exports) on each backend."""
    root = tmp_path / "src"
    package = Path(treeseek.__file__).parent
    shutil.copytree(package, root / "treeseek", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "pyproject.toml").write_text('[project.scripts]\ntreeseek = "treeseek.cli:main"\n')
    with treeseek.open(db_location("items")) as db:
        db.index(root, name="t")
        info = db.tree("t")

        def items(caches: TreeCaches) -> list[RetrievalItem]:
            ctx = SearchContext(
                store=db.store, tree=info, navigator=LexicalNavigator(), caches=caches
            )
            with db.store.snapshot():
                return [i for q in QUESTIONS for i in retrieve_items(ctx, q, limit=40)]

        lazy_caches = TreeCaches()
        lazy = items(lazy_caches)
        assert lazy_caches.peek(TREE_GRAPH, info) is None  # no graph was built
        shared = lazy_caches.peek(TREE_LOOKUP, info)
        assert shared is not None and shared.lookup.layers.read_files() < len(shared.lookup.layers)
        assert items(lazy_caches) == lazy  # the kept lookup answers again the same
        built = TreeCaches()
        with db.store.snapshot():
            cached_tree_graph(built, db.store, info)
        assert items(built) == lazy
    layers = {i.layer for i in lazy}
    assert {"C2_DEPENDENCY_GRAPH", "C3_ENTRYPOINTS"} <= layers
    handlers = {i.metadata.get("handler_symbol_id") for i in lazy if i.layer == "C3_ENTRYPOINTS"}
    assert any(h and h.startswith("treeseek/cli/") for h in handlers)
