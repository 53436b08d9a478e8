"""The sections of a code tree's documentation files, for prose questions.

Built at query time, once per tree version and only when a prose question needs it: every
Markdown/reST file of the tree is cut at its headings (:func:`~treeseek.code.chunks.section_chunks`)
and its sections are ranked by BM25 (k1 1.2, b 0.75) over prose terms
(:func:`~treeseek.text.tokens.prose_terms`) with statistics of this tree's documentation only.
The stored chunk index is not touched, so questions about code rank exactly as without it.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from treeseek.code.chunks import section_chunks
from treeseek.code.model import Chunk
from treeseek.text.tokens import prose_terms

K1 = 1.2
B = 0.75
#: a section's title path counts this many times (titles say what a section is about)
TITLE_REPEAT = 2


@dataclass(slots=True)
class DocSections:
    sections: list[tuple[str, Chunk]]  # (file path, section chunk)
    tf: list[Counter[str]]
    lengths: list[int]
    df: Counter[str]
    postings: dict[str, list[int]]
    avg: float

    @classmethod
    def build(cls, texts: Mapping[str, bytes]) -> DocSections:
        sections: list[tuple[str, Chunk]] = []
        tfs: list[Counter[str]] = []
        for path in sorted(texts):
            lines = texts[path].decode("utf-8", errors="replace").split("\n")
            for chunk in section_chunks(path, lines) or ():
                title = chunk.symbol or ""
                tfs.append(Counter(prose_terms(title) * TITLE_REPEAT + prose_terms(chunk.text)))
                sections.append((path, chunk))
        df: Counter[str] = Counter()
        postings: dict[str, list[int]] = defaultdict(list)
        for i, tf in enumerate(tfs):
            df.update(tf.keys())
            for t in tf:
                postings[t].append(i)
        lengths = [sum(tf.values()) for tf in tfs]
        avg = max(1.0, sum(lengths) / len(lengths)) if lengths else 1.0
        return cls(sections, tfs, lengths, df, dict(postings), avg)

    def ranked(self, query: str) -> list[tuple[float, str, Chunk]]:
        """Every section matching ``query`` as (score, file path, section chunk), best first
        (ties: file then document order)."""
        q = Counter(prose_terms(query))
        n = len(self.sections)
        scores: dict[int, float] = defaultdict(float)
        for t, qn in q.items():
            d = self.df.get(t, 0)
            if not d:
                continue
            idf = math.log(1 + (n - d + 0.5) / (d + 0.5))
            for i in self.postings[t]:
                f = self.tf[i][t]
                norm = f * (K1 + 1) / (f + K1 * (1 - B + B * self.lengths[i] / self.avg))
                scores[i] += idf * norm * (1 + math.log(qn))
        order = sorted(scores, key=lambda i: (-scores[i], i))
        return [(scores[i], *self.sections[i]) for i in order]

    def best_by_file(self, query: str) -> dict[str, tuple[float, Chunk]]:
        """Each documentation file's best section for ``query`` (files with no match left out)."""
        best: dict[str, tuple[float, Chunk]] = {}
        for score, path, chunk in self.ranked(query):
            if path not in best:
                best[path] = (score, chunk)
        return best
