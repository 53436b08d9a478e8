"""The embedding cache: exact vectors back, keyed by model, kind and text; shared by files."""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from treeseek.embed.cache import CachedEmbedder, EmbeddingCache, text_digest
from treeseek.embed.hashing import HashingEmbedder

TEXTS = ["shop billing invoice\nclasses: Invoice", "shop cart\nfunctions: add_to_cart", "é ünïcode"]


class _Counting(HashingEmbedder):
    """The hashing embedder, counting the texts it embeds."""

    def __init__(self, name: str = "hashing-test") -> None:
        super().__init__(dim=64)
        self.name = name
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.seen.extend(texts)
        return super().embed(texts)


def test_cached_vectors_are_byte_identical_to_fresh_ones(tmp_path: Path) -> None:
    inner = _Counting()
    fresh = inner.embed(TEXTS)
    inner.seen.clear()
    first = CachedEmbedder(inner, EmbeddingCache(tmp_path / "c.sqlite"), "outline-v2")
    assert first.embed(TEXTS).tobytes() == fresh.tobytes()
    assert inner.seen == TEXTS
    # a second cache object on the same file (another commit's build): nothing embedded again
    inner.seen.clear()
    second = CachedEmbedder(inner, EmbeddingCache(tmp_path / "c.sqlite"), "outline-v2")
    again = second.embed(list(reversed(TEXTS)))
    assert inner.seen == []
    assert again.dtype == np.float32
    assert again.tobytes() == fresh[::-1].tobytes()
    assert (second.stats.embedded, second.stats.reused) == (0, 3)


def test_only_new_texts_reach_the_model_and_duplicates_once(tmp_path: Path) -> None:
    inner = _Counting()
    cached = CachedEmbedder(inner, EmbeddingCache(tmp_path / "c.sqlite"), "outline-v2")
    cached.embed(TEXTS[:2])
    inner.seen.clear()
    out = cached.embed([TEXTS[0], TEXTS[2], TEXTS[2]])
    assert inner.seen == [TEXTS[2]]
    assert out[1].tobytes() == out[2].tobytes() == inner.embed([TEXTS[2]])[0].tobytes()
    assert cached.stats.texts == 5 and cached.stats.embedded == 3 and cached.stats.reused == 2


@pytest.mark.parametrize(("model", "kind"), [("other-model", "outline-v2"), ("m", "outline-v3")])
def test_another_model_or_kind_never_hits(tmp_path: Path, model: str, kind: str) -> None:
    path = tmp_path / "c.sqlite"
    CachedEmbedder(_Counting("m"), EmbeddingCache(path), "outline-v2").embed(TEXTS)
    inner = _Counting(model)
    CachedEmbedder(inner, EmbeddingCache(path), kind).embed(TEXTS)
    assert inner.seen == TEXTS
    cache = EmbeddingCache(path)
    assert cache.count() == 6
    digests = [text_digest(t) for t in TEXTS]
    assert set(cache.get("m", "outline-v2", digests)) == set(digests)
    assert cache.get("m", "section-v1", digests) == {}


def test_a_cache_crosses_processes_unopened(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    vec = np.arange(4, dtype=np.float32)
    cache.put("m", "k", [(text_digest("x"), vec)])
    copy = pickle.loads(pickle.dumps(cache))
    assert copy.get("m", "k", [text_digest("x")])[text_digest("x")].tobytes() == vec.tobytes()
    cache.close()
    copy.close()
