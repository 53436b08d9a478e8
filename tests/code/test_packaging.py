"""Console scripts from packaging metadata: parsing each file kind, and the commands of a real
indexed tree through the graph (``treeseek graph T entrypoints``) and the retrieval layers."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

import treeseek
from treeseek.cli.app import load_commands
from treeseek.code.packaging import MAX_SCRIPTS, packaging_entrypoints, split_handler
from treeseek.index.code_hook import CodeIndexHook
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import SearchContext
from treeseek.search.graph.items import retrieve_items
from treeseek.search.graph.tree_graph import tree_code_graph

PYPROJECT = """\
[build-system]
requires = ["hatchling"]

[project]
name = "shop"

[project.scripts]
shop = "shop.cli:main"
"shop-admin" = "shop.admin:Tool.run [extra]"

[project.gui-scripts]
shop-gui = "shop.gui:start"

[tool.poetry.scripts]
legacy = "shop.legacy:run"
tabled = { reference = "shop.cli:main", type = "console" }
"""


def _rows(path: str, text: str) -> list[tuple[str, str, str, str | None, int]]:
    return [
        (e.entry_type, e.framework, e.route_or_command, e.handler, e.line)
        for e in packaging_entrypoints(path, textwrap.dedent(text))
    ]


def test_pyproject_scripts_with_their_lines() -> None:
    assert _rows("pyproject.toml", PYPROJECT) == [
        ("cli", "console_scripts", "shop", "shop.cli:main", 8),
        ("cli", "console_scripts", "shop-admin", "shop.admin:Tool.run", 9),
        ("gui", "gui_scripts", "shop-gui", "shop.gui:start", 12),
        ("cli", "poetry", "legacy", "shop.legacy:run", 15),
        ("cli", "poetry", "tabled", "shop.cli:main", 16),
    ]


def test_pyproject_inline_and_dotted_tables() -> None:
    inline = """\
        [project]
        name = "x"
        scripts = { x = "x.main:run" }
        """
    assert _rows("sub/pyproject.toml", inline) == [("cli", "console_scripts", "x", "x.main:run", 3)]
    dotted = 'name = "y"\nproject.scripts.y = "y:main"\n'
    assert _rows("pyproject.toml", dotted) == [("cli", "console_scripts", "y", "y:main", 2)]


def test_setup_cfg_console_and_gui_scripts() -> None:
    cfg = """\
        [metadata]
        name = shop

        [options.entry_points]
        console_scripts =
            shop = shop.cli:main
            shop-mod = shop.tool
        gui_scripts =
            shop-gui = shop.gui:start [gui]
        other.group =
            ignored = shop.plugin:Plugin
        """
    assert _rows("setup.cfg", cfg) == [
        ("cli", "console_scripts", "shop", "shop.cli:main", 6),
        ("cli", "console_scripts", "shop-mod", "shop.tool", 7),
        ("gui", "gui_scripts", "shop-gui", "shop.gui:start", 9),
    ]


def test_setup_py_dict_name_and_string_forms() -> None:
    literal = """\
        from setuptools import setup

        setup(
            name="shop",
            entry_points={
                "console_scripts": [
                    "shop = shop.cli:main",
                    "shop-admin=shop.admin:Tool.run",
                ],
                "gui_scripts": "shop-gui = shop.gui:start",
            },
        )
        """
    assert _rows("setup.py", literal) == [
        ("cli", "console_scripts", "shop", "shop.cli:main", 7),
        ("cli", "console_scripts", "shop-admin", "shop.admin:Tool.run", 8),
        ("gui", "gui_scripts", "shop-gui", "shop.gui:start", 10),
    ]
    named = """\
        import setuptools
        ENTRY = {"console_scripts": ["tool = pkg.tool:main"]}
        setuptools.setup(name="pkg", entry_points=ENTRY)
        """
    assert _rows("setup.py", named) == [("cli", "console_scripts", "tool", "pkg.tool:main", 2)]


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("pyproject.toml", "[project.scripts\nx = 'a:b'\n"),  # not TOML
        ("pyproject.toml", "[project]\nscripts = 3\n"),  # not a table
        ("pyproject.toml", '[project.scripts]\nx = 3\ny = "not a reference!"\n'),
        ("setup.cfg", "[options.entry_points\nconsole_scripts =\n  x = a:b\n"),
        ("setup.cfg", "[options]\nzip_safe = False\n"),
        ("setup.py", "setup(entry_points=\n"),  # not Python
        ("setup.py", "setup(entry_points=make_entry_points())\n"),
        ("README.md", "[project.scripts]\nx = 'a:b'\n"),  # not a packaging file
        # nested past the parsers' recursion limits: nothing, not a crash
        ("pyproject.toml", "[project]\nx = " + "[" * 100_000 + "]" * 100_000 + "\n"),
        ("setup.py", "setup(entry_points=" + "[" * 100_000 + "]" * 100_000 + ")\n"),
    ],
)
def test_malformed_or_other_files_give_nothing(path: str, text: str) -> None:
    assert packaging_entrypoints(path, text) == []


def test_scripts_per_file_are_bounded() -> None:
    text = "[project.scripts]\n" + "".join(f'c{i} = "m:f{i}"\n' for i in range(MAX_SCRIPTS + 50))
    assert len(packaging_entrypoints("pyproject.toml", text)) == MAX_SCRIPTS


def test_split_handler() -> None:
    assert split_handler("pkg.mod:Obj.attr") == ("pkg.mod", ["Obj", "attr"])
    assert split_handler("pkg.mod") == ("pkg.mod", [])


# -- a real tree: a src-layout package beside a flat-layout tool, in one repository --------

TREE = {
    "pyproject.toml": PYPROJECT,
    "src/shop/__init__.py": "",
    "src/shop/cli/__init__.py": "from shop.cli.app import main\n",
    "src/shop/cli/app.py": "def main():\n    return 0\n",
    "src/shop/admin.py": "class Tool:\n    def run(self):\n        return 1\n",
    "src/shop/gui.py": "def other():\n    return 2\n",
    "tools/setup.py": (
        "from setuptools import setup\n"
        "setup(entry_points={'console_scripts': ['bump = bumper:main']})\n"
    ),
    "tools/bumper.py": "def main():\n    return 3\n",
}


def _write_tree(root: Path) -> Path:
    for rel, text in TREE.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    root = _write_tree(tmp_path / "repo")
    db_path = tmp_path / "p.db"
    with treeseek.open(db_path) as db:
        db.index(root, name="shop")
    return db_path


def test_console_scripts_resolve_to_their_functions(shop: Path) -> None:
    with treeseek.open(shop) as db:
        lazy = db.code_entrypoints("shop")  # the declaring files only, not the graph
        loaded = tree_code_graph(db.store, "shop")
    assert lazy == loaded.resolved.entrypoints
    got = {
        e.entrypoint.route_or_command: (e.path, e.handler_path, e.handler_symbol)
        for e in loaded.resolved.entrypoints
    }
    assert got == {
        # re-exported by the package's __init__.py: found where it is defined
        "shop": ("pyproject.toml", "src/shop/cli/app.py", "main"),
        "shop-admin": ("pyproject.toml", "src/shop/admin.py", "Tool.run"),
        # the module exists, the object does not: the module, never a guess
        "shop-gui": ("pyproject.toml", "src/shop/gui.py", None),
        # no such module
        "legacy": ("pyproject.toml", None, None),
        "tabled": ("pyproject.toml", "src/shop/cli/app.py", "main"),
        # a setup.py in a subdirectory: its modules are found from it
        "bump": ("tools/setup.py", "tools/bumper.py", "main"),
    }


def test_graph_command_lists_console_scripts(shop: Path) -> None:
    runner = CliRunner()
    app = load_commands()
    result = runner.invoke(app, ["graph", "shop", "entrypoints", "--json", "--db", str(shop)])
    assert result.exit_code == 0, result.output
    rows = {r["route_or_command"]: r for r in json.loads(result.stdout)["entrypoints"]}
    assert rows["shop"] == {
        "path": "pyproject.toml",
        "entry_type": "cli",
        "framework": "console_scripts",
        "route_or_command": "shop",
        "handler": "shop.cli:main",
        "handler_path": "src/shop/cli/app.py",
        "handler_symbol": "main",
        "line": 8,
    }
    text = runner.invoke(app, ["graph", "shop", "entrypoints", "--db", str(shop)]).stdout
    lines = {line.split()[2]: line for line in text.splitlines()}
    assert lines["shop"].endswith("-> shop.cli:main (src/shop/cli/app.py::main)")
    assert lines["shop-gui"].endswith("-> shop.gui:start (src/shop/gui.py)")
    assert lines["legacy"].endswith("-> shop.legacy:run (?)")


def test_retrieval_layer_shows_console_scripts(tmp_path: Path) -> None:
    root = _write_tree(tmp_path / "repo")
    with treeseek.open(tmp_path / "r.db", hooks=[CodeIndexHook()]) as db:
        db.index(root, name="shop")
        ctx = SearchContext(store=db.store, tree=db.tree("shop"), navigator=LexicalNavigator())
        items = retrieve_items(ctx, "the bump console script of the tools", limit=50)
    entries = {i.title: i for i in items if i.layer == "C3_ENTRYPOINTS"}
    assert entries["bump"].source == "tools/setup.py"
    assert entries["bump"].metadata["framework"] == "console_scripts"
    assert entries["bump"].metadata["handler_symbol_id"] == "tools/bumper.py::main"
