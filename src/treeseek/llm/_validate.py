"""Turning what a model returned into a validated :class:`RankReply`.

Shared by every navigator that gets ids from outside (providers, scripted replies, replays):

- the tool input is read leniently: a dict, or JSON text of one; a ``{"name": "rank",
  "arguments": {...}}`` wrapper; ``ranked_ids`` given as a JSON string of a list; ids given as
  numbers or as ``{"id": ...}`` / ``{"path": ...}`` objects; ``done`` as ``"true"``/``"false"``;
- a JSON object in free text (no tool call) is found by scanning for the first decodable object
  that carries ``ranked_ids`` (code fences and prose around it are ignored);
- ids in ``request.allowed_ids`` are kept (first occurrence, order preserved); anything else is
  tried as a PATH against the request's candidates (:mod:`treeseek.trees.paths`: exact after
  normalization, never by basename) and otherwise dropped and counted in ``dropped_ids``;
- at most ``pick_limit`` ids are kept.

Every correction is written to ``notes`` and logged.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from treeseek.llm.base import RankReply, RankRequest, Usage
from treeseek.trees.paths import PathResolver

log = logging.getLogger("treeseek.llm")

_WRAPPER_KEYS = ("arguments", "input", "parameters", "args")


@dataclass(frozen=True, slots=True)
class ParsedRank:
    """A rank payload read from a tool call or text, before validation against the request."""

    ranked: list[Any]
    done: bool
    notes: tuple[str, ...] = ()


def parse_rank_payload(payload: object) -> ParsedRank | None:
    """Read a rank tool input (a mapping or JSON text); ``None`` when it is not one."""
    notes: list[str] = []
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except ValueError:
            return None
    if not isinstance(payload, Mapping):
        return None
    if "ranked_ids" not in payload:
        for key in _WRAPPER_KEYS:
            inner = payload.get(key)
            if isinstance(inner, str):
                try:
                    inner = json.loads(inner)
                except ValueError:
                    continue
            if isinstance(inner, Mapping) and "ranked_ids" in inner:
                notes.append(f"rank arguments found wrapped under {key!r}")
                payload = inner
                break
        else:
            return None
    ranked = payload.get("ranked_ids")
    if isinstance(ranked, str):
        try:
            ranked = json.loads(ranked)
            notes.append("ranked_ids was a JSON string; decoded")
        except ValueError:
            ranked = [ranked]
            notes.append("ranked_ids was a single string; read as one id")
    if not isinstance(ranked, list):
        return None
    done_raw = payload.get("done", False)
    if isinstance(done_raw, bool):
        done = done_raw
    elif isinstance(done_raw, str) and done_raw.strip().lower() in ("true", "false"):
        done = done_raw.strip().lower() == "true"
        notes.append(f"done given as the string {done_raw!r}")
    else:
        done = False
        notes.append(f"done {done_raw!r} is not a boolean; read as false")
    return ParsedRank(ranked, done, tuple(notes))


def find_rank_json(text: str) -> ParsedRank | None:
    """The first JSON object in ``text`` that is a rank payload, if any."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            obj, _ = decoder.raw_decode(text, start)
        except ValueError:
            obj = None
        parsed = parse_rank_payload(obj) if obj is not None else None
        if parsed is not None:
            return parsed
        start = text.find("{", start + 1)
    return None


def _as_text(item: object) -> str | None:
    if isinstance(item, bool):
        return None
    if isinstance(item, str):
        return item.strip()
    if isinstance(item, int):
        return str(item)
    if isinstance(item, Mapping):
        for key in ("id", "path"):
            value = item.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool):
                return str(value).strip()
    return None


def build_reply(
    request: RankRequest,
    parsed: ParsedRank,
    *,
    usage: Usage | None = None,
    notes: Sequence[str] = (),
) -> RankReply:
    """Validate ``parsed`` against ``request`` (allowed ids, path resolution, pick limit)."""
    allowed = request.allowed_ids
    by_path: dict[str, str] = {}
    for c in request.candidates:
        by_path.setdefault(c.path.strip("/"), c.id)
    resolver: PathResolver | None = None
    out_notes = list(notes) + list(parsed.notes)
    kept: list[str] = []
    seen: set[str] = set()
    dropped: list[str] = []
    resolved: dict[str, str] = {}
    for item in parsed.ranked:
        text = _as_text(item)
        if not text:
            dropped.append(json.dumps(item) if not isinstance(item, str) else item)
            continue
        node_id: str | None = text if text in allowed else None
        if node_id is None:
            if resolver is None:
                resolver = PathResolver(
                    by_path, tree_root=request.tree_root, path_prefix=request.path_prefix
                )
            match = resolver.resolve(text)
            if match.path is not None:
                node_id = by_path[match.path]
                resolved[text] = node_id
                out_notes.append(f"path {text!r} resolved ({match.kind}) to id {node_id}")
            else:
                dropped.append(text)
                continue
        if node_id in seen:
            continue
        seen.add(node_id)
        kept.append(node_id)
    if dropped:
        out_notes.append(f"dropped {len(dropped)} id(s) outside the allowed set: {dropped}")
        log.warning("rank reply: dropped ids outside the allowed set: %s", dropped)
    if request.pick_limit > 0 and len(kept) > request.pick_limit:
        out_notes.append(f"kept the first {request.pick_limit} of {len(kept)} ids (pick limit)")
        kept = kept[: request.pick_limit]
    for note in parsed.notes:
        log.info("rank reply: %s", note)
    return RankReply(
        ranked_ids=kept,
        done=parsed.done,
        usage=usage or Usage(),
        dropped_ids=dropped,
        resolved_paths=resolved,
        notes=out_notes,
    )
