"""Which files the code index hook embeds, and in what order it hands texts to the model."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

import treeseek
from treeseek.code.parse import index_file
from treeseek.embed.hashing import HashingEmbedder
from treeseek.index.code_hook import OUTLINE_KIND, CodeIndexHook, file_outline
from treeseek.store.code_base import VectorKey

FILES = {
    "shop/billing/currency.py": "def convert(amount, rate):\n    return amount * rate\n",
    "shop/billing/invoice.py": (
        '"""Invoices."""\n\nclass Invoice:\n    """A bill."""\n\n'
        "    def total(self):\n        return sum(self.lines)\n\n"
        "    def tax(self):\n        return 0\n"
    ),
    "shop/static/cart.js": "function addToCart(item) { return item; }\n",
    "shop/tests/test_currency.py": "def test_convert():\n    assert True\n",
    "shop/conftest.py": "import pytest\n",
    "README.md": "# Shop\n\nSells things.\n",
    "shop/locale/fr.po": 'msgid "cart"\nmsgstr "panier"\n',
}


class _RecordingEmbedder(HashingEmbedder):
    """The hashing embedder, remembering every batch it was given."""

    def __init__(self) -> None:
        super().__init__(dim=64)
        self.batches: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.batches.append(list(texts))
        return super().embed(texts)


def _repo(root: Path) -> Path:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_only_source_code_that_is_not_a_test_gets_a_vector(tmp_path: Path) -> None:
    embedder = _RecordingEmbedder()
    hook = CodeIndexHook(embedder, workers=1)
    with treeseek.open(tmp_path / "v.db", hooks=[hook]) as db:
        db.index(_repo(tmp_path / "repo"), name="shop")
        nodes = {n.path: n.content_hash for n in db.store.subtree("shop", "") if n.is_file}
        keys = [VectorKey(h, p) for p, h in nodes.items() if h]
        stored = db.store.code().vectors(embedder.name, OUTLINE_KIND, keys)
    with_vectors = {key.path for key in stored}
    assert with_vectors == {
        "shop/billing/currency.py",
        "shop/billing/invoice.py",
        "shop/static/cart.js",
    }
    assert hook.stats.embedded == 3
    texts = [t for batch in embedder.batches for t in batch]
    assert len(texts) == 3
    assert [len(t) for t in texts] == sorted(len(t) for t in texts)
    assert "shop billing invoice\nInvoices.\nclasses: Invoice\nfunctions: total, tax" in texts


def test_reindex_embeds_only_a_changed_source_file(tmp_path: Path) -> None:
    embedder = _RecordingEmbedder()
    root = _repo(tmp_path / "repo")
    with treeseek.open(tmp_path / "v.db", hooks=[CodeIndexHook(embedder, workers=1)]) as db:
        db.index(root, name="shop")
        embedder.batches.clear()
        (root / "shop/billing/currency.py").write_text("def convert(amount):\n    return amount\n")
        (root / "shop/tests/test_currency.py").write_text("def test_other():\n    pass\n")
        db.index(root, name="shop")
    texts = [t for batch in embedder.batches for t in batch]
    assert len(texts) == 1
    assert texts == ["shop billing currency\nfunctions: convert"]


def test_outline_names_each_symbol_once_after_the_module_docstring() -> None:
    source = (
        b'#!/usr/bin/env python\n"""Exchange rates\nand money.\n\nLong details."""\n\n'
        b"class Rate:\n    def __init__(self):\n        pass\n\n    def convert(self):\n"
        b"        pass\n\n\ndef convert(amount):\n    return amount\n\n\ndef rates():\n"
        b"    return []\n"
    )
    index = index_file("shop/money/exchange_rates.py", source)
    outline = file_outline("shop/money/exchange_rates.py", index.symbols, source.decode())
    assert outline == (
        "shop money exchange rates\nExchange rates and money.\nclasses: Rate\n"
        "functions: convert, rates"
    )
    plain = index_file("notes/todo.txt", b"buy milk\n")
    assert file_outline("notes/todo.txt", plain.symbols, "buy milk\n") == "notes todo\nbuy milk\n"


def test_a_data_file_gets_no_vector_when_another_tree_parsed_its_content(
    tmp_path: Path,
) -> None:
    """``app.min.js`` is data (never parsed at that path); the same bytes as ``app.js`` in
    another tree are parsed, and still the data file gets no vector, as in its tree alone."""
    script = "function addToCart(item) { return item; }\n"
    source = tmp_path / "source"
    (source / "static").mkdir(parents=True)
    (source / "static" / "app.js").write_text(script)
    built = tmp_path / "built"
    (built / "static").mkdir(parents=True)
    (built / "static" / "app.min.js").write_text(script)
    embedder = _RecordingEmbedder()
    with treeseek.open(tmp_path / "v.db", hooks=[CodeIndexHook(embedder, workers=1)]) as db:
        db.index(source, name="source")
        db.index(built, name="built")
        nodes = [n for t in ("source", "built") for n in db.store.subtree(t, "") if n.is_file]
        keys = [VectorKey(n.content_hash, n.path) for n in nodes if n.content_hash]
        stored = db.store.code().vectors(embedder.name, OUTLINE_KIND, keys)
    assert len({k.content_hash for k in keys}) == 1
    assert [k.path for k in stored] == ["static/app.js"]


def test_turning_vectors_on_for_an_indexed_tree_embeds_its_unchanged_files(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path / "repo")
    with treeseek.open(tmp_path / "late.db", hooks=[CodeIndexHook(workers=1)]) as db:
        db.index(repo, name="shop")  # no embedder: no vectors
    late = _RecordingEmbedder()
    with treeseek.open(tmp_path / "late.db", hooks=[CodeIndexHook(late, workers=1)]) as db:
        report = db.index(repo, name="shop")  # nothing changed on disk
        assert report.changed == report.added == 0
        keys = [
            VectorKey(n.content_hash, n.path)
            for n in db.store.subtree("shop", "")
            if n.is_file and n.content_hash
        ]
        late_vecs = db.store.code().vectors(late.name, OUTLINE_KIND, keys)
    fresh = _RecordingEmbedder()
    with treeseek.open(tmp_path / "fresh.db", hooks=[CodeIndexHook(fresh, workers=1)]) as db:
        db.index(repo, name="shop")
        fresh_vecs = db.store.code().vectors(fresh.name, OUTLINE_KIND, keys)
    # the same files, with vectors of the same texts as a fresh index with vectors on
    assert {key.path for key in late_vecs} == {
        "shop/billing/currency.py",
        "shop/billing/invoice.py",
        "shop/static/cart.js",
    }
    assert late_vecs.keys() == fresh_vecs.keys()
    assert sorted(t for b in late.batches for t in b) == sorted(t for b in fresh.batches for t in b)
    for h in late_vecs:
        assert np.allclose(late_vecs[h], fresh_vecs[h])
    # and once they are there, a third run embeds nothing
    again = _RecordingEmbedder()
    with treeseek.open(tmp_path / "late.db", hooks=[CodeIndexHook(again, workers=1)]) as db:
        db.index(repo, name="shop")
    assert again.batches == []
