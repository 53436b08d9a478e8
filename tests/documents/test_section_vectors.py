"""Section vectors of document trees: stored at index time under the sections' keys, read by
the flat ranking only when the question asks for them and the tree has them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

import treeseek
from treeseek.database import Database
from treeseek.embed.base import Embedder
from treeseek.embed.hashing import HashingEmbedder
from treeseek.index.code_hook import CodeIndexHook
from treeseek.index.section_vectors import SECTION_KIND, section_text, title_path_words
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import QueryOptions, SearchContext
from treeseek.search.document.ranking import (
    SEMANTIC_FEATURES,
    VECTOR_WEIGHTS,
    WEIGHTS,
    stacked_trees,
)
from treeseek.search.document.retriever import DocumentRetriever
from treeseek.search.document.trees import TREE_WEIGHT
from treeseek.store.base import Store
from treeseek.store.code_base import VectorKey

GUIDE = """\
=====
Guide
=====

An overview of the project and where to start.

Serializers
===========

A serializer turns model instances into primitive data such as dictionaries.

Caching
=======

Keep computed pages in memory between requests.
"""

NOTES = """\
# Notes

## Conversion of objects

Objects become primitive types before they are written out.
"""

#: "serialization" is no word of the tree (its BM25 ignores it); the hashing embedder's
#: character n-grams meet it in "serializer"
QUESTION = "serialization of objects into data"
SERIALIZERS = "topics/guide.rst/1-guide/1-serializers"


class CountingEmbedder(Embedder):
    """The hashing embedder, counting the texts it embeds."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder()
        self.name = self.inner.name
        self.dim = self.inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.texts.extend(texts)
        return self.inner.embed(texts)


def _docs(root: Path) -> Path:
    (root / "topics").mkdir(parents=True)
    (root / "topics" / "guide.rst").write_text(GUIDE)
    (root / "notes.md").write_text(NOTES)
    return root


def _sections(store: Store, tree: str) -> list[VectorKey]:
    nodes = [n for n in store.subtree(tree, "") if n.is_file]
    files = {n.path for n in nodes}
    return [
        VectorKey(n.content_hash or "", n.path) for n in nodes if n.path.rpartition("/")[0] in files
    ]


def _ranked(
    db: Database, tree: str, embedder: Embedder, vectors: str | None
) -> list[tuple[str, float | None]]:
    ctx = SearchContext(db.store, db.tree(tree), LexicalNavigator(), caches=db.caches)
    retriever = DocumentRetriever({"hashing": embedder})
    options = QueryOptions(strategy="flat", vectors=vectors, include_content=False)
    return [(f.path, f.score) for f in retriever.retrieve(ctx, QUESTION, options).files]


def test_the_embedded_text_is_the_path_title_and_the_opening() -> None:
    path = "howto/deployment/checklist.txt/1-deployment-checklist/2-critical-settings"
    document = "howto/deployment/checklist.txt"
    assert title_path_words(document, path) == (
        "howto deployment checklist / deployment checklist / critical settings"
    )
    text = "Critical settings\n=================\n\nSome   settings\nmatter." + " x" * 600
    embedded = section_text(document, path, text)
    assert embedded.startswith(
        "howto deployment checklist / deployment checklist / critical settings. "
        "Critical settings Some settings matter. x x"
    )
    assert len(embedded) == len(title_path_words(document, path)) + 2 + 600


def test_sections_get_vectors_at_index_time_once(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    root = _docs(tmp_path / "docs")
    with treeseek.open(tmp_path / "t.db", hooks=[CodeIndexHook(embedder)]) as db:
        db.index(root, name="docs", documents=True)
        keys = _sections(db.store, "docs")
        assert len(keys) == 5  # guide + 2 subsections, notes + 1 subsection
        stored = db.store.code().vectors(embedder.name, SECTION_KIND, keys)
        assert set(stored) == set(keys)
        assert len(embedder.texts) == 5
        guide = SERIALIZERS
        key = next(k for k in keys if k.path == guide)
        text = db.store.contents([key.content_hash])[key.content_hash].decode()
        want = HashingEmbedder().embed([section_text("topics/guide.rst", guide, text)])[0]
        np.testing.assert_array_equal(stored[key], want)
        db.index(root, name="docs", documents=True)  # unchanged: nothing embedded again
        assert len(embedder.texts) == 5
        (root / "notes.md").write_text(NOTES + "\n## Another part\n\nMore text.\n")
        db.index(root, name="docs", documents=True)  # only the new section
        assert len(embedder.texts) == 6
        assert set(
            db.store.code().vectors(embedder.name, SECTION_KIND, _sections(db.store, "docs"))
        ) == set(_sections(db.store, "docs"))


def test_section_vectors_are_stored_on_both_backends(
    store_factory: Callable[..., Store], tmp_path: Path
) -> None:
    embedder = HashingEmbedder()
    db = Database(store_factory(), hooks=[CodeIndexHook(embedder)])
    db.index(_docs(tmp_path / "docs"), name="docs", documents=True)
    keys = _sections(db.store, "docs")
    stored = db.store.code().vectors(embedder.name, SECTION_KIND, keys)
    assert set(stored) == set(keys) and len(keys) == 5
    assert (embedder.name, SECTION_KIND) in db.store.code().vector_kinds()
    before = _ranked(db, "docs", embedder, None)
    after = _ranked(db, "docs", embedder, "hashing")
    assert after != before


def test_vectors_change_the_ranking_only_when_the_tree_has_them(tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    root = _docs(tmp_path / "docs")
    with treeseek.open(tmp_path / "plain.db", hooks=[]) as plain:
        plain.index(root, name="docs", documents=True)
        lexical = _ranked(plain, "docs", embedder, None)
        # asked for, but the tree has none: exactly the lexical ranking, scores included
        assert _ranked(plain, "docs", embedder, "hashing") == lexical
        assert plain.query("docs", QUESTION, strategy="flat").files[0].path == lexical[0][0]
    with treeseek.open(tmp_path / "vec.db", hooks=[CodeIndexHook(embedder)]) as vec:
        vec.index(root, name="docs", documents=True)
        # not asked for: the lexical ranking, whatever the tree holds
        assert _ranked(vec, "docs", embedder, None) == lexical
        semantic = _ranked(vec, "docs", embedder, "hashing")
    assert semantic != lexical

    def gap(ranked: list[tuple[str, float | None]]) -> float:
        """How far the serializers section trails the notes' top section."""
        score = {p: s or 0.0 for p, s in ranked}
        return score["notes.md/1-notes"] - score[SERIALIZERS]

    # lexically the serializers trail; the cosine lifts the section it matches (the gap halves)
    assert gap(lexical) > 0
    assert gap(semantic) < 0.5 * gap(lexical)


def test_the_vector_weights_extend_the_lexical_ones() -> None:
    assert list(VECTOR_WEIGHTS) == [*WEIGHTS, *SEMANTIC_FEATURES]


def test_the_lexical_scores_are_the_lexical_weights_and_trees(tmp_path: Path) -> None:
    with treeseek.open(tmp_path / "t.db", hooks=[]) as db:
        db.index(_docs(tmp_path / "docs"), name="docs", documents=True)
        ctx = SearchContext(db.store, db.tree("docs"), LexicalNavigator(), caches=db.caches)
        corpus = DocumentRetriever().corpus(ctx)
        paths, features = corpus.candidate_features(QUESTION)
        assert features.shape[1] == len(WEIGHTS)
        linear = features @ np.array(list(WEIGHTS.values()))
        refined = stacked_trees("lexical").predict(np.hstack([features, linear[:, None]]))
        want = dict(zip(paths, linear + TREE_WEIGHT * refined, strict=True))
        got = dict(corpus.rank(QUESTION))
        assert got.keys() == want.keys()
        assert all(got[p] == pytest.approx(want[p]) for p in got)
        assert not np.allclose(refined, refined[0])  # the trees do tell candidates apart
