"""The no-LLM default needs no optional extra: ``import treeseek`` and a flat query never import
the LLM SDKs (extra ``llm``) or matplotlib (extra ``eval``); a feature that needs one says
which extra to install."""

from __future__ import annotations

import builtins
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from treeseek.errors import ConfigError

OPTIONAL = ("anthropic", "openai", "matplotlib")

_SCRIPT = """
import json, sys
import treeseek
from treeseek.cli.app import load_commands

load_commands()  # every CLI command module, as `treeseek` loads them
root, db_path = sys.argv[1], sys.argv[2]
with treeseek.open(db_path) as db:
    db.index(root, name="repo")
    result = db.query("repo", "where are node ids derived from paths", k=3)
    graph = db.query("repo", "node ids", strategy="traverse", k=3)
optional = ("anthropic", "openai", "matplotlib")
print(json.dumps({
    "strategy": result.strategy,
    "files": [h.path for h in result.files],
    "traverse": graph.strategy,
    "loaded": sorted(m for m in sys.modules if m.split(".")[0] in optional),
}))
"""


def test_a_flat_query_imports_no_llm_sdk_and_no_matplotlib(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "ids.py").write_text("def node_id_for_path(path):\n    return path\n")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TREESEEK_LLM", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "TREESEEK_LLM_RECORD")
    }
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(root), str(tmp_path / "t.db")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["strategy"] == "flat" and out["files"][0] == "pkg/ids.py"
    assert out["traverse"] == "traverse"
    assert out["loaded"] == []


def _without(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Make ``import NAME`` fail as if the package were not installed."""
    for name in list(sys.modules):
        if name.split(".")[0] in names:
            monkeypatch.delitem(sys.modules, name)
    real = builtins.__import__

    def fake(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] in names:
            raise ImportError(f"No module named {name!r}")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)


def test_the_llm_adapters_name_the_extra_when_the_sdk_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from treeseek.llm.select import navigator_from_spec

    _without(monkeypatch, "anthropic", "openai")
    env = {"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}
    for spec in ("anthropic:m", "openai:m", "openai-compatible:m@http://127.0.0.1:9"):
        with pytest.raises(ConfigError, match=r"pip install 'treeseek\[llm\]'"):
            navigator_from_spec(spec, env=env)
    assert navigator_from_spec("lexical", env=env).name == "lexical"


def test_plots_name_the_extra_and_a_run_skips_them_without_matplotlib(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from treeseek.eval import plots

    _without(monkeypatch, "matplotlib")
    monkeypatch.setattr(plots.importlib.util, "find_spec", lambda name: None)
    assert not plots.available()
    summary: dict[str, Any] = {"run": {"name": "r"}, "by_tier": {}, "overall": {}}
    with pytest.raises(ConfigError, match=r"pip install 'treeseek\[eval\]'"):
        plots.write_plots([summary], tmp_path)
