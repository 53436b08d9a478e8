"""Parser revisions: what an older parser stored is parsed again on the next index, once, for
the languages whose revision was raised, on both backends (:mod:`treeseek.code.revisions`)."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

import treeseek
from treeseek.code import revisions
from treeseek.code.languages import SUPPORTED
from treeseek.code.model import FileCodeIndex
from treeseek.code.parse import index_file
from treeseek.database import Database
from treeseek.embed.hashing import HashingEmbedder
from treeseek.index import code_hook
from treeseek.index.code_hook import CodeIndexHook
from treeseek.index.transfer import copy_trees
from treeseek.store.code_base import VectorKey

#: the revisions of this checkout (the autouse fixture below sets them to 0 for each test)
TODAYS = revisions.PARSER_REVISIONS

MODELS = '''class UserProfile:
    """A user's public profile."""

    def display_name(self):
        return self.first_name
'''


@pytest.fixture(autouse=True)
def no_revisions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every language at revision 0 (as before any parser change), whatever today's are."""
    monkeypatch.setattr(revisions, "PARSER_REVISIONS", MappingProxyType({}))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "app").mkdir(parents=True)
    (root / "app" / "models.py").write_text(MODELS)
    (root / "app" / "copy.py").write_text(MODELS)  # the same content at two paths
    (root / "app" / "util.js").write_text("export function slugify(text) {\n  return text;\n}\n")
    (root / "README.md").write_text("# Demo\n\nProfiles of users.\n")
    return root


@pytest.fixture
def hook() -> CodeIndexHook:
    return CodeIndexHook(workers=1)


@pytest.fixture
def db(db_location: Callable[[str], Any], hook: CodeIndexHook) -> Iterator[Database]:
    database = treeseek.open(db_location("revisions"), hooks=[hook])
    try:
        yield database
    finally:
        database.close()


def _older_parser(path: str, data: bytes) -> FileCodeIndex:
    """What an older parser made: no symbols at all."""
    return dataclasses.replace(index_file(path, data), symbols=())


def _older_python_parser(path: str, data: bytes) -> FileCodeIndex:
    """What an older Python parser made (no symbols); other languages' parses as today."""
    parsed = index_file(path, data)
    return dataclasses.replace(parsed, symbols=()) if parsed.language == "python" else parsed


def _symbols(db: Database, path: str) -> list[str]:
    node = db.node("demo", path)
    assert node.content_hash is not None
    return [s.qname for s in db.store.code().symbols(node.content_hash)]


def test_older_parses_are_parsed_again_once(
    db: Database, hook: CodeIndexHook, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(code_hook, "index_file", _older_parser)
    db.index(repo, name="demo")
    assert _symbols(db, "app/models.py") == []
    monkeypatch.setattr(code_hook, "index_file", index_file)  # the better parser
    db.index(repo, name="demo")
    assert hook.stats.reparsed == 0  # no revision raised: unchanged files keep their rows
    assert _symbols(db, "app/models.py") == []

    monkeypatch.setattr(revisions, "PARSER_REVISIONS", MappingProxyType({"python": 1}))
    before = db.tree("demo").updated_at
    parsed = hook.stats.parsed
    db.index(repo, name="demo")
    # the python content (one, at two paths) parsed again; JavaScript and markdown kept
    assert hook.stats.reparsed == 1 and hook.stats.parsed == parsed + 1
    assert _symbols(db, "app/models.py") == ["UserProfile", "UserProfile.display_name"]
    assert _symbols(db, "app/copy.py") == ["UserProfile", "UserProfile.display_name"]
    assert db.tree("demo").updated_at > before  # a new version: caches see the new rows
    answer = db.query("demo", "UserProfile display_name", budget=400)
    assert "app/models.py::UserProfile.display_name" in answer.symbols
    db.index(repo, name="demo")  # stored at revision 1 now: not parsed again
    assert hook.stats.reparsed == 1

    monkeypatch.setattr(
        revisions, "PARSER_REVISIONS", MappingProxyType({"python": 1, "javascript": 2})
    )
    db.index(repo, name="demo")
    assert hook.stats.reparsed == 2  # the JavaScript file's turn


def test_a_database_of_schema_7_keeps_its_parses_as_revision_0(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text(MODELS)
    with treeseek.open(path) as db:
        db.index(root, name="demo")
    with closing(sqlite3.connect(path)) as conn:  # as schema 7 had it: no revision column
        conn.execute("ALTER TABLE code_files DROP COLUMN parser_revision")
        conn.execute("DELETE FROM schema_version WHERE version = 8")
        conn.commit()
    with treeseek.open(path) as db:  # migrated
        with closing(sqlite3.connect(path)) as conn:
            rows = conn.execute("SELECT parser_revision FROM code_files").fetchall()
        assert rows and {r[0] for r in rows} == {0}
        assert db.store.code().stale_parses("demo") == {}  # no language raised yet
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(revisions, "PARSER_REVISIONS", MappingProxyType({"python": 1}))
            assert list(db.store.code().stale_parses("demo").values()) == ["pkg/a.py"]


def test_a_copied_database_keeps_the_revision_its_rows_were_made_at(
    db: Database,
    repo: Path,
    db_location: Callable[[str], Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``treeseek db copy`` moves rows, it does not parse: a copy of an older parse is still
    stale in the target, and the target's next index parses it again."""
    db.index(repo, name="demo")  # every parse at revision 0
    monkeypatch.setattr(revisions, "PARSER_REVISIONS", MappingProxyType({"python": 1}))
    hook = CodeIndexHook(workers=1)
    with treeseek.open(db_location("copy"), hooks=[hook]) as target:
        copy_trees(db.store, target.store, ["demo"])
        assert set(target.store.code().stale_parses("demo").values()) == {"app/copy.py"}
        target.index(repo, name="demo")
        assert hook.stats.reparsed == 1
        assert target.store.code().stale_parses("demo") == {}


def test_todays_revisions_name_supported_languages() -> None:
    assert TODAYS and set(TODAYS) <= SUPPORTED | {""}  # a misspelled language raises nothing
    assert all(isinstance(v, int) and v >= 0 for v in TODAYS.values())


def _vectors(db: Database, tree: str, model: str) -> dict[str, bytes]:
    """path -> the bytes of the file's stored outline vector of ``model`` in ``tree``."""
    files = {n.path: n.content_hash for n in db.store.subtree(tree, "") if n.is_file}
    keys = [VectorKey(h, p) for p, h in files.items() if h]
    found = db.store.code().vectors(model, code_hook.OUTLINE_KIND, keys)
    return {key.path: vec.tobytes() for key, vec in found.items()}


def test_a_parse_again_embeds_again_the_outlines_it_changes(
    repo: Path, db_location: Callable[[str], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file's vector embeds its outline, which names its symbols: when a better parser
    changes them, the vector is made again from the new ones (for every path of the content,
    in every tree), as a fresh index of the same bytes would make it; a run without the
    embedder drops the vectors it cannot make, and the next run with it fills them."""
    other = repo.parent / "other"
    (other / "lib").mkdir(parents=True)
    (other / "lib" / "profile.py").write_text(MODELS)  # the content at a third path
    embedder = HashingEmbedder(dim=64)
    model = embedder.name

    def run(database: str, *trees: tuple[Path, str], embed: bool = True) -> None:
        hook = CodeIndexHook(embedder if embed else None, workers=1)
        with treeseek.open(db_location(database), hooks=[hook]) as db:
            for root, name in trees:
                db.index(root, name=name)

    with pytest.MonkeyPatch.context() as old:
        old.setattr(code_hook, "index_file", _older_python_parser)
        run("revised", (repo, "demo"), (other, "other"))
    monkeypatch.setattr(revisions, "PARSER_REVISIONS", MappingProxyType({"python": 1}))
    run("fresh", (repo, "demo"), (other, "other"))
    with treeseek.open(db_location("fresh")) as db:
        fresh = {tree: _vectors(db, tree, model) for tree in ("demo", "other")}
    assert set(fresh["demo"]) == {"app/models.py", "app/copy.py", "app/util.js"}
    with treeseek.open(db_location("revised")) as db:
        stale = {tree: _vectors(db, tree, model) for tree in ("demo", "other")}
    assert stale["demo"]["app/models.py"] != fresh["demo"]["app/models.py"]  # no names
    assert stale["demo"]["app/util.js"] == fresh["demo"]["app/util.js"]

    run("revised", (repo, "demo"))  # parses the python content again, for both trees
    with treeseek.open(db_location("revised")) as db:
        assert {tree: _vectors(db, tree, model) for tree in ("demo", "other")} == fresh

    # without the embedder: the outlines a parse changes lose their vectors, the rest stay
    monkeypatch.setattr(revisions, "PARSER_REVISIONS", MappingProxyType({}))
    with pytest.MonkeyPatch.context() as old:
        old.setattr(code_hook, "index_file", _older_python_parser)
        run("dropped", (repo, "demo"), (other, "other"))
    monkeypatch.setattr(revisions, "PARSER_REVISIONS", MappingProxyType({"python": 1}))
    run("dropped", (repo, "demo"), embed=False)
    with treeseek.open(db_location("dropped")) as db:
        assert _vectors(db, "demo", model) == {"app/util.js": fresh["demo"]["app/util.js"]}
        assert _vectors(db, "other", model) == {}
    run("dropped", (repo, "demo"), (other, "other"))
    with treeseek.open(db_location("dropped")) as db:
        assert {tree: _vectors(db, tree, model) for tree in ("demo", "other")} == fresh


def test_a_process_that_read_the_old_parse_answers_from_the_new_one(
    db: Database, repo: Path, db_location: Callable[[str], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outlines, expansions and budgeted answers read a content's symbols and chunks through
    a process-wide cache by content hash: what it kept from the old parse must not outlive
    the parse again (in this process, or in another process's database)."""
    monkeypatch.setattr(code_hook, "index_file", _older_parser)
    db.index(repo, name="demo")
    assert [i.name_path for f in db.outline("demo", "app").files for i in f.items] == []
    assert "app/models.py::UserProfile" not in db.query("demo", "UserProfile", budget=400).symbols
    monkeypatch.setattr(code_hook, "index_file", index_file)
    monkeypatch.setattr(revisions, "PARSER_REVISIONS", MappingProxyType({"python": 1}))
    with treeseek.open(db_location("revisions")) as other:  # another writer of the database
        other.index(repo, name="demo")

    outline = [i.name_path for f in db.outline("demo", "app/models.py").files for i in f.items]
    assert outline == ["app/models.py::UserProfile", "app/models.py::UserProfile.display_name"]
    assert "app/models.py::UserProfile" in db.query("demo", "UserProfile", budget=400).symbols
    span = db.expand("demo", "app/models.py::UserProfile.display_name").context[0]
    assert (span.start_line, span.end_line) == (4, 5)


def test_a_copy_brings_no_vector_of_a_parse_the_target_does_not_hold(
    repo: Path, db_location: Callable[[str], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`treeseek db copy` keeps the target's code rows of a content it already holds; a
    vector the source embedded from another parse of that content (an older parser's
    symbols) would not match them, so it is not copied (the next index with vectors embeds
    it), while a vector of the same parse is."""
    embedder = HashingEmbedder(dim=64)
    model = embedder.name
    with pytest.MonkeyPatch.context() as old:
        old.setattr(code_hook, "index_file", _older_python_parser)
        with treeseek.open(db_location("old"), hooks=[CodeIndexHook(embedder, workers=1)]) as db:
            db.index(repo, name="demo")  # every parse at revision 0, python without symbols
    monkeypatch.setattr(revisions, "PARSER_REVISIONS", MappingProxyType({"python": 1}))
    with treeseek.open(db_location("new"), hooks=[CodeIndexHook(workers=1)]) as target:
        target.index(repo, name="mine")  # the same contents, parsed today, no vectors
        with treeseek.open(db_location("old")) as source:
            copy_trees(source.store, target.store, ["demo"])
        copied = _vectors(target, "demo", model)
        assert set(copied) == {"app/util.js"}  # JavaScript: the same parse on both sides
    with treeseek.open(db_location("fresh"), hooks=[CodeIndexHook(embedder, workers=1)]) as db:
        db.index(repo, name="demo")
        assert copied["app/util.js"] == _vectors(db, "demo", model)["app/util.js"]
