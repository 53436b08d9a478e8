"""A 3-instance sample of the real benchmark, path only (skipped when the files are absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from treeseek.eval.datasets import load_instances, load_path_lists, select_instances
from treeseek.eval.records import PER_QUERY_FILE, read_records
from treeseek.eval.runner import RunSettings, run_eval
from treeseek.eval.universes import PathUniverse

BENCH = Path(__file__).resolve().parents[2].parent / "shared" / "bench"
DATASET = BENCH / "swebench-verified-dev.jsonl"
TREES = BENCH / "swebench-verified-dev-trees.jsonl.gz"


@pytest.mark.skipif(not (DATASET.is_file() and TREES.is_file()), reason="bench files absent")
def test_three_real_instances_path_only(tmp_path: Path) -> None:
    instances = select_instances(load_instances(DATASET), sample=3, seed=1)
    universe = PathUniverse(load_path_lists(TREES, {i.commit_key for i in instances}))
    settings = RunSettings(str(DATASET), "paths", strategy="block", llm="lexical", sample=3, seed=1)
    outcome = run_eval(
        instances, settings, universe, db_path=tmp_path / "e.db", out_dir=tmp_path / "run"
    )
    records = read_records(tmp_path / "run" / PER_QUERY_FILE)
    assert len(records) == 3 and all(r.error is None for r in records)
    assert all(r.preds for r in records)
    assert outcome.summary.overall.n == 3
