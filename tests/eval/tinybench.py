"""A tiny benchmark written to disk: instances JSONL plus path listings (.jsonl.gz)."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = "zebracorp/quokkalib"
COMMIT_A = "a" * 40
COMMIT_B = "b" * 40

PATHS_A = [
    "README.md",
    "setup.py",
    "quokka/__init__.py",
    "quokka/models/__init__.py",
    "quokka/models/fields.py",
    "quokka/models/query.py",
    "quokka/forms/widgets.py",
    "quokka/forms/fields.py",
    "quokka/utils/dateparse.py",
    "quokka/utils/text.py",
    "docs/ref/models.rst",
    "tests/test_fields.py",
    "tests/test_dateparse.py",
]
PATHS_B = [*PATHS_A, "quokka/cache/backends.py"]


def instance(
    instance_id: str,
    query: str,
    gold: list[str],
    tier: str = "none",
    commit: str = COMMIT_A,
) -> dict[str, Any]:
    return {
        "instance_id": instance_id,
        "repo": REPO,
        "base_commit": commit,
        "query": query,
        "gold_files": gold,
        "gold_files_added": [],
        "tier": tier,
    }


INSTANCES = [
    instance(
        "zebracorp__quokkalib-101",
        "parse_duration in dateparse returns None for negative durations",
        ["quokka/utils/dateparse.py"],
        "medium",
    ),
    instance(
        "zebracorp__quokkalib-102",
        "Model field validation ignores max_length; see quokka/models/fields.py",
        ["quokka/models/fields.py"],
        "easy",
    ),
    instance(
        "zebracorp__quokkalib-103",
        "Widgets render the wrong id attribute for form fields",
        ["quokka/forms/widgets.py", "quokka/forms/fields.py"],
        "hard",
    ),
    instance(
        "zebracorp__quokkalib-104",
        "The cache backend forgets keys after a restart",
        ["quokka/cache/backends.py"],
        "hard",
        COMMIT_B,
    ),
    instance(
        "zebracorp__quokkalib-105",
        "Something is slow somewhere when many things happen",
        ["quokka/models/query.py"],
    ),
]


@dataclass(frozen=True)
class TinyBench:
    dataset: Path
    trees: Path
    instances: list[dict[str, Any]]


def write_bench(
    root: Path, instances: list[dict[str, Any]], listings: dict[tuple[str, str], list[str]]
) -> TinyBench:
    dataset = root / "tiny.jsonl"
    dataset.write_text("".join(json.dumps(i) + "\n" for i in instances), encoding="utf-8")
    trees = root / "tiny-trees.jsonl.gz"
    with gzip.open(trees, "wt", encoding="utf-8") as handle:
        for (repo, commit), paths in listings.items():
            handle.write(json.dumps({"repo": repo, "commit": commit, "paths": paths}) + "\n")
    return TinyBench(dataset, trees, instances)
