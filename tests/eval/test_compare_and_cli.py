"""`treeseek eval` from the command line, run comparison, and plots of several runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tinybench import TinyBench
from typer.testing import CliRunner

from treeseek.cli.app import load_commands
from treeseek.errors import ConfigError
from treeseek.eval.compare import compare_runs, paired_bootstrap
from treeseek.eval.metrics import score
from treeseek.eval.records import PER_QUERY_FILE, QueryRecord, RecordWriter
from treeseek.eval.runner import RunSettings
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.strategy import default_strategy

runner = CliRunner()


def _write_run(run_dir: Path, hits: list[bool]) -> None:
    run_dir.mkdir(parents=True)
    writer = RecordWriter(run_dir / PER_QUERY_FILE)
    for n, hit in enumerate(hits):
        preds = ["g.py"] if hit else ["x.py"]
        writer.write(QueryRecord(f"i{n}", "o/r", "none", ["g.py"], preds, score(preds, ["g.py"])))
    writer.close()


def test_paired_bootstrap_is_seeded_and_centered() -> None:
    a = np.array([0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0])
    b = np.array([1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0])
    low, high = paired_bootstrap(a, b, resamples=2000, seed=3)
    assert (low, high) == paired_bootstrap(a, b, resamples=2000, seed=3)
    assert low <= (b - a).mean() <= high
    assert paired_bootstrap(a, a) == (0.0, 0.0)


def test_compare_pairs_by_instance(tmp_path: Path) -> None:
    _write_run(tmp_path / "a", [False] * 30 + [True] * 10)
    _write_run(tmp_path / "b", [True] * 35 + [False] * 5)
    result = compare_runs(tmp_path / "a", tmp_path / "b", resamples=2000)
    assert result.paired == 40 and result.only_a == result.only_b == 0
    recall = next(d for d in result.diffs if d.metric == "recall_at_gold")
    assert recall.mean_a == pytest.approx(0.25) and recall.mean_b == pytest.approx(35 / 40)
    assert recall.diff == pytest.approx(35 / 40 - 0.25)
    assert recall.ci_low > 0 and recall.significant
    same = compare_runs(tmp_path / "a", tmp_path / "a")
    assert all(d.diff == 0 and not d.significant for d in same.diffs)
    with pytest.raises(ConfigError, match="no per_query"):
        compare_runs(tmp_path / "a", tmp_path / "missing")


def test_runs_of_different_datasets_are_not_paired_by_colliding_ids(tmp_path: Path) -> None:
    """Two datasets that number their instances alike (``i0``, ``i1``, ...): the same id is
    another instance, with other gold files; pairing them compared unrelated questions."""
    _write_run(tmp_path / "a", [True, False, True])
    (tmp_path / "b").mkdir()
    writer = RecordWriter(tmp_path / "b" / PER_QUERY_FILE)
    for n in range(3):
        preds = ["h.py"]
        writer.write(QueryRecord(f"i{n}", "o/r", "none", ["h.py"], preds, score(preds, ["h.py"])))
    writer.close()
    with pytest.raises(ConfigError, match=r"3 instances .* other gold files .* i0"):
        compare_runs(tmp_path / "a", tmp_path / "b")


def test_plotting_an_unfinished_run_says_it_did_not_finish(tmp_path: Path) -> None:
    """A run stopped with Ctrl-C has its records but no summary yet: "is it an eval output
    directory?" sent the user looking for the wrong thing."""
    from treeseek.eval.datasets import DatasetError
    from treeseek.eval.summary import read_summary

    _write_run(tmp_path / "a", [True, False])
    with pytest.raises(DatasetError, match=r"did not finish.*rerun its command"):
        read_summary(tmp_path / "a")
    with pytest.raises(DatasetError, match="is it an eval output directory"):
        read_summary(tmp_path)  # no records either: not a run at all


def test_cli_run_compare_and_plot(tmp_path: Path, tiny_bench: TinyBench) -> None:
    app = load_commands()
    db = tmp_path / "eval.db"
    outs = []
    for strategy, ranker in (("block", "none"), ("beam", "bm25")):
        out = tmp_path / f"{strategy}-{ranker}"
        args = ["eval", str(tiny_bench.dataset), "--trees", str(tiny_bench.trees)]
        args += ["--strategy", strategy, "--ranker", ranker, "--out", str(out)]
        args += ["--db", str(db), "--quiet", "--workers", "1"]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert "recall@gold" in result.stdout
        summary = json.loads((out / "summary.json").read_text())
        assert summary["run"]["strategy"] == strategy and summary["overall"]["n"] == 5
        outs.append(out)

    result = runner.invoke(app, ["eval", "compare", str(outs[0]), str(outs[1])])
    assert result.exit_code == 0, result.output
    assert "recall_at_gold" in result.stdout and "95% CI" in result.stdout

    plots = tmp_path / "plots"
    result = runner.invoke(app, ["eval", "plot", str(outs[0]), str(outs[1]), "--out", str(plots)])
    assert result.exit_code == 0, result.output
    for name in ("recall_at_gold_by_tier.png", "cost_vs_recall_at_gold.png"):
        assert (plots / name).read_bytes()[:4] == b"\x89PNG"
    table = (plots / "results.md").read_text()
    assert "block-none" in table and "beam-bm25" in table


def test_cli_rejects_bad_input_clearly(tmp_path: Path, tiny_bench: TinyBench) -> None:
    app = load_commands()
    both = ["eval", str(tiny_bench.dataset), "--trees", str(tiny_bench.trees), "--repo", "a/b=x"]
    result = runner.invoke(app, both)
    assert result.exit_code == 1 and "not both" in result.output
    result = runner.invoke(app, ["eval", str(tiny_bench.dataset), "--repo", "nonsense"])
    assert result.exit_code == 1 and "OWNER/NAME=GIT_DIR" in result.output
    result = runner.invoke(app, ["eval", str(tmp_path / "none.jsonl"), "--trees", "x.gz"])
    assert result.exit_code == 1 and "does not exist" in result.output
    layers = ["eval", str(tiny_bench.dataset), "--trees", str(tiny_bench.trees), "--layers", ""]
    result = runner.invoke(app, layers)
    assert result.exit_code == 1 and "--layers names per-commit files" in result.output


def test_eval_defaults_to_the_strategy_query_defaults_to(
    tmp_path: Path, tiny_bench: TinyBench, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the rule `treeseek query` and Database.query apply when no strategy is named
    assert default_strategy(LexicalNavigator()) == "flat"
    for name in ("TREESEEK_LLM", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "TREESEEK_LLM_RECORD"):
        monkeypatch.delenv(name, raising=False)
    assert RunSettings("d.jsonl", "paths").strategy == "flat"  # lexical: no LLM
    assert RunSettings("d.jsonl", "paths", llm="anthropic:m").strategy == "auto"
    assert RunSettings("d.jsonl", "paths", strategy="block").strategy == "block"
    out = tmp_path / "default"
    args = ["eval", str(tiny_bench.dataset), "--trees", str(tiny_bench.trees), "--out", str(out)]
    result = runner.invoke(load_commands(), [*args, "--db", str(tmp_path / "e.db"), "--quiet"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["strategy"] == "flat" and summary["run"]["llm"] == "lexical"
    records = [json.loads(line) for line in (out / PER_QUERY_FILE).read_text().splitlines()]
    assert len(records) == 5 and not any(r["error"] for r in records)
    assert {r["strategy"] for r in records} == {"flat"}
