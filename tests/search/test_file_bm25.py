"""File-level BM25: the stored term counts (written once, backfilled, numpy blobs), the numpy
index against a hand computation, and the flat retriever's ``files`` signal over them."""

from __future__ import annotations

import math
import sqlite3
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import treeseek
from treeseek.code.parse import index_file
from treeseek.database import Database
from treeseek.index.code_hook import CodeIndexHook, prepare_code
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import QueryOptions, SearchContext
from treeseek.search.caches import TreeCaches
from treeseek.search.flat.bm25 import BM25Postings, group_by_id
from treeseek.search.flat.file_bm25 import FileBM25Index
from treeseek.search.flat.flat import FlatConfig, FlatRetriever
from treeseek.store.code_base import FileTerms
from treeseek.store.migrations import MIGRATIONS
from treeseek.store.sqlite import SQLiteStore
from treeseek.text.tokens import code_tokens

FILES = {
    "app/orders.py": (
        "class OrderBook:\n"
        '    """Keeps open orders by price."""\n\n'
        "    def add_order(self, order):\n"
        "        self.orders.append(order)\n"
    ),
    "app/pricing.py": "def price_with_discount(price, discount):\n    return price - discount\n",
    "app/tests/test_orders.py": (
        "def test_add_order():\n    book = OrderBook()\n    book.add_order(order)\n"
    ),
    "web/orders.js": "function addOrder(order) { return orders.push(order); }\n",
    "README.md": "# Orders\n\nOrder book and pricing.\n",
}

#: only the signal under test
FILES_ONLY = FlatConfig(chunks=False, symbols=False, paths=False, mentions=False, vectors=False)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    _write(root, FILES)
    return root


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = treeseek.open(tmp_path / "terms.db", hooks=[CodeIndexHook(workers=1)])
    try:
        yield database
    finally:
        database.close()


def _hashes(db: Database, tree: str) -> dict[str, str]:
    return {n.path: n.content_hash for n in db.subtree(tree) if n.is_file and n.content_hash}


def _hook(db: Database) -> CodeIndexHook:
    hook = db.hooks[0]
    assert isinstance(hook, CodeIndexHook)
    return hook


def _rank(
    db: Database, tree: str, query: str, config: FlatConfig
) -> tuple[list[str], dict[str, Any]]:
    ctx = SearchContext(store=db.store, tree=db.tree(tree), navigator=LexicalNavigator())
    result = FlatRetriever(config).retrieve(ctx, query, QueryOptions(k=20))
    return [f.path for f in result.files], result.trace.params


# -- stored term counts -------------------------------------------------------------------


def test_term_counts_are_the_tokens_of_the_chunk_documents() -> None:
    index = index_file("app/orders.py", FILES["app/orders.py"].encode())
    prepared = prepare_code(index)
    expected: Counter[str] = Counter()
    for c in index.chunks:
        expected.update(code_tokens(c.text if c.symbol is None else c.symbol + "\n" + c.text))
    assert prepared.term_counts == dict(expected)
    assert prepared.term_counts["order"] >= 3 and "addorder" not in prepared.term_counts


def test_term_rows_are_written_once_per_content(db: Database, repo: Path) -> None:
    db.index(repo, name="one")
    code = db.store.code()
    hashes = _hashes(db, "one")
    rows = code.file_terms(hashes.values())
    assert set(rows) == set(code.code_files(hashes.values()))  # every parsed content
    orders = rows[hashes["app/orders.py"]]
    ids = code.term_ids(["order", "orders", "book", "no_such_term"])
    assert set(ids) == {"order", "orders", "book"}
    assert np.all(np.diff(orders.term_ids.astype(np.int64)) > 0)  # sorted, distinct
    counts = dict(zip(orders.term_ids.tolist(), orders.counts.tolist(), strict=True))
    assert (
        counts[ids["order"]]
        == prepare_code(index_file("app/orders.py", FILES["app/orders.py"].encode())).term_counts[
            "order"
        ]
    )
    assert orders.length == int(orders.counts.sum())

    hook = _hook(db)
    parsed, backfilled = hook.stats.parsed, hook.stats.terms_backfilled
    db.index(repo, name="two")  # the same bytes in another tree: nothing to do
    db.index(repo, name="one")  # unchanged
    assert (hook.stats.parsed, hook.stats.terms_backfilled) == (parsed, backfilled)
    again = code.file_terms([hashes["app/orders.py"]])[hashes["app/orders.py"]]
    assert np.array_equal(again.term_ids, orders.term_ids)


def test_vocabulary_ids_stay_consistent_over_many_files_and_runs(tmp_path: Path) -> None:
    """Past a few dozen files the writer reads the whole vocabulary instead of looking new
    terms up: ids must agree either way, and with a later run's."""
    root = tmp_path / "vocab"
    _write(root, {f"m{i}.py": f"def shared_{i % 7}():\n    return uniq{i}\n" for i in range(150)})
    db = treeseek.open(tmp_path / "vocab.db", hooks=[CodeIndexHook(workers=1)])
    try:
        db.index(root, name="a")
        _write(
            root, {f"n{i}.py": f"def shared_{i % 5}():\n    return fresh{i}\n" for i in range(90)}
        )
        db.index(root, name="a")
        code = db.store.code()
        hashes = _hashes(db, "a")
        rows = code.file_terms(hashes.values())
        vocabulary = code.term_ids([f"uniq{i}" for i in range(150)] + ["shared", "fresh89"])
        assert len(set(vocabulary.values())) == len(vocabulary) == 152
        for path in ("m0.py", "m149.py", "n0.py", "n89.py"):
            text = (root / path).read_text()
            counts = Counter(code_tokens(text))  # symbol names repeat text tokens
            want = code.term_ids(counts)
            row = rows[hashes[path]]
            assert sorted(want.values()) == row.term_ids.tolist()
    finally:
        db.close()


def test_blobs_are_plain_uint32_arrays_not_pickles(db: Database, repo: Path) -> None:
    db.index(repo, name="one")
    digest = _hashes(db, "one")["app/pricing.py"]
    stored = db.store.code().file_terms([digest])[digest]
    with sqlite3.connect(db.store.path) as conn:
        length, ids_blob, counts_blob = conn.execute(
            "SELECT length, term_ids, counts FROM code_file_terms WHERE content_hash = ?",
            (digest,),
        ).fetchone()
    assert isinstance(ids_blob, bytes) and not ids_blob.startswith(b"\x80")  # pickle opcode
    assert len(ids_blob) == len(counts_blob) == 4 * len(stored.term_ids) > 0
    assert np.array_equal(np.frombuffer(ids_blob, dtype=np.uint32), stored.term_ids)
    assert np.array_equal(np.frombuffer(counts_blob, dtype=np.uint32), stored.counts)
    assert length == stored.length


def test_term_rows_go_with_their_content(db: Database, repo: Path) -> None:
    db.index(repo, name="one")
    old = _hashes(db, "one")["app/pricing.py"]
    (repo / "app" / "pricing.py").write_text("def other():\n    return 1\n")
    db.index(repo, name="one")
    code = db.store.code()
    assert old not in code.file_terms([old])
    assert _hashes(db, "one")["app/pricing.py"] in code.file_terms(_hashes(db, "one").values())


def test_migration_drops_the_fts_file_documents(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    SQLiteStore(path, migrations=MIGRATIONS[:3]).close()
    with sqlite3.connect(path) as conn:
        before = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "code_docs_fts" in before and "code_file_terms" not in before
    SQLiteStore(path).close()
    with sqlite3.connect(path) as conn:
        after = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert not {t for t in after if t.startswith("code_docs")}
    assert {"code_terms", "code_file_terms", "code_chunks_fts"} <= after


def _drop_term_rows(db: Database) -> None:
    """What a database indexed before the file-term layer looks like: code rows, no terms."""
    with sqlite3.connect(db.store.path) as conn:
        conn.execute("DELETE FROM code_file_terms")


def test_missing_layer_is_a_note_and_reindexing_backfills_it(db: Database, repo: Path) -> None:
    db.index(repo, name="one")
    code = db.store.code()
    hashes = _hashes(db, "one")
    fresh = code.file_terms(hashes.values())
    _drop_term_rows(db)
    assert code.file_terms(hashes.values()) == {}

    paths, params = _rank(db, "one", "add order to the order book", FlatConfig(vectors=False))
    assert paths  # the other signals still answer
    assert "files" not in params["signals"]
    assert any("treeseek index" in n for n in params["notes"])

    hook = _hook(db)
    parsed = hook.stats.parsed
    db.index(repo, name="one")  # nothing changed on disk: only the missing rows are made
    assert hook.stats.parsed == parsed
    assert hook.stats.terms_backfilled == len(fresh)
    filled = code.file_terms(hashes.values())
    assert set(filled) == set(fresh)
    for digest, row in fresh.items():
        assert filled[digest].length == row.length
        assert np.array_equal(filled[digest].term_ids, row.term_ids)
        assert np.array_equal(filled[digest].counts, row.counts)

    paths, params = _rank(db, "one", "add order to the order book", FILES_ONLY)
    assert "files" in params["signals"] and "notes" not in params
    assert paths[0] == "app/orders.py"


# -- the numpy index ----------------------------------------------------------------------


def _doc(digest: str, counts: dict[int, int]) -> FileTerms:
    ids = sorted(counts)
    return FileTerms(
        digest,
        sum(counts.values()),
        np.array(ids, dtype=np.uint32),
        np.array([counts[i] for i in ids], dtype=np.uint32),
    )


def test_scores_equal_a_hand_computation() -> None:
    # term ids: 1 "cache", 2 "key", 3 "timeout", 4 "backend"
    docs = [
        _doc("a", {1: 3, 2: 1}),  # length 4
        _doc("b", {2: 2, 3: 1, 4: 5}),  # length 8
        _doc("c", {1: 1, 4: 2}),  # length 3
    ]
    index = FileBM25Index(docs)
    query = {1: 2, 3: 1, 99: 4}  # "cache" twice, "timeout" once, a term no document has
    got = index.score(query)

    k1, b, n, avgdl = 1.2, 0.75, 3, 5.0

    def idf(df: int) -> float:
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def part(tf: int, dl: int) -> float:
        return tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

    expected = [
        2 * idf(2) * part(3, 4),
        1 * idf(1) * part(1, 8),
        2 * idf(2) * part(1, 3),
    ]
    assert got.tolist() == pytest.approx(expected, rel=1e-12)
    assert index.df.tolist() == [2, 2, 1, 2]  # ids 1..4
    assert index.score({}).tolist() == [0.0, 0.0, 0.0]
    assert index.score({99: 1, 0: 1}).tolist() == [0.0, 0.0, 0.0]
    assert FileBM25Index([]).score({1: 1}).tolist() == []


def test_many_weak_terms_outrank_one_strong_term() -> None:
    # ten documents; "weak" terms 1..8 are in half of them, term 50 in one only
    docs = [_doc(f"filler{i}", {t: 1 for t in range(1, 9)} | {100 + i: 4}) for i in range(4)]
    docs.append(_doc("broad", {t: 1 for t in range(1, 9)} | {200: 4}))
    docs.append(_doc("narrow", {50: 1, 201: 11}))
    docs += [_doc(f"other{i}", {300 + i: 12}) for i in range(4)]
    index = FileBM25Index(docs)
    weak_and_rare = index.score({t: 1 for t in [*range(1, 9), 50]})
    scores = dict(zip(index.hashes, weak_and_rare.tolist(), strict=True))
    assert scores["broad"] > scores["narrow"] > 0.0
    # counting a repeated query term more: the narrow file's term said nine times wins
    rare_repeated = index.score({t: 1 for t in range(1, 9)} | {50: 9})
    scores = dict(zip(index.hashes, rare_repeated.tolist(), strict=True))
    assert scores["narrow"] > scores["broad"]


# -- the flat retriever's files signal ----------------------------------------------------


def test_files_signal_covers_primary_files_only(db: Database, repo: Path) -> None:
    db.index(repo, name="one")
    paths, params = _rank(db, "one", "add order orders book discount", FILES_ONLY)
    assert params["signals"] == ["files"]
    # code in every language (the JS file too: no language is left out), no test or markdown
    assert set(paths) == {"app/orders.py", "app/pricing.py", "web/orders.js"}
    assert paths[0] == "app/orders.py"
    only_pricing = FlatConfig(
        chunks=False, paths=False, mentions=False, vectors=False, path_prefix="app/pricing.py"
    )
    assert _rank(db, "one", "order discount", only_pricing)[0] == ["app/pricing.py"]


def test_files_signal_uses_every_query_term(tmp_path: Path) -> None:
    """A file matching many ordinary words of a long issue beats one matching a single rare
    word: the old FTS query kept only the top terms and lost the ordinary ones."""
    root = tmp_path / "many"
    words = [f"word{chr(97 + i)}{chr(97 + j)}" for i in range(6) for j in range(6)]  # 36 words
    files = {
        f"pkg/common_{i}.py": f"def f{i}():\n    return '{' '.join(words[:30])}'\n"
        for i in range(3)
    }
    files["pkg/target.py"] = f"def target():\n    return '{' '.join(words)}'\n"
    files["pkg/rare.py"] = "def rare():\n    return 'zyzzyva zyzzyva'\n"
    files |= {f"pkg/other_{i}.py": f"def g{i}():\n    return {i}\n" for i in range(6)}
    _write(root, files)
    db = treeseek.open(tmp_path / "many.db", hooks=[CodeIndexHook(workers=1)])
    try:
        db.index(root, name="many")
        query = " ".join(words) + " zyzzyva"
        paths, _ = _rank(db, "many", query, FILES_ONLY)
        assert paths[0] == "pkg/target.py"
        assert paths.index("pkg/target.py") < paths.index("pkg/rare.py")
    finally:
        db.close()


def test_coverage_is_the_idf_weighted_share_of_distinct_terms() -> None:
    docs = [
        _doc("a", {1: 3, 2: 1}),
        _doc("b", {2: 2, 3: 1, 4: 5}),
        _doc("c", {1: 1, 4: 2}),
    ]
    index = FileBM25Index(docs)
    n = 3

    def idf(df: int) -> float:
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    # "cache" (df 2) twice, "timeout" (df 1), a term no document has (left out of the total)
    got = index.coverage(np.asarray([1, 3, 1, 99], dtype=np.int64))
    total = idf(2) + idf(1)
    assert got.tolist() == pytest.approx([idf(2) / total, idf(1) / total, idf(2) / total])
    assert index.coverage(np.asarray([99], dtype=np.int64)).tolist() == [0.0, 0.0, 0.0]
    assert index.coverage(np.asarray([1, 2, 3, 4], dtype=np.int64)).max() < 1.0
    assert index.coverage(np.asarray([2], dtype=np.int64)).tolist() == [1.0, 1.0, 0.0]


def test_empty_source_files_are_not_reported_as_missing_term_counts(
    db: Database, tmp_path: Path
) -> None:
    """An empty ``__init__.py`` has no terms to count: no note on every query about it."""
    root = tmp_path / "pkg"
    _write(root, {**FILES, "app/__init__.py": "", "web/__init__.py": ""})
    db.index(root, name="pkg")
    paths, params = _rank(db, "pkg", "add order to the order book", FlatConfig(vectors=False))
    assert paths[0] == "app/orders.py"
    assert "notes" not in params


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**32 - 1) | st.integers(0, 5), max_size=300))
def test_group_by_id_is_numpys_stable_argsort(values: list[int]) -> None:
    """The postings' order (term id, then position) must be exactly a stable argsort: ties
    (one term in many documents) keep document order."""
    ids = np.array(values, dtype=np.uint32)
    order, grouped = group_by_id(ids)
    assert np.array_equal(order, np.argsort(ids, kind="stable"))
    assert np.array_equal(grouped, ids[order]) and grouped.dtype == np.uint32


_CORPUS = st.lists(
    st.dictionaries(st.integers(0, 40), st.integers(1, 5), max_size=8), min_size=1, max_size=25
)


@settings(max_examples=150, deadline=None)
@given(_CORPUS, st.dictionaries(st.integers(0, 45), st.integers(1, 3), max_size=6))
def test_postings_score_every_document_as_the_formula_does(
    docs: list[dict[int, int]], query: dict[int, int]
) -> None:
    """BM25 of each document, term by term in the query's order, as the module's formula
    says: the postings (grouped by term, factors in term order) change nothing, to the bit."""
    lengths = np.array([sum(d.values()) for d in docs], dtype=np.float64)
    index = BM25Postings(
        lengths,
        np.array([len(d) for d in docs], dtype=np.int64),
        np.array([t for d in docs for t in d], dtype=np.uint32),
        np.array([c for d in docs for c in d.values()], dtype=np.uint32),
    )
    n = len(docs)
    avgdl = float(lengths.sum()) / n if lengths.sum() > 0 else 1.0
    want = np.zeros(n)
    for term, weight in query.items():
        df = sum(term in d for d in docs)
        if not df:
            continue
        idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        for i, d in enumerate(docs):
            if term in d:
                tf = float(d[term])
                norm = 1.2 * (1.0 - 0.75 + 0.75 * lengths[i] / avgdl)
                want[i] += idf * float(weight) * (tf * 2.2 / (tf + norm))
    assert np.array_equal(index.score(query), want)


def test_scopes_kept_across_queries_answer_as_fresh_ones(db: Database, repo: Path) -> None:
    """What a configuration lets a query rank is kept with the tree's tables: queries with
    other prefixes, languages or test filters in between must not change any answer."""
    db.index(repo, name="one")
    configs = [
        FlatConfig(vectors=False),
        FlatConfig(vectors=False, path_prefix="app"),
        FlatConfig(vectors=False, path_prefix="web"),
        FlatConfig(vectors=False, languages=frozenset({"javascript"})),
        FlatConfig(vectors=False, exclude_tests=True),
        FlatConfig(vectors=False, path_prefix="app"),
        FlatConfig(vectors=False),
    ]
    question = "add order to the order book with a discount"
    shared = SearchContext(store=db.store, tree=db.tree("one"), navigator=LexicalNavigator())
    for cfg in configs:
        kept = FlatRetriever(cfg).retrieve(shared, question, QueryOptions(k=20))
        fresh = FlatRetriever(cfg).retrieve(
            replace(shared, caches=TreeCaches()), question, QueryOptions(k=20)
        )
        assert [f.path for f in kept.files] == [f.path for f in fresh.files], cfg
        assert [f.score for f in kept.files] == [f.score for f in fresh.files], cfg
    prefixes = {f.path.split("/")[0] for f in kept.files}
    assert {"app", "web"} <= prefixes


def _postings(docs: list[dict[int, int]], idf: Any) -> BM25Postings:
    return BM25Postings(
        np.array([sum(d.values()) for d in docs], dtype=np.float64),
        np.array([len(d) for d in docs], dtype=np.int64),
        np.array([t for d in docs for t in d], dtype=np.uint32),
        np.array([c for d in docs for c in d.values()], dtype=np.uint32),
        idf=idf,
    )


@settings(max_examples=150, deadline=None)
@given(
    _CORPUS,
    st.dictionaries(st.integers(-1, 45), st.integers(1, 3), max_size=6),
    st.lists(st.integers(-1, 45), max_size=8),
    st.sampled_from(["bm25", "fts5"]),
)
def test_scanning_and_inverted_postings_answer_alike_to_the_bit(
    docs: list[dict[int, int]], query: dict[int, int], ids: list[int], idf: Any
) -> None:
    """The first reads scan the postings as given, later ones read them grouped by term:
    document frequencies, scores and coverage are the same to the bit either way."""
    scanning, inverted = _postings(docs, idf), _postings(docs, idf)
    scanning.SCANS = 10  # every read below scans until invert()
    inverted.invert()
    terms = np.array(ids, dtype=np.int64)
    assert np.array_equal(scanning.doc_freqs(terms), inverted.doc_freqs(terms))
    assert np.array_equal(scanning.score(query), inverted.score(query))
    assert np.array_equal(scanning.coverage(terms), inverted.coverage(terms))
    assert np.array_equal(scanning.score(query), inverted.score(query))
    assert not scanning.inverted
    scanning.invert()
    assert np.array_equal(scanning.coverage(terms), inverted.coverage(terms))


def test_the_first_reads_scan_and_a_later_one_inverts() -> None:
    index = _postings([{1: 2, 3: 1}, {3: 4}, {}, {2: 1, 1: 1}], "fts5")
    assert index.doc_freqs(np.array([1, 3, 3, 7, -1], dtype=np.int64)).tolist() == [2, 2, 2, 0, 0]
    scanned = index.score({1: 1, 3: 2})
    assert not index.inverted  # BM25Postings.SCANS reads scanned
    assert index.score({1: 1, 3: 2}).tolist() == scanned.tolist()
    assert index.inverted
    assert index.df.tolist() == [2, 1, 2]  # the inverted arrays
