"""``index_file(path, data) -> FileCodeIndex``: the one entry point of per-file code indexing.

It never raises. Binary content gets no chunks; a file without a grammar, too large to parse,
minified, or whose extraction fails gets window chunks with ``parse_error`` saying why. A file whose
syntax tree has errors is still indexed (tree-sitter recovers), with ``parse_error`` noting it.
The result depends only on ``(path, data)``; the path matters for the language and the module
name, so callers caching by content hash should key on the language too.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import re
from collections.abc import Iterable, Iterator

from treeseek.code.chunks import build_chunks
from treeseek.code.edges import extract_edges
from treeseek.code.entrypoints import extract_entrypoints
from treeseek.code.languages import SUPPORTED, family, header_language, language_for_path
from treeseek.code.model import FileCodeIndex, Symbol, SymbolKind
from treeseek.code.modules import module_name
from treeseek.code.queries import BY_FAMILY
from treeseek.code.source import Source, parse_source
from treeseek.code.symbols import extract_symbols

MAX_PARSE_BYTES = 2_000_000  # larger files (generated, vendored bundles) are windows only
_BINARY_SNIFF = 8192
_MINIFIED_MIN_BYTES = 20_000  # small files are never worth skipping
_MINIFIED_MEAN_LINE = 500  # mean bytes per line above which a file counts as minified
_PARALLEL_MIN_FILES = 64  # below this, worker start-up costs more than it saves


def decode(data: bytes) -> tuple[str, bytes]:
    """Text and UTF-8 bytes of ``data``: UTF-8 (BOM dropped), else Latin-1, so every byte string
    decodes with its line count unchanged, and the parser always sees valid UTF-8."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), data
    except UnicodeDecodeError:
        text = data.decode("latin-1")
        return text, text.encode("utf-8")


def is_binary(data: bytes) -> bool:
    return b"\x00" in data[:_BINARY_SNIFF]


def is_minified(data: bytes, line_count: int) -> bool:
    """Generated one-liners (``jquery.min.js``): their one-letter symbols are noise."""
    if len(data) < _MINIFIED_MIN_BYTES:
        return False
    return len(data) / max(line_count, 1) > _MINIFIED_MEAN_LINE


def index_file(path: str, data: bytes) -> FileCodeIndex:
    """Parse one file into its C0-C3 layers."""
    language = language_for_path(path, data[:256])
    module = module_name(path, language)
    if is_binary(data):
        return FileCodeIndex(language, module, (), parse_error="binary content")
    text, data = decode(data)
    language = header_language(path, data, language)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if "\r" in text:
        lines = [line.rstrip("\r") for line in lines]
    if language is None or language not in SUPPORTED:
        return FileCodeIndex(None, module, build_chunks(lines, ()))
    if len(data) > MAX_PARSE_BYTES:
        return FileCodeIndex(
            language, module, build_chunks(lines, ()), parse_error="file too large to parse"
        )
    if is_minified(data, len(lines)):
        return FileCodeIndex(
            language, module, build_chunks(lines, ()), parse_error="minified (not parsed)"
        )
    try:
        return _index_parsed(path, language, module, data, lines)
    except Exception as exc:  # a grammar or extractor bug must not stop indexing
        return FileCodeIndex(
            language,
            module,
            build_chunks(lines, ()),
            parse_error=f"{type(exc).__name__}: {exc}"[:300],
        )


def index_many(
    items: Iterable[tuple[str, bytes]], workers: int = 1, chunksize: int = 16
) -> Iterator[FileCodeIndex]:
    """:func:`index_file` over ``(path, data)`` items, results in input order.

    With ``workers > 1`` the files are parsed by that many worker processes (parsing is CPU
    bound and holds the GIL in the extractors); a small batch is parsed in-process.
    """
    batch = list(items)
    if workers <= 1 or len(batch) < _PARALLEL_MIN_FILES:
        for path, data in batch:
            yield index_file(path, data)
        return
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with ctx.Pool(processes=workers) as pool:
        yield from pool.imap(_index_item, batch, chunksize=chunksize)


def _index_item(item: tuple[str, bytes]) -> FileCodeIndex:
    return index_file(item[0], item[1])


def _index_parsed(
    path: str, language: str, module: str, data: bytes, lines: list[str]
) -> FileCodeIndex:
    fam = family(language)
    parsed = blank_macro_lines(data) if fam in ("c", "cpp") else data
    src = parse_source(path, language, parsed, BY_FAMILY[fam])
    table = extract_symbols(src)
    edges = extract_edges(src, table)
    entrypoints = extract_entrypoints(src, table, edges) if fam == "python" else []
    symbols = table.symbols
    handlers = {e.handler for e in entrypoints if e.handler}
    if handlers or any(s.name == "main" for s in symbols):
        symbols = [_mark_entry(s, handlers) for s in symbols]
    package = _package(src) if fam in ("java", "csharp", "go") else None
    return FileCodeIndex(
        language=language,
        module=module,
        chunks=build_chunks(lines, symbols),
        symbols=tuple(symbols),
        edges=tuple(edges),
        entrypoints=tuple(entrypoints),
        parse_error="syntax errors (recovered)" if src.has_error else None,
        package=package,
    )


_MACRO_LINE = re.compile(rb"^[ \t]*[A-Z_][A-Z0-9_]*[A-Z0-9][A-Z0-9_]*[ \t]*\r?$")
# what a line before a statement-level macro ends with (so `f(a,\n  NULL\n)` keeps its NULL)
_STATEMENT_END = (b";", b"{", b"}", b">", b")", b"*/")


def blank_macro_lines(data: bytes) -> bytes:
    """``data`` with spaces over every line that is one upper-case identifier after the end
    of a statement, a block, a comment or a preprocessor line (``FMT_BEGIN_NAMESPACE``, libuv's
    ``UV_HANDLE_FIELDS`` field lists, ``FMT_CONSTEXPR`` on its own line). Such a macro expands
    to what the grammar cannot see (``namespace fmt {``, struct fields, attributes), and
    tree-sitter recovers by swallowing the definitions after it. Same length, so byte
    offsets and line numbers are unchanged."""
    if b"\n" not in data:
        return data
    lines = data.split(b"\n")
    prev = b""
    changed = False
    for i, line in enumerate(lines):
        if _MACRO_LINE.match(line) and (
            not prev
            or prev.endswith(_STATEMENT_END)
            or (prev.startswith((b"#", b"//", b"*", b"/*")) and not prev.endswith(b"\\"))
        ):
            lines[i] = b" " * len(line.rstrip(b"\r")) + (b"\r" if line.endswith(b"\r") else b"")
            changed = True
            continue  # a run of them: each after the one before
        stripped = line.strip()
        code = stripped.split(b"//", 1)[0].rstrip()  # `}  // namespace detail` ends with }
        if stripped:
            prev = code or stripped
    return b"\n".join(lines) if changed else data


def _mark_entry(sym: Symbol, handlers: set[str]) -> Symbol:
    is_main = sym.name == "main" and sym.parent is None and sym.kind is SymbolKind.FUNCTION
    if sym.qname in handlers or is_main:
        return dataclasses.replace(sym, is_entry_candidate=True)
    return sym


def _package(src: Source) -> str | None:
    """The package/namespace a Java, C# or Go file declares (used by cross-file resolution)."""
    for node in src.nodes("package"):
        if node.type == "package_clause":  # Go: `package foo`
            return src.text(node).split()[-1]
        name = node.child_by_field_name("name")
        if name is None:
            for child in node.named_children:
                if child.type in ("scoped_identifier", "identifier", "qualified_name"):
                    name = child
                    break
        if name is not None:
            return src.text(name)
    return None
