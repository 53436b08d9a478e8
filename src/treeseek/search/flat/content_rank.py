"""Content-aware path scores: the flat retriever's per-file scores, lifted to directories.

Path-only rankers (:mod:`treeseek.rank.paths`) see a candidate's path and nothing else.
:class:`FlatContent` asks the flat retriever (:class:`~treeseek.search.flat.flat.FlatRetriever`:
chunk/symbol/path BM25 and exact query mentions, fused) to rank *every* file of the tree for a
query, once, and keeps the result for all later rounds and calls:

- a **file** scores its fused flat score (0 when no signal matched it);
- a **directory** scores ``max + share · sum`` over the files below it, where the sum runs over
  the ``top_files`` best files of the tree only. The long tail of weakly matching files would
  otherwise let a large directory outscore a small one holding the best file: with reciprocal
  rank fusion every file that shares a single term with the query gets a small positive score.

:class:`ContentPathScorer` turns that into a :class:`~treeseek.rank.paths.PathScorer`
(``--ranker flat``). It declines when the tree has no content index (a path-only tree, or one
indexed without the code hook) or when no candidate scores. :class:`FirstAnswer` chains
scorers: the first that does not decline answers (content first, path BM25 when it declines).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from treeseek.code.conventions import code_content
from treeseek.errors import RetrievalError
from treeseek.rank.paths import PathScorer
from treeseek.search.base import SearchContext
from treeseek.search.flat.flat import FlatRetriever

#: a directory's score: its best file plus this share of the sum over its files among the top
DIR_SUM_SHARE = 0.25
#: only the tree's best files count in a directory's sum (see the module docstring)
DIR_SUM_TOP_FILES = 50
#: how many of the best files are checked for a code index (a tree without one declines)
INDEX_PROBE_FILES = 20
#: no tree has more files than this; asking the flat retriever for this many means "all"
ALL_FILES = 1 << 30


@dataclass(frozen=True, slots=True)
class ContentScores:
    """The flat retriever's verdict on one query over one tree."""

    files: dict[str, float]  # file path -> fused score (only files some signal matched)
    dirs: dict[str, float]  # directory path ("" is the root) -> aggregate of its files
    ranked: list[str]  # the scored files, best first
    indexed: bool  # the tree has a content (code) index
    seconds: float = 0.0
    reason: str = ""  # why nothing is usable, when nothing is

    @property
    def usable(self) -> bool:
        return self.indexed and bool(self.files)

    def of(self, path: str) -> float:
        """The score of a file or directory path (0 when nothing under it matched)."""
        clean = path.strip("/")
        found = self.files.get(clean)
        return found if found is not None else self.dirs.get(clean, 0.0)


def aggregate_dirs(
    ranked: Sequence[tuple[str, float]],
    *,
    share: float = DIR_SUM_SHARE,
    top_files: int = DIR_SUM_TOP_FILES,
) -> dict[str, float]:
    """Directory scores from file scores given best first: ``max + share · sum(top files)``."""
    best: dict[str, float] = {}
    total: dict[str, float] = {}
    for n, (path, score) in enumerate(ranked):
        parts = path.split("/")
        for i in range(len(parts)):  # "" (root), then every proper ancestor
            d = "/".join(parts[:i])
            if d not in best or score > best[d]:
                best[d] = score
            if n < top_files:
                total[d] = total.get(d, 0.0) + score
    return {d: best[d] + share * total.get(d, 0.0) for d in best}


@dataclass(slots=True)
class FlatContent:
    """Per-query flat scores of one tree, computed once per query and shared by every user
    (the path ranker, the lexical navigator's scorer and the hints), across threads."""

    ctx: SearchContext
    retriever: FlatRetriever = field(default_factory=FlatRetriever)
    share: float = DIR_SUM_SHARE
    top_files: int = DIR_SUM_TOP_FILES
    _cache: dict[str, ContentScores] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def scores(self, query: str) -> ContentScores:
        with self._lock:
            found = self._cache.get(query)
            if found is None:
                found = self._cache[query] = self._compute(query)
            return found

    def top(self, query: str, n: int) -> list[str]:
        """The ``n`` best files for ``query`` (none when the tree has no content index)."""
        s = self.scores(query)
        return s.ranked[:n] if s.usable else []

    def _compute(self, query: str) -> ContentScores:
        started = time.perf_counter()
        try:
            hits = self.retriever.rank(self.ctx, query, ALL_FILES, evidence=False).hits
        except RetrievalError as exc:
            return ContentScores({}, {}, [], False, time.perf_counter() - started, str(exc))
        ranked = [(h.path, float(h.score or 0.0)) for h in hits if (h.score or 0.0) > 0.0]
        if not ranked:
            return ContentScores({}, {}, [], True, time.perf_counter() - started, "nothing scored")
        if not self._indexed([h.node_id for h in hits[:INDEX_PROBE_FILES]]):
            return ContentScores(
                {}, {}, [], False, time.perf_counter() - started, "the tree has no content index"
            )
        return ContentScores(
            files=dict(ranked),
            dirs=aggregate_dirs(ranked, share=self.share, top_files=self.top_files),
            ranked=[p for p, _ in ranked],
            indexed=True,
            seconds=time.perf_counter() - started,
        )

    def _indexed(self, node_ids: Sequence[str]) -> bool:
        """Whether any of these files has code-index rows (path-only trees have none)."""
        nodes = self.ctx.store.nodes(self.ctx.tree.name, list(node_ids))
        hashes = [h for n in nodes if (h := code_content(n.path, n.content_hash))]
        return bool(hashes) and bool(self.ctx.store.code().code_files(hashes))


class ContentPathScorer(PathScorer):
    """``--ranker flat``: a candidate path scores what the flat retriever says of its content.

    Declines when the tree has no content index or when no candidate scores, so the caller
    keeps block order (ConstrainedPathOrder) or falls back (:class:`FirstAnswer`).
    """

    name = "flat"

    def __init__(self, content: FlatContent) -> None:
        self.content = content

    def score(self, query: str, paths: Sequence[str]) -> list[float] | None:
        if not paths:
            return []
        s = self.content.scores(query)
        if not s.usable:
            return None
        out = [s.of(p) for p in paths]
        return out if any(x > 0.0 for x in out) else None


class FirstAnswer(PathScorer):
    """The first of ``scorers`` that does not decline answers; declines when all decline."""

    def __init__(self, scorers: Sequence[PathScorer]) -> None:
        if not scorers:
            raise ValueError("FirstAnswer needs at least one scorer")
        self.scorers = list(scorers)
        self.name = ">".join(s.name for s in self.scorers)

    def score(self, query: str, paths: Sequence[str]) -> list[float] | None:
        for scorer in self.scorers:
            found = scorer.score(query, paths)
            if found is not None:
                return found
        return None
