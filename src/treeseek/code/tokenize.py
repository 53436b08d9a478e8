"""Code-aware tokenization for full-text search, used at index time and at query time.

An identifier yields itself (lowercased) AND its parts: ``getUserName`` -> ``getusername``,
``get``, ``user``, ``name``; ``snake_case_name`` -> ``snake_case_name``, ``snake``, ``case``,
``name``. The whole identifier makes exact mentions precise; the parts make prose match code.
SQLite's FTS5 cannot run a Python tokenizer, so documents are tokenized here and stored as
space-separated tokens (the FTS table keeps ``_`` as a token character).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
#: tokens shorter than this are dropped (``a``, ``x``, ``_``): too common to rank anything
MIN_TOKEN_LENGTH = 2
#: very long identifiers are mostly generated data (hashes, base64); keep them out of the index
MAX_TOKEN_LENGTH = 64


@lru_cache(maxsize=262_144)
def identifier_tokens(identifier: str) -> tuple[str, ...]:
    """The whole identifier (lowercased), then its camelCase/snake_case parts, deduplicated."""
    whole = identifier.lower()
    if len(whole) > MAX_TOKEN_LENGTH:
        return ()
    out: list[str] = []
    stripped = whole.strip("_")
    if len(stripped) >= MIN_TOKEN_LENGTH:
        out.append(stripped)
    for part in _PART.findall(identifier):
        token = part.lower()
        if len(token) >= MIN_TOKEN_LENGTH and token not in out and not token.isdigit():
            out.append(token)
    return tuple(out)


def code_tokens(text: str) -> list[str]:
    """All tokens of ``text`` in order (with repeats: term frequency matters to BM25)."""
    out: list[str] = []
    for identifier in _IDENTIFIER.findall(text):
        out.extend(identifier_tokens(identifier))
    return out


@lru_cache(maxsize=262_144)
def _joined_tokens(identifier: str) -> str:
    return " ".join(identifier_tokens(identifier))


def fts_document(text: str) -> str:
    """``text`` as the space-separated token string stored in an FTS5 column.

    Same tokens as :func:`code_tokens`; built from per-identifier cached strings because this
    runs over every indexed line.
    """
    return " ".join(filter(None, map(_joined_tokens, _IDENTIFIER.findall(text))))


def unique_tokens(texts: Iterable[str]) -> list[str]:
    """Distinct tokens of several texts, in first-seen order."""
    seen: dict[str, None] = {}
    for text in texts:
        for token in code_tokens(text):
            seen.setdefault(token, None)
    return list(seen)
