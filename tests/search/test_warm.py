"""Database.warm builds every per-tree table a query reads, and changes no answer."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import treeseek
from treeseek.rank.paths import PathCorpusStats
from treeseek.search.caches import tree_key
from treeseek.search.flat import flat as flat_module
from treeseek.search.flat.file_bm25 import FileBM25Index
from treeseek.search.flat.import_graph import ImportResolver
from treeseek.search.flat.parts import PartIndex, SymbolCatalog, TreeSymbols
from treeseek.search.flat.understanding import MentionResolver

FILES = {
    "shop/cart.py": '''"""The shopping cart."""


class Cart:
    """Items and their quantities."""

    def add_item(self, sku, quantity=1):
        """Add ``quantity`` of ``sku``; a negative quantity raises ValueError."""
        if quantity < 0:
            raise ValueError("quantity must be positive")
        self.items[sku] = self.items.get(sku, 0) + quantity

    def total(self, prices):
        return sum(prices[sku] * n for sku, n in self.items.items())
''',
    "shop/payments/retry.py": '''"""Retries of failed payments."""
import random


def backoff_delay(attempt, base=0.5):
    """Exponential backoff with jitter."""
    return base * 2 ** attempt * (1 + random.random())
''',
    "shop/payments/invoice.py": """from shop.cart import Cart


def invoice_total(cart: Cart, prices):
    return round(cart.total(prices), 2)
""",
    "tests/test_cart.py": """from shop.cart import Cart


def test_add_item():
    Cart().add_item("a", 2)
""",
    "README.md": "# shop\n\nA cart, invoices and payment retries.\n",
}

#: a question that runs every signal: title and body (files, title), identifiers and a dotted
#: name (mentions, chunks, symbols), a path (paths)
QUESTION = (
    "Cart.add_item accepts a negative quantity in shop/cart.py\n\n"
    "Calling `add_item(sku, -1)` should raise ValueError, but the invoice_total of the cart"
    " then goes below zero; backoff_delay is not involved."
)

#: what a query builds once per tree version: (owner, attribute)
BUILDERS: list[tuple[Any, str]] = [
    (flat_module.FlatRetriever, "_load_tree_files"),
    (PartIndex, "__init__"),
    (SymbolCatalog, "__init__"),
    (MentionResolver, "__init__"),
    (FileBM25Index, "__init__"),
    (PathCorpusStats, "from_paths"),
    (ImportResolver, "__init__"),
]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    with treeseek.open(tmp_path / "warm.db") as db:
        db.index(root, name="shop")
    return tmp_path / "warm.db"


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Counts the calls of every table builder (each still runs)."""
    counts: Counter[str] = Counter()
    for owner, attr in BUILDERS:
        raw = owner.__dict__[attr]
        is_static = isinstance(raw, staticmethod)
        is_class = isinstance(raw, classmethod)
        fn: Callable[..., Any] = raw.__func__ if is_static or is_class else raw
        label = f"{owner.__name__}.{attr}"

        def counted(*args: Any, _fn: Any = fn, _label: str = label, **kwargs: Any) -> Any:
            counts[_label] += 1
            return _fn(*args, **kwargs)

        wrapped: Any = counted
        if is_static:
            wrapped = staticmethod(counted)
        elif is_class:
            wrapped = classmethod(counted)
        monkeypatch.setattr(owner, attr, wrapped)
    yield counts


def test_a_query_after_warm_builds_nothing(repo: Path, builds: Counter[str]) -> None:
    with treeseek.open(repo) as db:
        assert db.warm("shop") is True
        assert set(builds) == {f"{o.__name__}.{a}" for o, a in BUILDERS}  # each ran in warm
        builds.clear()
        db.query("shop", QUESTION, k=5)
        db.query("shop", QUESTION, k=5, budget=2000)
    assert builds == Counter()


def test_without_warm_the_first_query_builds_them(repo: Path, builds: Counter[str]) -> None:
    """The other side of the test above: the spies see what a cold query builds. The
    symbol catalog waits: the first lookups go to the store's name indexes (TreeSymbols),
    a later one builds it (each of these queries looks names up)."""
    everything = {f"{o.__name__}.{a}" for o, a in BUILDERS}
    with treeseek.open(repo) as db:
        db.query("shop", QUESTION, k=5)
        assert set(builds) == everything - {"SymbolCatalog.__init__"}
        for _ in range(TreeSymbols.LOOKUPS):
            db.query("shop", QUESTION, k=5)
        assert set(builds) == everything


def test_warm_changes_no_answer(repo: Path) -> None:
    with treeseek.open(repo) as db:
        cold = db.query("shop", QUESTION, k=5).to_dict()
        context = db.query("shop", QUESTION, k=5, budget=2000).to_dict()
    with treeseek.open(repo) as db:
        db.warm("shop")
        warm = db.query("shop", QUESTION, k=5).to_dict()
        assert db.query("shop", QUESTION, k=5, budget=2000).to_dict() == context
    for answer in (cold, warm):
        answer.pop("trace", None)
        answer.pop("wall_s", None)
    assert warm == cold
    assert warm["files"][0]["path"] == "shop/cart.py"


def test_warm_builds_the_new_version_after_a_reindex(repo: Path) -> None:
    root = repo.parent / "repo"
    with treeseek.open(repo) as db:
        db.warm("shop")
        before = tree_key(db.tree("shop"))
        (root / "shop" / "cart.py").write_text(FILES["shop/cart.py"] + "\n# edited\n")
        db.index(root, name="shop")
        after = db.tree("shop")
        assert tree_key(after) != before
        assert db.caches.peek(flat_module.TREE_FILES, after) is None
        db.warm("shop")
        files = db.caches.peek(flat_module.TREE_FILES, after)
        assert files is not None
        assert files.chunk_index is not None and files.catalog is not None


def test_a_document_tree_has_nothing_to_warm(tmp_path: Path) -> None:
    doc = tmp_path / "guide.md"
    doc.write_text("# Guide\n\n## Install\n\npip install it\n\n## Use\n\nrun it\n")
    with treeseek.open(tmp_path / "d.db") as db:
        db.index(doc, name="guide")
        assert db.warm("guide") is False


def test_warm_of_a_missing_tree_says_so(repo: Path) -> None:
    with treeseek.open(repo) as db, pytest.raises(treeseek.TreeNotFound):
        db.warm("nope")


def test_warm_inverts_the_bm25_postings_a_cold_query_scans(repo: Path) -> None:
    """A first query scans the postings as stored (cheaper than grouping them by term for
    one question); a warmed tree has them inverted already, so no later query pays that."""
    with treeseek.open(repo) as db:
        db.query("shop", QUESTION, k=5)
        files = db.caches.peek(flat_module.TREE_FILES, db.tree("shop"))
        assert files is not None and files.chunk_index is not None
        assert files.file_index is not None and files.file_index.index is not None
        assert not files.chunk_index.postings.inverted
        assert not files.file_index.index.inverted
    with treeseek.open(repo) as db:
        db.warm("shop")
        files = db.caches.peek(flat_module.TREE_FILES, db.tree("shop"))
        assert files is not None and files.chunk_index is not None
        assert files.symbol_index is not None and files.file_index is not None
        assert files.file_index.index is not None
        assert files.chunk_index.postings.inverted and files.symbol_index.postings.inverted
        assert files.file_index.index.inverted
