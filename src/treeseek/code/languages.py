"""Which language a file is written in, and the tree-sitter grammar objects for it.

Grammars come from ``tree-sitter-language-pack`` (0.13, which bundles them in the wheel, so
nothing is downloaded at run time). Parsers, languages and compiled queries are cached per
process: building them costs milliseconds, parsing a file costs microseconds to milliseconds.
"""

from __future__ import annotations

import functools
import posixpath
import re

from tree_sitter import Language, Parser, Query

# The languages whose symbols, edges and chunks the code index understands.
SUPPORTED: frozenset[str] = frozenset(
    {
        "python",
        "javascript",
        "typescript",
        "tsx",
        "go",
        "rust",
        "java",
        "c",
        "cpp",
        "ruby",
        "csharp",
    }
)

_EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
    ".ipp": "cpp",
    ".rb": "ruby",
    ".rake": "ruby",
    ".gemspec": "ruby",
    ".cs": "csharp",
}

_FILENAMES: dict[str, str] = {
    "rakefile": "ruby",
    "gemfile": "ruby",
    "sconstruct": "python",
    "sconscript": "python",
}

_SHEBANGS: dict[str, str] = {
    "python": "python",
    "python3": "python",
    "node": "javascript",
    "ruby": "ruby",
}


def language_for_path(path: str, head: bytes = b"") -> str | None:
    """The language of ``path`` (extension, then well-known filename, then shebang in ``head``).

    ``None`` means no grammar: the file is still chunked into windows.
    """
    base = posixpath.basename(path).lower()
    _, ext = posixpath.splitext(base)
    lang = _EXTENSIONS.get(ext) or _FILENAMES.get(base)
    if lang is not None:
        return lang
    if not ext and head.startswith(b"#!"):
        first = head.split(b"\n", 1)[0].decode("ascii", "replace")
        words = first[2:].replace("/usr/bin/env", " ").split()
        if words:
            interpreter = posixpath.basename(words[0])
            return _SHEBANGS.get(interpreter.rstrip("0123456789.") or interpreter) or _SHEBANGS.get(
                interpreter
            )
    return None


# Lines only C++ has: a header named `.h` is parsed as C++ when one of them appears (fmt, gtest,
# most C++ projects name their headers `.h`; the C grammar turns their namespaces, templates and
# classes into garbage symbols). `extern "C"` guards and `#ifdef __cplusplus` are not markers.
_CPP_MARKERS = re.compile(
    rb"^[ \t]*(?:"
    rb"namespace(?:[ \t]+[\w:]+)?[ \t]*\{"  # namespace fmt {, namespace {
    rb"|template[ \t]*<"  # template <typename T>
    rb"|(?:class|struct)[ \t]+\w+(?:[ \t]+final)?[ \t]*:[ \t]*(?:public|private|protected)\b"
    rb"|class[ \t]+\w+(?:[ \t]+final)?[ \t]*(?:[{:]|$)"  # class foo {, class foo : bar
    rb"|using[ \t]+namespace[ \t]"
    rb"|(?:public|private|protected)[ \t]*:[ \t]*$"
    rb"|#[ \t]*include[ \t]*<\w+>"  # <string>, <vector>: C++ standard headers have no suffix
    rb")",
    re.MULTILINE,
)
_SNIFF_HEADER_BYTES = 256_000


def header_language(path: str, data: bytes, language: str | None) -> str | None:
    """``language`` (from :func:`language_for_path`), except that a ``.h`` file whose content
    has a line only C++ has is C++."""
    is_header = language == "c" and path.lower().endswith(".h")
    if is_header and _CPP_MARKERS.search(data[:_SNIFF_HEADER_BYTES]):
        return "cpp"
    return language


def family(language: str) -> str:
    """The extractor family of a language: ``tsx`` shares the TypeScript rules."""
    return "typescript" if language == "tsx" else language


@functools.cache
def ts_language(language: str) -> Language:
    from tree_sitter_language_pack import get_language

    return get_language(language)  # type: ignore[arg-type]


@functools.cache
def ts_parser(language: str) -> Parser:
    from tree_sitter_language_pack import get_parser

    return get_parser(language)  # type: ignore[arg-type]


@functools.cache
def ts_query(language: str, source: str) -> Query:
    """A compiled query, cached by (language, source text)."""
    return Query(ts_language(language), source)
