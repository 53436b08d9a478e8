"""The code-layer store: content-keyed rows, FTS5 search, exact names, vectors, pruning."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import treeseek
from treeseek.code.model import ChunkType, FileCodeIndex, Symbol, SymbolKind
from treeseek.database import Database
from treeseek.index.code_hook import CodeIndexHook
from treeseek.store.code_sqlite import SQLiteCodeStore, code_store_for

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
def db(tmp_path: Path) -> Iterator[Database]:
    database = treeseek.open(tmp_path / "code.db", hooks=[CodeIndexHook()])
    try:
        yield database
    finally:
        database.close()


def _hashes(db: Database, tree: str) -> dict[str, str]:
    return {n.path: n.content_hash for n in db.subtree(tree) if n.is_file and n.content_hash}


def test_index_stores_every_layer_by_content_hash(db: Database, repo: Path) -> None:
    db.index(repo, name="demo")
    code = code_store_for(db.store)
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


def test_search_is_restricted_to_the_given_contents(db: Database, repo: Path) -> None:
    db.index(repo, name="demo")
    code = code_store_for(db.store)
    hashes = _hashes(db, "demo")
    everywhere = code.search_chunks(["display", "name"], set(hashes.values()), 50)
    assert {h.content_hash for h in everywhere} == {hashes["app/models.py"], hashes["app/views.py"]}
    only_views = code.search_chunks(["display", "name"], {hashes["app/views.py"]}, 50)
    assert {h.content_hash for h in only_views} == {hashes["app/views.py"]}
    assert all(h.score > 0 for h in only_views)
    sym = code.search_symbols(["profile"], set(hashes.values()), 10)
    assert {h.qname for h in sym} >= {"UserProfile", "load_profile", "profile_view"}


def test_code_aware_tokens_match_parts_and_whole_identifiers(db: Database, repo: Path) -> None:
    db.index(repo, name="demo")
    code = code_store_for(db.store)
    hashes = set(_hashes(db, "demo").values())
    whole = code.search_symbols(["userprofile"], hashes, 10)
    assert {h.qname for h in whole} == {"UserProfile", "UserProfile.display_name"}
    part = code.search_symbols(["user"], hashes, 10)
    assert "UserProfile" in {h.qname for h in part}
    assert code.chunk_term_doc_freqs(["userprofile", "nosuchterm"]).keys() == {"userprofile"}


def test_exact_names_and_qualified_names(db: Database, repo: Path) -> None:
    db.index(repo, name="demo")
    code = code_store_for(db.store)
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
    code = code_store_for(db.store)
    new_hash = _hashes(db, "one")["app/views.py"]
    assert "extra_view" in {s.qname for s in code.symbols(new_hash)}


def test_code_rows_go_with_the_last_tree_using_the_content(db: Database, repo: Path) -> None:
    db.index(repo, name="one")
    old = _hashes(db, "one")["app/views.py"]
    (repo / "app" / "views.py").write_text("def other():\n    return 1\n")
    db.index(repo, name="one")  # the old views.py content has no tree left
    code = code_store_for(db.store)
    assert code.missing_code([old]) == {old}
    assert code.symbols(old) == []
    assert code.search_symbols(["profile_view"], {old}, 10) == []
    db.delete("one")
    assert code.missing_code([old]) == {old}


def test_vectors_round_trip_and_replace(db: Database, repo: Path) -> None:
    db.index(repo, name="demo")
    h = _hashes(db, "demo")["app/models.py"]
    code = code_store_for(db.store)
    with db.store.write_tree("demo") as writer:
        w = code_store_for(writer)
        assert w.missing_vectors("m", "outline", [h]) == {h}
        w.put_vectors("m", "outline", [(h, np.array([0.6, 0.8], dtype=np.float32))])
    got = code.vectors("m", "outline", [h])
    assert np.allclose(got[h], [0.6, 0.8])
    assert code.vectors("other-model", "outline", [h]) == {}
    assert code.missing_vectors("m", "outline", [h]) == set()


def test_put_code_replaces_rows_of_the_same_content(tmp_path: Path) -> None:
    db = treeseek.open(tmp_path / "x.db", hooks=[])
    try:
        store = code_store_for(db.store)
        assert isinstance(store, SQLiteCodeStore)
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
        store.put_code("h1", first)
        store.put_code("h1", second)
        assert [s.qname for s in store.symbols("h1")] == ["beta_fn"]
        assert store.search_symbols(["alpha_fn"], {"h1"}, 5) == []
        assert [h.qname for h in store.search_symbols(["beta_fn"], {"h1"}, 5)] == ["beta_fn"]
    finally:
        db.close()


def test_parallel_parsing_stores_the_same_layers(tmp_path: Path) -> None:
    root = tmp_path / "many"
    root.mkdir()
    for i in range(80):  # above PARALLEL_MIN_FILES
        (root / f"mod_{i}.py").write_text(f"def function_{i}(x):\n    return x + {i}\n")
    (root / "broken.py").write_text("def (:\n  ???\n")
    layers = []
    for workers in (1, 2):
        hook = CodeIndexHook(workers=workers)
        database = treeseek.open(tmp_path / f"w{workers}.db", hooks=[hook])
        try:
            database.index(root, name="t")
            assert hook.stats.parsed == 81
            code = code_store_for(database.store)
            hashes = _hashes(database, "t")
            layers.append(
                {p: [s.qname for s in code.symbols(h)] for p, h in sorted(hashes.items())}
            )
        finally:
            database.close()
    assert layers[0] == layers[1]
    assert layers[0]["mod_7.py"] == ["function_7"]
