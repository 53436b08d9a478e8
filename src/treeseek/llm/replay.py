"""Recorded rank calls: the JSONL replay format, and a navigator wrapper that records it.

One line per call::

    {"key": "...", "navigator": "anthropic:claude-sonnet-4-6", "query": "...",
     "candidates": [["n1", "src", "directory"], ...], "pick_limit": 3,
     "ranked_ids": ["n1"], "ranked_paths": ["src"], "done": false,
     "usage": {"calls": 1, "input_tokens": 812, ...}}

``key`` identifies the request by its query and candidate paths (not by aliases or call order:
parallel block calls finish in any order), so a replay answers each request with the reply
recorded for the same query and candidates. ``ranked_paths`` lets a replay map answers onto
the ids of the replaying run even if aliases were assigned differently.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from treeseek.errors import ConfigError
from treeseek.llm.base import Navigator, RankReply, RankRequest, Usage


def request_key(request: RankRequest) -> str:
    h = hashlib.sha256()
    h.update(request.query.encode("utf-8", "surrogatepass"))
    for c in request.candidates:
        h.update(b"\0" + c.path.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]


#: the fields every recorded call has (the others have defaults)
_REQUIRED = ("key", "ranked_ids", "done")


@dataclass(slots=True)
class RecordedCall:
    key: str
    ranked_ids: list[str]
    done: bool
    ranked_paths: list[str] | None = None
    usage: Usage = field(default_factory=Usage)
    navigator: str = ""
    query: str = ""
    candidates: list[list[str]] = field(default_factory=list)
    pick_limit: int = 0

    def to_json(self) -> str:
        # ASCII escapes: a non-UTF-8 file name (surrogate-escaped) still writes and reads back
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, line: str, where: str) -> RecordedCall:
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            missing = [f.name for f in fields(cls) if f.name in _REQUIRED and f.name not in data]
            if missing:
                raise ValueError(f"no {', '.join(repr(m) for m in missing)}")
            usage_raw = data.pop("usage", None) or {}
            known = {f.name for f in fields(Usage)}
            usage = Usage(**{k: v for k, v in usage_raw.items() if k in known})
            allowed = {f.name for f in fields(cls)}
            call = cls(usage=usage, **{k: v for k, v in data.items() if k in allowed})
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"{where}: not a recorded rank call: {exc}") from exc
        if not isinstance(call.key, str) or not isinstance(call.ranked_ids, list):
            raise ConfigError(f"{where}: a recorded call needs 'key' and a 'ranked_ids' list")
        return call


def read_replay(path: str | Path) -> list[RecordedCall]:
    """The calls of a replay file, in file order; a clear error for a bad file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read replay file {p}: {exc.strerror or exc}") from exc
    calls = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            calls.append(RecordedCall.from_json(line, f"{p}:{n}"))
    return calls


def record_of(request: RankRequest, reply: RankReply, navigator: str) -> RecordedCall:
    path_of = {c.id: c.path for c in request.candidates}
    return RecordedCall(
        key=request_key(request),
        ranked_ids=list(reply.ranked_ids),
        done=reply.done,
        ranked_paths=[path_of[i] for i in reply.ranked_ids if i in path_of],
        usage=reply.usage,
        navigator=navigator,
        query=request.query,
        candidates=[[c.id, c.path, c.type] for c in request.candidates],
        pick_limit=request.pick_limit,
    )


class RecordingNavigator(Navigator):
    """Wraps a navigator and appends every call to a JSONL replay file."""

    def __init__(self, inner: Navigator, path: str | Path) -> None:
        self.inner = inner
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.touch()
        except OSError as exc:
            raise ConfigError(
                f"cannot write replay file {self.path}: {exc.strerror or exc}"
            ) from exc
        self.name = inner.name
        self.supports_cache = inner.supports_cache
        self._lock = threading.Lock()

    def rank(self, request: RankRequest) -> RankReply:
        reply = self.inner.rank(request)
        line = record_of(request, reply, self.inner.name).to_json()
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
        return reply
