"""Ignore rules: the one-regex pre-check decides exactly like asking pattern by pattern."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from treeseek.trees.ignore import IgnoreStack, parse_ignore_lines

_PATTERNS = st.lists(
    st.sampled_from(
        [
            "*.pyc",
            "!keep.pyc",
            "build/",
            "/top",
            "a/**/b",
            "docs/_build/",
            "**/x",
            "!a/",
            "[ab]*.txt",
            "?",
            "# comment",
            "",
            "sub/*.md",
            "(?P<g>x)",
            "\\!bang",
            "*",
            "!*.md",
        ]
    ),
    max_size=6,
)
_PATHS = st.lists(
    st.lists(
        st.sampled_from(["a", "b", "x", "build", "top", "keep.pyc", "r.txt", "c.md"]),
        min_size=1,
        max_size=4,
    ).map("/".join),
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(_PATTERNS, _PATTERNS, _PATHS, st.booleans())
def test_pre_check_never_changes_a_decision(
    outer: list[str], inner: list[str], paths: list[str], is_dir: bool
) -> None:
    files = [parse_ignore_lines(outer, "", "outer"), parse_ignore_lines(inner, "a", "a/inner")]
    fast = IgnoreStack(tuple(f for f in files if f is not None))
    slow = IgnoreStack(tuple(replace(f, any_pattern=None) for f in fast.files))
    assert all(f.any_pattern is not None for f in fast.files)
    for path in paths:
        assert fast.ignored(path, is_dir) == slow.ignored(path, is_dir), path


def test_a_path_no_pattern_matches_is_not_ignored() -> None:
    rules = parse_ignore_lines(["*.pyc", "build/"], "", "x")
    assert rules is not None and rules.any_pattern is not None
    stack = IgnoreStack((rules,))
    assert stack.ignored("a/b.pyc", False) and stack.ignored("build", True)
    assert not stack.ignored("build", False) and not stack.ignored("a/b.py", False)
