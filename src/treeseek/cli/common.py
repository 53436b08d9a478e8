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
import gc
import json
import logging
import re
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
from treeseek.index.freshness import Freshness
from treeseek.index.run import IndexHook

#: diagnostics, progress and errors go to stderr; results to stdout
err_console = Console(stderr=True, highlight=False, soft_wrap=True)
out_console = Console(highlight=False, soft_wrap=True)
for _console in (err_console, out_console):
    if not _console.is_terminal:
        _console.width = 4096  # piped: tables and errors are never wrapped at 80 columns

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Database file, or a postgresql://user@host/db URL (default: $TREESEEK_DB, else"
        " ~/.local/share/treeseek/treeseek.db).",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


#: the cyclic garbage collector's thresholds while a command builds a tree's tables once
#: (:func:`fewer_collections`); Python's default is (700, 10, 10)
ONE_SHOT_GC = (50_000, 20, 20)


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the block with the cyclic garbage collector's thresholds at :data:`ONE_SHOT_GC`,
    then restore them (commands also run in-process, in tests).

    A command-line query builds its tree's tables once and exits: millions of objects that
    form no cycles, over which the default thresholds ran ~760 collections (0.25 s of a
    2.4 s query of a 47,472-file tree); these run ~90. Collection still happens, less
    often; nothing a query computes depends on when.
    """
    before = gc.get_threshold()
    gc.set_threshold(*ONE_SHOT_GC)
    try:
        yield
    finally:
        gc.set_threshold(*before)


@contextmanager
def open_database(
    db: str | Path | None, hooks: Sequence[IndexHook] | None = None, *, create: bool = False
) -> Iterator[Database]:
    """Open the database named by ``--db`` / ``$TREESEEK_DB`` / the default, closing it after
    (``hooks``: index hooks other than the default ones). Only ``create=True`` (``index``)
    creates a missing database and its directories; read-only commands say there is none."""
    import treeseek

    database = treeseek.open(db, hooks=hooks, create=create)
    if database.store.read_only is not None:
        err_console.print(
            f"[dim]note: the database is open read-only: {database.store.read_only}[/dim]"
        )
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
    lines = display_text(text, keep_newlines=True).split("\n")
    text = " ".join(part.strip() for part in lines if part.strip())
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


class TerminalLogHandler(logging.Handler):
    """treeseek's log warnings on stderr, through :func:`display_text` like every other text
    the CLI prints. Without a handler Python's last-resort one wrote them raw: a provider's
    error message (an LLM retry warning) could recolour the terminal or fake an ``error:``
    line with a newline."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = display_text(record.getMessage())
            if record.exc_info:
                trace = self.formatter or logging.Formatter()
                text += "\n" + display_text(
                    trace.formatException(record.exc_info), keep_newlines=True
                )
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


def install_log_handler() -> None:
    """Show treeseek's warnings (and worse) on stderr, sanitized (once per process)."""
    logger = logging.getLogger("treeseek")
    if not any(isinstance(h, TerminalLogHandler) for h in logger.handlers):
        logger.addHandler(TerminalLogHandler(logging.WARNING))


def usage_error(message: str) -> NoReturn:
    """Stop with a usage error (exit status 2), like typer does for bad options."""
    err_console.print(f"[red]usage error:[/red] {display_markup(message)}")
    raise typer.Exit(2)


#: what a terminal may act on: C0 controls (ESC starts escape sequences; CR, BS and newlines
#: can fake lines), DEL, C1 controls (U+009B is an 8-bit CSI), and the bidirectional
#: overrides and isolates that reorder what is shown ("Trojan Source")
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_UNSAFE_KEEP_LINES = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def display_text(text: str, *, keep_newlines: bool = False) -> str:
    """Text safe to print on a terminal: THE sanitizer of every text output of the CLI.

    Control characters (ESC, CR, newlines, DEL, C1) and bidirectional overrides are shown as
    visible escapes (``\\x1b``, ``\\n``, ``\\u202e``), so a file name, a stored content, an
    LLM's reply or an error message can neither move the cursor, recolour the terminal nor fake
    a line; bytes of non-UTF-8 names (surrogate escapes) are shown as ``\\xNN``.
    ``keep_newlines``: multi-line text (file contents) keeps its newlines and tabs. JSON output
    does not use this: it stays exact JSON (:func:`print_json`).
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    pattern = _UNSAFE_KEEP_LINES if keep_newlines else _UNSAFE
    return pattern.sub(_visible, text)


def display_markup(text: str, *, keep_newlines: bool = False) -> str:
    """:func:`display_text`, markup-escaped for rich."""
    return escape(display_text(text, keep_newlines=keep_newlines))


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
    # json.dumps escapes C0 controls; C1 controls and bidi overrides (only ever inside strings)
    # become \uXXXX escapes too: the same JSON value, inert on a terminal
    text = _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def freshness_cell(fresh: Freshness) -> str:
    """A tree's freshness in a few words (``treeseek trees``' column), markup-escaped."""
    if fresh.source == "git":
        return "commit"  # a commit never changes
    if fresh.stale is None:
        return "?"  # nothing recorded to compare with (path lists, documents)
    if fresh.missing_root:
        return "[yellow]root missing[/yellow]"
    if not fresh.stale:
        return "yes"
    parts = [
        f"{n} {label}"
        for n, label in (
            (fresh.changed, "changed"),
            (fresh.removed, "removed"),
            (fresh.dirs_changed, "dirs"),
        )
        if n
    ]
    return f"[bold yellow]STALE[/bold yellow] ({', '.join(parts)})"


def stale_warning(fresh: Freshness) -> str | None:
    """A one-line warning (rich markup) when a directory tree's files changed since it was
    indexed; None when it is fresh, a commit, or cannot be told (no root on this machine)."""
    if not fresh.stale or fresh.missing_root:
        return None
    return (
        f"[yellow]warning:[/yellow] tree '{display_markup(fresh.tree)}' is "
        f"{display_markup(fresh.summary)} (`treeseek index {display_markup(fresh.root)}"
        f" --name {display_markup(fresh.tree)}`)"
    )
