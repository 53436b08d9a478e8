"""The `treeseek` command-line app (typer + rich).

Each group of commands lives in its own module and registers itself on :data:`app`; the
modules listed in :data:`COMMAND_MODULES` are imported by :func:`main`.
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="treeseek",
    help="A context database for code repositories: find the files that answer a question.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: command modules, each registers commands on `app` when imported
COMMAND_MODULES: tuple[str, ...] = (
    "treeseek.cli.tree_commands",
    "treeseek.cli.eval_commands",
    "treeseek.cli.query_commands",
    "treeseek.cli.graph_commands",
    "treeseek.cli.context_commands",
)


def load_commands() -> typer.Typer:
    for module in COMMAND_MODULES:
        importlib.import_module(module)
    return app


def main() -> None:
    load_commands()()
