"""What selecting and outlining read from a stored tree: a file's lines, symbols and chunks.

One :class:`TreeSource` serves one call (a query's selection, an outline, an expansion) and
caches what it read. Lines are split on ``\\n`` the way git counts them (a final newline ends
the last line, it does not start another), with a trailing ``\\r`` dropped, so line numbers
agree with the code index (tree-sitter rows) and with the benchmark's gold spans.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from treeseek.code.chunks import chunk_layout
from treeseek.code.conventions import code_content
from treeseek.code.languages import header_language, language_for_path
from treeseek.code.model import Symbol
from treeseek.context._deps import CodeStore, code_store
from treeseek.trees.documents import document_format
from treeseek.trees.documents.layout import Outline, read_outline
from treeseek.trees.model import Node
from treeseek.trees.model import TreeSource as SourceKind


def split_lines(text: str) -> list[str]:
    """Lines as git counts them: split on ``\\n``; a final newline adds no empty line."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


class _ByContent:
    """A small process-wide cache keyed by content hash (contents never change under a hash,
    so entries never go stale): an agent's follow-up queries read the same files again. What
    the code index made of a content (symbols, chunks) does change when a better parser parses
    it again (:mod:`treeseek.code.revisions`), so those entries are keyed by the hash and the
    parser revision stored with the rows (:meth:`TreeSource.parse_keys`)."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, kind: str, digest: str) -> Any:
        with self._lock:
            item = self._items.get((kind, digest))
            if item is not None:
                self._items.move_to_end((kind, digest))
            return item

    def put(self, kind: str, digest: str, value: Any) -> None:
        with self._lock:
            self._items[(kind, digest)] = value
            while len(self._items) > self.size:
                self._items.popitem(last=False)


#: lines, symbols and chunk rows of recently read contents. A budgeted answer reads three
#: entries for each of about ten ranked files, so 1,024 entries hold the files of the last ~30
#: answers (with 256, a dozen questions that an agent alternates between already evicted
#: each other's files: +21.9 ms a budgeted answer on django instead of +11.6 ms,
#: ``bench/bench_context.py``); at tens of kilobytes an entry, some tens of megabytes
_CACHE = _ByContent(1024)
#: per-line tables (line_table), apart: they must not push lines and symbols out of _CACHE
_TABLES = _ByContent()


@dataclass(frozen=True, slots=True)
class SectionPlace:
    """Where a section node of a document tree sits in its document: its own text's first
    line is line ``first_line`` of ``document`` (a section's own text starts with its
    heading, so its line ``i`` is the document's line ``first_line + i - 1``)."""

    document: str
    first_line: int

    @property
    def offset(self) -> int:
        return self.first_line - 1


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """A stored C0 chunk's place and its FTS tokens (for scoring chunks within a file)."""

    start_line: int
    end_line: int
    symbol: str | None
    tokens: tuple[str, ...]


class TreeSource:
    """Reads of one tree for the context layer, cached for the duration of one call."""

    def __init__(self, store: Any, tree: str) -> None:
        self.store = store
        self.tree = tree
        self._code: CodeStore | None = None
        self._nodes: dict[str, Node | None] = {}
        self._lines: dict[str, list[str] | None] = {}
        self._symbols: dict[str, list[Symbol]] = {}
        self._chunks: dict[str, list[ChunkRow]] = {}
        self._tables: dict[tuple[str, str], list[Any]] = {}
        self._documents: bool | None = None
        self._outlines: dict[str, Outline | None] = {}
        self._parse_keys: dict[str, str | None] = {}

    @property
    def code(self) -> CodeStore | None:
        if self._code is None:
            try:
                self._code = code_store(self.store)
            except Exception:  # a store without the code layers: lines only
                return None
        return self._code

    def node(self, path: str) -> Node | None:
        if path not in self._nodes:
            self._nodes[path] = self.store.node_by_path(self.tree, path)
        return self._nodes[path]

    def lines(self, path: str) -> list[str] | None:
        """The file's lines, or None (a directory, no stored content, binary ...). A document
        node of a document tree (whose stored content is its outline record) reads as its
        document's text: its sections' own texts in document order (line-counted formats;
        a PDF's or PageIndex document's text stays in its page sections)."""
        if path not in self._lines and self._document_node(path):
            self._lines[path] = self._document_text(path)
        if path not in self._lines:
            node = self.node(path)
            digest = node.content_hash if node is not None and node.is_file else None
            cached = _CACHE.get("lines", digest) if digest else None
            if cached is None:
                data = (
                    None
                    if node is None or not node.is_file
                    else self.store.content(self.tree, node.id)
                )
                cached = None if data is None else split_lines(data.decode("utf-8", "replace"))
                if digest and cached is not None:
                    _CACHE.put("lines", digest, cached)
            self._lines[path] = cached
        return self._lines[path]

    def release(self, path: str) -> None:
        """Forget the lines and symbols read for ``path`` (a directory's outline reads each
        file once: keeping every file's lines until it ends held a 47,000-file tree's text,
        1.16 GB, where one file at a time needs 0.44 GB). The process-wide cache keeps its
        entries; a later read of ``path`` reads it again."""
        self._lines.pop(path, None)
        self._symbols.pop(path, None)

    def line_table(self, kind: str, path: str) -> list[Any]:
        """A table of one value per line of ``path`` (index 1..n; ``None``: not computed
        yet), filled by its callers, for what depends on nothing but the file's text (``kind``
        names it: the lines' token counts under one tokenizer, prefix sums of their sizes).
        Shared by the calls of the process that read the same content (keyed by content
        hash): a warm query does not count the same lines again."""
        table: list[Any] | None = self._tables.get((kind, path))
        if table is None:
            node = self.node(path)
            digest = node.content_hash if node is not None and node.is_file else None
            if digest and self._document_node(path):  # its lines are not its content's
                digest = None
            key = "table:" + kind
            table = _TABLES.get(key, digest) if digest else None
            if table is None:
                table = [None] * (len(self.lines(path) or []) + 1)
                if digest:
                    _TABLES.put(key, digest, table)
            self._tables[(kind, path)] = table
        return table

    def _document_node(self, path: str) -> bool:
        """Whether ``path`` is a document node (not a section) of a document tree."""
        return (
            self._document_tree()
            and document_format(path) is not None
            and self._outline(path) is not None
        )

    def _document_text(self, path: str) -> list[str] | None:
        outline = self._outline(path)
        if outline is None or outline.unit != "line":
            return None
        # each section's own text at its first line; what lies between (blank lines a
        # section's stored text does not keep) stays blank
        out: list[str] = []
        for section, info in outline.sections.items():
            own = self.lines(section) or []
            if info.start is None or not own:
                continue
            first = int(info.start) - 1
            out.extend([""] * (first + len(own) - len(out)))
            out[first : first + len(own)] = own
        last = max((int(i.end) for i in outline.sections.values() if i.end is not None), default=0)
        out.extend([""] * (last - len(out)))
        return out

    def section(self, path: str) -> SectionPlace | None:
        """The place of section node ``path`` in its document, when the tree is a document
        tree and the document counts lines (Markdown, reST, text); None otherwise (a code
        tree's files, a document node, PDF and PageIndex sections, which count pages)."""
        if not self._document_tree():
            return None
        doc = path.rpartition("/")[0]
        while doc:
            outline = self._outline(doc)
            if outline is not None:
                info = outline.sections.get(path)
                if info is None or info.unit != "line" or info.start is None:
                    return None
                return SectionPlace(outline.document, int(info.start))
            doc = doc.rpartition("/")[0]
        return None

    def document_outline(self, path: str) -> Outline | None:
        """The outline of the document that node ``path`` is (or is a section of), when the
        tree is a document tree; None otherwise."""
        if not self._document_tree():
            return None
        doc = path
        while doc:
            outline = self._outline(doc)
            if outline is not None:
                return outline if doc == path or path in outline.sections else None
            doc = doc.rpartition("/")[0]
        return None

    def _document_tree(self) -> bool:
        if self._documents is None:
            try:
                self._documents = self.store.tree(self.tree).source is SourceKind.DOCUMENT
            except Exception:  # an unknown tree: nothing is a section
                self._documents = False
        return self._documents

    def _outline(self, path: str) -> Outline | None:
        if path not in self._outlines:
            node = self.node(path)
            data = (
                self.store.content(self.tree, node.id)
                if node is not None and node.is_file
                else None
            )
            self._outlines[path] = read_outline(path, data) if data is not None else None
        return self._outlines[path]

    def language(self, path: str) -> str | None:
        """The file's language as the code index parsed it: by path, except that a ``.h``
        file with C++ lines is C++ (:func:`~treeseek.code.languages.header_language`)."""
        language = language_for_path(path)
        if language == "c" and path.lower().endswith(".h"):
            lines = self.lines(path) or []
            language = header_language(path, "\n".join(lines).encode("utf-8"), language)
        return language

    def _code_content(self, path: str) -> str | None:
        """The content whose code rows the file reads (:func:`code_content`; None for a
        directory, a missing path or a data file)."""
        node = self.node(path)
        return code_content(path, node.content_hash) if node is not None else None

    def parse_keys(self, digests: Sequence[str]) -> dict[str, str | None]:
        """The process-wide cache key of what the code index stored for each content: its hash
        and the parser revision of its rows (a parse again stores a new revision, so an entry
        read from the old rows is never served for the new ones); None for a content without
        code rows (nothing of it is cached). One batched read for the contents not asked yet."""
        unknown = [d for d in dict.fromkeys(digests) if d not in self._parse_keys]
        code = self.code
        if unknown and code is not None:
            infos = code.code_files(unknown)
            for digest in unknown:
                info = infos.get(digest)
                self._parse_keys[digest] = (
                    None if info is None else f"{digest}@{info.parser_revision}"
                )
        return {d: self._parse_keys.get(d) for d in digests}

    def prefetch_symbols(self, paths: Sequence[str]) -> None:
        """Read the symbols of several files at once."""
        digests = {p: self._code_content(p) for p in paths if p not in self._symbols}
        keys = self.parse_keys([d for d in digests.values() if d])
        want = {}
        for p, digest in digests.items():
            if p in self._symbols or not digest:
                continue
            key = keys[digest]
            cached = _CACHE.get("symbols", key) if key else None
            if cached is not None:
                self._symbols[p] = cached
            else:
                want[p] = digest
        code = self.code
        if not want or code is None:
            return
        found = code.symbols_of(set(want.values()))
        for p, h in want.items():
            ordered = sorted(found.get(h, []), key=lambda s: (s.start_line, -s.end_line))
            self._symbols[p] = ordered
            key = keys[h]
            if key:
                _CACHE.put("symbols", key, ordered)

    def symbols(self, path: str) -> list[Symbol]:
        """The file's symbols, by start line (outer before inner)."""
        if path not in self._symbols:
            self.prefetch_symbols([path])
            self._symbols.setdefault(path, [])
        return self._symbols[path]

    def chunk_rows(self, paths: Sequence[str]) -> dict[str, list[ChunkRow]]:
        """The chunks of files with their FTS tokens (files without a code index: absent).

        Chunk places are recomputed from the stored symbols with the indexer's own chunker;
        when their number differs from the stored bodies' (a file indexed by another version)
        the stored chunks are read instead."""
        code = self.code
        digests = {p: self._code_content(p) for p in paths if p not in self._chunks}
        keys = self.parse_keys([d for d in digests.values() if d])
        want = {}
        for p, digest in digests.items():
            if p in self._chunks or not digest:
                continue
            key = keys[digest]
            cached = _CACHE.get("chunks", key) if key else None
            if cached is not None:
                self._chunks[p] = cached
            else:
                want[p] = digest
        if want and code is not None:
            bodies = code.chunk_documents(set(want.values()))
            self.prefetch_symbols(list(want))
            for p, h in want.items():
                docs = bodies.get(h)
                lines = self.lines(p)
                if not docs or lines is None:
                    self._chunks[p] = []
                    continue
                layout = [(s, e, q) for s, e, _, q in chunk_layout(lines, self.symbols(p))]
                if len(layout) != len(docs):
                    layout = [(c.start_line, c.end_line, c.symbol) for c in code.chunks(h)]
                rows = [
                    ChunkRow(s, e, sym, tuple(body.split()))
                    for (s, e, sym), body in zip(layout, docs, strict=False)
                ]
                self._chunks[p] = rows
                key = keys[h]
                if key:
                    _CACHE.put("chunks", key, rows)
        return {p: self._chunks[p] for p in paths if self._chunks.get(p)}

    def file_paths(self, prefix: str = "") -> list[str]:
        """Paths of the files under ``prefix`` (the whole tree for ""), in path order."""
        return [n.path for n in self.store.subtree(self.tree, prefix) if n.is_file]

    def hashes(self) -> dict[str, list[str]]:
        """content hash -> the tree's paths holding it that read its code rows (data files
        read none: :func:`code_content`)."""
        out: dict[str, list[str]] = {}
        for n in self.store.subtree(self.tree, ""):
            digest = code_content(n.path, n.content_hash) if n.is_file else None
            if digest:
                out.setdefault(digest, []).append(n.path)
        return out
