"""The lower layers this package reads, imported in one place (modules move; this follows)."""

from __future__ import annotations

from typing import Any

from treeseek.search.flat.understanding import QueryMentions, extract_mentions
from treeseek.store.code_base import CodeStore
from treeseek.text.tokens import QUERY_STOPWORDS, code_tokens, fts_document


def code_store(store: Any) -> CodeStore:
    """The code-layer store of ``store``'s database."""
    found: CodeStore = store.code()
    return found


__all__ = [
    "QUERY_STOPWORDS",
    "CodeStore",
    "QueryMentions",
    "code_store",
    "code_tokens",
    "extract_mentions",
    "fts_document",
]
