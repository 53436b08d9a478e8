"""Vector search is exact on both stores: PostgreSQL scores every vector of a tree in the
process with SQLite's scoring (:class:`treeseek.store.vector_search.VectorMatrix`), so it
returns SQLite's neighbours with bit-identical scores, whatever size the tree and whatever
other trees the database holds; its cache of a tree's vectors
(:mod:`treeseek.store.vector_cache`) never answers from vectors that have changed since.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import treeseek
from treeseek.embed.hashing import HashingEmbedder
from treeseek.index.code_hook import CodeIndexHook
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import SearchContext
from treeseek.search.flat.flat import FlatConfig, FlatRetriever
from treeseek.store.base import Store
from treeseek.store.code_base import VectorKey
from treeseek.store.code_postgres import PostgresCodeStore
from treeseek.store.postgres import PostgresStore
from treeseek.store.sqlite import SQLiteStore
from treeseek.store.vector_cache import KEY_BYTES, MatrixKey, VectorCache
from treeseek.store.vector_search import SCORE_ROWS, VectorMatrix, exact_nearest

SRC = Path(__file__).resolve().parents[2] / "src" / "treeseek"
DIM = 32
#: above the 4,096 files up to which PostgreSQL used to scan a tree exactly (beyond, its HNSW
#: index answered), and above a block of rows scored at once
BIG_TREE = 4_500
#: the other tree beside it: larger
OTHER_TREE = 9_000
K = 20


def _fill(store: Store, vectors: dict[str, dict[VectorKey, np.ndarray]]) -> None:
    for tree, items in vectors.items():
        with store.write_tree(tree) as writer:
            writer.put_contents((key.content_hash, key.content_hash.encode()) for key in items)
            writer.code().put_vectors("m", "file", sorted(items.items()))


def _trees(**sizes: int) -> dict[str, dict[VectorKey, np.ndarray]]:
    rng = np.random.default_rng(11)
    out: dict[str, dict[VectorKey, np.ndarray]] = {}
    for t, (tree, size) in enumerate(sizes.items()):
        vecs = rng.standard_normal((size, DIM)).astype(np.float32)
        out[tree] = {VectorKey(f"{t}{i:063x}", f"src/m{i}.py"): v for i, v in enumerate(vecs)}
    return out


def test_nearest_is_among_the_keys_not_their_contents_at_other_paths(
    store_factory: Callable[..., Store],
) -> None:
    """One content at two paths has two vectors: a search among one path's key never
    answers with the other's, even when that one is nearer."""
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


def test_one_trees_nearest_is_exact_whatever_other_trees_hold(
    tmp_path: Path, postgres_url: Callable[[], str]
) -> None:
    """PostgreSQL answers exactly SQLite's neighbours, scores bit for bit, for a tree of more
    files than it used to scan exactly (``BIG_TREE``; its HNSW graph, holding every tree's
    vectors, answered beyond), alone and beside a larger tree ``b``; and among every vector of
    the database (``keys=None``)."""
    vectors = _trees(a=BIG_TREE, b=OTHER_TREE)
    lite = SQLiteStore(tmp_path / "a.db")
    lite_both = SQLiteStore(tmp_path / "ab.db")
    alone = PostgresStore(postgres_url())
    shared = PostgresStore(postgres_url())
    try:
        _fill(lite, {"a": vectors["a"]})
        _fill(lite_both, vectors)
        _fill(alone, {"a": vectors["a"]})
        _fill(shared, vectors)
        tree_a = list(vectors["a"])
        for q in np.random.default_rng(3).standard_normal((6, DIM)).astype(np.float32):
            for k in (K, 200):
                exact = lite.code().nearest("m", "file", q, k, tree_a)
                assert len(exact) == k
                assert alone.code().nearest("m", "file", q, k, tree_a) == exact
                assert shared.code().nearest("m", "file", q, k, tree_a) == exact
            everything = lite_both.code().nearest("m", "file", q, K, None)
            assert shared.code().nearest("m", "file", q, K, None) == everything
    finally:
        for store in (lite, lite_both, alone, shared):
            store.close()


def test_a_readers_cached_vectors_are_never_stale(
    tmp_path: Path, postgres_url: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader reads a tree's vectors once and answers from them while they do not change;
    it reads them again after a change committed by another process's store (the tree
    re-indexed with another vector, a vector deleted); a write rolled back is no change; a
    write's own reads see its rows; a snapshot opened before a change answers as of its
    version, also after the reader has cached the newer one. Every answer is SQLite's."""
    loads: list[int] = []
    load = PostgresCodeStore._load

    def counted(*args: Any) -> Any:
        loads.append(1)
        return load(*args)

    monkeypatch.setattr(PostgresCodeStore, "_load", staticmethod(counted))
    vectors = _trees(a=300)
    tree_a = list(vectors["a"])
    q = np.random.default_rng(4).standard_normal(DIM).astype(np.float32)
    url = postgres_url()
    lite = SQLiteStore(tmp_path / "v.db")
    reader = PostgresStore(url)
    other = PostgresStore(url)  # another process's: its own cache

    def answer() -> list[tuple[VectorKey, float]]:
        return reader.code().nearest("m", "file", q, K, tree_a)

    def reindex(changes: dict[VectorKey, np.ndarray]) -> None:
        _fill(lite, {"a": changes})
        _fill(other, {"a": changes})

    try:
        _fill(lite, vectors)
        _fill(other, vectors)
        first = answer()
        assert first == lite.code().nearest("m", "file", q, K, tree_a)
        assert answer() == first and len(loads) == 1 and len(reader.vector_cache) == 1
        target, runner_up = tree_a[-1], tree_a[-2]
        assert target not in {key for key, _ in first}
        reindex({target: q.copy()})
        changed = answer()
        assert changed[0][0] == target and len(loads) == 2
        assert changed == lite.code().nearest("m", "file", q, K, tree_a)
        with pytest.raises(RuntimeError), other.write_tree("a") as writer:
            writer.code().put_vectors("m", "file", [(runner_up, 2 * q)])
            # the write reads its own rows, without the cache
            for code in (writer.code(), other.code()):
                top = code.nearest("m", "file", q, 2, tree_a)
                assert {key for key, _ in top} == {target, runner_up}
            raise RuntimeError("rolled back")
        assert len(loads) == 4  # the write's two reads
        assert answer() == changed and len(loads) == 4
        assert other.code().nearest("m", "file", q, K, tree_a) == changed  # its first read
        assert len(loads) == 5
        with other._connection() as conn:
            conn.execute("DELETE FROM code_vectors WHERE content_hash = %s", (target.content_hash,))
        without = [key for key in tree_a if key != target]
        assert answer() == lite.code().nearest("m", "file", q, K, without)
        assert len(loads) == 6
        # a snapshot of the version before a change, across the reader's caching of it
        before = answer()
        opened, committed = threading.Event(), threading.Event()
        seen: list[list[tuple[VectorKey, float]]] = []

        def in_snapshot() -> None:
            with reader.snapshot():
                seen.append(answer())
                opened.set()
                committed.wait(60)
                seen.append(answer())

        thread = threading.Thread(target=in_snapshot)
        thread.start()
        opened.wait(60)
        reindex({runner_up: q.copy()})
        after = answer()
        committed.set()
        thread.join(60)
        assert seen == [before, before]
        assert after != before and after[0][0] == runner_up
        assert after == lite.code().nearest("m", "file", q, K, without)
    finally:
        lite.close()
        reader.close()
        other.close()


def test_the_vector_cache_is_bounded_and_drops_stale_entries() -> None:
    def matrix(n: int) -> VectorMatrix[VectorKey]:
        rows = np.ones((n, 8), dtype=np.float32)
        return VectorMatrix.from_rows([VectorKey(f"{i:064x}", "p.py") for i in range(n)], rows)

    one = matrix(10)
    size = one.nbytes + KEY_BYTES * 10
    cache = VectorCache(max_bytes=2 * size)
    a, b, c = (MatrixKey(model, "file", 8, None) for model in ("a", "b", "c"))
    cache.put(a, 1, one)
    cache.put(b, 1, matrix(10))
    assert cache.get(a, 1) is one and cache.nbytes == 2 * size
    cache.put(c, 1, matrix(10))  # b: least recently used
    assert cache.get(b, 1) is None and cache.get(a, 1) is one and cache.get(c, 1) is not None
    assert cache.nbytes == 2 * size <= cache.max_bytes
    assert cache.get(a, 2) is None  # read at another stamp: stale, dropped
    assert cache.get(a, 1) is None and len(cache) == 1 and cache.nbytes == size
    cache.put(a, 1, matrix(30))  # larger than the bound: not kept
    assert cache.get(a, 1) is None and cache.nbytes == size
    # a key set's size counts, not only the vectors found for it
    keys = frozenset(VectorKey(f"{i:064x}", "q.py") for i in range(100))
    cache.put(MatrixKey("d", "file", 8, keys), 1, one)
    assert len(cache) == 1 and cache.nbytes == size


def test_a_vectors_score_does_not_depend_on_the_others() -> None:
    """Rows are scored in blocks of ``SCORE_ROWS``: a vector's score is the same alone and
    in any block of a larger matrix."""
    rng = np.random.default_rng(9)
    vectors = {f"k{i:05d}": v for i, v in enumerate(rng.standard_normal((SCORE_ROWS + 7, 48)))}
    vectors = {key: v.astype(np.float32) for key, v in vectors.items()}
    q = rng.standard_normal(48).astype(np.float32)
    scored = exact_nearest(vectors, q, len(vectors))
    assert len(scored) == len(vectors)
    assert [s for _, s in scored] == sorted((s for _, s in scored), reverse=True)
    for key, score in scored[:: SCORE_ROWS // 3]:
        assert exact_nearest({key: vectors[key]}, q, 1) == [(key, score)]


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
