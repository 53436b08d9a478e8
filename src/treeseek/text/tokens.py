"""The tokenizers: one module, used at index time and at query time alike.

Two tokenizers, each used for both sides of its own signal:

- :func:`code_tokens` (identifier-based, with repeats) for contents: chunk and symbol
  documents and their term counts, file term counts, query understanding;
- :func:`word_tokens` (word-based, camelCase and ``_`` split, joined compound) for paths and
  path-like text: path BM25, the hashing embedder, :func:`query_terms`.

Content tokenization:

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


# -- word tokens: paths and path-like text ------------------------------------------

_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_WORD = re.compile(r"\w+")

#: English function words and issue-tracker filler that carry no path evidence.
_STOPWORD_TEXT = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves also get got via etc
    e g ie eg use used using want wants would like should shall may might must cannot cant dont
    doesnt isnt wasnt arent im ive thats its lets let one two new
"""
QUERY_STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())

#: File-extension tokens: a query mentioning ``query.py`` says nothing about every other ``.py``
#: file (the exact-path boost covers a full mention). Dropped from query terms only.
_EXTENSION_TEXT = """
    py pyi pyx pxd c h cc cpp hpp cxx js jsx ts tsx mjs cjs java kt go rs rb php cs swift m mm
    scala sh bash zsh txt md rst html htm css scss json yml yaml toml cfg ini xml csv lock in
    tpl j2 jinja po mo
"""
EXTENSION_TOKENS: frozenset[str] = frozenset(_EXTENSION_TEXT.split())


def word_tokens(text: str) -> list[str]:
    """Code-aware tokens: split on ``/ . _ -`` and other non-word characters and on camelCase,
    lowercased. A compound word (``QuerySet``, ``query_set``) also yields its joined form
    (``queryset``) so it matches the other spelling.
    """
    out: list[str] = []
    for word in _WORD.findall(text):
        out.extend(_word_parts(word))
    return out


@lru_cache(maxsize=1 << 16)
def _word_parts(word: str) -> tuple[str, ...]:
    """The tokens of one word of :func:`word_tokens` (cached: a tree's paths repeat their
    directory names, an issue its words; ~2.4x faster over a 47,000-file tree's paths)."""
    if word.isascii():
        parts = [p.lower() for p in _CAMEL_PART.findall(word)]
    else:
        parts = [p.lower() for p in word.split("_") if p]
    if len(parts) > 1:
        return (*parts, "".join(parts))
    return tuple(parts)


def query_terms(query: str, *, drop_extensions: bool = True) -> list[str]:
    """Distinct query terms in first-seen order; stopwords, file-extension tokens and
    one-character tokens removed.

    Terms are deduplicated: a long issue text repeating a word should not multiply its weight
    against a path that can only mention it once or twice.
    """
    seen: dict[str, None] = {}
    for tok in word_tokens(query):
        if len(tok) <= 1 or tok in QUERY_STOPWORDS:
            continue
        if not drop_extensions or tok not in EXTENSION_TOKENS:
            seen.setdefault(tok, None)
    return list(seen)


def fold(token: str) -> str:
    """A light English suffix folding for prose (``deploying``/``deployed``/``deploys`` ->
    ``deploy``): plural and verb endings of longer words."""
    if len(token) > 5 and token.endswith("ing"):
        return token[:-3]
    if len(token) > 4 and token.endswith("ed"):
        return token[:-2]
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


def prose_terms(text: str) -> list[str]:
    """Terms of prose (documentation sections, questions about them): code tokens without
    stopwords, suffix-folded; repeats kept."""
    return [fold(t) for t in code_tokens(text) if t not in QUERY_STOPWORDS]
