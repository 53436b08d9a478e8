"""The index hook that keeps the code layers (and optional vectors) in step with a tree.

It runs inside the tree's write transaction (:class:`treeseek.indexing.IndexHook`). Layers are
keyed by content hash, so the hook parses only contents the database has never parsed: a new
commit of a repository already indexed at a nearby commit costs only its changed files. Rows of
removed files need no work here; they go when the store drops the content nobody uses.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from treeseek.code.model import FileCodeIndex
from treeseek.code.parse import index_file
from treeseek.embed.base import Embedder
from treeseek.indexing import ChangedFile
from treeseek.store.base import TreeWriter
from treeseek.store.code_sqlite import code_store_for
from treeseek.trees.model import Node, TreeInfo

#: characters of a file's outline that are embedded (the model truncates far below this)
OUTLINE_CHARS = 2000
#: texts per embedder call
EMBED_BATCH = 64
#: the vector kind the flat retriever reads
OUTLINE_KIND = "outline"


def file_outline(path: str, index: FileCodeIndex, text: str) -> str:
    """What a file's vector embeds: its path, then its symbols with the first docstring line;
    a file without symbols contributes its first lines instead."""
    lines = [path.replace("/", " / ")]
    for sym in index.symbols:
        doc = (sym.docstring or "").strip().split("\n", 1)[0]
        lines.append(f"{sym.kind} {sym.qname} {doc}".rstrip())
    if not index.symbols:
        lines.append(text[:OUTLINE_CHARS])
    return "\n".join(lines)[:OUTLINE_CHARS]


@dataclass(slots=True)
class CodeIndexStats:
    """What the hook did over its lifetime (for benchmarks and reports)."""

    parsed: int = 0
    reused: int = 0
    embedded: int = 0
    parse_seconds: float = 0.0
    store_seconds: float = 0.0
    embed_seconds: float = 0.0
    failures: list[str] = field(default_factory=list)


class CodeIndexHook:
    """Parses changed contents with :func:`treeseek.code.parse.index_file` and stores them."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = embedder
        self.stats = CodeIndexStats()

    def apply(
        self,
        writer: TreeWriter,
        tree: TreeInfo,
        changed: Sequence[ChangedFile],
        removed: Sequence[Node],
    ) -> None:
        code = code_store_for(writer)
        todo = [c for c in changed if c.data and c.node.content_hash]
        missing = code.missing_code({c.node.content_hash for c in todo if c.node.content_hash})
        self.stats.reused += len(todo) - len(missing)
        outlines: dict[str, str] = {}
        for c in todo:
            digest = c.node.content_hash
            if digest is None or digest not in missing:
                continue
            missing.discard(digest)
            t0 = time.perf_counter()
            try:
                index = index_file(c.node.path, c.data)
            except Exception as exc:  # parse never fails indexing; parse.py degrades itself
                self.stats.failures.append(f"{c.node.path}: {exc}")
                continue
            t1 = time.perf_counter()
            code.put_code(digest, index)
            self.stats.store_seconds += time.perf_counter() - t1
            self.stats.parse_seconds += t1 - t0
            self.stats.parsed += 1
            if self.embedder is not None:
                outlines[digest] = file_outline(
                    c.node.path, index, c.data[:OUTLINE_CHARS].decode("utf-8", "replace")
                )
        if self.embedder is not None:
            self._embed(writer, todo, outlines)

    def _embed(
        self, writer: TreeWriter, todo: Sequence[ChangedFile], outlines: dict[str, str]
    ) -> None:
        """Embed outlines of contents that have no vector of this model yet."""
        assert self.embedder is not None
        code = code_store_for(writer)
        model = self.embedder.name
        need = code.missing_vectors(model, OUTLINE_KIND, outlines.keys())
        items = [(h, outlines[h]) for h in outlines if h in need]
        t0 = time.perf_counter()
        for start in range(0, len(items), EMBED_BATCH):
            batch = items[start : start + EMBED_BATCH]
            vecs = self.embedder.embed([text for _, text in batch])
            code.put_vectors(model, OUTLINE_KIND, [(h, vecs[i]) for i, (h, _) in enumerate(batch)])
        self.stats.embed_seconds += time.perf_counter() - t0
        self.stats.embedded += len(items)


def default_code_hook() -> CodeIndexHook:
    """The hook every Database runs by default: code layers, no vectors (those need an
    embedder, installed with the ``vectors`` extra, and are opted into explicitly)."""
    return CodeIndexHook()
