"""C3 entrypoints per framework, found by AST shape."""

from __future__ import annotations

import textwrap

from treeseek.code.model import Entrypoint
from treeseek.code.parse import index_file


def _eps(path: str, text: str) -> list[Entrypoint]:
    ix = index_file(path, textwrap.dedent(text).encode())
    assert ix.parse_error is None
    return list(ix.entrypoints)


def _rows(eps: list[Entrypoint]) -> list[tuple[str, str, str, str | None, list[str] | None]]:
    return [
        (e.framework, e.entry_type, e.route_or_command, e.handler, e.lang_payload.get("methods"))
        for e in eps
    ]


def test_fastapi_decorators_prefix_api_route_and_add_api_route() -> None:
    eps = _eps(
        "app/api/users.py",
        """\
        from fastapi import APIRouter, FastAPI

        app = FastAPI()
        router = APIRouter(prefix="/users", tags=["users"])

        @router.get("/{user_id}")
        async def get_user(user_id: str):
            return {}

        @router.post("", status_code=201)
        def create_user():
            return {}

        @app.api_route("/health", methods=["GET", "HEAD"])
        def health():
            return "ok"

        @app.websocket("/ws")
        async def ws(socket):
            pass

        def legacy():
            return 1

        app.add_api_route("/legacy", legacy, methods=["PUT"])
        """,
    )
    assert _rows(eps) == [
        ("fastapi", "http", "/users/{user_id}", "get_user", ["GET"]),
        ("fastapi", "http", "/users", "create_user", ["POST"]),
        ("fastapi", "http", "/health", "health", ["GET", "HEAD"]),
        ("fastapi", "http", "/ws", "ws", ["WEBSOCKET"]),
        ("fastapi", "http", "/legacy", "legacy", ["PUT"]),
    ]
    assert eps[0].line == 6
    ix = index_file("app/api/users.py", b"")
    assert ix.entrypoints == ()


def test_flask_route_blueprint_and_add_url_rule() -> None:
    eps = _eps(
        "shop/views.py",
        """\
        from flask import Blueprint, Flask

        app = Flask(__name__)
        bp = Blueprint("shop", __name__, url_prefix="/shop")

        @app.route("/")
        def index():
            return "hi"

        @bp.route("/cart", methods=["GET", "POST"])
        def cart():
            return "cart"

        class Api:
            @bp.get("/items/<int:item_id>")
            def item(self, item_id):
                return "item"

        def about():
            return "about"

        app.add_url_rule("/about", "about", view_func=about)
        """,
    )
    assert _rows(eps) == [
        ("flask", "http", "/", "index", ["GET"]),
        ("flask", "http", "/shop/cart", "cart", ["GET", "POST"]),
        ("flask", "http", "/shop/items/<int:item_id>", "Api.item", ["GET"]),
        ("flask", "http", "/about", "about", ["GET"]),
    ]


def test_decorator_shapes_without_a_web_framework_are_not_routes() -> None:
    eps = _eps(
        "cache.py",
        """\
        import functools

        @cache.get("users")
        def cached():
            return 1

        @registry.register("/not/a/route")
        def registered():
            return 1
        """,
    )
    assert eps == []


def test_django_urlconf_path_re_path_url_include_and_as_view() -> None:
    eps = _eps(
        "shop/urls.py",
        """\
        from django.urls import include, path, re_path
        from django.conf.urls import url

        from . import views

        extra = [path("reports/", views.reports)]

        urlpatterns = [
            path("", views.index, name="index"),
            path("items/<int:pk>/", views.ItemDetail.as_view(), name="item-detail"),
            re_path(r"^archive/(?P<year>[0-9]{4})/$", views.archive),
            url(r"^old/$", views.old_view),
            path("api/", include("shop.api.urls")),
            path("admin/", include([path("stats/", views.stats, name="stats")])),
        ]
        urlpatterns += [path("late/", views.late)]
        """,
    )
    rows = [(e.framework, e.route_or_command, e.handler, e.lang_payload.get("name")) for e in eps]
    assert rows == [
        ("django", "", "views.index", "index"),
        ("django", "items/<int:pk>/", "views.ItemDetail", "item-detail"),
        ("django", r"^archive/(?P<year>[0-9]{4})/$", "views.archive", None),
        ("django", r"^old/$", "views.old_view", None),
        ("django", "api/", None, None),
        ("django", "admin/stats/", "views.stats", "stats"),
        ("django", "late/", "views.late", None),
    ]
    assert eps[1].lang_payload["as_view"] is True
    assert eps[4].lang_payload["include"] == "shop.api.urls"
    assert eps[2].lang_payload["kind"] == "re_path"


def test_typer_commands() -> None:
    eps = _eps(
        "tool/cli.py",
        """\
        import typer

        app = typer.Typer()

        @app.command()
        def build_index(path: str):
            pass

        @app.command("query")
        def run_query(q: str):
            pass

        @app.command(name="stats")
        def show_stats():
            pass
        """,
    )
    assert _rows(eps) == [
        ("typer", "cli", "build-index", "build_index", None),
        ("typer", "cli", "query", "run_query", None),
        ("typer", "cli", "stats", "show_stats", None),
    ]


def test_click_groups_and_commands() -> None:
    eps = _eps(
        "tool/main.py",
        """\
        import click

        @click.group()
        def cli():
            pass

        @cli.command()
        @click.option("--force", is_flag=True)
        def init_db(force):
            pass

        @cli.command("sync")
        def do_sync():
            pass

        @click.command()
        def standalone():
            pass
        """,
    )
    assert _rows(eps) == [
        ("click", "cli", "cli", "cli", None),
        ("click", "cli", "init-db", "init_db", None),
        ("click", "cli", "sync", "do_sync", None),
        ("click", "cli", "standalone", "standalone", None),
    ]
    assert eps[0].lang_payload["group"] is True
    assert eps[1].lang_payload["parent"] == "cli"


def test_argparse_parser_subcommands_arguments_and_handlers() -> None:
    ix = index_file(
        "scripts/manage.py",
        textwrap.dedent(
            """\
            import argparse

            def cmd_build(args):
                pass

            def main():
                parser = argparse.ArgumentParser(prog="manage")
                parser.add_argument("--verbose", "-v", action="store_true")
                sub = parser.add_subparsers(dest="command")
                build = sub.add_parser("build", help="build it")
                build.add_argument("target")
                build.set_defaults(func=cmd_build)
                clean = sub.add_parser("clean")
                args = parser.parse_args()
                args.func(args)

            if __name__ == "__main__":
                main()
            """
        ).encode(),
    )
    rows = [
        (e.route_or_command, e.handler, e.lang_payload["arguments"], e.line) for e in ix.entrypoints
    ]
    assert rows == [
        ("manage", "main", ["--verbose", "-v"], 7),
        ("build", "cmd_build", ["target"], 10),
        ("clean", None, [], 13),
    ]
    entry = {s.qname for s in ix.symbols if s.is_entry_candidate}
    assert entry == {"main", "cmd_build"}


def test_django_management_command() -> None:
    eps = _eps(
        "shop/management/commands/import_items.py",
        """\
        from django.core.management.base import BaseCommand

        class Command(BaseCommand):
            help = "Import items"

            def add_arguments(self, parser):
                parser.add_argument("path")

            def handle(self, *args, **options):
                pass
        """,
    )
    # Django names a command after its module, underscores kept
    assert _rows(eps) == [("django", "cli", "import_items", "Command.handle", None)]
    assert eps[0].lang_payload == {"help": "Import items", "arguments": ["path"]}


def test_routes_on_an_app_imported_from_another_module() -> None:
    eps = _eps(
        "app/api/items.py",
        """\
        from app.core import router, bp

        @router.post("/items")
        def create_item():
            return {}

        @bp.route("/legacy", methods=["POST"])
        def legacy():
            return ""

        @router.get("not-a-path")
        def nothing():
            return {}
        """,
    )
    assert _rows(eps) == [
        ("fastapi", "http", "/items", "create_item", ["POST"]),
        ("flask", "http", "/legacy", "legacy", ["POST"]),
    ]
    assert all(e.lang_payload["framework_guessed"] for e in eps)
