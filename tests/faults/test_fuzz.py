"""Hypothesis fuzzing of the reply parser and of path resolution.

The normal run tries ``TREESEEK_FUZZ_EXAMPLES`` cases per property (default 200); the long
run (``-m long``, driven by ``bench/bench_faults.py``) tries 10,000 per property. Properties:
the parser returns a rank payload or raises LLMResponseError, nothing else; a validated reply
holds only allowed ids; a resolved path is always one of the candidates, and normalization
never yields a path outside the root.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from treeseek.errors import LLMResponseError
from treeseek.llm._validate import (
    ParsedRank,
    ReplyLimits,
    build_reply,
    read_text,
    read_tool_input,
)
from treeseek.llm.base import Candidate, RankRequest
from treeseek.trees.paths import PathResolver, normalize_returned_path

NORMAL = int(os.environ.get("TREESEEK_FUZZ_EXAMPLES", "200"))
LONG = 10_000
SMALL = ReplyLimits(max_bytes=4096, max_depth=8, max_ids=50, max_scan_chars=2048, max_spans=20)

CANDIDATES = (
    Candidate("n1", "dir1/common.py", "file"),
    Candidate("n2", "dir2/common.py", "file"),
    Candidate("n3", "pkg/models/query.py", "file"),
    Candidate("n4", "pkg", "directory"),
    Candidate("n5", "pkg/models", "directory"),
    Candidate("n6", "README.md", "file"),
)
PATHS = {c.path for c in CANDIDATES}

_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(
            st.sampled_from(["ranked_ids", "done", "id", "path", "arguments", "x"])
            | st.text(max_size=5),
            inner,
            max_size=5,
        )
    ),
    max_leaves=30,
)
_ids = st.one_of(
    st.sampled_from([c.id for c in CANDIDATES] + sorted(PATHS)),
    st.text(max_size=30),
    st.from_regex(r"(\.\./|/|~/|\./|[a-z]{1,6}/){0,6}[a-zA-Z_.]{0,12}", fullmatch=True),
)
_json_chars = st.text(alphabet='{}[]":,\\ nutrefals0123456789.-x\n', max_size=400)
_text = st.one_of(
    _json_chars,
    st.text(max_size=300),
    st.builds(lambda a, b, c: a + json.dumps(b) + c, st.text(max_size=40), _json, _json_chars),
    st.builds(
        lambda n, s: s * n, st.integers(0, 600), st.sampled_from(["{", "[", '{"a":', '\\"', "{}"])
    ),
)


def check_parse(payload: object) -> None:
    try:
        parsed = (
            read_text(payload, SMALL)
            if isinstance(payload, str)
            else read_tool_input(payload, SMALL)
        )
    except LLMResponseError:
        return
    assert isinstance(parsed, ParsedRank) and isinstance(parsed.done, bool)
    request = RankRequest((), "m", "q", CANDIDATES, 3, tree_root="/repo", path_prefix="pkg")
    reply = build_reply(request, parsed, limits=SMALL)
    allowed = request.allowed_ids
    assert set(reply.ranked_ids) <= allowed and len(reply.ranked_ids) <= 3
    assert len(reply.ranked_ids) == len(set(reply.ranked_ids))
    assert len(reply.dropped_ids) <= SMALL.max_ids


def check_path(raw: str, root: str | None, prefix: str | None) -> None:
    norm = normalize_returned_path(raw, root)
    if norm is not None:
        assert not norm.startswith(("/", "../")) and norm not in ("..", ".")
        assert posixpath.normpath(norm) == norm
    match = PathResolver(PATHS, tree_root=root, path_prefix=prefix).resolve(raw, log_outcome=False)
    if match.path is not None:
        assert match.path in PATHS  # never anything outside the candidates
        last = (norm or "").rsplit("/", 1)[-1]
        assert match.path.rsplit("/", 1)[-1] == last  # never another file by its basename
        if "/" not in (norm or "") and match.path != norm:
            assert prefix is not None and match.path == f"{prefix}/{norm}"


def _fuzz(examples: int):  # type: ignore[no-untyped-def]
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )


_payloads = st.one_of(
    _text,
    _json,
    st.builds(json.dumps, _json),
    st.lists(_ids, max_size=60).map(lambda ids: {"ranked_ids": ids, "done": True}),
)
_roots = st.sampled_from([None, "/repo", "C:\\repo", "/"])
_prefixes = st.sampled_from([None, "pkg", "pkg/models", ""])


@_fuzz(NORMAL)
@given(_payloads)
def test_parser_never_crashes(payload: object) -> None:
    check_parse(payload)


@_fuzz(NORMAL)
@given(_ids, _roots, _prefixes)
def test_path_resolution_never_escapes(raw: str, root: str | None, prefix: str | None) -> None:
    check_path(raw, root, prefix)


@pytest.mark.long
@_fuzz(LONG)
@given(_payloads)
def test_parser_never_crashes_long(payload: object) -> None:
    check_parse(payload)


@pytest.mark.long
@_fuzz(LONG)
@given(_ids, _roots, _prefixes)
def test_path_resolution_never_escapes_long(raw: str, root: str | None, prefix: str | None) -> None:
    check_path(raw, root, prefix)


@pytest.mark.parametrize(
    "text",
    ["{" * 80_000, "[" * 100_000, '{"a": ' * 50_000, '"\\"' * 60_000, "{}" * 100_000],
)
def test_pathological_texts_are_refused_or_parsed_without_error(text: str) -> None:
    with contextlib.suppress(LLMResponseError):
        read_text(text)
    with contextlib.suppress(LLMResponseError):
        read_tool_input(text)
