"""Per-query records: one JSON line per finished instance in ``per_query.jsonl``.

A record holds the predictions (so any run can be rescored), the scores, the usage and cost,
the wall time and the error, if any. The file is appended to as instances finish, which is
what makes a run resumable: a rerun skips the ids already in it. A line cut short by an
interrupted write is dropped (and the file repaired) when the file is read back.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from treeseek.eval.datasets import DatasetError
from treeseek.eval.metrics import Scores

PER_QUERY_FILE = "per_query.jsonl"


@dataclass(slots=True)
class QueryRecord:
    instance_id: str
    repo: str
    tier: str
    gold_files: list[str]
    preds: list[str]
    scores: Scores
    strategy: str = ""
    navigator: str = ""
    calls: int = 0
    input_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    llm_latency_s: float = 0.0
    cost_usd: float | None = None
    wall_s: float = 0.0
    error: str | None = None
    #: a small summary of the trace: rounds, rankers used, notable events
    trace: dict[str, Any] = field(default_factory=dict)
    #: ``--budget`` runs: per budget, ``budget`` {limit, used, tokenizer}, ``context`` (spans
    #: without text), ``symbols`` (ranked name paths), ``scores``, and ``baseline`` (the whole
    #: files until the budget is spent: ``budget``, ``context``, ``scores``)
    contexts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def n_gold(self) -> int:
        return len(self.gold_files)

    def to_json(self) -> str:
        data = asdict(self)
        data["n_gold"] = self.n_gold
        return json.dumps(data, ensure_ascii=False, sort_keys=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QueryRecord:
        values = dict(data)
        values.pop("n_gold", None)
        values["scores"] = Scores(**values["scores"])
        return cls(**values)


def read_records(path: Path, repair: bool = False) -> list[QueryRecord]:
    """Records of a ``per_query.jsonl``; a torn last line is dropped (and cut off the file
    when ``repair``), a malformed line elsewhere is an error."""
    if not path.is_file():
        return []
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    complete, tail = lines[:-1], lines[-1]
    records: list[QueryRecord] = []
    for number, line in enumerate(complete, start=1):
        if not line.strip():
            continue
        try:
            records.append(QueryRecord.from_dict(json.loads(line)))
        except (json.JSONDecodeError, TypeError, KeyError) as exc:
            raise DatasetError(f"{path}:{number}: not a per-query record ({exc})") from exc
    if tail.strip() and repair:
        with path.open("r+b") as handle:  # an interrupted append: forget the partial line
            handle.truncate(len(raw) - len(tail))
    return records


class RecordWriter:
    """Appends records, one flushed line each."""

    def __init__(self, path: Path) -> None:
        self._handle: IO[str] = path.open("a", encoding="utf-8")

    def write(self, record: QueryRecord) -> None:
        self._handle.write(record.to_json() + "\n")
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()
