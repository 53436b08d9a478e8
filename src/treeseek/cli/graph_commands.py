"""``treeseek graph TREE RELATION [NAME]``: the code graph of an indexed tree.

    treeseek graph django callers django.db.models.query.QuerySet.filter
    treeseek graph flask callers App.register_blueprint     # a unique short name
    treeseek graph django importers django/db/models/query.py
    treeseek graph django subclasses django.db.models.fields.Field --transitive
    treeseek graph django neighbours django/db/models/query.py::QuerySet --hops 2
    treeseek graph django walk django.db.models.query.QuerySet.filter --query "filter lookups"
    treeseek graph django entrypoints --json

NAME is a path, a symbol id (``path::Class.method``), a dotted module, ``module.qname``, or a
short form: a unique symbol name or qualified-name suffix (``register_blueprint``,
``App.register_blueprint``), ``path-suffix::name``, or a unique path suffix. A short form that
matches several nodes is an error that lists them, never a guess.

``callers`` and ``callees`` list call sites with a status (see
:mod:`treeseek.search.graph.call_sites`): ``resolved`` (``via`` says how: the index, ``self``,
a local, a parameter, a pytest fixture, ...), ``candidate`` (a caller whose receiver's type
is unknown: it may call NAME) and ``unresolved`` (a callee outside the tree or unknown).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from treeseek.cli.app import app
from treeseek.cli.common import (
    DbOption,
    JsonOption,
    display_text,
    open_database,
    out_console,
    print_json,
    usage_error,
)
from treeseek.code.graph import EDGE_KINDS, CodeGraph
from treeseek.search.graph import call_sites
from treeseek.search.graph.traverse import code_graph_policy, files_from_hits, traverse

RELATIONS = (
    "callers",
    "callees",
    "importers",
    "imports",
    "subclasses",
    "superclasses",
    "members",
    "neighbours",
    "walk",
    "entrypoints",
)


@app.command("graph")
def graph_command(
    tree: Annotated[str, typer.Argument(help="Name of an indexed tree.")],
    relation: Annotated[str, typer.Argument(help=f"One of: {', '.join(RELATIONS)}.")],
    name: Annotated[
        str | None, typer.Argument(help="Path, symbol id, dotted module or module.qname.")
    ] = None,
    hops: Annotated[int, typer.Option(help="neighbours/walk: how many edges out.")] = 1,
    kinds: Annotated[str, typer.Option(help="neighbours: comma-separated edge kinds.")] = ",".join(
        EDGE_KINDS
    ),
    transitive: Annotated[bool, typer.Option(help="subclasses/superclasses: all levels.")] = False,
    query: Annotated[str, typer.Option(help="walk: the question that scores nodes.")] = "",
    k: Annotated[int, typer.Option("-k", help="walk: how many files.")] = 10,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Callers, callees, importers, class hierarchy, neighbourhoods and entrypoints."""
    if relation not in RELATIONS:
        usage_error(f"unknown relation {relation!r}; use one of: {', '.join(RELATIONS)}")
    if relation != "entrypoints" and not name:
        usage_error(f"{relation} needs a NAME (path, symbol id, dotted module or module.qname)")
    if hops < 0 or k < 1:
        usage_error("--hops must be >= 0 and -k >= 1")
    with open_database(db) as database:
        if relation in ("callers", "callees"):
            assert name is not None
            # the name first, then only the files its call sites can be in (not the graph)
            node, sites = database.call_sites(tree, relation, name)
            ids = [s.caller if relation == "callers" else s.target for s in sites]
            resolved = sorted(
                {i for i, s in zip(ids, sites, strict=True) if i and s.status == "resolved"}
            )
            payload: dict[str, Any] = {
                "tree": tree,
                "node": node,
                relation: resolved,
                "sites": call_sites.site_rows(sites),
            }
            _emit(as_json, payload, [_site_line(s, relation) for s in sites])
            return
        if relation in ("imports", "superclasses", "members", "importers", "subclasses"):
            assert name is not None
            # from the node's own file (what resolving its edges needs), or for the reverse
            # relations the files whose rows can name it, not the graph
            node, related = database.code_relation(tree, relation, name, transitive=transitive)
            _emit(as_json, {"tree": tree, "node": node, relation: related}, related)
            return
        if relation == "entrypoints":
            rows: list[dict[str, Any]] = [
                {
                    "path": e.path,
                    "entry_type": e.entrypoint.entry_type,
                    "framework": e.entrypoint.framework,
                    "route_or_command": e.entrypoint.route_or_command,
                    "handler": e.entrypoint.handler,
                    "handler_path": e.handler_path,
                    "handler_symbol": e.handler_symbol,
                    "line": e.entrypoint.line,
                    **e.entrypoint.lang_payload,
                }
                # the files that declare some, resolved: not the graph
                for e in database.code_entrypoints(tree)
            ]
            _emit(as_json, {"tree": tree, "entrypoints": rows}, [_entry_line(r) for r in rows])
            return
        loaded = database.code_graph(tree)  # one version (TreeNotFound for an unknown tree)
        graph = loaded.graph
        assert name is not None
        node = graph.find(name)
        if relation == "walk":
            policy = code_graph_policy([(node, 1.0)])
            hits = traverse(query, graph, policy=policy, max_depth=hops, k=max(k * 8, 64))
            files = files_from_hits(hits)[:k]
            walked = {"tree": tree, "node": node, "files": [list(f) for f in files]}
            _emit(as_json, walked, [f"{score:.3f}  {path}" for path, score in files])
            return
        result = _neighbours(graph, node, hops, kinds)
        _emit(as_json, {"tree": tree, "node": node, relation: result}, _lines(result))


def _neighbours(graph: CodeGraph, node: str, hops: int, kinds: str) -> dict[str, int]:
    wanted = tuple(x.strip() for x in kinds.split(",") if x.strip())
    unknown = [x for x in wanted if x not in EDGE_KINDS]
    if unknown:
        usage_error(f"unknown edge kind(s) {', '.join(unknown)}; use {', '.join(EDGE_KINDS)}")
    found = graph.neighbours(node, hops=hops, kinds=wanted)
    return dict(sorted(found.items(), key=lambda item: (item[1], item[0])))


def _site_line(site: call_sites.CallSite, relation: str) -> str:
    times = f" x{site.count}" if site.count > 1 else ""
    where = f"{site.path}:{site.line}"
    if relation == "callers":
        return f"{site.status:<10} {site.caller}  {site.callee}  ({where}{times}, {site.via})"
    to = site.target or "-"
    return f"{site.status:<10} {site.callee} -> {to}  ({where}{times}, {site.via})"


def _lines(result: list[str] | dict[str, int]) -> list[str]:
    if isinstance(result, dict):
        return [f"{dist}  {node}" for node, dist in result.items()]
    return list(result)


def _entry_line(row: dict[str, Any]) -> str:
    methods = ",".join(row.get("methods", []) or [])
    where = row["handler_path"] or "?"
    if row["handler_path"] and row["handler_symbol"]:
        where = f"{row['handler_path']}::{row['handler_symbol']}"
    return (
        f"{row['framework']:<9} {row['entry_type']:<4} {methods:<10} "
        f"{row['route_or_command']}  -> {row['handler'] or '-'} ({where})"
    )


def _emit(as_json: bool, payload: dict[str, Any], lines: list[str]) -> None:
    if as_json:
        print_json(payload)
        return
    for line in lines:
        out_console.print(display_text(line), markup=False, highlight=False)
    if not lines:
        out_console.print("(none)")
