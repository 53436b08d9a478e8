"""Vector search: exact on SQLite; on PostgreSQL exact for one tree's keys up to
``EXACT_KEYS`` files (the same answers as SQLite, whatever other trees hold) and through
pgvector's HNSW index beyond, with the same contents and bit-identical scores where the index
finds the exact neighbours.

HNSW is approximate. The tolerance measured here (random 32-dimensional vectors, the hardest
case for a graph index: no clusters): recall@20 of every query at least 0.9 and on average
at least 0.97 with ``hnsw.ef_search = 2k``; every returned content has exactly the score
SQLite gives it. On a tree of a few dozen files the graph search is exhaustive and flat's
answers are identical on both backends.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import treeseek
from treeseek.embed.hashing import HashingEmbedder
from treeseek.index.code_hook import CodeIndexHook
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import SearchContext
from treeseek.search.flat.flat import FlatConfig, FlatRetriever
from treeseek.store import code_postgres
from treeseek.store.base import Store
from treeseek.store.code_base import VectorKey
from treeseek.store.code_postgres import PostgresCodeStore, ef_search, max_scan_tuples
from treeseek.store.migrations import postgres_vector_index_name
from treeseek.store.postgres import PostgresStore
from treeseek.store.sqlite import SQLiteStore
from treeseek.store.vector_search import exact_nearest

SRC = Path(__file__).resolve().parents[2] / "src" / "treeseek"
DIM = 32
PER_TREE = 600
K = 20


def _fill(store: Store, vectors: dict[str, dict[VectorKey, np.ndarray]]) -> None:
    for tree, items in vectors.items():
        with store.write_tree(tree) as writer:
            writer.put_contents((key.content_hash, key.content_hash.encode()) for key in items)
            writer.code().put_vectors("m", "file", sorted(items.items()))


def _two_trees() -> dict[str, dict[VectorKey, np.ndarray]]:
    rng = np.random.default_rng(11)
    out: dict[str, dict[VectorKey, np.ndarray]] = {}
    for t, tree in enumerate(("a", "b")):
        vecs = rng.standard_normal((PER_TREE, DIM)).astype(np.float32)
        out[tree] = {VectorKey(f"{t}{i:063x}", f"src/m{i}.py"): v for i, v in enumerate(vecs)}
    return out


@pytest.mark.parametrize("exact_keys", [0, code_postgres.EXACT_KEYS])
def test_nearest_is_among_the_keys_not_their_contents_at_other_paths(
    store_factory: Callable[..., Store], exact_keys: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One content at two paths has two vectors: a search among one path's key never
    answers with the other's, even when that one is nearer (on PostgreSQL both through the
    HNSW scan, ``EXACT_KEYS`` 0, and the exact scan: there are more keys than asked for)."""
    monkeypatch.setattr(code_postgres, "EXACT_KEYS", exact_keys)
    store = store_factory()
    rng = np.random.default_rng(5)
    query = rng.standard_normal(DIM).astype(np.float32)
    shared = "f" * 64
    others = {VectorKey(f"{i:064x}", f"lib/m{i}.py"): rng.standard_normal(DIM) for i in range(9)}
    items = {
        VectorKey(shared, "lib/kept.py"): -query,
        VectorKey(shared, "old/moved.py"): query,
        **{key: vec.astype(np.float32) for key, vec in others.items()},
    }
    _fill(store, {"t": items})
    wanted = [VectorKey(shared, "lib/kept.py"), *others]
    for k in (1, 3, len(wanted)):
        got = store.code().nearest("m", "file", query, k, wanted)
        assert len(got) == k and {key for key, _ in got} <= set(wanted), k
    assert store.code().nearest("m", "file", query, 1, None)[0][0] == VectorKey(
        shared, "old/moved.py"
    )
    code = store.code()
    assert code.vectors("m", "file", wanted).keys() == set(wanted)
    with store.write_tree("t") as writer:
        assert writer.code().missing_vectors("m", "file", [*wanted, VectorKey(shared, "x")]) == {
            VectorKey(shared, "x")
        }


def test_exact_nearest_scores_cosine_and_skips_zero_vectors() -> None:
    vectors = {
        "a": np.array([1, 0], dtype=np.float32),
        "b": np.array([3, 4], dtype=np.float32),
        "c": np.array([0, 0], dtype=np.float32),
        "d": np.array([-2, 0], dtype=np.float32),
    }
    top = exact_nearest(vectors, np.array([2, 0], dtype=np.float32), 3)
    assert [h for h, _ in top] == ["a", "b", "d"]
    assert [s for _, s in top] == pytest.approx([1.0, 0.6, -1.0])
    assert exact_nearest(vectors, np.zeros(2, dtype=np.float32), 3) == []
    # a vector's score does not depend on the others scored with it
    alone = exact_nearest({"b": vectors["b"]}, np.array([2, 0], dtype=np.float32), 1)
    assert alone[0] == top[1]


def test_search_settings_grow_with_k_and_with_the_share_of_other_trees() -> None:
    assert ef_search(5) == 40 and ef_search(200) == 400 and ef_search(10_000) == 1000
    assert max_scan_tuples(20, 1000, 500) == 20_000
    assert max_scan_tuples(200, 1_000_000, 10_000) == 80_000
    assert max_scan_tuples(200, 1_000_000, 1000) == 800_000


def test_hnsw_index_is_used_and_finds_the_exact_neighbours(
    tmp_path: Path, postgres_url: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree of more than ``EXACT_KEYS`` vectors (here 600, the limit lowered to 100)."""
    monkeypatch.setattr(code_postgres, "EXACT_KEYS", 100)
    vectors = _two_trees()
    lite = SQLiteStore(tmp_path / "v.db")
    pg = PostgresStore(postgres_url())
    try:
        _fill(lite, vectors)
        _fill(pg, vectors)
        with pg._connection() as conn:
            conn.execute("ANALYZE code_vectors")
        code = pg.code()
        assert isinstance(code, PostgresCodeStore)
        tree_a = list(vectors["a"])
        rng = np.random.default_rng(3)
        queries = rng.standard_normal((25, DIM)).astype(np.float32)
        plan = code.nearest_plan("m", "file", queries[0], K, tree_a)
        index = postgres_vector_index_name("m", "file", DIM)
        assert f"Index Scan using {index}" in plan, plan
        assert "Sort" not in plan.split("Index Scan")[0], plan  # ordered by the index
        recalls = []
        for q in queries:
            exact = lite.code().nearest("m", "file", q, K, tree_a)
            got = code.nearest("m", "file", q, K, tree_a)
            assert len(got) == K and all(h in vectors["a"] for h, _ in got)
            assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
            # every content found is scored exactly as SQLite scores it
            exact_scores = dict(lite.code().nearest("m", "file", q, 2 * PER_TREE, tree_a))
            assert all(s == exact_scores[h] for h, s in got)
            recalls.append(len({h for h, _ in got} & {h for h, _ in exact}) / K)
        assert min(recalls) >= 0.9 and float(np.mean(recalls)) >= 0.97, recalls
        # a tree with no more contents than asked for: all of them, exactly
        few = tree_a[:K]
        assert code.nearest("m", "file", queries[0], K, few) == lite.code().nearest(
            "m", "file", queries[0], K, few
        )
    finally:
        lite.close()
        pg.close()


def test_one_trees_nearest_is_exact_whatever_other_trees_hold(
    tmp_path: Path, postgres_url: Callable[[], str]
) -> None:
    """Up to ``EXACT_KEYS`` files, PostgreSQL answers exactly SQLite's neighbours, with tree
    ``a`` alone and beside tree ``b`` (the HNSW graph would hold both trees' vectors)."""
    vectors = _two_trees()
    assert PER_TREE <= code_postgres.EXACT_KEYS
    lite = SQLiteStore(tmp_path / "v.db")
    alone = PostgresStore(postgres_url())
    shared = PostgresStore(postgres_url())
    try:
        _fill(lite, {"a": vectors["a"]})
        _fill(alone, {"a": vectors["a"]})
        _fill(shared, vectors)
        tree_a = list(vectors["a"])
        for q in np.random.default_rng(3).standard_normal((25, DIM)).astype(np.float32):
            exact = lite.code().nearest("m", "file", q, K, tree_a)
            assert alone.code().nearest("m", "file", q, K, tree_a) == exact
            assert shared.code().nearest("m", "file", q, K, tree_a) == exact
    finally:
        lite.close()
        alone.close()
        shared.close()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    for package in ("store", "trees"):
        shutil.copytree(SRC / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    return root


QUESTIONS = (
    "where are node ids derived from paths",
    "advisory lock serializes two writers of one tree",
    "cosine nearest neighbours of a query vector",
)


def test_flat_vector_signal_ranks_alike_on_both_backends(
    repo: Path, tmp_path: Path, postgres_url: Callable[[], str]
) -> None:
    embedder = HashingEmbedder(dim=64)
    retriever = FlatRetriever(FlatConfig(vector_limit=8), embedder=embedder)
    answers = []
    for location in (tmp_path / "lite.db", postgres_url()):
        with treeseek.open(location, hooks=[CodeIndexHook(embedder, workers=1)]) as db:
            db.index(repo, name="repo")
            ctx = SearchContext(
                store=db.store, tree=db.tree("repo"), navigator=LexicalNavigator(), caches=db.caches
            )
            got = []
            for question in QUESTIONS:
                ranking = retriever.rank(ctx, question, 20)
                assert ranking.mode == "hybrid" and "vectors" in ranking.signals
                got.append([(h.path, h.score, h.evidence) for h in ranking.hits])
            answers.append(got)
    assert answers[0] == answers[1]
