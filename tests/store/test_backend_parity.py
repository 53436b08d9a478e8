"""Differential: two real trees indexed into SQLite and into PostgreSQL answer every read alike.

The trees are treeseek's own packages (real Python code with imports, calls, classes,
entrypoints) and its docs. Every read command of the CLI runs with ``--json`` on both
databases: queries (flat, budgeted, each disclosure level, Beam and Block with the lexical
navigator, graph walk), show, outline, expand, cat, every graph relation, ``trees`` and the
freshness it reports after files changed on disk. The outputs must be the same text once
times, timestamps and the database's location are masked; ``db check`` differs only in the
backend's own checks.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from typer.testing import CliRunner

from treeseek.cli import app
from treeseek.cli.app import load_commands

ROOT = Path(__file__).resolve().parents[2]
TREES: dict[str, tuple[str, ...]] = {
    "core": ("src/treeseek/store", "src/treeseek/trees", "src/treeseek/text", "src/treeseek/llm"),
    "searching": ("src/treeseek/search", "src/treeseek/rank", "docs"),
}
QUESTIONS: dict[str, tuple[str, ...]] = {
    "core": (
        "where are node ids derived from paths",
        "advisory lock serializes two writers of one tree",
    ),
    "searching": ("how does block search pack candidates into blocks",),
}
#: values that differ between two runs on any backend (times, timestamps, locations)
VOLATILE = re.compile(
    r'"(\w*_s|\w*_ms|seconds|built_at|updated_at|indexed_at|location)": '
    r'("[^"]*"|[-0-9.e]+|null)'
)
STALE_SINCE = re.compile(r"stale since \S+")


def _tree_copy(base: Path, parts: tuple[str, ...]) -> Path:
    for part in parts:
        shutil.copytree(ROOT / part, base / part, ignore=shutil.ignore_patterns("__pycache__"))
    return base


def _mask(text: str) -> str:
    return STALE_SINCE.sub("stale since T", VOLATILE.sub(r'"\1": X', text))


class Cli:
    def __init__(self, db: str) -> None:
        self.db = db
        self.runner = CliRunner()

    def __call__(self, *args: str) -> tuple[int, str]:
        result = self.runner.invoke(app, [*args, "--db", self.db], catch_exceptions=False)
        return result.exit_code, result.output


def _read_commands(lite: Cli) -> list[list[str]]:
    """The commands to compare; symbol names and answer items come from the SQLite answers."""
    commands: list[list[str]] = [["trees", "--json"]]
    for tree, questions in QUESTIONS.items():
        commands.append(["show", tree, "-d", "3", "--json"])
        commands.append(["graph", tree, "entrypoints", "--json"])
        for q in questions:
            commands.append(["query", tree, q, "--strategy", "flat", "--json"])
            commands.append(["query", tree, q, "--budget", "3000", "--json"])
            for level in ("paths", "outline", "spans", "full"):
                commands.append(
                    ["query", tree, q, "--disclose", level, "--budget", "2500", "--json"]
                )
            for strategy in ("beam", "block"):
                commands.append(["query", tree, q, "--strategy", strategy, "--json"])
            code, out = lite("query", tree, q, "--budget", "3000", "--json")
            assert code == 0, out
            answer = json.loads(out)
            files = [f["path"] for f in answer["files"][:2]]
            for path in files:
                commands += [
                    ["cat", tree, path, "--json"],
                    ["expand", tree, path, "--budget", "500", "--json"],
                    ["expand", tree, f"{path}:1-12", "--json"],
                    ["outline", tree, path, "--json"],
                ]
                for relation in ("importers", "imports", "neighbours"):
                    commands.append(["graph", tree, relation, path, "--json"])
                commands.append(["graph", tree, "walk", path, "--query", q, "--json"])
                code, out = lite("outline", tree, path, "--json")
                items = [i["name_path"] for f in json.loads(out)["files"] for i in f["items"]]
                for name in items[:3]:
                    commands.append(["expand", tree, name, "--json"])
                    for relation in (
                        "callers",
                        "callees",
                        "subclasses",
                        "superclasses",
                        "members",
                        "neighbours",
                    ):
                        commands.append(["graph", tree, relation, name, "--json"])
                    commands.append(["graph", tree, "neighbours", name, "--hops", "2", "--json"])
    return commands


def test_sqlite_and_postgres_answer_every_read_alike(
    tmp_path: Path, postgres_url: Callable[[], str]
) -> None:
    load_commands()
    sources = {name: _tree_copy(tmp_path / name, parts) for name, parts in TREES.items()}
    lite, pg = Cli(str(tmp_path / "lite.db")), Cli(postgres_url())
    for cli in (lite, pg):
        for name, source in sources.items():
            code, out = cli("index", str(source), "--name", name)
            assert code == 0, out
    commands = _read_commands(lite)
    # files change on disk after indexing: both report the same freshness
    changed = sources["core"] / "src/treeseek/trees/model.py"
    changed.write_text(changed.read_text() + "\n# changed\n")
    (sources["core"] / "src/treeseek/added.py").write_text("X = 1\n")
    (sources["searching"] / "docs/llm.md").unlink()
    commands.append(["trees", "--json"])
    commands.append(["query", "core", "node ids", "--json"])
    differ: list[str] = []
    codes: dict[int, int] = {}
    for command in commands:
        a, b = lite(*command), pg(*command)
        codes[a[0]] = codes.get(a[0], 0) + 1
        if (a[0], _mask(a[1])) != (b[0], _mask(b[1])):
            differ.append(
                f"{command}: sqlite {a[0]} {a[1][:300]!r} / postgres {b[0]} {b[1][:300]!r}"
            )
    assert not differ, "\n".join(differ[:5])
    assert len(commands) > 100 and codes[0] > 0.8 * len(commands)  # mostly real answers
    trees = json.loads(lite("trees", "--json")[1])["trees"]
    stale = {t["name"]: t["freshness"]["stale"] for t in trees}
    assert stale == {"core": True, "searching": True}
    # db check: the same verdict and the shared invariants
    (ca, oa), (cb, ob) = lite("db", "check", "--json"), pg("db", "check", "--json")
    checks_a, checks_b = json.loads(oa), json.loads(ob)
    assert ca == cb == 0 and checks_a["problems"] == checks_b["problems"] == []
    shared = {"nodes whose parent is missing", "stored files whose content is missing"}
    assert shared <= set(checks_a["checks"]) & set(checks_b["checks"])
