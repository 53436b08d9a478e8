"""The doors and the watcher: ``serve`` (HTTP API), ``mcp`` (MCP server), ``watch``.

treeseek serve --port 8080                         # http://127.0.0.1:8080/v1
treeseek serve --db postgresql://me@db/ts --workers 4   # 4 processes, one pool each
TREESEEK_TOKEN=... treeseek serve --host 0.0.0.0   # beyond loopback only with a token
treeseek mcp                                       # stdio, what agents launch
treeseek mcp --http --port 8765                    # streamable HTTP at /mcp
treeseek watch ~/src/app --name app                # re-index on every change
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from treeseek.cli.app import app
from treeseek.cli.common import (
    DbOption,
    display_markup,
    err_console,
    handle_errors,
    one_line,
    open_database,
    out_console,
    usage_error,
)
from treeseek.cli.tree_commands import SHOWN_WARNINGS
from treeseek.errors import ConfigError, TreeseekError

#: seconds before ``watch`` tries a failed re-index again when nothing else changes
WATCH_RETRY_S = 5.0

TokenFileOption = Annotated[
    Path | None,
    typer.Option(
        "--token-file",
        help="File whose first line is the bearer token (default: $TREESEEK_TOKEN; no token:"
        " loopback only).",
        show_default=False,
    ),
]
IndexRootOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--index-root",
        help="A directory under which clients may index new trees (repeatable; without it"
        " `serve` and `mcp --http` index no new directories, `mcp` over stdio any).",
        show_default=False,
    ),
]
LlmOption = Annotated[
    str | None, typer.Option(help="Navigator for LLM strategies (default: $TREESEEK_LLM...).")
]


@app.command("serve")
def serve_command(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.", min=1, max=65535)] = 8080,
    token_file: TokenFileOption = None,
    index_root: IndexRootOption = None,
    max_seconds: Annotated[float, typer.Option(help="Wall-time limit of a request.")] = 60.0,
    llm: LlmOption = None,
    db: DbOption = None,
    workers: Annotated[
        int,
        typer.Option(
            help="Worker processes (more than 1: PostgreSQL only; each has its own pool).", min=1
        ),
    ] = 1,
    statement_timeout: Annotated[
        float | None,
        typer.Option(
            help="PostgreSQL: seconds a read statement may run (default:"
            " $TREESEEK_PG_STATEMENT_TIMEOUT, else 60; 0: no limit).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve the HTTP API (/v1: trees, index jobs, query, files, symbols, graph, retrieve)."""
    import os

    from treeseek.server import read_token, serve
    from treeseek.service import Limits
    from treeseek.store.postgres import MAX_TIMEOUT_MS, READ_TIMEOUT_ENV

    if max_seconds <= 0:
        usage_error("--max-seconds must be > 0")
    if statement_timeout is not None:
        if not 0 <= statement_timeout * 1000 <= MAX_TIMEOUT_MS:  # NaN and inf fail too
            usage_error(f"--statement-timeout must be from 0 to {MAX_TIMEOUT_MS // 1000} seconds")
        os.environ[READ_TIMEOUT_ENV] = f"{statement_timeout:g}"  # this process and its workers
    with handle_errors():
        serve(
            host=host,
            port=port,
            db=db,
            token=read_token(token_file),
            index_roots=index_root or [],
            limits=Limits(max_seconds=max_seconds),
            llm=llm,
            workers=workers,
        )


@app.command("mcp")
def mcp_command(
    http: Annotated[bool, typer.Option("--http", help="Streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option(help="--http: address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="--http: port.", min=1, max=65535)] = 8765,
    token_file: TokenFileOption = None,
    index_root: IndexRootOption = None,
    llm: LlmOption = None,
    db: DbOption = None,
) -> None:
    """Serve the MCP tools for agents over stdio (or --http: streamable HTTP at /mcp)."""
    from treeseek.mcp import run
    from treeseek.server import read_token

    with handle_errors():
        run(
            db=db,
            http=http,
            host=host,
            port=port,
            token=read_token(token_file) if http else None,
            index_roots=index_root or None,
            llm=llm,
        )


def watch_filter(root: Path, db_file: Path | None) -> Callable[[Any, str], bool]:
    """Which changes ``watch`` re-indexes for: paths that are really under ``root`` (the
    watcher follows symlinks, the indexer never follows one out of the root or into a
    directory) and are neither in ``.git/`` nor the database's own files (a symlink to a
    directory holding the database would otherwise make every write trigger the next)."""
    real_root = os.path.realpath(root)
    own = set()
    if db_file is not None:
        base = os.path.realpath(db_file)
        own = {base + s for s in ("", "-wal", "-shm", "-journal")}

    def relevant(change: Any, changed: str) -> bool:
        real = os.path.realpath(changed)
        if real in own or "/.git/" in changed + "/":
            return False
        return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)

    return relevant


@dataclass(slots=True)
class Indexed:
    """What the last index of a watched directory listed: the tree's directories, and when
    the listing began (ns since the epoch; 0: not indexed yet)."""

    dirs: frozenset[str] = frozenset()
    listed_ns: int = 0


def left_out(root: Path, changed: str, indexed: Indexed) -> bool:
    """Whether ``changed`` lies inside a directory the last index left out (ignored by a
    .gitignore or .treeseekignore, say) whose entries have not changed since it listed the
    tree: re-indexing for it would change nothing, and a log written under an ignored
    ``logs/`` re-indexed the tree on every write. Anything else (a tree file, a new entry of
    a tree directory, a directory created or changed since) is not left out."""
    if not indexed.listed_ns:
        return False
    relative = os.path.relpath(changed, root)
    if relative == "." or relative.startswith(".." + os.sep) or relative == "..":
        return False
    parts = relative.split(os.sep)
    prefix = ""
    for depth, part in enumerate(parts):
        candidate = f"{prefix}/{part}" if prefix else part
        if candidate in indexed.dirs:
            prefix = candidate
            continue
        if depth == len(parts) - 1:
            return False  # an entry of a tree directory: maybe a new file the tree wants
        # every directory from there down to the change's own must be as it was listed (a
        # directory git skipped while empty gets files: its entries changed since)
        for inner in range(depth, len(parts) - 1):
            try:
                st = os.lstat(os.path.join(root, *parts[: inner + 1]))
            except OSError:
                return False
            if not stat.S_ISDIR(st.st_mode) or st.st_ctime_ns > indexed.listed_ns:
                return False
        return True
    return False


@dataclass(slots=True)
class _WatchState:
    announced: bool = False
    retry_at: float | None = None  # a failed re-index is tried again from then on
    failed: str = ""  # the last failure's message, said once while it repeats
    replaced: bool = False  # the directory was replaced under its path: watched again


def _identity(root: Path) -> tuple[int, int] | None:
    """Which directory ``root`` names now (device, inode); None when nothing is there."""
    try:
        st = os.stat(root)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _watch(
    watchfiles: Any,
    root: Path,
    relevant: Callable[[Any, str], bool],
    debounce: int,
    index: Callable[[], None],
    state: _WatchState,
    indexed: Indexed | None = None,
) -> bool:
    """Re-index on every change until interrupted (True), or until watchfiles stops at a path
    it cannot decode, a non-UTF-8 file name, or the directory is replaced under its path (a
    fresh checkout renamed over it: the watcher would go on watching the old one, moved
    away) (False: the caller watches again and re-indexes)."""
    watched = _identity(root)
    try:
        for changes in watchfiles.watch(
            root,
            watch_filter=relevant,
            debounce=debounce,
            raise_interrupt=False,
            yield_on_timeout=True,  # a first empty yield once the watcher is live
            rust_timeout=1000,
        ):
            if not state.announced:
                again = " again: the directory was replaced" if state.replaced else ""
                err_console.print(f"watching {display_markup(str(root))}{again} (Ctrl-C to stop)")
                state.announced, state.replaced = True, False
            now = _identity(root)
            if now != watched:
                if now is None:  # removed: the re-index ends the command with its error
                    _reindex(root, index, state)
                state.announced, state.replaced = False, True
                return False
            if indexed is not None and changes:
                changes = {c for c in changes if not left_out(root, c[1], indexed)}
            if changes or (state.retry_at is not None and time.monotonic() >= state.retry_at):
                _reindex(root, index, state)
    except RuntimeError as exc:  # watchfiles' WatchfilesRustInternalError
        if "decode path" not in str(exc):
            raise ConfigError(f"the file watcher stopped: {exc}") from exc
        return False
    return True


def _reindex(root: Path, index: Callable[[], None], state: _WatchState) -> None:
    """One re-index; a failure (a busy or damaged database, a vanished file) is said once and
    tried again later, unless the watched directory itself is gone."""
    try:
        index()
    except (TreeseekError, OSError) as exc:
        if not root.is_dir():  # nothing left to watch
            raise
        message = str(exc)
        if message != state.failed:
            err_console.print(
                f"[red]error:[/red] {escape(one_line(message))}; still watching,"
                f" retrying in {WATCH_RETRY_S:g} s or at the next change",
                soft_wrap=True,
            )
        state.failed, state.retry_at = message, time.monotonic() + WATCH_RETRY_S
    else:
        state.failed, state.retry_at = "", None


@app.command("watch")
def watch_command(
    path: Annotated[Path, typer.Argument(help="Directory to index and keep fresh.")],
    name: Annotated[
        str | None, typer.Option("--name", "-n", help="Tree name (default: the directory name).")
    ] = None,
    debounce: Annotated[
        int, typer.Option(help="Milliseconds of quiet before re-indexing.", min=50, max=3_600_000)
    ] = 500,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="Let --name's existing tree, built from another directory, become DIR's"
            " (as `treeseek index --replace`; a moved checkout needs it once).",
        ),
    ] = False,
    db: DbOption = None,
) -> None:
    """Index DIR, then re-index it (incrementally) whenever a file under it changes."""
    from treeseek.service.security import require_extra

    with handle_errors():
        require_extra("watch", ["watchfiles"])
    import watchfiles

    if not path.is_dir():
        usage_error(f"{path} is not a directory")
    root = path.resolve()
    with handle_errors(), open_database(db, create=True) as database:
        db_file = getattr(database.store, "path", None)
        relevant = watch_filter(root, Path(db_file) if db_file else None)

        said: set[str] = set()  # warnings already shown: each run repeats the standing ones
        indexed = Indexed()

        def index() -> None:
            report = database.index(root, name=name, replace=replace)
            info = report.tree
            out_console.print(
                f"{time.strftime('%H:%M:%S')} indexed {info.name}: {report.added} added,"
                f" {report.changed} changed, {report.removed} removed in {report.seconds:.2f}s",
                markup=False,
            )
            sys.stdout.flush()
            new = [w for w in report.warnings if w not in said]
            for message in new[:SHOWN_WARNINGS]:  # a file that became unreadable, say
                err_console.print(f"[yellow]warning:[/yellow] {display_markup(message)}")
            if len(new) > SHOWN_WARNINGS:
                err_console.print(f"[yellow]... {len(new) - SHOWN_WARNINGS} more warnings[/yellow]")
            said.clear()
            said.update(report.warnings)
            tree_dirs = database.store.subtree(info.name, "")
            indexed.dirs = frozenset(n.path for n in tree_dirs if n.is_dir)
            indexed.listed_ns = int(info.updated_at.timestamp() * 1_000_000_000)

        index()
        state = _WatchState()
        try:
            while not _watch(watchfiles, root, relevant, debounce, index, state, indexed):
                state.retry_at = time.monotonic()  # re-index once the new watch is live
        except KeyboardInterrupt:
            pass
