"""The public API: what ``import treeseek`` offers is exactly ``treeseek.__all__`` (in the style
of httpx's test), with the query types and every error class; the CLI queries through it."""

from __future__ import annotations

import inspect
import re
import types
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import treeseek
import treeseek.errors

README = Path(__file__).resolve().parents[1] / "README.md"


def test_all_matches_the_public_names() -> None:
    public = {
        name
        for name, value in vars(treeseek).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert treeseek.__all__ == sorted(treeseek.__all__)
    assert len(set(treeseek.__all__)) == len(treeseek.__all__)
    assert set(treeseek.__all__) == public
    for name in treeseek.__all__:
        assert getattr(treeseek, name) is not None


def test_the_query_types_and_every_error_class_are_exported() -> None:
    from treeseek.search.base import FileHit, QueryOptions, Result

    assert (treeseek.Result, treeseek.FileHit, treeseek.QueryOptions) == (
        Result,
        FileHit,
        QueryOptions,
    )
    errors = {
        name
        for name, value in vars(treeseek.errors).items()
        if inspect.isclass(value) and issubclass(value, treeseek.errors.TreeseekError)
    }
    assert errors <= set(treeseek.__all__)
    # ... and the README's list of them names exactly those
    text = README.read_text(encoding="utf-8")
    listed = text[text.index("Every error treeseek raises derives from") :].split("\n\n")[0]
    assert set(re.findall(r"`(?:treeseek\.)?([A-Z]\w+)`", listed)) == errors


def test_the_cli_queries_through_database_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from treeseek.cli.app import load_commands

    for name in ("TREESEEK_LLM", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "TREESEEK_LLM_RECORD"):
        monkeypatch.delenv(name, raising=False)  # no LLM: both default to flat
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "ids.py").write_text("def node_id_for_path(path):\n    return path\n")
    db = ["--db", str(tmp_path / "t.db")]
    app = load_commands()
    runner = CliRunner()
    assert runner.invoke(app, ["index", str(root), "--name", "repo", *db]).exit_code == 0
    calls: list[dict[str, Any]] = []
    original = treeseek.Database.query

    def spy(self: treeseek.Database, tree: str, question: str, **kw: Any) -> treeseek.Result:
        calls.append({"tree": tree, "question": question, **kw})
        return original(self, tree, question, **kw)

    monkeypatch.setattr(treeseek.Database, "query", spy)
    # the cost footer is printed when an LLM was called, or with --stats (issue 10)
    result = runner.invoke(app, ["query", "repo", "node ids from paths", "-k", "3", "--stats", *db])
    assert result.exit_code == 0, result.output
    assert "pkg/ids.py" in result.stdout
    [call] = calls
    assert (call["tree"], call["question"], call["k"]) == ("repo", "node ids from paths", 3)
    with treeseek.open(tmp_path / "t.db") as database:
        python = database.query("repo", "node ids from paths", k=3)
    assert python.strategy == "flat" and "flat via" in result.stderr


def test_the_readme_python_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's ``Python:`` block, verbatim, over a checkout with the paths it names."""
    text = README.read_text(encoding="utf-8")
    block = text.split("Python:\n\n```python\n", 1)[1].split("```", 1)[0]
    checkout = tmp_path / "path" / "to" / "checkout"
    (checkout / "src").mkdir(parents=True)
    (checkout / "src" / "main.py").write_text("def main():\n    return 0\n")
    (checkout / "pkg").mkdir()
    (checkout / "pkg" / "models.py").write_text(
        "class Model:\n"
        "    def save(self, field):\n"
        '        """Save the model; a JSONField that cannot be encoded raises TypeError."""\n'
        "        raise TypeError(field)\n"
    )
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md", "exec"), {})  # the documented example, as written
    out = capsys.readouterr().out
    assert "pkg/models.py" in out and "pkg/models.py::Model.save" in out


def test_the_package_ships_its_type_hints() -> None:
    # PEP 561: without py.typed, mypy/pyright treat `import treeseek` as untyped (Any)
    from importlib.resources import files

    assert files("treeseek").joinpath("py.typed").is_file()
