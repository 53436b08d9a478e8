"""Outlines: a file's symbols the way an IDE's outline shows them.

Each item is a class, function, method or constant of the code index (C1) with its name path,
signature, line span (1-based, inclusive, decorators included) and the first line of its
docstring or doc comment, nested by its enclosing symbols. A document of a document tree (or
one of its sections) outlines its sections instead: title, level, span in the document's lines
(pages for PDF and PageIndex). A directory's outline is the outline of every file under it that
has symbols, and of every document, in path order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from treeseek.code.languages import language_for_path
from treeseek.code.model import Symbol, SymbolKind, first_qname, symbol_id
from treeseek.context.model import FileOutline, Outline, OutlineItem
from treeseek.context.source import TreeSource
from treeseek.errors import ConfigError, NodeNotFound
from treeseek.llm.tokens import TokenCounter, default_counter
from treeseek.trees.documents.layout import Outline as DocumentOutline

_QUOTES = "\"'`"
_COMMENT_MARKS = ("///", "//!", "//", "/**", "/*", "*/", "#", "*", "--")


def first_doc_line(doc: str | None) -> str | None:
    """The first non-empty line of a docstring or doc comment, without quotes or comment
    marks."""
    if not doc:
        return None
    for raw in doc.splitlines():
        line = raw.strip()
        for prefix in ('"""', "'''", 'r"""', "r'''"):
            if line.startswith(prefix):
                line = line[len(prefix) :]
        for mark in _COMMENT_MARKS:
            if line.startswith(mark):
                line = line[len(mark) :].strip()
                break
        line = line.rstrip()
        for suffix in ('"""', "'''", "*/"):
            if line.endswith(suffix):
                line = line[: -len(suffix)].rstrip()
        line = line.strip(_QUOTES).strip()
        if line:
            return line
    return None


def _depths(ordered: Sequence[Symbol]) -> list[int]:
    """Each symbol's indentation in line order: under its parent when the parent's span holds
    it, or when it follows its parent or a sibling directly (a Rust impl after its struct).
    A Go method or a trait impl's method elsewhere in the file is not indented under
    whatever function came before it."""
    by_qname = {s.qname: s for s in ordered}
    depth: dict[str, int] = {}
    out: list[int] = []
    prev: Symbol | None = None
    for sym in ordered:
        parent = by_qname.get(sym.parent) if sym.parent else None
        if parent is None or parent.qname not in depth:
            d = 0
        elif parent.start_line <= sym.start_line <= parent.end_line or prev is parent:
            d = depth[parent.qname] + 1
        elif prev is not None and prev.parent == sym.parent:
            d = depth[prev.qname]
        else:
            d = 0
        depth[sym.qname] = d
        out.append(d)
        prev = sym
    return out


def _signature(symbol: Symbol) -> str:
    if symbol.signature:
        return symbol.signature
    return symbol.name


def items_of(path: str, symbols: Sequence[Symbol]) -> tuple[OutlineItem, ...]:
    ordered = sorted(symbols, key=lambda s: (s.start_line, -s.end_line, s.qname))
    return tuple(
        OutlineItem(
            name_path=symbol_id(path, s.qname),
            kind=str(s.kind),
            signature=_signature(s),
            start_line=s.start_line,
            end_line=s.end_line,
            doc=first_doc_line(s.docstring),
            depth=d,
        )
        for s, d in zip(ordered, _depths(ordered), strict=True)
    )


_KIND_WORD = {
    str(SymbolKind.CLASS): "class",
    str(SymbolKind.FUNCTION): "def",
    str(SymbolKind.METHOD): "def",
    str(SymbolKind.CONST): "const",
}


def render_file_outline(
    path: str, lines: int, items: Sequence[OutlineItem], omitted: int = 0, unit: str = "lines"
) -> str:
    """The text form: a header, then one line per symbol (``start-end  kind signature  # doc``),
    and how many symbols were left out to fit a budget, if any."""
    out = [f"{path} ({lines} {unit})"]
    width = len(str(lines))
    for item in items:
        span = f"{item.start_line:>{width}}-{item.end_line:<{width}}"
        doc = f"  # {item.doc}" if item.doc else ""
        name = first_qname(item.name_path.rpartition("::")[2]).rpartition(".")[2]
        # Python-style signatures start with the name: say what it is; others carry keywords
        word = _KIND_WORD.get(item.kind, item.kind) + " " if item.signature.startswith(name) else ""
        out.append(f"  {span} {'  ' * item.depth}{word}{item.signature}{doc}")
    if omitted:
        noun = ("section" if items[0].kind == "section" else "symbol") if items else "item"
        out.append(f"  ... {omitted} more {noun}{'s' if omitted != 1 else ''} (over the budget)")
    return "\n".join(out)


def section_items(document: DocumentOutline, path: str) -> tuple[OutlineItem, ...]:
    """The sections of a document (``path`` is the document) or under section ``path``, in
    document order, nested by level; a section without a span has 0-0."""
    prefix = path + "/"
    under = [i for p, i in document.sections.items() if p.startswith(prefix)]
    top = min((i.level for i in under), default=0)
    return tuple(
        OutlineItem(
            name_path=i.path,
            kind="section",
            signature=i.title,
            start_line=i.start or 0,
            end_line=i.end or 0,
            doc=None,
            depth=max(0, i.level - top),
        )
        for i in under
    )


def _outline_document(path: str, document: DocumentOutline, counter: TokenCounter) -> FileOutline:
    """A document's, or a section's, outline: its sections with their spans in the document's
    lines (pages for PDF and PageIndex), not the stored outline record's lines."""
    items = section_items(document, path)
    unit = "lines" if document.unit == "line" else "pages"
    own = document.sections.get(path)
    if own is not None:
        n = (own.end - own.start + 1) if own.start is not None and own.end is not None else 0
    else:
        n = max((i.end for i in document.sections.values() if i.end is not None), default=0)
    text = render_file_outline(path, n, items, unit=unit)
    return FileOutline(path, None, n, counter.count(text), items, unit=unit)


def outline_file(source: TreeSource, path: str, counter: TokenCounter | None = None) -> FileOutline:
    counter = counter or default_counter()
    document = source.document_outline(path)
    if document is not None:
        return _outline_document(path, document, counter)
    lines = source.lines(path)
    n = len(lines or [])
    items = items_of(path, source.symbols(path))
    text = render_file_outline(path, n, items)
    return FileOutline(path, source.language(path), n, counter.count(text), items)


def cut_outline(full: FileOutline, budget: int, counter: TokenCounter) -> FileOutline | None:
    """``full`` cut to its first items (line order) whose rendering, with the line saying how
    many were left out, fits ``budget`` tokens; None when not even its header fits."""
    if full.tokens <= budget:
        return full

    def cut(n: int) -> FileOutline:
        kept = full.items[:n]
        omitted = len(full.items) - n
        text = render_file_outline(full.path, full.lines, kept, omitted, full.unit)
        return replace(full, tokens=counter.count(text), items=kept, omitted=omitted)

    if cut(0).tokens > budget:
        return None
    lo, hi = 0, len(full.items) - 1  # the most items that fit (all of them do not)
    while lo < hi:  # the rendering only grows with n
        mid = (lo + hi + 1) // 2
        if cut(mid).tokens <= budget:
            lo = mid
        else:
            hi = mid - 1
    return cut(lo)


def _is_document(source: TreeSource, path: str) -> bool:
    document = source.document_outline(path)
    return document is not None and document.document == path


#: files whose symbols a directory's outline reads at a time
OUTLINE_BATCH = 500


class OutlineTooLarge(ConfigError):
    """A directory's outline is over the tokens its caller allows (``max_tokens``)."""

    def __init__(
        self,
        path: str,
        tokens: int,
        files: int,
        limit: int,
        outlined: tuple[FileOutline, ...] = (),
        unread: tuple[str, ...] = (),
    ) -> None:
        where = f"{path!r}" if path else "the whole tree"
        super().__init__(
            f"the outline of {where} is over {limit:,} tokens ({tokens:,} in its first"
            f" {files:,} files)"
        )
        self.path, self.tokens, self.files, self.limit = path, tokens, files, limit
        #: the files outlined before the limit was passed (the last one passed it), and the
        #: paths not read after them whose language the code index parses (their symbols
        #: were not read, so some may have none)
        self.outlined, self.unread = outlined, unread


def outline(
    source: TreeSource,
    path: str = "",
    counter: TokenCounter | None = None,
    *,
    max_tokens: int | None = None,
) -> Outline:
    """The outline of file ``path``, or of every file with symbols under directory ``path``.

    ``max_tokens``: a directory's outline stops at the first file that takes it over this
    many tokens and raises :class:`OutlineTooLarge` (a whole large tree's outline is MBs and
    reads every file: a server refuses it without building it)."""
    node = source.node(path)
    if node is None:
        raise NodeNotFound(
            f"no node {path!r} in tree {source.tree!r}; use `treeseek show {source.tree}`"
        )
    if node.is_file:
        if source.lines(path) is None:  # binary, too large, unreadable: not "0 lines"
            why = node.content_status.missing_because
            raise NodeNotFound(f"{path} has no stored content: {why}")
        return Outline(source.tree, path, (outline_file(source, path, counter),))
    paths = source.file_paths(path)
    files: list[FileOutline] = []
    tokens = 0
    for start in range(0, len(paths), OUTLINE_BATCH):
        batch = paths[start : start + OUTLINE_BATCH]
        source.prefetch_symbols(batch)
        for at, p in enumerate(batch, start):
            if not source.symbols(p) and not _is_document(source, p):
                source.release(p)
                continue
            files.append(outline_file(source, p, counter))
            source.release(p)  # its items hold what the outline needs of it
            tokens += files[-1].tokens
            if max_tokens is not None and tokens > max_tokens:
                unread = tuple(q for q in paths[at + 1 :] if language_for_path(q) is not None)
                raise OutlineTooLarge(path, tokens, len(files), max_tokens, tuple(files), unread)
    return Outline(source.tree, path, tuple(files))
