"""Context commands: ``outline``, ``expand``, and the line ranges of ``cat PATH:A-B``.

treeseek outline myrepo src/pkg/sessions.py      # symbols, signatures, spans, doc lines
treeseek outline myrepo src/pkg                  # every file with symbols under a directory
treeseek expand myrepo "sessions.py::Session.resolve_redirects" --margin 3
treeseek cat myrepo src/pkg/sessions.py:40-90     # numbered lines 40..90
"""

from __future__ import annotations

from typing import Annotated

import typer

from treeseek.cli.app import app
from treeseek.cli.common import (
    DbOption,
    JsonOption,
    display_path,
    err_console,
    open_database,
    print_json,
)
from treeseek.database import Database
from treeseek.errors import NodeNotFound


def cat_lines(database: Database, tree: str, spec: str, as_json: bool) -> bool:
    """Print ``PATH:A-B`` as numbered lines; False when ``spec`` is a plain path (or a file
    whose name really ends so)."""
    from treeseek.cli.display_context import display_span
    from treeseek.context.names import parse_range
    from treeseek.context.render import render_span

    path, start, end = parse_range(spec)
    if start is None:
        return False
    try:
        database.node(tree, spec)
        return False  # a file literally named "x:1-2"
    except NodeNotFound:
        pass
    span = database.lines(tree, path, start, end)
    if as_json:
        print_json({"tree": tree, **span.to_dict()})
    else:
        typer.echo(render_span(display_span(span)))
    return True


@app.command("outline")
def outline_command(
    tree: Annotated[str, typer.Argument(help="Tree name (see `treeseek trees`).")],
    path: Annotated[
        str, typer.Argument(help="A file, or a directory (every file with symbols under it).")
    ] = "",
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """The symbols of a file or directory: signatures, line spans, first docstring lines."""
    from treeseek.cli.display_context import display_outline
    from treeseek.context.render import render_outline

    with open_database(db) as database:
        result = database.outline(tree, path)
    if as_json:
        print_json(result.to_dict())
    elif result.files:
        typer.echo(render_outline(display_outline(result)))
    else:
        err_console.print(f"no symbols under {display_path(path)}")


@app.command("expand")
def expand_command(
    tree: Annotated[str, typer.Argument(help="Tree name (see `treeseek trees`).")],
    item: Annotated[
        str,
        typer.Argument(
            help="path::Qualified.name (or a unique short name), PATH:START-END, or a file."
        ),
    ],
    margin: Annotated[int, typer.Option(help="Lines of margin on each side.")] = 0,
    budget: Annotated[
        int | None, typer.Option(help="Cut to this many tokens.", show_default=False)
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one item of an answer in full, without searching again."""
    from treeseek.cli.display_context import display_context
    from treeseek.context.render import render_context

    with open_database(db) as database:
        answer = database.expand(tree, item, margin=margin, budget=budget)
    if as_json:
        print_json(answer.to_dict())
    else:
        typer.echo(render_context(display_context(answer)))
