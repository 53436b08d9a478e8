"""Query understanding: extraction from text, and exact matching against a tree."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import treeseek
from treeseek.database import Database
from treeseek.index.code_hook import CodeIndexHook
from treeseek.search.flat.understanding import (
    MentionResolver,
    Strength,
    TreeNames,
    extract_mentions,
    files_by_evidence,
)

TRACEBACK = """Crash when ordering
Traceback (most recent call last):
  File "/venv/lib/python3.8/site-packages/pkg/db/compiler.py", line 254, in get_order_dir
    raise FieldError("bad")
pkg.core.exceptions.FieldError: bad
"""


def test_stack_frames_give_path_line_and_function() -> None:
    m = extract_mentions(TRACEBACK)
    assert [(f.path, f.line, f.function) for f in m.frames] == [
        ("venv/lib/python3.8/site-packages/pkg/db/compiler.py", 254, "get_order_dir")
    ]
    assert m.identifiers["get_order_dir"] == Strength.CODE
    assert "FieldError" in m.exceptions
    assert "pkg.core.exceptions.FieldError" in m.modules


def test_identifier_shapes() -> None:
    m = extract_mentions(
        "`make_aware` breaks QuerySet.bulk_create() and HTTPServer; call_command('x') too.\n"
        "The Quantity class, and also the word Hello."
    )
    ids = m.identifiers
    assert ids["make_aware"] == Strength.CODE  # backticked
    assert ids["QuerySet.bulk_create"] == Strength.CODE  # dotted and called
    assert ids["HTTPServer"] == Strength.CODE  # CamelCase
    assert ids["call_command"] == Strength.CODE  # snake_case, called
    assert ids["Quantity"] == Strength.WORD  # a capitalized word: only a weak guess
    assert "also" not in ids
    assert "QuerySet.bulk_create" in m.title_identifiers
    assert "Quantity" not in m.title_identifiers


def test_paths_and_urls() -> None:
    m = extract_mentions(
        "See django/db/models/query.py and ./docs/ref/settings.txt, not "
        "https://github.com/org/repo/blob/main/x.py; utils.py too."
    )
    assert "django/db/models/query.py" in m.paths
    assert "docs/ref/settings.txt" in m.paths
    assert "utils.py" in m.paths
    assert "x.py" in m.paths  # the repository path of a file link
    assert not any(p.startswith("github.com") for p in m.paths)


def test_tree_names_match_exactly_and_basenames_only_when_unique() -> None:
    names = TreeNames.build(
        [
            "pkg/db/compiler.py",
            "pkg/db/__init__.py",
            "pkg/a/utils.py",
            "pkg/b/utils.py",
            "pkg/core/exceptions.py",
            "docs/index.rst",
        ]
    )
    assert names.resolve_path("pkg/db/compiler.py") == ["pkg/db/compiler.py"]
    # a longer path ending in a tree path (site-packages prefix) resolves by its suffix
    assert names.resolve_path("venv/site-packages/pkg/db/compiler.py") == ["pkg/db/compiler.py"]
    assert names.resolve_path("compiler.py") == ["pkg/db/compiler.py"]  # unique basename
    assert names.resolve_path("utils.py") == []  # two files: no guessing
    assert names.resolve_path("a/utils.py") == ["pkg/a/utils.py"]
    assert names.resolve_path("nothere.py") == []
    assert names.resolve_module("pkg.db") == (["pkg/db/__init__.py"], "")
    assert names.resolve_module("pkg.core.exceptions.FieldError") == (
        ["pkg/core/exceptions.py"],
        "FieldError",
    )
    assert names.resolve_module("utils") == ([], "utils")


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    root = tmp_path / "repo"
    (root / "pkg" / "db").mkdir(parents=True)
    (root / "pkg" / "core").mkdir(parents=True)
    (root / "pkg" / "db" / "compiler.py").write_text(
        "class SQLCompiler:\n    def get_order_dir(self, field):\n        return field\n"
    )
    (root / "pkg" / "core" / "exceptions.py").write_text("class FieldError(Exception):\n    pass\n")
    (root / "pkg" / "db" / "query.py").write_text(
        "class QuerySet:\n    def bulk_create(self, objs):\n        return objs\n\n"
        "    def get_order_dir(self):\n        return None\n"
    )
    database = treeseek.open(tmp_path / "q.db", hooks=[CodeIndexHook()])
    database.index(root, name="t")
    try:
        yield database
    finally:
        database.close()


def _resolver(db: Database) -> MentionResolver:
    files = {n.path: n.content_hash for n in db.subtree("t") if n.is_file and n.content_hash}
    return MentionResolver(TreeNames.build(list(files)), files, db.store.code())


def test_resolver_matches_frames_and_symbols(db: Database) -> None:
    matches = _resolver(db).resolve(extract_mentions(TRACEBACK))
    kinds = {(m.kind, m.path) for m in matches}
    assert ("frame", "pkg/db/compiler.py") in kinds
    assert ("module", "pkg/core/exceptions.py") in kinds
    assert ("symbol", "pkg/core/exceptions.py") in kinds  # FieldError is defined there
    scores = files_by_evidence(matches)
    assert max(scores, key=lambda p: scores[p]) == "pkg/db/compiler.py"


def test_a_name_defined_twice_weighs_half_for_each(db: Database) -> None:
    matches = _resolver(db).resolve(extract_mentions("get_order_dir is slow"))
    weights = {m.path: m.weight for m in matches if m.kind == "symbol"}
    assert set(weights) == {"pkg/db/compiler.py", "pkg/db/query.py"}
    single = _resolver(db).resolve(extract_mentions("bulk_create is slow"))
    one = {m.path: m.weight for m in single if m.kind == "symbol"}
    assert set(one) == {"pkg/db/query.py"}
    assert one["pkg/db/query.py"] == pytest.approx(2 * weights["pkg/db/query.py"])


def test_qualified_names_match_the_defining_file(db: Database) -> None:
    matches = _resolver(db).resolve(extract_mentions("QuerySet.bulk_create() drops rows"))
    qn = [m for m in matches if m.kind == "qname"]
    assert [(m.path, m.symbol) for m in qn] == [("pkg/db/query.py", "QuerySet.bulk_create")]


_SEGMENT = st.sampled_from(["a", "b", "query.py", "models", "x.py", "__init__.py", "q"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(_SEGMENT, min_size=1, max_size=4).map("/".join), max_size=30),
    st.lists(st.sampled_from(["a", "b", "query.py", "x.py", "", "q"]), min_size=1, max_size=4),
)
def test_suffix_lookup_is_a_table_of_every_suffix(paths: list[str], asked: list[str]) -> None:
    """Suffixes are looked up through basenames; the answer must be what a table of every
    suffix of every path gives, in the same order."""
    paths = list(dict.fromkeys(paths))
    table: dict[str, list[str]] = {}
    for p in paths:
        parts = p.split("/")
        for i in range(len(parts)):
            table.setdefault("/".join(parts[i:]), []).append(p)
    names = TreeNames.build(paths)
    suffix = "/".join(asked)
    assert names.by_suffix(suffix) == table.get(suffix, [])
    for p in paths:
        assert names.by_suffix(p) == table[p]
