"""docs/context.md documents every field the JSON answers emit, and nothing else."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from treeseek.context import SCHEMA
from treeseek.database import Database

DOC = Path(__file__).resolve().parents[2] / "docs" / "context.md"


def documented() -> dict[str, set[str]]:
    """``### `Name``` section -> the backticked names of its table's first column."""
    out: dict[str, set[str]] = {}
    current = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^### `(\w+)`", line)
        if heading:
            current = heading.group(1)
            out[current] = set()
        elif line.startswith("## "):
            current = None
        elif current and (cell := re.match(r"^\| `(\w+)` \|", line)):
            out[current].add(cell.group(1))
    return out


def _merge(into: dict[str, set[str]], name: str, items: list[dict[str, Any]]) -> None:
    for item in items:
        into.setdefault(name, set()).update(item)


def emitted(shop: Database) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    question = "Backoff delay with jitter for payment retries"
    for level in ("paths", "outline", "spans", "full"):
        data = shop.query("shop", question, budget=3000, disclose=level).to_dict()
        _merge(found, "Context", [data])
        _merge(found, "Budget", [data["budget"]])
        _merge(found, "Span", data["context"])
        _merge(found, "RankedFile", data["files"])
        _merge(found, "FileOutline", data["outlines"])
        for o in data["outlines"]:
            _merge(found, "OutlineItem", o["items"])
    expanded = shop.expand("shop", "Backoff.jitter").to_dict()
    assert set(expanded) == found["Context"]
    outline = shop.outline("shop", "payments").to_dict()
    _merge(found, "Outline", [outline])
    _merge(found, "FileOutline", outline["files"])
    return found


def test_documented_fields_are_the_emitted_fields(shop: Database) -> None:
    doc = documented()
    got = emitted(shop)
    for name, fields in got.items():
        assert name in doc, f"docs/context.md has no section for {name}"
        assert fields == doc[name], (
            f"{name}: documented {sorted(doc[name])}, emitted {sorted(fields)}"
        )
    assert set(doc) - set(got) == {"EvalContext"}  # checked by the eval test


def test_usage_fields_are_documented(shop: Database) -> None:
    data = shop.query("shop", "invoice total", budget=500).to_dict()
    text = DOC.read_text(encoding="utf-8")
    usage_row = next(line for line in text.splitlines() if line.startswith("| `usage` |"))
    assert set(re.findall(r"`(\w+)`", usage_row)) - {"usage"} == set(data["usage"])


def test_schema_version_is_in_every_answer(shop: Database) -> None:
    assert shop.query("shop", "refund", budget=500).to_dict()["schema"] == SCHEMA
    assert f'`"{SCHEMA}"`' in DOC.read_text(encoding="utf-8")
