"""Loading benchmark files and selecting instances."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tinybench import COMMIT_A, COMMIT_B, REPO, TinyBench

from treeseek.eval.datasets import (
    DatasetError,
    load_instances,
    load_path_lists,
    select_instances,
)


def test_loads_instances_and_listings(tiny_bench: TinyBench) -> None:
    instances = load_instances(tiny_bench.dataset)
    assert [i.instance_id for i in instances][:2] == [
        "zebracorp__quokkalib-101",
        "zebracorp__quokkalib-102",
    ]
    assert instances[2].gold_files == ("quokka/forms/widgets.py", "quokka/forms/fields.py")
    assert instances[0].tier == "medium" and instances[0].commit_key == (REPO, COMMIT_A)
    listings = load_path_lists(tiny_bench.trees)
    assert set(listings) == {(REPO, COMMIT_A), (REPO, COMMIT_B)}
    only_b = load_path_lists(tiny_bench.trees, wanted=[(REPO, COMMIT_B)])
    assert set(only_b) == {(REPO, COMMIT_B)}
    assert "quokka/cache/backends.py" in only_b[(REPO, COMMIT_B)]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "not JSON"),
        ("[1]", "JSON object"),
        (json.dumps({"instance_id": "x", "repo": "a/b", "base_commit": "c", "query": "q"}), "gold"),
        (
            json.dumps(
                {
                    "instance_id": "x",
                    "repo": "a/b",
                    "base_commit": "c",
                    "query": "q",
                    "gold_files": [],
                }
            ),
            "empty",
        ),
        (
            json.dumps(
                {
                    "instance_id": "x",
                    "repo": "a/b",
                    "base_commit": "c",
                    "query": "q",
                    "gold_files": ["f"],
                    "tier": "bogus",
                }
            ),
            "tier",
        ),
        (
            json.dumps({"repo": "a/b", "base_commit": "c", "query": "q", "gold_files": ["f"]}),
            "instance_id",
        ),
    ],
)
def test_bad_lines_name_the_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(DatasetError, match=message) as info:
        load_instances(path)
    assert f"{path}:1" in str(info.value)


def test_missing_empty_and_repeated(tmp_path: Path, tiny_bench: TinyBench) -> None:
    with pytest.raises(DatasetError, match="does not exist"):
        load_instances(tmp_path / "nope.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(DatasetError, match="no instances"):
        load_instances(empty)
    twice = tmp_path / "twice.jsonl"
    line = tiny_bench.dataset.read_text().splitlines()[0]
    twice.write_text(line + "\n" + line + "\n")
    with pytest.raises(DatasetError, match="repeated"):
        load_instances(twice)


def test_selection_by_tier_sample_and_limit(tiny_bench: TinyBench) -> None:
    instances = load_instances(tiny_bench.dataset)
    assert [i.tier for i in select_instances(instances, tiers=["hard"])] == ["hard", "hard"]
    sample = select_instances(instances, sample=3, seed=7)
    assert len(sample) == 3
    assert sample == select_instances(instances, sample=3, seed=7)  # seeded
    positions = [instances.index(i) for i in sample]
    assert positions == sorted(positions)  # kept in file order
    assert len(select_instances(instances, sample=99)) == 5
    assert select_instances(instances, limit=2) == instances[:2]
    with pytest.raises(DatasetError, match="tier"):
        select_instances(instances, tiers=["nope"])
    with pytest.raises(DatasetError, match="limit"):
        select_instances(instances, limit=0)
