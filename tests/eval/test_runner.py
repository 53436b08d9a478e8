"""End-to-end eval runs on a tiny path-only benchmark: scoring, resume, workers, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tinybench import COMMIT_A, REPO, TinyBench, instance, write_bench

from treeseek.errors import ConfigError
from treeseek.eval.datasets import DatasetError, load_instances, load_path_lists
from treeseek.eval.metrics import score
from treeseek.eval.records import PER_QUERY_FILE, read_records
from treeseek.eval.runner import RunSettings, run_eval
from treeseek.eval.summary import read_summary
from treeseek.eval.universes import PathUniverse


def _settings(bench: TinyBench, **overrides: object) -> RunSettings:
    values: dict[str, object] = {
        "dataset": str(bench.dataset),
        "universe": "paths",
        "strategy": "block",
        "llm": "lexical",
    }
    values.update(overrides)
    return RunSettings(**values)  # type: ignore[arg-type]


def _run(bench: TinyBench, out: Path, db: Path, **kwargs: object):  # type: ignore[no-untyped-def]
    instances = load_instances(bench.dataset)
    universe = PathUniverse(load_path_lists(bench.trees))
    settings = kwargs.pop("settings", None) or _settings(bench)
    return run_eval(instances, settings, universe, db_path=db, out_dir=out, **kwargs)  # type: ignore[arg-type]


def test_a_small_path_only_run_scores_every_instance(tmp_path: Path, tiny_bench: TinyBench) -> None:
    outcome = _run(tiny_bench, tmp_path / "run", tmp_path / "eval.db")
    order = [i["instance_id"] for i in tiny_bench.instances]
    records = read_records(tmp_path / "run" / PER_QUERY_FILE)  # in the order answered
    records.sort(key=lambda r: order.index(r.instance_id))
    assert [r.instance_id for r in records] == order
    assert outcome.ran == 5 and outcome.skipped == 0
    for record, raw in zip(records, tiny_bench.instances, strict=True):
        assert record.error is None
        assert record.scores == score(record.preds, raw["gold_files"])  # rescorable
        assert len(record.preds) == len(set(record.preds)) <= 10
        assert record.navigator == "lexical" and record.strategy == "block"
        assert record.calls >= 1 and record.wall_s > 0
    by_id = {r.instance_id: r for r in records}
    # the full path in the query lets the lexical navigator find the file
    assert "quokka/models/fields.py" in by_id["zebracorp__quokkalib-102"].preds
    assert by_id["zebracorp__quokkalib-102"].scores.mrr > 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["overall"]["n"] == 5 and summary["overall"]["errors"] == 0
    assert set(summary["by_tier"]) == {"easy", "medium", "hard", "none"}
    assert summary["by_gold_count"]["2"]["n"] == 1
    assert summary["by_repo"][REPO]["n"] == 5
    mean_recall = sum(r.scores.recall_at_gold for r in records) / 5
    assert summary["overall"]["recall_at_gold"] == pytest.approx(mean_recall)
    report = (tmp_path / "run" / "report.md").read_text()
    assert "| all | 5 |" in report and "## By tier" in report
    for png in ("metric_by_tier.png", "cost_vs_quality.png"):
        assert (tmp_path / "run" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_run_without_matplotlib_writes_everything_but_the_plots(
    tmp_path: Path, tiny_bench: TinyBench, monkeypatch: pytest.MonkeyPatch
) -> None:
    from treeseek.eval import plots

    monkeypatch.setattr(plots, "available", lambda: False)  # the `eval` extra not installed
    _run(tiny_bench, tmp_path / "run", tmp_path / "eval.db")
    run = tmp_path / "run"
    assert (run / "summary.json").exists() and (run / "report.md").exists()
    assert not list(run.glob("*.png"))


def test_an_interrupted_run_resumes_without_duplicates(
    tmp_path: Path, tiny_bench: TinyBench
) -> None:
    db = tmp_path / "eval.db"
    full = _run(tiny_bench, tmp_path / "full", db)
    first = _run(tiny_bench, tmp_path / "resumed", db, max_instances=2)
    assert first.ran == 2
    assert len(read_records(tmp_path / "resumed" / PER_QUERY_FILE)) == 2
    # a write torn by the interruption is forgotten, not kept as garbage
    with (tmp_path / "resumed" / PER_QUERY_FILE).open("a") as handle:
        handle.write('{"instance_id": "zebracorp__quokka')
    second = _run(tiny_bench, tmp_path / "resumed", db)
    assert (second.ran, second.skipped) == (3, 2)
    records = read_records(tmp_path / "resumed" / PER_QUERY_FILE)
    ids = [r.instance_id for r in records]
    assert len(ids) == len(set(ids)) == 5
    third = _run(tiny_bench, tmp_path / "resumed", db)
    assert (third.ran, third.skipped) == (0, 5)
    assert third.summary.overall.metrics == full.summary.overall.metrics
    run_info = json.loads((tmp_path / "resumed" / "run.json").read_text())
    assert [s["answered"] for s in run_info["sessions"]] == [2, 3, 0]


def test_resuming_with_other_settings_is_refused(tmp_path: Path, tiny_bench: TinyBench) -> None:
    _run(tiny_bench, tmp_path / "run", tmp_path / "eval.db", max_instances=1)
    with pytest.raises(ConfigError, match="other settings"):
        _run(
            tiny_bench,
            tmp_path / "run",
            tmp_path / "eval.db",
            settings=_settings(tiny_bench, strategy="beam"),
        )


def test_k_below_1_is_refused_before_anything_runs(tmp_path: Path, tiny_bench: TinyBench) -> None:
    # before: -k 0 ran every instance and scored each a miss with no predictions
    with pytest.raises(ConfigError, match="-k must be at least 1, got 0"):
        _run(
            tiny_bench, tmp_path / "run", tmp_path / "eval.db", settings=_settings(tiny_bench, k=0)
        )
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"strategy": "nope"}, "unknown strategy 'nope'; choose one of auto, beam, block"),
        ({"ranker": "bogus"}, "unknown ranker 'bogus'; choose one of none, bm25"),
    ],
)
def test_an_unknown_strategy_or_ranker_is_refused_before_anything_runs(
    tmp_path: Path, tiny_bench: TinyBench, override: dict[str, str], message: str
) -> None:
    # before: every instance's tree was built and its query failed, each scored a miss
    with pytest.raises(ConfigError, match=message):
        _run(
            tiny_bench,
            tmp_path / "run",
            tmp_path / "eval.db",
            settings=_settings(tiny_bench, **override),
        )
    assert not (tmp_path / "run").exists()
    assert not (tmp_path / "eval.db").exists()


def test_an_out_that_is_a_file_is_refused_saying_so(tmp_path: Path, tiny_bench: TinyBench) -> None:
    # before: "File exists: out" from mkdir, which does not say what to do
    out = tmp_path / "out"
    out.write_text("notes\n")
    with pytest.raises(ConfigError, match="is a file; give a directory"):
        _run(tiny_bench, out, tmp_path / "eval.db")
    assert out.read_text() == "notes\n"


@pytest.mark.parametrize("body", ["{bad", "[]"])
def test_a_damaged_run_file_is_one_clear_error(
    tmp_path: Path, tiny_bench: TinyBench, body: str
) -> None:
    # before: a JSONDecodeError (or AttributeError) traceback on resume
    _run(tiny_bench, tmp_path / "run", tmp_path / "eval.db", max_instances=1)
    (tmp_path / "run" / "run.json").write_text(body)
    with pytest.raises(ConfigError, match=r"run\.json is not .*; give another --out"):
        _run(tiny_bench, tmp_path / "run", tmp_path / "eval.db")
    summary = tmp_path / "run" / "summary.json"
    summary.write_text(body)
    with pytest.raises(DatasetError, match=r"summary\.json is not .*rerun the eval"):
        read_summary(tmp_path / "run")


def test_the_layers_of_the_files_are_part_of_the_settings(
    tmp_path: Path, tiny_bench: TinyBench
) -> None:
    """A run over files named by other layers (`--layers`) is another run: not resumed."""
    assert "layers" not in _settings(tiny_bench).to_dict()
    old = "treeseek.index.code_hook.CodeIndexHook:2"
    assert _settings(tiny_bench, layers=old).to_dict()["layers"] == old
    _run(tiny_bench, tmp_path / "run", tmp_path / "eval.db", max_instances=1)
    with pytest.raises(ConfigError, match="layers None"):
        _run(
            tiny_bench,
            tmp_path / "run",
            tmp_path / "eval.db",
            settings=_settings(tiny_bench, layers=old),
        )


def test_workers_give_the_same_results_as_inline(tmp_path: Path, tiny_bench: TinyBench) -> None:
    db = tmp_path / "eval.db"
    inline = _run(tiny_bench, tmp_path / "inline", db)
    pooled = _run(tiny_bench, tmp_path / "pooled", db, workers=2)
    a = {r.instance_id: r.preds for r in read_records(tmp_path / "inline" / PER_QUERY_FILE)}
    b = {r.instance_id: r.preds for r in read_records(tmp_path / "pooled" / PER_QUERY_FILE)}
    assert a == b
    assert pooled.summary.overall.metrics == inline.summary.overall.metrics


def test_errors_are_scored_misses_with_their_text(tmp_path: Path) -> None:
    instances = [
        instance("t-1", "dateparse is broken", ["quokka/utils/dateparse.py"]),
        instance("t-2", "   ", ["quokka/utils/text.py"]),  # an empty query: the retriever refuses
    ]
    bench = write_bench(
        tmp_path,
        instances,
        {(REPO, COMMIT_A): ["quokka/utils/dateparse.py", "quokka/utils/text.py"]},
    )
    outcome = _run(bench, tmp_path / "run", tmp_path / "eval.db")
    records = {r.instance_id: r for r in read_records(tmp_path / "run" / PER_QUERY_FILE)}
    assert records["t-1"].error is None
    failed = records["t-2"]
    assert failed.error and failed.preds == [] and failed.scores.recall_at_gold == 0.0
    assert outcome.summary.overall.n == 2 and outcome.summary.overall.errors == 1
