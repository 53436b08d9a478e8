"""``treeseek eval --budget``: end to end on a tiny dataset with line- and function-level gold,
trees with contents read from a real bare git repository."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bare_repo import BareRepo
from tinybench import instance
from typer.testing import CliRunner

from treeseek.cli.app import load_commands
from treeseek.eval.context_metrics import file_cover, line_recall, symbol_acc
from treeseek.eval.records import PER_QUERY_FILE, read_records

DURATIONS = b'''"""Parsing durations."""


def parse_duration(text):
    """Parse "1h30m" into seconds."""
    if text.startswith("-"):
        return None
    return 0


def format_duration(seconds):
    return f"{seconds}s"
'''
COLORS = b"def to_rgb(name):\n    return (0, 0, 0)\n"


def test_metrics_by_hand() -> None:
    gold = [("a.py", [(3, 4), (10, 10)]), ("b.py", [(1, 1)])]
    spans = [{"path": "a.py", "start_line": 1, "end_line": 3}, {"path": "c.py", "start_line": 1,
             "end_line": 9}]  # fmt: skip
    assert line_recall(spans, gold) == 1 / 4
    assert file_cover(spans, gold) == 1 / 2
    symbols = ["a.py::f", "a.py::g", "b.py::h"]
    assert symbol_acc(symbols, ["a.py::g", "a.py::<module>"], 1) == 0.0
    assert symbol_acc(symbols, ["a.py::g", "a.py::<module>"], 5) == 1.0
    assert symbol_acc(symbols, ["a.py::<module>"], 5) is None
    assert line_recall(spans, []) is None


def test_eval_with_budgets_end_to_end(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    repo = BareRepo(tmp_path / "one")
    commit = repo.commit(
        {"lib/durations.py": DURATIONS, "lib/colors.py": COLORS, "README.md": b"a library\n"}
    )
    row = instance(
        "one-1", "parse_duration returns None for negative durations", ["lib/durations.py"],
        "none", commit,
    )  # fmt: skip
    row["repo"] = "acme/one"
    row["gold_spans"] = {"lib/durations.py": [[6, 7]]}
    row["gold_symbols"] = ["lib/durations.py::parse_duration"]
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps(row) + "\n")
    out = tmp_path / "runs" / "ctx"
    result = CliRunner().invoke(
        load_commands(),
        ["eval", str(dataset), "--repo", f"acme/one={repo.git_dir}", "--strategy", "flat",
         "--budget", "2000", "--budget", "25", "--out", str(out), "--quiet"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    # piped, the tables are neither wrapped nor cut at 80 columns
    assert "whole files: line recall" in result.output and "…" not in result.output
    (record,) = read_records(out / PER_QUERY_FILE)
    assert [c["budget"]["limit"] for c in record.contexts] == [25, 2000]
    small, big = record.contexts
    for c in record.contexts:
        assert c["budget"]["used"] <= c["budget"]["limit"]
        assert c["context"] and all("text" not in s for s in c["context"])
        assert c["baseline"]["budget"]["used"] <= c["budget"]["limit"]
    assert big["scores"]["line_recall"] == 1.0
    assert big["scores"]["file_cover"] == 1.0
    assert big["scores"]["symbol_acc_at_1"] == 1.0
    assert big["symbols"][0] == "lib/durations.py::parse_duration"
    assert big["baseline"]["scores"]["line_recall"] == 1.0  # the whole file fits
    assert small["baseline"]["scores"]["line_recall"] == 0.0  # its first lines only
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["context"]) == {"25", "2000"}
    assert summary["context"]["2000"]["line_recall"] == 1.0
    report = (out / "report.md").read_text()
    assert "## Budgeted context (line level)" in report and "| 2,000 | 1 |" in report
    # the documented EvalContext fields are the recorded ones
    doc = (Path(__file__).resolve().parents[2] / "docs" / "context.md").read_text()
    section = doc.split("### `EvalContext`", 1)[1].split("\n## ", 1)[0]
    assert set(re.findall(r"^\| `(\w+)` \|", section, re.M)) == set(big)
    # resuming with the same budgets answers nothing again
    again = CliRunner().invoke(
        load_commands(),
        ["eval", str(dataset), "--repo", f"acme/one={repo.git_dir}", "--strategy", "flat",
         "--budget", "25", "--budget", "2000", "--out", str(out), "--quiet"],
    )  # fmt: skip
    assert again.exit_code == 0, again.output
    assert "answered 0" in again.output
