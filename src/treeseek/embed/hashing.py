"""HashingEmbedder: feature-hashed word tokens and character n-grams, L2-normalized.

A deterministic, dependency-free embedder (the hashing trick): each text becomes a sparse bag of
features (code-aware word tokens, their compounds, and character 3..5-grams of every token with
boundary markers), each feature hashed with BLAKE2b into one of ``dim`` buckets with a hashed
sign, summed with weights, and L2-normalized. No model, nothing to download: it is the offline
fallback when no neural model is installed, and it captures sub-word overlap
(``querysets`` ~ ``query_set`` ~ ``QuerySet``) that plain BM25 misses.

The empty text (no tokens) embeds to the zero vector, whose cosine with anything is 0.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from treeseek.embed.base import Embedder
from treeseek.text.tokens import word_tokens

WORD_WEIGHT = 1.0
NGRAM_WEIGHT = 0.35


def _bucket(feature: str, dim: int) -> tuple[int, float]:
    h = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
    return h % dim, (1.0 if (h >> 63) & 1 else -1.0)


class HashingEmbedder(Embedder):
    def __init__(self, dim: int = 512, ngram_range: tuple[int, int] = (3, 5)) -> None:
        if dim < 16:
            raise ValueError(f"HashingEmbedder dim must be at least 16, got {dim}")
        lo, hi = ngram_range
        if not 1 <= lo <= hi:
            raise ValueError(f"bad ngram_range {ngram_range!r}")
        self.dim = dim
        self.ngram_range = (lo, hi)
        self.name = f"hashing-v1-d{dim}-n{lo}{hi}"
        self._token_features = lru_cache(maxsize=65536)(self._features_of_token)

    def _features_of_token(self, token: str) -> tuple[tuple[int, float], ...]:
        """(bucket, signed weight) pairs of one token: the word and its char n-grams."""
        acc: dict[int, float] = {}
        idx, sign = _bucket("w:" + token, self.dim)
        acc[idx] = acc.get(idx, 0.0) + sign * WORD_WEIGHT
        marked = f"<{token}>"
        lo, hi = self.ngram_range
        for n in range(lo, hi + 1):
            for i in range(len(marked) - n + 1):
                idx, sign = _bucket("c:" + marked[i : i + n], self.dim)
                acc[idx] = acc.get(idx, 0.0) + sign * NGRAM_WEIGHT
        return tuple(acc.items())

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            vec = out[row]
            for tok in word_tokens(text):
                for idx, w in self._token_features(tok):
                    vec[idx] += w
            norm = float(np.linalg.norm(vec))
            if norm > 0.0:
                vec /= norm
        return out
