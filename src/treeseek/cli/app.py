"""The `treeseek` command-line app (typer + rich).

Each group of commands lives in its own module and registers itself on :data:`app`; the
modules listed in :data:`COMMAND_MODULES` are imported by :func:`main`. Every command runs
inside the one error handler, :func:`treeseek.cli.common.handle_errors` (errors: one line on
stderr, exit status 1), because the app's group wraps each invocation in it.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from treeseek.cli.common import handle_errors, install_log_handler


class _HandledGroup(TyperGroup):
    """The root group: runs every (sub)command inside the one error handler."""

    def invoke(self, ctx: Any) -> Any:  # a click Context (typer >= 0.29 vendors click)
        with handle_errors():
            return super().invoke(ctx)


app = typer.Typer(
    cls=_HandledGroup,
    name="treeseek",
    help="A context database for code repositories: find the files that answer a question.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)

#: command modules, each registers commands on `app` when imported
COMMAND_MODULES: tuple[str, ...] = (
    "treeseek.cli.tree_commands",
    "treeseek.cli.eval_commands",
    "treeseek.cli.query_commands",
    "treeseek.cli.graph_commands",
    "treeseek.cli.context_commands",
    "treeseek.cli.server_commands",
    "treeseek.cli.db_commands",
)


def _version(value: bool) -> None:
    if value:
        import treeseek

        typer.echo(f"treeseek {treeseek.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """A context database for code repositories: find the files that answer a question."""


def load_commands() -> typer.Typer:
    for module in COMMAND_MODULES:
        importlib.import_module(module)
    return app


def main() -> None:
    install_log_handler()
    load_commands()()
