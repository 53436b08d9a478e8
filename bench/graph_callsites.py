"""Call-site recall of ``treeseek graph TREE callers NAME`` against a grep-and-read gold list.

Two steps, both reproducible from the bare mirrors:

``sites``: the grep half. For each chosen method name, ``git grep -n '\\.NAME('`` over the
``*.py`` files of the commit; each hit gets its enclosing ``def``/``class`` (the qualified name
the code index uses, from :mod:`ast`), the receiver text and a *binding hint* (the receiver is
a parameter, or was assigned ``= Ctor(...)`` / bound by ``with`` in the same function). These
rows are what a reader goes through, one by one, to decide what each site calls.

    python bench/graph_callsites.py sites /work/.mirror/pallets+flask/repo register_blueprint

``measure``: recall and precision of the tool against the gold list
``bench/data/graph-callsites.jsonl`` (see ``bench/data/README-graph.md`` for how it was read).
A gold site counts as found when the tool reports a caller row with the site's file, enclosing
symbol and callee text (rows merge repeated calls of one callee in one symbol, so that is the
finest unit the index has). ``strict`` counts rows of status ``resolved`` only; ``loose`` also
counts ``candidate`` rows. Precision is over the reported rows: a row is right when the gold
says some site of it calls the target.

    python bench/graph_callsites.py measure DB   # trees named flask and requests in DB
    python bench/graph_callsites.py timing DB    # what call-site inference costs per query

``timing`` gives medians over ``--runs``, in process: building a tree's code graph (load,
resolve, build: what a cache miss costs, and what ``treeseek graph`` pays per command) against
``callers`` of each gold target on the built graph, cold (the caller files read from the store
and parsed again: one run) and warm (their bindings cached by content hash).

Both trees are indexed from the mirrors' HEAD (``treeseek index REPO.git --name flask``).
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

CLI = "from treeseek.cli import main; main()"
GOLD = Path(__file__).parent / "data" / "graph-callsites.jsonl"


@dataclass(frozen=True, slots=True)
class Site:
    path: str
    line: int
    scope: str  # qualified name of the enclosing def/class, "" at module level
    callee: str  # the call's function text, "app.register_blueprint"
    hint: str  # how the receiver is bound in the enclosing function, when it is visible


def _scopes(tree: ast.Module) -> list[tuple[int, int, str, ast.AST]]:
    out: list[tuple[int, int, str, ast.AST]] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                q = f"{prefix}.{child.name}" if prefix else child.name
                out.append((child.lineno, child.end_lineno or child.lineno, q, child))
                walk(child, q)
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


def grep_sites(repo: str, commit: str, name: str) -> list[Site]:
    """Every ``.name(`` line of the commit's Python files, with its scope and binding hint."""
    found = subprocess.run(
        ["git", "-C", repo, "grep", "-n", f"\\.{name}(", commit, "--", "*.py"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    by_file: dict[str, list[int]] = {}
    for row in found.splitlines():
        _, path, line, _ = row.split(":", 3)
        by_file.setdefault(path, []).append(int(line))
    sites: list[Site] = []
    for path, lines in sorted(by_file.items()):
        text = subprocess.run(
            ["git", "-C", repo, "show", f"{commit}:{path}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        tree = ast.parse(text)
        scopes = _scopes(tree)
        source = text.splitlines()
        for line in lines:
            around = [s for s in scopes if s[0] <= line <= s[1]]
            inner = max(around, key=lambda s: s[0]) if around else None
            code = source[line - 1].strip()
            marker = f".{name}("
            receiver = code.split(marker)[0].split()[-1] if marker in code else "?"
            head = receiver.split(".")[0].lstrip("(")
            sites.append(
                Site(
                    path,
                    line,
                    inner[2] if inner else "",
                    f"{receiver}.{name}",
                    _hint(text, inner[3] if inner else None, head, line),
                )
            )
    return sites


def _hint(text: str, fn: ast.AST | None, head: str, line: int) -> str:
    if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        return ""
    hint = f"param:{head}" if head in [a.arg for a in fn.args.args] else ""
    for node in ast.walk(fn):
        assigns = isinstance(node, ast.Assign) and node.lineno <= line
        if assigns and any(isinstance(t, ast.Name) and t.id == head for t in node.targets):
            hint = f"= {ast.get_source_segment(text, node.value) or ''}"[:60]
        bound = isinstance(node, ast.withitem) and isinstance(node.optional_vars, ast.Name)
        if bound and node.optional_vars.id == head:
            hint = f"with {ast.get_source_segment(text, node.context_expr) or ''}"[:60]
    return hint


# --- measure --------------------------------------------------------------------------------


def _callers(db: str, tree: str, target: str) -> tuple[list[dict[str, object]], float]:
    """The tool's caller rows for ``target``, and the wall seconds of the whole command."""
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", CLI, "graph", tree, "callers", target, "--db", db, "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - started
    payload = json.loads(proc.stdout)
    rows = payload.get("sites", payload.get("callers", []))
    if rows and isinstance(rows[0], str):  # the old output: caller ids only, all resolved
        rows = [_old_row(r) for r in rows]
    return rows, wall


def _old_row(node: str) -> dict[str, object]:
    path, _, scope = node.partition("::")
    return {"path": path, "scope": scope, "callee": None, "status": "resolved"}


def measure(db: str) -> None:
    gold = [json.loads(line) for line in GOLD.read_text().splitlines() if line.strip()]
    targets = sorted({(g["tree"], g["target"]) for g in gold if g["target"]})
    total = {"gold": 0, "strict": 0, "loose": 0, "rows": 0, "right": 0, "strict_rows": 0}
    total["strict_right"] = 0
    print(
        "tree      target                                               gold strict loose"
        "  prec(strict) prec(all)  wall"
    )
    for tree, target in targets:
        sites = [g for g in gold if g["tree"] == tree and g["target"] == target]
        rows, wall = _callers(db, tree, target)
        keys_gold = {(g["path"], g["scope"], g["callee"]) for g in sites}

        def hit(row: dict[str, object], site: dict[str, object]) -> bool:
            same = (row["path"], row["scope"]) == (site["path"], site["scope"])
            return same and row["callee"] in (None, site["callee"])

        strict = sum(1 for s in sites if any(hit(r, s) for r in rows if r["status"] == "resolved"))
        loose = sum(1 for s in sites if any(hit(r, s) for r in rows))
        right = [
            r
            for r in rows
            if (r["path"], r["scope"], r["callee"]) in keys_gold
            or (r["callee"] is None and any(hit(r, s) for s in sites))
        ]
        strict_rows = [r for r in rows if r["status"] == "resolved"]
        strict_right = [r for r in right if r["status"] == "resolved"]
        total["gold"] += len(sites)
        total["strict"] += strict
        total["loose"] += loose
        total["rows"] += len(rows)
        total["right"] += len(right)
        total["strict_rows"] += len(strict_rows)
        total["strict_right"] += len(strict_right)
        print(
            f"{tree:<9} {target:<52} {len(sites):>4} {strict:>6} {loose:>5}"
            f"  {_ratio(len(strict_right), len(strict_rows)):>12} "
            f"{_ratio(len(right), len(rows)):>9} {wall:5.2f}s"
        )
    print(
        f"all: recall strict {_ratio(total['strict'], total['gold'])}, loose "
        f"{_ratio(total['loose'], total['gold'])} of {total['gold']} sites; precision strict "
        f"{_ratio(total['strict_right'], total['strict_rows'])} "
        f"({total['strict_rows']} rows), all {_ratio(total['right'], total['rows'])} "
        f"({total['rows']} rows)"
    )


def timing(db: str, runs: int) -> None:
    import treeseek
    from treeseek.search.graph import call_sites
    from treeseek.search.graph.call_sites import callers
    from treeseek.search.graph.tree_graph import tree_code_graph

    gold = [json.loads(line) for line in GOLD.read_text().splitlines() if line.strip()]
    targets = sorted({(g["tree"], g["target"]) for g in gold if g["target"]})
    with treeseek.open(db) as database:
        for tree in sorted({t for t, _ in targets}):
            build = _median(lambda: tree_code_graph(database.store, tree), runs)  # noqa: B023
            loaded = tree_code_graph(database.store, tree)
            for t, target in targets:
                if t != tree:
                    continue
                call_sites._PARSED.clear()  # cold: every caller file read and parsed
                cold = _median(lambda: callers(loaded, database.store, tree, target), 1)  # noqa: B023
                query = _median(lambda: callers(loaded, database.store, tree, target), runs)  # noqa: B023
                print(
                    f"{tree:<9} {target:<62} graph build {build * 1000:6.1f} ms  callers cold "
                    f"{cold * 1000:6.1f} ms, warm {query * 1000:5.1f} ms"
                )


def _median(fn: object, runs: int) -> float:
    import statistics

    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()  # type: ignore[operator]
        walls.append(time.perf_counter() - started)
    return statistics.median(walls)


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sites", help="grep the call sites of a method name, for reading")
    s.add_argument("repo")
    s.add_argument("name")
    s.add_argument("--commit", default="HEAD")
    m = sub.add_parser("measure", help="recall/precision of `treeseek graph callers`")
    m.add_argument("db")
    t = sub.add_parser("timing", help="medians: graph build vs callers on the built graph")
    t.add_argument("db")
    t.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if args.command == "sites":
        for site in grep_sites(args.repo, args.commit, args.name):
            print(f"{site.path}:{site.line}\t{site.scope}\t{site.callee}\t{site.hint}")
    elif args.command == "timing":
        timing(args.db, args.runs)
    else:
        measure(args.db)


if __name__ == "__main__":
    main()
