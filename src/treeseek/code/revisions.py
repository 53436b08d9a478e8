"""Parser revisions: which stored parses an improved parser must redo.

The code layers are stored per content hash, and ``treeseek index`` parses only the files
whose content changed, so an unchanged file would keep what an older parser made of it
forever (a better symbol span or name would reach only new databases). Each parsed content
records the revision of the parser for its language (``code_files.parser_revision``); when a
change to parsing or naming changes what is stored for a language's files, raise that
language's entry here. The next ``treeseek index`` (or ``watch``) of a tree parses again its
contents stored at an older revision (:meth:`~treeseek.index.code_hook.CodeIndexHook.apply`),
as if they had changed, and the tree gets a new version.

The contents are shared by the trees of a database: a content parsed again for one tree is
seen by the others too (a process that keeps another tree's tables keeps the old ones until
that tree's next version).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from treeseek.code.conventions import is_data_file

#: language (the code index's name; "" for files without a grammar) -> its parser's revision.
#: 0 is every parse stored before revisions existed. Revision 1 (session 13's audit of the
#: code index): overloads keep the implementation's plain name, C++ headers named .h parsed
#: as C++, template/macro/function-pointer names, JS/TS exported and namespaced members,
#: Java records and anonymous classes, Ruby ``class << self``, Rust attributes and ``mod``
#: functions, and chunks of types whose methods come before them. Revision 2 (JS/TS, Java,
#: Rust): calls in a container that is not a symbol (an object literal's values, a namespace's
#: statements, an anonymous class's initializers, an impl of another file's type) belong to
#: the enclosing symbol or the module, not to the container's name, which no tool accepts.
PARSER_REVISIONS: Mapping[str, int] = MappingProxyType(
    {
        "python": 1,
        "javascript": 2,
        "typescript": 2,
        "tsx": 2,
        "go": 1,
        "rust": 2,
        "java": 2,
        "ruby": 1,
        "c": 1,
        "cpp": 1,
    }
)


def parser_revision(language: str | None) -> int:
    """The current parser revision of ``language`` (None: a file without a grammar)."""
    return PARSER_REVISIONS.get(language or "", 0)


def newest_revision() -> int:
    """The highest revision of any language (0: no stored parse can be stale)."""
    return max(PARSER_REVISIONS.values(), default=0)


def is_stale(language: str | None, revision: int) -> bool:
    """Whether a content parsed as ``language`` at ``revision`` must be parsed again."""
    return revision < parser_revision(language)


def stale_paths(rows: Iterable[tuple[str, str, str | None, int]]) -> dict[str, str]:
    """``content_hash -> path`` of the stale ones of ``rows`` (content hash, a path of it,
    its stored language, its stored revision): each content's first path that is not a data
    file (what the code index would parse it as)."""
    out: dict[str, str] = {}
    for digest, path, language, revision in rows:
        if not is_stale(language, revision) or is_data_file(path):
            continue
        if digest not in out or path < out[digest]:
            out[digest] = path
    return out
