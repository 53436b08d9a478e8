"""The one bounded reply parser: what a model returned, turned into a validated :class:`RankReply`.

Shared by every navigator that gets ids from outside (providers, scripted replies, replays).
Everything here is bounded, so a hostile reply cannot crash a query or stall it:

- **size**: a provider body, a tool input given as text and the reply text are read only up to
  :attr:`ReplyLimits.max_bytes` (default 1 MiB; a rank reply is a few hundred bytes);
- **nesting**: JSON is measured in one linear pass before it is decoded
  (:func:`json_depth`: strings skipped by one regular expression, brackets counted with numpy),
  and text nested deeper than :attr:`ReplyLimits.max_depth` (64) is refused, so the C decoder
  never recurses far (no ``RecursionError``); objects that arrive already decoded are walked
  iteratively with the same bounds;
- **time**: linear in the reply's size, and small: bodies and tool inputs are measured and
  decoded at C/numpy speed; the reply text (read only when there is no usable tool call) is
  scanned once for balanced ``{...}`` spans (:func:`json_spans`) over its first
  :attr:`ReplyLimits.max_scan_chars` (32 Ki) characters, where a model's answer is; each
  character belongs to at most one span tried, and at most :attr:`ReplyLimits.max_spans`
  spans are decoded (no retrying ``raw_decode`` at every ``{``, which was quadratic);
- **ids**: at most :attr:`ReplyLimits.max_ids` (1,000) returned items are looked at; dropped ids
  are kept shortened, and notes and logs show a count and the first few.

A reply that cannot be used raises :class:`~treeseek.errors.LLMResponseError` from the
``read_*`` functions (the adapters turn that into a corrective call, then an empty ranking);
:func:`build_reply` always returns a valid :class:`RankReply`.

What is read leniently: the tool input as a dict, or JSON text of one; a ``{"name": "rank",
"arguments": {...}}`` wrapper; ``ranked_ids`` given as a JSON string of a list; ids given as
numbers or as ``{"id": ...}`` / ``{"path": ...}`` objects; ``done`` as ``"true"``/``"false"``; a
JSON object in free text (no tool call), code fences and prose around it ignored.

Ids in ``request.allowed_ids`` are kept (first occurrence, order preserved); anything else is
tried as a PATH against the request's candidates (:mod:`treeseek.trees.paths`, per
``path-resolution.md``: exact after normalization, never by basename) and otherwise dropped and
counted in ``dropped_ids``; at most ``pick_limit`` ids are kept.
"""

from __future__ import annotations

import json
import logging
import re
import reprlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from treeseek.errors import ConfigError, LLMResponseError
from treeseek.llm.base import RankReply, RankRequest, Usage
from treeseek.trees.paths import PathResolver

log = logging.getLogger("treeseek.llm")

_WRAPPER_KEYS = ("arguments", "input", "parameters", "args")
#: dropped ids shown in notes and logs (the rest are counted)
SHOWN_DROPPED = 20
#: a dropped id is kept at most this long (a model may return megabytes as one "id")
MAX_ID_CHARS = 200
#: path resolutions logged one by one per reply (the rest are summarized)
LOGGED_RESOLUTIONS = 20


@dataclass(frozen=True, slots=True)
class ReplyLimits:
    """Bounds of one reply. Real rank replies are far below all three."""

    max_bytes: int = 1 << 20  # a body, a tool input's text, or the reply text (bytes / chars)
    max_depth: int = 64  # JSON nesting (a rank payload needs 4)
    max_ids: int = 1000  # returned items looked at (a block offers at most a few hundred)
    max_scan_chars: int = 1 << 15  # reply text searched for a JSON rank object
    max_spans: int = 1000  # balanced {...} spans of the text decoded at most

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_depth", "max_ids", "max_scan_chars", "max_spans"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"reply limit {name} must be a positive integer, got {value!r}")


DEFAULT_LIMITS = ReplyLimits()


@dataclass(frozen=True, slots=True)
class ParsedRank:
    """A rank payload read from a tool call or text, before validation against the request."""

    ranked: list[Any]
    done: bool
    notes: tuple[str, ...] = ()


_preview_repr = reprlib.Repr()
_preview_repr.maxlevel = 3
_preview_repr.maxstring = 120
_preview_repr.maxother = 120
_preview_repr.maxlist = _preview_repr.maxdict = _preview_repr.maxtuple = 8


def preview(value: object, limit: int = 200) -> str:
    """A short, bounded ``repr`` of anything a model returned (never recursive, never huge)."""
    if isinstance(value, str | bytes):
        text = repr(value[:limit]) + ("..." if len(value) > limit else "")
    else:
        text = _preview_repr.repr(value)
    return text if len(text) <= limit + 5 else text[:limit] + "..."


# -- linear JSON measurement -----------------------------------------------------------------
#: a JSON string, or an unterminated one running to the end (never fails, so never rescans)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*+(?:"|\\?\Z)', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_OPENERS = frozenset(b"[{")


def json_depth(text: str) -> int:
    """The deepest bracket nesting of ``text`` outside strings, in linear time.

    An upper bound of how deep the JSON decoder would recurse on it (it stops at the first
    mismatched bracket, before which this count is exact).
    """
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if not brackets:
        return 0
    arr = np.frombuffer(brackets.encode("ascii"), dtype=np.uint8)
    steps = np.where((arr == ord("[")) | (arr == ord("{")), 1, -1).astype(np.int64)
    return int(np.cumsum(steps).max())


def _measure(value: object, limits: ReplyLimits) -> None:
    """Refuse an already-decoded value nested deeper than the limit or with too many parts
    (an iterative walk; stops as soon as a bound is passed)."""
    budget = limits.max_bytes
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        budget -= 1
        if budget < 0:
            raise LLMResponseError(f"reply has more than {limits.max_bytes} values")
        if isinstance(item, Mapping):
            children: Iterator[object] = iter(item.values())
        elif isinstance(item, list | tuple):
            children = iter(item)
        elif isinstance(item, str):
            budget -= len(item) // 16
            continue
        else:
            continue
        if depth > limits.max_depth:
            raise LLMResponseError(f"reply nested deeper than {limits.max_depth} levels")
        stack.extend((child, depth + 1) for child in children)


def loads_bounded(text: str | bytes, limits: ReplyLimits = DEFAULT_LIMITS) -> Any:
    """``json.loads`` after the size and depth checks; LLMResponseError on anything unusable."""
    if len(text) > limits.max_bytes:
        raise LLMResponseError(f"reply of {len(text)} bytes is over the {limits.max_bytes} cap")
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    depth = json_depth(text)
    if depth > limits.max_depth:
        raise LLMResponseError(f"reply JSON nested {depth} deep, over the {limits.max_depth} limit")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: cannot happen after the check
        raise LLMResponseError(f"reply is not valid JSON: {str(exc)[:120]}") from None


def json_spans(
    text: str, max_depth: int = DEFAULT_LIMITS.max_depth, max_spans: int = DEFAULT_LIMITS.max_spans
) -> list[tuple[int, int]]:
    """Balanced ``{...}`` spans of ``text`` worth decoding, in order, in one linear pass.

    Outside objects only ``{`` matters (prose quotes and brackets are ignored); inside one,
    strings are skipped whole and brackets must match. A span is returned when it closes and
    no enclosing span closes around it (the outermost balanced objects; a stray unclosed ``{``
    in prose does not hide the object after it). A mismatched bracket or nesting past
    ``max_depth`` abandons the open spans and the scan goes on from there. The scan stops
    after ``max_spans`` top-level starts.
    """
    spans: list[tuple[int, int]] = []
    token = re.compile(r'"(?:[^"\\]|\\.)*+(?:"|\\?\Z)|[\[\]{}]', re.S)
    n = len(text)
    pos = 0
    starts = 0
    while pos < n and starts < max_spans:
        start = text.find("{", pos)
        if start < 0:
            break
        starts += 1
        stack: list[tuple[str, int]] = []  # (expected closer, start)
        closed_here: list[tuple[int, int]] = []
        pos = start
        while True:
            m = token.search(text, pos)
            if m is None:
                pos = n
                break
            tok = m.group()
            pos = m.end()
            first = tok[0]
            if first == '"':
                continue
            if first in "[{":
                stack.append(("]" if first == "[" else "}", m.start()))
                if len(stack) > max_depth:
                    break
                continue
            if not stack or stack[-1][0] != first:
                pos = m.start() + 1 if stack else pos
                break
            _, opened = stack.pop()
            if first == "}":
                while closed_here and closed_here[-1][0] > opened:
                    closed_here.pop()  # nested inside this one
                closed_here.append((opened, pos))
            if not stack:
                break
        spans.extend(closed_here)
    return spans


# -- reading payloads ----------------------------------------------------------------------
def _rank_fields(payload: Mapping[str, Any], notes: list[str]) -> ParsedRank | None:
    ranked = payload.get("ranked_ids")
    if isinstance(ranked, str):
        try:
            decoded = loads_bounded(ranked)
        except LLMResponseError:
            decoded = None
        if isinstance(decoded, list):
            ranked = decoded
            notes.append("ranked_ids was a JSON string; decoded")
        else:
            ranked = [ranked]
            notes.append("ranked_ids was a single string; read as one id")
    if not isinstance(ranked, list):
        return None
    done_raw = payload.get("done", False)
    if isinstance(done_raw, bool):
        done = done_raw
    elif isinstance(done_raw, str) and done_raw.strip().lower() in ("true", "false"):
        done = done_raw.strip().lower() == "true"
        notes.append(f"done given as the string {preview(done_raw)}")
    else:
        done = False
        notes.append(f"done {preview(done_raw)} is not a boolean; read as false")
    return ParsedRank(ranked, done, tuple(notes))


def _payload(payload: object, limits: ReplyLimits) -> ParsedRank | None:
    """A rank payload from a decoded value (bounded before the call), or None."""
    if not isinstance(payload, Mapping):
        return None
    notes: list[str] = []
    if "ranked_ids" not in payload:
        for key in _WRAPPER_KEYS:
            inner = payload.get(key)
            if isinstance(inner, str):
                try:
                    inner = loads_bounded(inner, limits)
                except LLMResponseError:
                    continue
            if isinstance(inner, Mapping) and "ranked_ids" in inner:
                notes.append(f"rank arguments found wrapped under {key!r}")
                payload = inner
                break
        else:
            return None
    return _rank_fields(payload, notes)


def read_tool_input(payload: object, limits: ReplyLimits = DEFAULT_LIMITS) -> ParsedRank:
    """A rank tool call's input (a mapping, or JSON text of one); LLMResponseError otherwise."""
    if isinstance(payload, str | bytes):
        payload = loads_bounded(payload, limits)
    else:
        _measure(payload, limits)
    parsed = _payload(payload, limits)
    if parsed is None:
        raise LLMResponseError(f"the rank tool input is not a rank call: {preview(payload)}")
    return parsed


def _find_inside(value: object, limits: ReplyLimits) -> ParsedRank | None:
    """The first rank payload nested in a decoded object (breadth-first, bounded)."""
    queue: list[object] = [value]
    seen = 0
    while queue and seen < limits.max_ids:
        item = queue.pop(0)
        seen += 1
        parsed = _payload(item, limits)
        if parsed is not None:
            return parsed
        if isinstance(item, Mapping):
            queue.extend(v for v in item.values() if isinstance(v, Mapping | list))
        elif isinstance(item, list):
            queue.extend(v for v in item if isinstance(v, Mapping | list))
    return None


def read_text(text: str, limits: ReplyLimits = DEFAULT_LIMITS) -> ParsedRank:
    """The first rank payload in free text (prose, code fences); LLMResponseError if none.

    Linear and bounded: one scan of the first ``max_scan_chars`` for balanced spans, then at
    most ``max_spans`` of them decoded.
    """
    if len(text) > limits.max_bytes:
        raise LLMResponseError(
            f"reply text of {len(text)} characters is over the {limits.max_bytes} cap"
        )
    text = text[: limits.max_scan_chars]
    for start, end in json_spans(text, limits.max_depth, limits.max_spans)[: limits.max_spans]:
        try:
            value = json.loads(text[start:end])
        except (ValueError, RecursionError):
            continue
        parsed = _find_inside(value, limits)
        if parsed is not None:
            return parsed
    raise LLMResponseError("no rank call and no JSON rank object in the reply text")


# -- the historical lenient entry points (None instead of an error) --------------------------
def parse_rank_payload(payload: object, limits: ReplyLimits = DEFAULT_LIMITS) -> ParsedRank | None:
    """Read a rank tool input (a mapping or JSON text); ``None`` when it is not one."""
    try:
        return read_tool_input(payload, limits)
    except LLMResponseError:
        return None


def find_rank_json(text: str, limits: ReplyLimits = DEFAULT_LIMITS) -> ParsedRank | None:
    """The first JSON object in ``text`` that is a rank payload, if any."""
    try:
        return read_text(text, limits)
    except LLMResponseError:
        return None


# -- validation against the request -----------------------------------------------------------
def _as_text(item: object) -> str | None:
    if isinstance(item, bool):
        return None
    if isinstance(item, str):
        return item.strip()
    if isinstance(item, int):
        return str(item) if abs(item) < 10**100 else None
    if isinstance(item, Mapping):
        for key in ("id", "path"):
            value = item.get(key)
            if isinstance(value, str):
                return value.strip()
            if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10**100:
                return str(value)
    return None


def _shown_id(item: object, text: str | None) -> str:
    if text is None:
        if isinstance(item, str):
            text = item
        elif item is None or isinstance(item, bool | int | float):
            text = json.dumps(item)
        else:
            text = preview(item, MAX_ID_CHARS)
    return text if len(text) <= MAX_ID_CHARS else text[:MAX_ID_CHARS] + "..."


def build_reply(
    request: RankRequest,
    parsed: ParsedRank,
    *,
    usage: Usage | None = None,
    notes: Sequence[str] = (),
    limits: ReplyLimits = DEFAULT_LIMITS,
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
    items = parsed.ranked
    if len(items) > limits.max_ids:
        out_notes.append(
            f"reply returned {len(items)} ids; only the first {limits.max_ids} were read"
        )
        items = items[: limits.max_ids]
    tried = 0
    for item in items:
        text = _as_text(item)
        if not text:
            dropped.append(_shown_id(item, None))
            continue
        node_id: str | None = text if text in allowed else None
        if node_id is None:
            if resolver is None:
                resolver = PathResolver(
                    by_path, tree_root=request.tree_root, path_prefix=request.path_prefix
                )
            tried += 1
            match = resolver.resolve(text, log_outcome=tried <= LOGGED_RESOLUTIONS)
            if match.path is not None:
                node_id = by_path[match.path]
                shown = _shown_id(item, text)
                resolved[shown] = node_id
                out_notes.append(f"path {preview(shown)} resolved ({match.kind}) to id {node_id}")
            else:
                dropped.append(_shown_id(item, text))
                continue
        if node_id in seen:
            continue
        seen.add(node_id)
        kept.append(node_id)
    if dropped:
        shown = ", ".join(preview(d, 60) for d in dropped[:SHOWN_DROPPED])
        more = f" and {len(dropped) - SHOWN_DROPPED} more" if len(dropped) > SHOWN_DROPPED else ""
        out_notes.append(f"dropped {len(dropped)} id(s) outside the allowed set: {shown}{more}")
        log.warning("rank reply: dropped %d id(s) outside the allowed set", len(dropped))
    if tried > LOGGED_RESOLUTIONS:
        log.warning(
            "rank reply: %d returned paths tried (first %d logged)", tried, LOGGED_RESOLUTIONS
        )
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
