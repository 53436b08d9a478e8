"""Benchmark files: instances (JSONL) and the path listings of their commits (.jsonl.gz).

An :class:`Instance` carries the gold files, the instance id and the repository name. The
runner hands a retriever only ``Instance.query`` and a tree; everything else is for scoring
and reporting.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treeseek.errors import ConfigError

TIERS = ("easy", "medium", "hard", "none")


class DatasetError(ConfigError):
    """A benchmark file is missing or malformed."""


@dataclass(frozen=True, slots=True)
class Instance:
    instance_id: str
    repo: str  # owner/name
    base_commit: str
    query: str
    gold_files: tuple[str, ...]
    tier: str = "none"
    gold_files_added: tuple[str, ...] = ()
    #: line-level gold: (path, ((start, end), ...)) of the base-commit lines the fix changed
    gold_spans: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = ()
    #: function-level gold: "path::Qual.name" of the defs/classes enclosing those lines
    gold_symbols: tuple[str, ...] = ()

    @property
    def commit_key(self) -> tuple[str, str]:
        return (self.repo, self.base_commit)


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise DatasetError(f"benchmark file {path} does not exist")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}:{number}: not JSON ({exc.msg})") from exc
            if not isinstance(value, dict):
                raise DatasetError(f"{path}:{number}: expected a JSON object")
            yield number, value


def _string(value: dict[str, Any], key: str, where: str) -> str:
    item = value.get(key)
    if not isinstance(item, str) or not item:
        raise DatasetError(f"{where}: {key!r} must be a non-empty string")
    return item


def _strings(value: dict[str, Any], key: str, where: str, required: bool) -> tuple[str, ...]:
    items = value.get(key, None if required else [])
    if not isinstance(items, list) or not all(isinstance(i, str) and i for i in items):
        raise DatasetError(f"{where}: {key!r} must be a list of paths")
    return tuple(items)


def _spans(
    value: dict[str, Any], where: str
) -> tuple[tuple[str, tuple[tuple[int, int], ...]], ...]:
    """``gold_spans``: ``{path: [[start, end], ...]}`` (optional)."""
    raw = value.get("gold_spans", {})
    if not isinstance(raw, dict):
        raise DatasetError(f"{where}: 'gold_spans' must map paths to [[start, end], ...]")
    out: list[tuple[str, tuple[tuple[int, int], ...]]] = []
    for path, ranges in sorted(raw.items()):
        try:
            spans = tuple((int(s), int(e)) for s, e in ranges)
        except (TypeError, ValueError) as exc:
            raise DatasetError(f"{where}: 'gold_spans' of {path!r}: {exc}") from exc
        if any(s < 1 or e < s for s, e in spans):
            raise DatasetError(f"{where}: 'gold_spans' of {path!r}: bad range in {ranges}")
        out.append((str(path), spans))
    return tuple(out)


def load_instances(path: Path) -> list[Instance]:
    """Read a JSONL of ``{instance_id, repo, base_commit, query, gold_files, tier?}``."""
    instances: list[Instance] = []
    seen: set[str] = set()
    for number, value in _lines(path):
        where = f"{path}:{number}"
        gold = _strings(value, "gold_files", where, required=True)
        if not gold:
            raise DatasetError(f"{where}: 'gold_files' is empty; such an instance cannot be scored")
        tier = value.get("tier", "none")
        if tier not in TIERS:
            raise DatasetError(f"{where}: unknown tier {tier!r} (expected one of {TIERS})")
        instance = Instance(
            instance_id=_string(value, "instance_id", where),
            repo=_string(value, "repo", where),
            base_commit=_string(value, "base_commit", where),
            query=_string(value, "query", where),
            gold_files=gold,
            tier=tier,
            gold_files_added=_strings(value, "gold_files_added", where, required=False),
            gold_spans=_spans(value, where),
            gold_symbols=_strings(value, "gold_symbols", where, required=False),
        )
        if instance.instance_id in seen:
            raise DatasetError(f"{where}: instance id {instance.instance_id!r} repeated")
        seen.add(instance.instance_id)
        instances.append(instance)
    if not instances:
        raise DatasetError(f"{path} holds no instances")
    return instances


def load_path_lists(
    path: Path, wanted: Iterable[tuple[str, str]] | None = None
) -> dict[tuple[str, str], tuple[str, ...]]:
    """Read ``{repo, commit, paths}`` lines into (repo, commit) -> paths.

    ``wanted`` limits what is kept in memory (the full dev file holds ~770k paths).
    """
    keep = None if wanted is None else set(wanted)
    listings: dict[tuple[str, str], tuple[str, ...]] = {}
    for number, value in _lines(path):
        where = f"{path}:{number}"
        key = (_string(value, "repo", where), _string(value, "commit", where))
        if keep is not None and key not in keep:
            continue
        listings[key] = _strings(value, "paths", where, required=True)
    return listings


def select_instances(
    instances: Sequence[Instance],
    *,
    tiers: Sequence[str] = (),
    sample: int | None = None,
    seed: int = 0,
    limit: int | None = None,
) -> list[Instance]:
    """Filter by tier, then take a seeded random sample (kept in file order), then the first
    ``limit``."""
    unknown = set(tiers) - set(TIERS)
    if unknown:
        raise DatasetError(f"unknown tier(s) {sorted(unknown)}; expected some of {TIERS}")
    chosen = [i for i in instances if not tiers or i.tier in tiers]
    if sample is not None:
        if sample < 1:
            raise DatasetError("--sample must be at least 1")
        if sample < len(chosen):
            picked = set(random.Random(seed).sample(range(len(chosen)), sample))
            chosen = [inst for n, inst in enumerate(chosen) if n in picked]
    if limit is not None:
        if limit < 1:
            raise DatasetError("--limit must be at least 1")
        chosen = chosen[:limit]
    return chosen
