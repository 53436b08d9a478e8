"""Helpers every command module shares: the ``--db``/``--json`` options, opening the database,
printing JSON, showing paths safely, and turning errors into one clear line.

    @app.command("mycmd")
    def mycmd(db: DbOption = None, as_json: JsonOption = False) -> None:
        with open_database(db) as database:  # errors: the app's one handler
            ...
            if as_json:
                print_json({"trees": database.trees()})

Exit codes: 0 success, 1 an error (a :class:`~treeseek.errors.TreeseekError` or an OS error: one
line on stderr that says what to do; :func:`handle_errors`), 2 bad usage (typer's own, or
:func:`usage_error`), 130 interrupted.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from treeseek.database import Database
from treeseek.errors import TreeseekError
from treeseek.index.run import IndexHook

#: diagnostics, progress and errors go to stderr; results to stdout
err_console = Console(stderr=True, highlight=False)
out_console = Console(highlight=False)

DbOption = Annotated[
    Path | None,
    typer.Option(
        "--db",
        help="Database file (default: $TREESEEK_DB, else ~/.local/share/treeseek/treeseek.db).",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


@contextmanager
def open_database(db: Path | None, hooks: Sequence[IndexHook] | None = None) -> Iterator[Database]:
    """Open the database named by ``--db`` / ``$TREESEEK_DB`` / the default, closing it after
    (``hooks``: index hooks other than the default ones)."""
    import treeseek

    database = treeseek.open(db, hooks=hooks)
    try:
        yield database
    finally:
        database.close()


@contextmanager
def handle_errors() -> Iterator[None]:
    """THE error handler of every command (the app's group wraps each invocation in it, see
    :mod:`treeseek.cli.app`): a :class:`~treeseek.errors.TreeseekError`, or an operating-system
    error (a file that cannot be written, say), becomes one ``error: ...`` line on stderr and
    exit status 1; an interrupt exits 130. Anything else is a bug and keeps its traceback."""
    try:
        yield
    except TreeseekError as exc:
        _fail(str(exc))
    except OSError as exc:
        if exc.strerror and exc.filename is not None:
            _fail(f"{exc.strerror}: {exc.filename}")
        _fail(exc.strerror or str(exc))
    except KeyboardInterrupt as exc:
        err_console.print("[red]interrupted[/red]")
        raise typer.Exit(130) from exc


def _fail(message: str) -> NoReturn:
    err_console.print(f"[red]error:[/red] {escape(one_line(message))}", soft_wrap=True)
    raise typer.Exit(1)


def one_line(text: str) -> str:
    """``text`` as one printable line: line breaks joined with spaces, other control characters
    (terminal escapes in a file name, say) and undecodable bytes shown as escapes."""
    text = " ".join(part.strip() for part in display_text(text).splitlines() if part.strip())
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def usage_error(message: str) -> NoReturn:
    """Stop with a usage error (exit status 2), like typer does for bad options."""
    err_console.print(f"[red]usage error:[/red] {escape(message)}")
    raise typer.Exit(2)


def display_text(text: str) -> str:
    """Text safe to print: bytes of non-UTF-8 names (surrogate escapes) shown as ``\\xNN``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text


def display_path(path: str) -> str:
    """A repo-relative path for humans ("." for the root), markup-escaped for rich."""
    return escape(display_text(path)) if path else "."


def to_jsonable(value: Any) -> Any:
    """Dataclasses, enums, datetimes and paths as plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    return value


def print_json(value: Any) -> None:
    """Print one JSON document on stdout.

    Non-UTF-8 names (surrogate escapes) are written as ``\\udcNN`` escapes, which Python's
    ``json.loads`` turns back into the exact name.
    """
    data = to_jsonable(value)
    text = json.dumps(data, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(data, ensure_ascii=True)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
