"""The code-layer store: content-keyed rows, part term counts, exact names, vectors, pruning."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import treeseek
from treeseek.code.model import ChunkType, EdgeType, FileCodeIndex, Symbol, SymbolKind
from treeseek.code.parse import index_file
from treeseek.database import Database
from treeseek.index.code_hook import CodeIndexHook, prepare_code
from treeseek.search.flat.parts import SymbolCatalog, TreeSymbols
from treeseek.store import CodeStore, CodeWriter
from treeseek.store.code_base import VectorKey
from treeseek.text.tokens import code_tokens

MODELS = '''"""User models."""


class UserProfile:
    """A user's public profile."""

    def display_name(self):
        return self.first_name + " " + self.last_name


def load_profile(user_id):
    return UserProfile()
'''

VIEWS = """from app.models import load_profile


def profile_view(request, user_id):
    profile = load_profile(user_id)
    return profile.display_name()
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "app").mkdir(parents=True)
    (root / "app" / "models.py").write_text(MODELS)
    (root / "app" / "views.py").write_text(VIEWS)
    (root / "README.md").write_text("# Demo\n\nProfiles of users.\n")
    return root


@pytest.fixture
def db(db_location: Callable[[str], Any]) -> Iterator[Database]:
    """A database of each backend (SQLite, PostgreSQL) with the code index hook."""
    database = treeseek.open(db_location("code"), hooks=[CodeIndexHook()])
    try:
        yield database
    finally:
        database.close()


def _hashes(db: Database, tree: str) -> dict[str, str]:
    return {n.path: n.content_hash for n in db.subtree(tree) if n.is_file and n.content_hash}


def test_index_stores_every_layer_by_content_hash(db: Database, repo: Path) -> None:
    db.index(repo, name="demo")
    code = db.store.code()
    hashes = _hashes(db, "demo")
    infos = code.code_files(hashes.values())
    assert infos[hashes["app/models.py"]].language == "python"
    assert infos[hashes["README.md"]].chunk_count >= 1  # no grammar: window chunks
    symbols = {s.qname: s for s in code.symbols(hashes["app/models.py"])}
    assert symbols["UserProfile"].kind is SymbolKind.CLASS
    assert symbols["UserProfile.display_name"].kind is SymbolKind.METHOD
    assert symbols["UserProfile.display_name"].start_line == 7
    chunks = code.chunks(hashes["app/models.py"])
    block = next(c for c in chunks if c.symbol == "load_profile")
    assert block.type is ChunkType.SYMBOL_BLOCK
    assert block.text.startswith("def load_profile(user_id):")
    edges = code.edges(hashes["app/views.py"])
    assert any(e.dst_ref.endswith("load_profile") for e in edges)


def test_part_terms_count_the_tokens_of_each_chunk_and_symbol(db: Database, repo: Path) -> None:
    db.index(repo, name="demo")
    code = db.store.code()
    assert isinstance(code, CodeStore)
    digest = _hashes(db, "demo")["app/models.py"]
    chunks = code.chunks(digest)
    parts = code.part_terms("chunks", [digest])[digest]
    assert len(parts) == len(chunks) == len(code.chunk_spans([digest])[digest])
    ids = code.term_ids(["userprofile", "user", "profile", "nosuchterm"])
    assert ids.keys() == {"userprofile", "user", "profile"}  # whole identifiers and parts
    start = 0
    for chunk, length, size in zip(chunks, parts.lengths, parts.sizes, strict=True):
        text = chunk.text if chunk.symbol is None else chunk.symbol + "\n" + chunk.text
        tokens = code_tokens(text)
        assert int(length) == len(tokens) and int(size) == len(set(tokens))
        got = parts.term_ids[start : start + int(size)]
        assert list(got) == sorted(got)
        start += int(size)
    symbols = code.part_terms("symbols", [digest])[digest]
    assert len(symbols) == len(code.symbols(digest))
    assert code.part_terms("chunks", ["no-such-hash"]) == {}


def test_part_term_blobs_are_the_part_terms_as_stored(db: Database, repo: Path) -> None:
    db.index(repo, name="demo")
    code = db.store.code()
    hashes = set(_hashes(db, "demo").values()) | {"no-such-hash"}
    for layer in ("chunks", "symbols"):
        parts = code.part_terms(layer, hashes)
        blobs = code.part_term_blobs(layer, hashes)
        assert sorted(r[0] for r in blobs) == sorted(parts) and parts
        for digest, *arrays in blobs:
            want = parts[digest]
            for blob, field in zip(arrays, ("lengths", "sizes", "term_ids", "counts"), strict=True):
                assert bytes(blob) == getattr(want, field).tobytes(), field
    assert code.part_term_blobs("chunks", []) == []


def test_chunk_spans_are_positions_in_chunk_order(db: Database, repo: Path) -> None:
    db.index(repo, name="demo")
    code = db.store.code()
    hashes = _hashes(db, "demo")
    spans = code.chunk_spans(hashes.values())
    for digest, found in spans.items():
        chunks = code.chunks(digest)
        assert [(s.index, s.type, s.start_line, s.end_line, s.symbol) for s in found] == [
            (c.index, c.type, c.start_line, c.end_line, c.symbol) for c in chunks
        ]


def test_exact_names_and_qualified_names(db: Database, repo: Path) -> None:
    db.index(repo, name="demo")
    code = db.store.code()
    hashes = _hashes(db, "demo")
    found = code.symbols_named(["display_name", "UserProfile.display_name"], hashes.values())
    assert {(h.qname, h.content_hash) for h in found} == {
        ("UserProfile.display_name", hashes["app/models.py"])
    }
    assert code.symbols_named(["display_name"], {hashes["app/views.py"]}) == []


def test_unchanged_contents_are_not_parsed_again(db: Database, repo: Path) -> None:
    hook = db.hooks[0]
    assert isinstance(hook, CodeIndexHook)
    db.index(repo, name="one")
    parsed = hook.stats.parsed
    assert parsed == 3
    db.index(repo, name="two")  # same bytes in another tree
    assert hook.stats.parsed == parsed
    (repo / "app" / "views.py").write_text(VIEWS + "\n\ndef extra_view(request):\n    pass\n")
    db.index(repo, name="one")
    assert hook.stats.parsed == parsed + 1
    code = db.store.code()
    new_hash = _hashes(db, "one")["app/views.py"]
    assert "extra_view" in {s.qname for s in code.symbols(new_hash)}


def test_code_rows_go_with_the_last_tree_using_the_content(db: Database, repo: Path) -> None:
    db.index(repo, name="one")
    old = _hashes(db, "one")["app/views.py"]
    (repo / "app" / "views.py").write_text("def other():\n    return 1\n")
    db.index(repo, name="one")  # the old views.py content has no tree left
    code = db.store.code()
    assert code.missing_code([old]) == {old}
    assert code.symbols(old) == []
    assert code.part_terms("symbols", [old]) == {} and code.part_terms("chunks", [old]) == {}
    db.delete("one")
    assert code.missing_code([old]) == {old}


def test_vectors_round_trip_and_replace(db: Database, repo: Path) -> None:
    db.index(repo, name="demo")
    h = _hashes(db, "demo")["app/models.py"]
    code = db.store.code()
    with db.store.write_tree("demo") as writer:
        w = writer.code()
        assert isinstance(w, CodeWriter)
        key = VectorKey(h, "app/models.py")
        assert w.missing_vectors("m", "outline", [key]) == {key}
        w.put_vectors("m", "outline", [(key, np.array([0.6, 0.8], dtype=np.float32))])
        w.put_vectors("m", "outline", [(key, np.array([0.8, 0.6], dtype=np.float32))])
    got = code.vectors("m", "outline", [key, VectorKey(h, "elsewhere.py")])
    assert got.keys() == {key}
    assert np.allclose(got[key], [0.8, 0.6])
    assert code.vectors("other-model", "outline", [key]) == {}


def test_put_prepared_replaces_rows_of_the_same_content(
    db_location: Callable[[str], Any],
) -> None:
    db = treeseek.open(db_location("x"), hooks=[])
    try:
        first = FileCodeIndex(
            language="python",
            module="m",
            chunks=(),
            symbols=(Symbol("alpha_fn", "alpha_fn", SymbolKind.FUNCTION, 1, 2),),
        )
        second = FileCodeIndex(
            language="python",
            module="m",
            chunks=(),
            symbols=(Symbol("beta_fn", "beta_fn", SymbolKind.FUNCTION, 1, 2),),
        )
        with db.store.write_tree("t") as writer:
            writer.code().put_prepared("h1", prepare_code(first))
            writer.code().put_prepared("h1", prepare_code(second))
        code = db.store.code()
        assert [s.qname for s in code.symbols("h1")] == ["beta_fn"]
        [part] = code.part_terms("symbols", ["h1"]).values()
        ids = code.term_ids(["alpha_fn", "beta_fn"])
        assert ids["beta_fn"] in part.term_ids.tolist()
        assert ids["alpha_fn"] not in part.term_ids.tolist()
    finally:
        db.close()


def test_parallel_parsing_stores_the_same_layers(
    tmp_path: Path, db_location: Callable[[str], Any]
) -> None:
    root = tmp_path / "many"
    root.mkdir()
    for i in range(80):  # above PARALLEL_MIN_FILES
        (root / f"mod_{i}.py").write_text(f"def function_{i}(x):\n    return x + {i}\n")
    (root / "broken.py").write_text("def (:\n  ???\n")
    layers = []
    for workers in (1, 2):
        hook = CodeIndexHook(workers=workers)
        database = treeseek.open(db_location(f"w{workers}"), hooks=[hook])
        try:
            database.index(root, name="t")
            assert hook.stats.parsed == 81
            code = database.store.code()
            hashes = _hashes(database, "t")
            layers.append(
                {p: [s.qname for s in code.symbols(h)] for p, h in sorted(hashes.items())}
            )
        finally:
            database.close()
    assert layers[0] == layers[1]
    assert layers[0]["mod_7.py"] == ["function_7"]


def test_migration_5_backfills_part_terms_like_a_fresh_index(tmp_path: Path, repo: Path) -> None:
    """A database indexed before the part-term layer (schema 4) gets the same rows from its
    stored full-text documents as a fresh index writes."""
    path = tmp_path / "old.db"
    with treeseek.open(path, hooks=[CodeIndexHook(workers=1)]) as db:
        db.index(repo, name="demo")
        hashes = set(_hashes(db, "demo").values())
        code = db.store.code()
        fresh = {layer: code.part_terms(layer, hashes) for layer in ("chunks", "symbols")}
    assert fresh["chunks"] and fresh["symbols"]
    with sqlite3.connect(path) as conn:  # back to schema 4
        conn.execute("DROP TRIGGER code_part_terms_prune_with_content")
        conn.execute("DROP TABLE code_part_terms")
        conn.execute("DELETE FROM schema_version WHERE version >= 5")
    with treeseek.open(path, hooks=[]) as db:
        code = db.store.code()
        for layer, rows in fresh.items():
            again = code.part_terms(layer, hashes)
            assert again.keys() == rows.keys()
            for digest, want in rows.items():
                got = again[digest]
                for field in ("lengths", "sizes", "term_ids", "counts"):
                    assert np.array_equal(getattr(got, field), getattr(want, field)), field


def test_symbol_heads_are_the_symbols_without_their_text(db: Database, repo: Path) -> None:
    db.index(repo, name="demo")
    code = db.store.code()
    hashes = set(_hashes(db, "demo").values())
    heads = code.symbol_heads(hashes)
    assert heads.keys() == code.symbols_of(hashes).keys()
    for digest, found in heads.items():
        assert [(h.qname, h.name, h.kind, h.start_line, h.end_line) for h in found] == [
            (s.qname, s.name, s.kind, s.start_line, s.end_line) for s in code.symbols(digest)
        ]


def test_symbol_rows_are_the_symbol_heads_as_plain_rows(db: Database, repo: Path) -> None:
    db.index(repo, name="demo")
    code = db.store.code()
    hashes = set(_hashes(db, "demo").values())
    heads = code.symbol_heads(hashes)
    rows = sorted(code.symbol_rows(hashes), key=lambda r: r[0])  # stable: symbol order kept
    assert rows == [
        (h.content_hash, h.qname, h.name, h.kind.value, h.start_line, h.end_line)
        for digest in sorted(heads)
        for h in heads[digest]
    ]
    assert code.symbol_rows(set()) == []


def _tree_symbols(
    code: CodeStore, catalog: SymbolCatalog
) -> tuple[TreeSymbols, list[SymbolCatalog]]:
    """Lookups of a tree whose catalog is ``catalog``, and the catalogs it built."""
    built: list[SymbolCatalog] = []

    def build() -> SymbolCatalog:
        built.append(catalog)
        return catalog

    return TreeSymbols(code, build, lambda: bool(built)), built


def test_the_symbol_catalog_finds_what_the_symbol_heads_hold(db: Database, repo: Path) -> None:
    """The catalog (rows and hashed names) answers as a dict of every head by name did:
    each symbol named by its name or qualified name once, by content hash and symbol order,
    of the contents asked for."""
    (repo / "app" / "more.py").write_text(
        "class UserProfile:\n    def display_name(self):\n        return ''\n\n\n"
        "def load_profile():\n    return None\n"
    )
    db.index(repo, name="demo")
    code = db.store.code()
    by_path = _hashes(db, "demo")
    hashes = set(by_path.values())
    heads = code.symbol_heads(hashes)
    catalog = SymbolCatalog(code.symbol_rows(hashes))
    assert catalog.contents == heads.keys()
    names = ["display_name", "UserProfile.display_name", "load_profile", "nothing", "UserProfile"]
    some = {by_path["app/models.py"], by_path["app/views.py"]}
    for keep in (hashes, some, set()):
        want = [
            h.hit()
            for digest in sorted(heads)
            for h in heads[digest]
            if (h.name in names or h.qname in names) and digest in keep
        ]
        assert catalog.symbols_named(names, keep) == want
        assert catalog.symbols_named(list(reversed(names)), list(keep)) == want
        rows = code.symbol_rows_named([*names, "bad\udcff"], keep)  # a name not UTF-8: none
        assert [(h.content_hash, h.qname, h.name, h.kind.value, h.start_line, h.end_line)
                for h in want] == rows  # fmt: skip
        # the first lookups by the store, the later ones by the catalog: the same answers
        symbols, built = _tree_symbols(code, catalog)
        for _ in range(TreeSymbols.LOOKUPS + 1):
            assert symbols.symbols_named(names, keep) == want
        assert built == [catalog]
    assert len(catalog.symbols_named(["display_name"], hashes)) == 2
    for digest, found in heads.items():
        assert [catalog.qname(digest, i) for i in range(len(found) + 1)] == [
            *(h.qname for h in found),
            None,
        ]
    assert catalog.qname("0" * 64, 0) is None
    assert SymbolCatalog([]).symbols_named(names, hashes) == []


def test_import_refs_are_the_import_edges_as_written(db: Database, repo: Path) -> None:
    db.index(repo, name="demo")
    code = db.store.code()
    hashes = _hashes(db, "demo")
    refs = code.import_refs(set(hashes.values()))
    views = hashes["app/views.py"]
    assert refs[views] == [e.dst_ref for e in code.edges(views) if e.type == EdgeType.IMPORTS]
    assert refs[views] and all("load_profile" in r or "models" in r for r in refs[views])
    assert hashes["app/models.py"] not in refs  # no imports
    assert code.import_refs(set()) == {}


def test_base_refs_and_import_bindings_are_those_edges_as_written(db: Database, repo: Path) -> None:
    (repo / "app" / "admin.py").write_text(
        "import app.models as m\nfrom app.models import UserProfile as P, load_profile\n"
        "from app import views\n\n\nclass Admin(P, m.UserProfile):\n    pass\n"
    )
    db.index(repo, name="demo")
    code = db.store.code()
    hashes = _hashes(db, "demo")
    admin = hashes["app/admin.py"]
    edges = code.edges(admin)
    bases = code.base_refs(set(hashes.values()))
    assert bases == {admin: [("Admin", "P"), ("Admin", "m.UserProfile")]}
    assert bases[admin] == [(e.src, e.dst_ref) for e in edges if e.type == EdgeType.INHERITS]
    bindings = code.import_bindings(set(hashes.values()))
    assert list(bindings) == [admin]
    assert [ref for ref, _ in bindings[admin]] == ["app.models", "app.models.UserProfile"]
    assert [json.loads(payload)["alias"] for _, payload in bindings[admin]] == ["m", "P"]
    assert code.base_refs(set()) == {} and code.import_bindings(set()) == {}


def test_edges_of_are_each_contents_edges_as_parsed(db: Database, repo: Path) -> None:
    """The batched read the tree graph loads a whole tree with: per content, in edge order,
    the edges and payloads the parse made (equal payloads of one read may be one object)."""
    db.index(repo, name="demo")
    code = db.store.code()
    hashes = _hashes(db, "demo")
    batched = code.edges_of(set(hashes.values()))
    for path in ("app/models.py", "app/views.py"):
        digest = hashes[path]
        assert batched[digest] == code.edges(digest)
        parsed = index_file(path, (repo / path).read_bytes()).edges
        assert batched[digest] == list(parsed) and parsed
    assert hashes["README.md"] not in batched  # no edges
    assert code.edges_of(set()) == {}
    symbols = code.symbols_of(set(hashes.values()))
    assert symbols[hashes["app/models.py"]] == list(
        index_file("app/models.py", MODELS.encode()).symbols
    )
