"""Path resolution of LLM-returned paths (path-resolution.md AC1-AC5)."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treeseek.trees.paths import MatchKind, PathResolver, normalize_returned_path, resolve_path

PROJECT = ["dir1/common.py", "dir2/common.py", "dir1", "dir2", "path/to/file.py", "README.md"]


def test_ac1_exact_path_matches() -> None:
    m = resolve_path("dir1/common.py", PROJECT)
    assert m.kind is MatchKind.EXACT and m.path == "dir1/common.py"


def test_ac2_bare_basename_matches_nothing_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="treeseek.trees.paths"):
        for raw in ("common.py", "./common.py"):
            m = resolve_path(raw, PROJECT)
            assert not m.found and m.path is None
    assert "basenames are never matched" in caplog.text
    assert "2 candidates have that basename" in caplog.text


def test_ac2_single_basename_candidate_still_not_matched() -> None:
    # no basename fallback even when only one candidate has that basename
    assert not resolve_path("file.py", PROJECT).found


def test_ac3_relative_path_matches_under_absolute_root() -> None:
    m = resolve_path("path/to/file.py", PROJECT, tree_root="/abs")
    assert m.kind is MatchKind.EXACT and m.path == "path/to/file.py"


@pytest.mark.parametrize(
    "raw",
    [
        "/abs/path/to/file.py",
        "\\abs\\path\\to\\file.py",
        "/abs/path/to/./file.py",
        "/abs//path/to/file.py",
    ],
)
def test_ac4_absolute_path_under_root_matches(raw: str) -> None:
    m = resolve_path(raw, PROJECT, tree_root="/abs/")
    assert m.path == "path/to/file.py"


def test_ac5_logging_says_how_it_matched(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="treeseek.trees.paths"):
        resolve_path("./dir1/common.py", PROJECT)
        resolve_path("nowhere/x.py", PROJECT)
    msgs = [r.getMessage() for r in caplog.records]
    assert any("matched exact" in m and "'dir1/common.py'" in m for m in msgs)
    assert any("matches no candidate" in m and "nowhere/x.py" in m for m in msgs)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("./dir1/common.py", "dir1/common.py"),
        ("dir1/", "dir1"),
        ("/dir1", "dir1"),  # a leading slash means the tree root
        ("dir1\\common.py", "dir1/common.py"),
        ("`dir1/common.py`", "dir1/common.py"),
        ("dir2/../dir1/common.py", "dir1/common.py"),
    ],
)
def test_normalization_variants_match(raw: str, expected: str) -> None:
    assert resolve_path(raw, PROJECT).path == expected


@pytest.mark.parametrize("raw", ["", "   ", "/", "..", "../dir1/common.py", "."])
def test_unusable_or_escaping_paths(raw: str) -> None:
    m = resolve_path(raw, PROJECT)
    assert not m.found


def test_absolute_path_outside_root_is_read_from_tree_root() -> None:
    assert resolve_path("/elsewhere/dir1/common.py", PROJECT, tree_root="/abs").path is None
    assert resolve_path("/dir1/common.py", PROJECT, tree_root="/abs").path == "dir1/common.py"


def test_path_prefix_relative_path_matches_exactly() -> None:
    cands = ["django/db/models/query.py", "django/db/models/sql/query.py"]
    r = PathResolver(cands, path_prefix="django/db/models/")
    m = r.resolve("query.py")
    assert m.kind is MatchKind.PREFIXED and m.path == "django/db/models/query.py"
    assert r.resolve("sql/query.py").path == "django/db/models/sql/query.py"


def test_unique_multi_component_suffix_matches() -> None:
    cands = ["django/db/models/query.py", "django/db/models/sql/query.py"]
    m = resolve_path("sql/query.py", cands)
    assert m.kind is MatchKind.SUFFIX and m.path == "django/db/models/sql/query.py"
    assert resolve_path("models/query.py", cands).path == "django/db/models/query.py"


def test_ambiguous_suffix_is_no_match(caplog: pytest.LogCaptureFixture) -> None:
    cands = ["a/utils/io.py", "b/utils/io.py"]
    with caplog.at_level(logging.WARNING, logger="treeseek.trees.paths"):
        m = resolve_path("utils/io.py", cands)
    assert m.kind is MatchKind.AMBIGUOUS and m.path is None
    assert set(m.candidates) == set(cands)
    assert "ambiguous" in caplog.text


def test_normalize_returned_path() -> None:
    assert normalize_returned_path("/repo/src/x.py", "/repo") == "src/x.py"
    assert normalize_returned_path("/repo", "/repo") is None
    assert normalize_returned_path("C:\\repo\\src\\x.py", "C:\\repo") == "src/x.py"
    assert normalize_returned_path("/repository/x.py", "/repo") == "repository/x.py"


_segment = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,7}", fullmatch=True).filter(
    lambda s: s not in (".", "..")
)
_path = st.lists(_segment, min_size=1, max_size=4).map("/".join)


@settings(max_examples=60, deadline=None)
@given(st.lists(_path, min_size=1, max_size=15, unique=True), st.data())
def test_resolution_never_returns_a_non_candidate_and_spellings_agree(
    paths: list[str], data: st.DataObject
) -> None:
    target = data.draw(st.sampled_from(paths))
    resolver = PathResolver(paths, tree_root="/root/repo")
    for spelling in (
        target,
        "./" + target,
        "/root/repo/" + target,
        target + "/",
        target.replace("/", "\\"),
    ):
        m = resolver.resolve(spelling)
        assert m.path == target
    junk = data.draw(_path)
    m = resolver.resolve(junk)
    assert m.path is None or m.path in paths
    if m.path is not None and m.path != junk:
        # only a unique multi-component suffix may match a different string
        assert m.kind is MatchKind.SUFFIX and "/" in junk and m.path.endswith("/" + junk)
