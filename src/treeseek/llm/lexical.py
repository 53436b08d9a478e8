"""LexicalNavigator: answers rank calls with no LLM, so the whole pipeline runs offline.

It scores ``request.candidates`` with the fielded BM25 path scorer (IDF over the candidates of
the call) against ``request.query`` and answers:

- ``ranked_ids``: best first (ties keep candidate order), at most ``pick_limit``: the
  directories with a positive score, and the files whose score is at least ``file_ratio`` times
  the best score of the call (default 1.0: a file only when it is the best evidence, ties
  included). A file returned enters the final results at once, so weak file matches (a shared
  token with a top-level ``setup.py``) would spend result slots; a directory only spends a
  frontier slot. Zero-score candidates are never returned while anything scores.
  Measured with Block on the 197 dev queries (path-only trees): ``file_ratio`` 0 / 0.5 / 0.9 /
  1.0 gave recall@gold 0.036 / 0.058 / 0.101 / 0.111 and MRR 0.082 / 0.098 / 0.116 / 0.121.
- When nothing scores (the scorer declines or every score is 0): the first ``pick_limit``
  *directories* in candidate order, so the search can still reach deeper paths that may match;
  never zero-score files, which would be arbitrary results. A document section with
  subsections (``Candidate.expandable``) counts as a directory here: it is the only way to
  its subsections (a one-heading document has nothing else to open).
- ``done``: true when the best returned id is a file (the navigator found a matching file and
  the strongest evidence is not a directory still to open). The retrievers' override still
  applies when directories remain in the frontier.
"""

from __future__ import annotations

import time

from treeseek.llm.base import Candidate, Navigator, RankReply, RankRequest, Usage
from treeseek.rank.paths import BM25PathScorer, PathScorer

DIRECTORY = "directory"


class LexicalNavigator(Navigator):
    name = "lexical"
    supports_cache = False

    def __init__(self, scorer: PathScorer | None = None, *, file_ratio: float = 1.0) -> None:
        self.scorer = scorer or BM25PathScorer()
        self.file_ratio = file_ratio
        # a navigator driven by another scorer (e.g. flat scores) says so in results and reports
        self.name = "lexical" if scorer is None else f"lexical:{self.scorer.name}"

    def rank(self, request: RankRequest) -> RankReply:
        started = time.perf_counter()
        cands = request.candidates
        limit = max(0, request.pick_limit)
        scores = self.scorer.score(request.query, [c.path for c in cands]) if cands else []
        notes: list[str] = []
        if scores is not None and any(s > 0.0 for s in scores):
            order = sorted(range(len(cands)), key=lambda i: -scores[i])
            bar = self.file_ratio * scores[order[0]]
            picked = [
                cands[i]
                for i in order
                if scores[i] > 0.0 and (_opens(cands[i]) or scores[i] >= bar)
            ][:limit]
        else:
            picked = [c for c in cands if _opens(c)][:limit]
            notes.append("no path evidence for the query: directories in candidate order")
        ids = [c.id for c in picked]
        done = bool(picked) and not _opens(picked[0])
        usage = Usage(calls=1, latency_s=time.perf_counter() - started)
        return RankReply(ranked_ids=ids, done=done, usage=usage, notes=notes)


def _opens(candidate: Candidate) -> bool:
    """Whether the search can open ``candidate``: a directory, or a document section with
    subsections (a result too, but the way to its subsections, as a directory is to files)."""
    return candidate.type == DIRECTORY or candidate.expandable
