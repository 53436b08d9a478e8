"""The flat retriever on a small real repository: signals, filters, rankings, contents."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from code_trees import lexical_context, opened

import treeseek
from treeseek.code.conventions import is_test_path
from treeseek.database import Database
from treeseek.embed.base import Embedder
from treeseek.errors import ConfigError
from treeseek.index.code_hook import CodeIndexHook
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import QueryOptions, SearchContext
from treeseek.search.flat.flat import FlatConfig, FlatRetriever

FILES = {
    "shop/billing/invoice.py": (
        "class InvoiceBuilder:\n"
        '    """Builds invoices from orders, applying tax rates."""\n\n'
        "    def apply_tax(self, order, rate):\n"
        "        return order.total * (1 + rate)\n\n"
        "    def render_pdf(self, invoice):\n"
        "        return b'%PDF'\n"
    ),
    "shop/billing/currency.py": (
        "def convert_currency(amount, rate):\n    return round(amount * rate, 2)\n"
    ),
    "shop/catalog/search.py": (
        "def search_products(query, index):\n"
        '    """Full text search over the product catalog."""\n'
        "    return [p for p in index if query in p.name]\n"
    ),
    "shop/tests/test_invoice.py": (
        "from shop.billing.invoice import InvoiceBuilder\n\n"
        "def test_apply_tax():\n"
        "    assert InvoiceBuilder().apply_tax(order, 0.2) == 120\n"
        "    # invoice tax rate order total invoice tax rate order total\n"
        "    # invoice tax rate order total invoice tax rate order total\n"
    ),
    "docs/billing.md": "# Billing\n\nInvoices are rendered as PDF.\n",
}


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    yield from opened(tmp_path, FILES)


def _ctx(db: Database) -> SearchContext:
    return lexical_context(db)


def _paths(db: Database, query: str, config: FlatConfig | None = None, k: int = 10) -> list[str]:
    result = FlatRetriever(config).retrieve(_ctx(db), query, QueryOptions(k=k))
    return [f.path for f in result.files]


def test_named_symbol_ranks_its_defining_file_first(db: Database) -> None:
    assert _paths(db, "InvoiceBuilder.apply_tax() adds tax twice")[0] == "shop/billing/invoice.py"
    assert _paths(db, "convert_currency rounds wrongly")[0] == "shop/billing/currency.py"


def test_prose_query_finds_code_by_its_words(db: Database) -> None:
    config = FlatConfig(mentions=False, paths=False)
    assert _paths(db, "product catalog full text search is slow", config)[0] == (
        "shop/catalog/search.py"
    )


def test_result_shape_evidence_and_contents(db: Database) -> None:
    result = FlatRetriever().retrieve(
        _ctx(db), "InvoiceBuilder render_pdf output", QueryOptions(k=2)
    )
    assert result.strategy == "flat"
    assert result.usage.input_tokens == 0
    top = result.files[0]
    assert top.path == "shop/billing/invoice.py"
    assert top.content == FILES["shop/billing/invoice.py"]
    assert top.evidence.chunk is not None and top.evidence.chunk.start_line >= 1
    assert top.evidence.chunk.end_line >= top.evidence.chunk.start_line
    assert any(m.kind in ("symbol", "qname") for m in top.evidence.mentions)
    assert "chunks" in top.evidence.why
    assert result.trace.params["mode"] == "lexical"
    assert len(result.files) == 2


def test_test_penalty_and_exclude_tests(db: Database) -> None:
    query = "invoice tax rate order total"
    # the chunk signal alone (file BM25 sees primary files only, never tests)
    chunks_only = {"mentions": False, "symbols": False, "paths": False, "files": False}
    no_penalty = _paths(db, query, FlatConfig(test_penalty=1.0, **chunks_only))
    assert no_penalty[0] == "shop/tests/test_invoice.py"  # it repeats the words most
    penalized = _paths(db, query, FlatConfig(**chunks_only))
    assert penalized[0] == "shop/billing/invoice.py"
    excluded = _paths(db, query, FlatConfig(exclude_tests=True))
    assert "shop/tests/test_invoice.py" not in excluded


def test_path_prefix_and_language_filters(db: Database) -> None:
    only_catalog = _paths(db, "invoice tax search", FlatConfig(path_prefix="shop/catalog"))
    assert only_catalog == ["shop/catalog/search.py"]
    only_md = _paths(db, "billing invoices pdf", FlatConfig(languages=frozenset({"markdown"})))
    assert set(only_md) <= {"docs/billing.md"}
    python = _paths(db, "billing invoices pdf", FlatConfig(languages=frozenset({"python"})))
    assert "docs/billing.md" not in python and python


def test_reference_ordering_puts_exact_names_first(db: Database) -> None:
    paths = _paths(db, "convert_currency and invoices", FlatConfig(ranking="reference"))
    assert paths[0] == "shop/billing/currency.py"


def test_is_test_path_conventions() -> None:
    assert is_test_path("pkg/tests/test_x.py")
    assert is_test_path("testing/python/collect.py")
    assert is_test_path("src/foo_test.go")
    assert is_test_path("web/app.spec.ts")
    assert is_test_path("conftest.py")
    assert not is_test_path("src/_pytest/python.py")
    assert not is_test_path("django/test/utils.py")  # a library package named "test"
    assert not is_test_path("pkg/contest.py")


class _KeywordEmbedder(Embedder):
    """A real (tiny) embedder: one dimension per keyword, counts normalized."""

    name = "keywords"
    words = ("currency", "catalog", "invoice")
    dim = 3

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:  # type: ignore[override]
        rows = [[t.lower().count(w) + 1e-3 for w in self.words] for t in texts]
        arr = np.array(rows, dtype=np.float32)
        return arr / np.linalg.norm(arr, axis=1, keepdims=True)


def test_vectors_are_used_when_stored(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    embedder = _KeywordEmbedder()
    db = treeseek.open(tmp_path / "v.db", hooks=[CodeIndexHook(embedder)])
    try:
        db.index(root, name="shop")
        ctx = SearchContext(store=db.store, tree=db.tree("shop"), navigator=LexicalNavigator())
        only_vectors = FlatConfig(files=False, chunks=False, paths=False, mentions=False)
        retriever = FlatRetriever(only_vectors, embedder=embedder)
        result = retriever.retrieve(ctx, "money currency exchange", QueryOptions(k=3))
        assert result.trace.params["mode"] == "hybrid"
        assert result.files[0].path == "shop/billing/currency.py"
        lexical = FlatRetriever(only_vectors).retrieve(ctx, "currency", QueryOptions(k=3))
        assert lexical.trace.params["mode"] == "lexical"
        assert lexical.files == []
    finally:
        db.close()


def test_vectors_asked_of_a_tree_without_them_say_so(tmp_path: Path) -> None:
    """An embedder given, no vectors stored (the tree was indexed without --vectors): the
    answer is lexical and its trace says why, rather than silently dropping the signal."""
    root = tmp_path / "repo"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    db = treeseek.open(tmp_path / "v.db")  # the default hook: no embedder
    try:
        db.index(root, name="shop")
        ctx = SearchContext(store=db.store, tree=db.tree("shop"), navigator=LexicalNavigator())
        retriever = FlatRetriever(embedder=_KeywordEmbedder())
        result = retriever.retrieve(ctx, "money currency exchange", QueryOptions(k=3))
        assert result.trace.params["mode"] == "lexical"
        assert result.files  # still answered, by the lexical signals
        notes = result.trace.params["notes"]
        assert any("no keywords vectors" in n and "--vectors" in n for n in notes)
        plain = FlatRetriever().retrieve(ctx, "money currency exchange", QueryOptions(k=3))
        assert "notes" not in plain.trace.params  # no embedder asked: nothing to say
    finally:
        db.close()


def test_cached_tree_files_follow_a_reindex(db: Database, tmp_path: Path) -> None:
    """One retriever serves many queries from its per-tree cache; a new tree version (a file
    added) is seen by the next query, not hidden by the cached file list or term counts."""
    retriever = FlatRetriever(FlatConfig(mentions=False, paths=False))
    query = "ledger reconciliation entries"
    before = retriever.retrieve(_ctx(db), query, QueryOptions(k=5))
    assert "ledger" not in before.trace.params["terms"]  # in no document yet
    ledger = tmp_path / "repo" / "shop/billing/ledger.py"
    ledger.write_text(
        "def reconcile(ledger, entries):\n    return ledger.reconciliation(entries)\n"
    )
    db.index(tmp_path / "repo", name="shop")
    after = retriever.retrieve(_ctx(db), query, QueryOptions(k=5))
    assert "ledger" in after.trace.params["terms"]
    assert after.files[0].path == "shop/billing/ledger.py"


def test_another_tree_in_the_database_changes_nothing(db: Database, tmp_path: Path) -> None:
    """Document frequencies are the tree's own: indexing another tree (with words this tree
    lacks, and more of the words it has) changes neither its terms nor its ranking."""
    retriever = FlatRetriever()
    query = "quokka invoice total"
    before = retriever.retrieve(_ctx(db), query, QueryOptions())
    assert "quokka" not in before.trace.params["terms"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "zoo.py").write_text("def quokka(invoice):\n    return 'quokka' + invoice.total\n")
    db.index(other, name="zoo")
    after = retriever.retrieve(_ctx(db), query, QueryOptions())
    assert after.trace.params["terms"] == before.trace.params["terms"]
    assert [(f.path, f.score) for f in after.files] == [(f.path, f.score) for f in before.files]


def test_chunk_statistics_are_the_trees_own(db: Database, tmp_path: Path) -> None:
    from treeseek.search.flat.flat import chunk_statistics

    words = ["order", "total", "quokka"]
    n, dfs = chunk_statistics(_ctx(db), words)
    assert dfs == _chunk_doc_freqs(db, "shop", words) and dfs["quokka"] == 0
    other = tmp_path / "zoo"
    other.mkdir()
    (other / "zoo.py").write_text("def quokka(order):\n    return order.total\n")
    db.index(other, name="zoo")
    assert chunk_statistics(_ctx(db), words) == (n, dfs)


def _chunk_doc_freqs(db: Database, tree: str, words: list[str]) -> dict[str, int]:
    """How many chunks of ``tree`` contain each word (from the stored part term counts)."""
    code = db.store.code()
    hashes = {n.content_hash for n in db.subtree(tree) if n.is_file and n.content_hash}
    ids = code.term_ids(words)
    dfs = dict.fromkeys(words, 0)
    for parts in code.part_terms("chunks", hashes).values():
        for w, i in ids.items():
            dfs[w] += int((parts.term_ids == i).sum())
    return dfs


def test_the_term_cap_keeps_the_rarest_terms(db: Database) -> None:
    """Capped at two terms, a query keeps its two terms in the fewest chunks: the common
    ones cost the most and say the least."""
    query = "order total rate invoice catalog product"
    words = query.split()
    dfs = _chunk_doc_freqs(db, "shop", words)
    by_rarity = sorted(words, key=lambda w: dfs.get(w, 0))
    assert all(dfs.get(w, 0) > 0 for w in words)
    assert dfs[by_rarity[1]] < dfs[by_rarity[2]]  # the cut is not a tie
    config = FlatConfig(max_terms=2, max_df_ratio=1.0, mentions=False, paths=False)
    terms = FlatRetriever(config).retrieve(_ctx(db), query, QueryOptions()).trace.params["terms"]
    assert set(terms) == set(by_rarity[:2])


def test_title_signal_ranks_by_the_first_line_of_a_multi_line_query(db: Database) -> None:
    only_title = FlatConfig(files=False, chunks=False, paths=False, mentions=False)
    issue = "currency conversion rounds wrongly\n\nThe catalog search shows the product price."
    result = FlatRetriever(only_title).retrieve(_ctx(db), issue, QueryOptions(k=3))
    assert [f.path for f in result.files] == ["shop/billing/currency.py"]
    assert result.files[0].evidence.why == {"title": 1}
    assert result.trace.params["signals"] == ["title"]
    # a one-line question has no title apart from its body: the signal does not run
    one_line = FlatRetriever(only_title).retrieve(
        _ctx(db), "currency conversion rounds wrongly", QueryOptions(k=3)
    )
    assert one_line.files == [] and one_line.trace.params["signals"] == []


def test_evidence_lookup_can_be_skipped_for_score_only_callers(db: Database) -> None:
    no_chunks = FlatConfig(chunks=False)
    query = "InvoiceBuilder apply_tax rate"
    with_ev = FlatRetriever(no_chunks).rank(_ctx(db), query, 3).hits
    without = FlatRetriever(no_chunks).rank(_ctx(db), query, 3, evidence=False).hits
    assert [h.path for h in with_ev] == [h.path for h in without]
    assert with_ev[0].path == "shop/billing/invoice.py"
    assert with_ev[0].evidence.chunk is not None
    assert all(h.evidence.chunk is None for h in without)


def test_path_prefix_query_option(db: Database) -> None:
    """``path_prefix`` (a QueryOptions field: the API's, and MCP search's ``path``) ranks
    the files under it with flat; it is checked, and another strategy says it ignored it."""
    scoped = db.query("shop", "invoice tax search", strategy="flat", path_prefix="shop/catalog")
    assert [h.path for h in scoped.files] == ["shop/catalog/search.py"]
    with pytest.raises(ConfigError, match="not a clean repo-relative path"):
        db.query("shop", "invoice", strategy="flat", path_prefix="../etc")
    with pytest.raises(ConfigError, match="must be a string"):
        db.query("shop", "invoice", strategy="flat", path_prefix=3)
    beam = db.query("shop", "invoice", strategy="beam", path_prefix="shop/catalog")
    assert any("path_prefix is applied by the flat" in n for n in beam.trace.params["notes"])
    python = db.query("shop", "billing invoices pdf", strategy="flat", language="python")
    assert python.files and all(h.path.endswith(".py") for h in python.files)
    with pytest.raises(ConfigError, match="unknown language 'cobol'"):
        db.query("shop", "invoice", strategy="flat", language="cobol")
