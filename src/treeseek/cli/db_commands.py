"""Database commands: ``db migrate``, ``db copy``, ``db check``.

treeseek db migrate --db postgresql://treeseek@db.internal/treeseek
treeseek db copy ~/.local/share/treeseek/treeseek.db postgresql://treeseek@db.internal/treeseek
treeseek db copy postgresql://treeseek@db.internal/treeseek laptop.db --tree django
treeseek db check --db repo.db [--full]     # exit 0 intact, 3 damaged, 1 cannot check
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from treeseek.cli.app import app
from treeseek.cli.common import (
    DbOption,
    JsonOption,
    display_path,
    one_line,
    out_console,
    print_json,
)
from treeseek.config import resolve_db_path
from treeseek.errors import ConfigError, StoreError
from treeseek.index.transfer import copy_trees
from treeseek.store import check_store, open_store
from treeseek.store.failures import lacks_sqlite_header, not_sqlite_message
from treeseek.store.postgres import redact

#: the exit status of ``db check`` when the database is damaged (1: it could not be checked)
DAMAGED_EXIT = 3

db_app = typer.Typer(
    name="db",
    help="Manage a database: migrate its schema, copy trees between databases, check it.",
)
app.add_typer(db_app)


@db_app.command("migrate")
def migrate_command(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Bring the database's schema to this treeseek's version (opening a database does it
    too; this does it alone, e.g. before rolling out new workers)."""
    location = resolve_db_path(db)
    if isinstance(location, Path) and not location.exists():  # only `index` creates one
        raise StoreError(
            f"no treeseek database at {location} to migrate; point --db / TREESEEK_DB at an"
            " existing one (`treeseek index` creates a new one at the current schema)"
        )
    store = open_store(location)
    try:
        version = store.schema_version  # type: ignore[attr-defined]
    finally:
        store.close()
    if as_json:
        print_json({"schema_version": version})
    else:
        out_console.print(f"schema version {version}")


@db_app.command("copy")
def copy_command(
    source: Annotated[str, typer.Argument(help="Database to read: a SQLite file or a URL.")],
    target: Annotated[str, typer.Argument(help="Database to write: a SQLite file or a URL.")],
    tree: Annotated[
        list[str] | None, typer.Option("--tree", help="Copy only this tree (repeatable).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Copy trees with their contents and code layers from SOURCE to TARGET (SQLite to
    PostgreSQL and back); a tree of the same name in TARGET is replaced, atomically."""
    src_location, dst_location = resolve_db_path(source), resolve_db_path(target)
    if isinstance(src_location, Path) and not src_location.is_file():  # never create a source
        raise StoreError(f"no treeseek database at {src_location} to copy from; check SOURCE")
    if src_location == dst_location or (
        isinstance(src_location, Path)
        and isinstance(dst_location, Path)
        and dst_location.exists()
        and src_location.samefile(dst_location)
    ):
        shown = redact(src_location) if isinstance(src_location, str) else src_location
        raise ConfigError(f"SOURCE and TARGET are the same database ({shown})")
    src = open_store(src_location)
    try:
        dst = open_store(dst_location)
        try:
            copied = copy_trees(src, dst, tree or None)
        finally:
            dst.close()
    finally:
        src.close()
    if as_json:
        print_json({"copied": [asdict(c) for c in copied]})
        return
    for c in copied:
        out_console.print(
            f"copied [bold]{display_path(c.name)}[/bold]: {c.nodes} nodes, {c.contents} contents"
            f" ({c.new_contents} new), {c.code_files} parsed files, {c.vectors} vectors"
        )


@db_app.command("check")
def check_command(
    db: DbOption = None,
    full: Annotated[
        bool, typer.Option("--full", help="SQLite: integrity_check (slower, complete).")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Check that a database is intact (SQLite: quick_check, or integrity_check with --full;
    both: schema version and cross-table invariants). Exit status 0 intact, 3 damaged, 1 when
    it cannot be checked. Never writes to the database; an intact SQLite file loses the mark
    that made treeseek refuse to write into it."""
    location = resolve_db_path(db)
    report = check_store(location, full=full)
    if as_json:
        print_json({**asdict(report), "ok": report.ok})
    elif report.ok:
        out_console.print(f"{display_path(report.location)}: intact ({', '.join(report.checks)})")
    else:
        # one_line: a path (or a problem quoting one) never reaches the terminal raw
        for problem in report.problems:
            typer.echo(one_line(f"{report.location}: {problem}"), err=True)
        if isinstance(location, Path) and lacks_sqlite_header(location):
            # perhaps a file named by mistake: say what it is, never "delete it"
            typer.echo(one_line(f"error: {not_sqlite_message(report.location)}"), err=True)
        else:
            typer.echo(
                one_line(
                    f"error: the database {report.location} is damaged; restore it from a"
                    " backup, or delete it and index again (treeseek will not write into it"
                    " meanwhile)"
                ),
                err=True,
            )
    if not report.ok:
        raise typer.Exit(DAMAGED_EXIT)
