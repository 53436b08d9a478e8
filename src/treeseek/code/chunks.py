"""C0: source chunks of one file.

How a file is cut (decided here, relied on by storage and retrieval):

* Every function, method and class that is not nested inside a function gets a symbol block.
  Functions nested in functions stay inside their outer function's block.
* A class's block is its *header*: from its first line (decorators included) to the line before
  its first chunked member (method or nested class), so a big class never repeats its methods'
  text. A class without chunked members is one block.
* Symbol blocks longer than :data:`MAX_SYMBOL_LINES` are split into 80-line windows with 15
  lines overlap inside the symbol's span; every piece keeps ``symbol`` set.
* Lines no symbol block covers (imports, module code, class attributes between methods, the
  tail of a class) are cut into 80-line windows with 15 lines overlap (step 65) per maximal
  uncovered run, after trimming filler lines at the run's ends (blank, closing punctuation
  such as ``}`` or ``});``, a block ``end``); filler-only runs get no chunk.
* A file without symbols (or without a grammar) is all windows.
* Markdown and reST files (documentation in a repository) get windows in the index like any
  file without a grammar; :func:`section_chunks` cuts them at their section headings instead
  (one chunk per section's own text, ``symbol`` = the title path, e.g. ``Deploying to
  Production > Gunicorn``), which flat retrieval does at query time for prose questions, so
  the stored chunk index, and every code question's ranking, stay as they were.
* Chunk texts are cut at :data:`MAX_CHUNK_CHARS` (minified code), and chunks are numbered in
  order of their first line.
"""

from __future__ import annotations

from collections.abc import Sequence

from treeseek.code.model import Chunk, ChunkType, Symbol, SymbolKind
from treeseek.trees.documents.model import Section

WINDOW_LINES = 80
WINDOW_OVERLAP = 15
WINDOW_STEP = WINDOW_LINES - WINDOW_OVERLAP
MAX_SYMBOL_LINES = 120
MAX_CHUNK_CHARS = 16_000

_CHUNKED_KINDS = (SymbolKind.CLASS, SymbolKind.FUNCTION, SymbolKind.METHOD)


def window_spans(start: int, end: int) -> list[tuple[int, int]]:
    """80-line windows, step 65, covering lines ``start..end`` (1-based, inclusive)."""
    spans: list[tuple[int, int]] = []
    s = start
    while True:
        e = min(end, s + WINDOW_LINES - 1)
        spans.append((s, e))
        if e >= end:
            return spans
        s += WINDOW_STEP


def build_chunks(lines: Sequence[str], symbols: Sequence[Symbol]) -> tuple[Chunk, ...]:
    """Chunks of a file given as ``lines`` (no line ends) and its symbols."""
    return tuple(
        Chunk(
            index=i,
            type=type_,
            start_line=s,
            end_line=e,
            text=_text(lines, s, e),
            symbol=qname,
        )
        for i, (s, e, type_, qname) in enumerate(chunk_layout(lines, symbols))
    )


def chunk_layout(
    lines: Sequence[str], symbols: Sequence[Symbol]
) -> list[tuple[int, int, ChunkType, str | None]]:
    """Where :func:`build_chunks` cuts: ``(start_line, end_line, type, symbol)`` per chunk,
    in chunk order, without building the texts."""
    n = len(lines)
    if n == 0:
        return []
    blocks = _symbol_blocks(lines, symbols, n)
    covered = bytearray(n + 2)
    pieces: list[tuple[int, int, ChunkType, str | None]] = []
    for start, end, qname in blocks:
        for i in range(start, end + 1):
            covered[i] = 1
        if end - start + 1 > MAX_SYMBOL_LINES:
            for s, e in window_spans(start, end):
                pieces.append((s, e, ChunkType.SYMBOL_BLOCK, qname))
        else:
            pieces.append((start, end, ChunkType.SYMBOL_BLOCK, qname))
    for start, end in _uncovered_runs(lines, covered, n):
        for s, e in window_spans(start, end):
            pieces.append((s, e, ChunkType.WINDOW, None))
    pieces.sort(key=lambda p: (p[0], p[1]))
    return pieces


def _text(lines: Sequence[str], start: int, end: int) -> str:
    text = "\n".join(lines[start - 1 : end])
    return text if len(text) <= MAX_CHUNK_CHARS else text[:MAX_CHUNK_CHARS]


def _symbol_blocks(
    lines: Sequence[str], symbols: Sequence[Symbol], n: int
) -> list[tuple[int, int, str]]:
    by_qname = {s.qname: s for s in symbols}

    def chunked(sym: Symbol) -> bool:
        if sym.kind not in _CHUNKED_KINDS:
            return False
        parent = by_qname.get(sym.parent) if sym.parent else None
        while parent is not None:
            if parent.kind is not SymbolKind.CLASS:
                return False
            parent = by_qname.get(parent.parent) if parent.parent else None
        return True

    kept = [s for s in symbols if chunked(s)]
    first_member: dict[str, int] = {}
    for s in kept:
        owner = by_qname.get(s.parent) if s.parent is not None else None
        # only members inside the class: Go methods, Rust impls, C++ out-of-line definitions
        # have the type as parent wherever they are
        if owner is not None and owner.start_line <= s.start_line <= owner.end_line:
            first_member[owner.qname] = min(
                first_member.get(owner.qname, s.start_line), s.start_line
            )
    blocks: list[tuple[int, int, str]] = []
    for s in kept:
        start = max(1, s.start_line)
        end = min(n, s.end_line)
        if s.kind is SymbolKind.CLASS and s.qname in first_member:
            end = min(end, first_member[s.qname] - 1)
            while end > start and not lines[end - 1].strip():
                end -= 1
        if end >= start:
            blocks.append((start, end, s.qname))
    return blocks


def _uncovered_runs(lines: Sequence[str], covered: bytearray, n: int) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    i = 1
    while i <= n:
        if covered[i]:
            i += 1
            continue
        j = i
        while j + 1 <= n and not covered[j + 1]:
            j += 1
        s, e = i, j
        while s <= e and is_filler(lines[s - 1]):
            s += 1
        while e >= s and is_filler(lines[e - 1]):
            e -= 1
        if s <= e:
            runs.append((s, e))
        i = j + 1
    return runs


_CLOSERS = frozenset({"end", "end;", "fi", "done", "esac"})


def is_filler(line: str) -> bool:
    """Blank, or only closing punctuation (``}``, ``});``) or a block ``end``: no content."""
    stripped = line.strip()
    if not stripped:
        return True
    return stripped in _CLOSERS or not any(ch.isalnum() for ch in stripped)


#: suffixes of documentation files whose chunks follow their sections
SECTION_SUFFIXES = (".md", ".markdown", ".rst")


def section_chunks(path: str, lines: Sequence[str]) -> tuple[Chunk, ...] | None:
    """Chunks of a Markdown/reST file by section, or None when the file is not one or has no
    headings (the caller then cuts windows)."""
    if not path.lower().endswith(SECTION_SUFFIXES) or not lines:
        return None
    from treeseek.trees.documents import parse_document

    try:
        doc = parse_document(path, "\n".join(lines).encode("utf-8"))
    except Exception:
        return None
    if doc.warnings or not doc.sections:
        return None
    pieces: list[tuple[int, int, str]] = []
    if doc.preamble is not None and doc.preamble.start and doc.preamble.own_end:
        pieces.append((doc.preamble.start, doc.preamble.own_end, doc.title))

    def walk(sections: Sequence[Section], titles: list[str]) -> None:
        for s in sections:
            here = [*titles, s.title]
            if s.start is not None and s.own_end is not None:
                pieces.append((s.start, min(s.own_end, len(lines)), " > ".join(here)))
            walk(s.children, here)

    walk(doc.sections, [])
    out: list[tuple[int, int, str]] = []
    for start, end, title in pieces:
        if end < start:
            continue
        if end - start + 1 > MAX_SYMBOL_LINES:
            out.extend((s, e, title) for s, e in window_spans(start, end))
        else:
            out.append((start, end, title))
    return tuple(
        Chunk(
            index=i,
            type=ChunkType.SECTION,
            start_line=s,
            end_line=e,
            text=_text(lines, s, e),
            symbol=title,
        )
        for i, (s, e, title) in enumerate(out)
    )
