"""The sections of one stored document tree, with per-tree term statistics.

Loaded once per tree version (the outlines from the document nodes, every section's own text
in one batched read) and kept by the retriever. Scoring:

* :meth:`SectionCorpus.bm25` ranks sections by BM25 (k1 1.2, b 0.75) over the section's own title
  (counted twice; its parents' titles are in their own texts, and adding them scored lower on
  the benchmark's dev split) and its own text, with document frequencies and lengths of this tree
  only (a tree is its own corpus: terms common in one documentation set are not penalized by
  another's);
* :meth:`SectionCorpus.rank` (the document retriever's flat ranking) scores candidates from
  BM25 over each section's *subtree* (its text and its subsections', so a chapter is about
  what its subsections say; b :data:`SUBTREE_B`: a subtree is long because it covers more, not
  because it rambles) and over its own text by the linear scorer of
  :mod:`~treeseek.search.document.ranking` (features of the section, its document, its place in
  the outline and its names; weights learned on the benchmark's dev split, where it took
  section recall@1/@5 from 0.155/0.368 to 0.202/0.430 under cross-validation);
* :meth:`SectionCorpus.vector` is a unit TF-IDF vector with the same statistics: the
  collapsed-tree walk routes by their cosine (no model needed).

Tokens are the code-aware word tokens of :mod:`treeseek.text.tokens`, stopwords dropped, with
a light English suffix folding (``deploying``/``deployed``/``deploys`` -> ``deploy``) so
prose questions meet prose sections.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import numpy.typing as npt

from treeseek.code.conventions import is_release_notes_path
from treeseek.index.section_vectors import SECTION_KIND
from treeseek.search.document.ranking import (
    MAX_LEVEL,
    SectionFeatures,
    SemanticScores,
    candidate_features,
    score_candidates,
)
from treeseek.search.flat.bm25 import BM25Postings
from treeseek.store.base import Store
from treeseek.store.code_base import VectorKey
from treeseek.text.tokens import prose_terms
from treeseek.trees.documents.layout import Outline, SectionInfo, read_outline
from treeseek.trees.model import Node, TreeInfo

_Array = npt.NDArray[np.float64]
_Candidates = Callable[
    [SectionFeatures, dict[str, float], _Array, _Array, SemanticScores | None],
    tuple[npt.NDArray[np.intp], _Array],
]

K1 = 1.2
B = 0.75
#: length normalization of the subtree BM25 (dev split: 0.35 over 0.75 and 0.2)
SUBTREE_B = 0.35
TITLE_REPEAT = 2


def terms(text: str) -> list[str]:
    return prose_terms(text)


def _postings(bags: list[Counter[str]], vocab: dict[str, int], b: float = B) -> BM25Postings:
    """BM25 postings (k1 :data:`K1`, ``b``) of bags of words, in order."""
    ids = [vocab[t] for bag in bags for t in bag]
    counts = [n for bag in bags for n in bag.values()]
    return BM25Postings(
        np.array([sum(bag.values()) for bag in bags], dtype=np.int64),
        np.array([len(bag) for bag in bags], dtype=np.int64),
        np.array(ids, dtype=np.uint32),
        np.array(counts, dtype=np.int64),
        k1=K1,
        b=b,
    )


@dataclass(slots=True)
class SectionDoc:
    """One section as a retrieval unit."""

    node: Node
    info: SectionInfo
    title_path: list[str]
    text: str
    parent: str | None  # parent section path (None: a top section)
    children: list[str] = field(default_factory=list)
    tf: Counter[str] = field(default_factory=Counter)
    length: int = 0


@dataclass(slots=True)
class SectionCorpus:
    tree: str
    outlines: dict[str, Outline]  # document path -> outline
    sections: dict[str, SectionDoc]  # section path -> section (document order)
    by_id: dict[str, str]  # node id -> section path
    df: Counter[str]
    avg_length: float
    #: term -> id, and BM25 postings over the sections' own texts (section ``i`` is the
    #: ``i``-th of :attr:`sections`)
    vocabulary: dict[str, int] = field(default_factory=dict)
    own: BM25Postings | None = None
    #: the same over each section's subtree (its own text and every subsection's): a section
    #: with subsections is about all of them, which its own text (often a short intro) is not
    subtree: BM25Postings | None = None
    features: SectionFeatures | None = None  # what the flat ranking reads (built once)

    @classmethod
    def load(cls, store: Store, tree: TreeInfo) -> SectionCorpus:
        nodes = [n for n in store.subtree(tree.name, "") if n.is_file]
        outlines: dict[str, Outline] = {}
        wanted: dict[str, str] = {}
        for n in nodes:
            if n.content_hash:
                wanted[n.path] = n.content_hash
        blobs = store.contents(list(set(wanted.values())))
        by_path = {n.path: n for n in nodes}
        for n in nodes:
            parent = n.path.rpartition("/")[0]
            if parent in by_path:
                continue  # a section (its parent is a file node)
            data = blobs.get(wanted.get(n.path, ""))
            outline = read_outline(n.path, data) if data is not None else None
            if outline is not None:
                outlines[n.path] = outline
        sections: dict[str, SectionDoc] = {}
        for doc_path, outline in outlines.items():
            for path, info in outline.sections.items():
                node = by_path.get(path)
                if node is None:
                    continue
                data = blobs.get(node.content_hash or "", b"")
                parent = path.rpartition("/")[0]
                sections[path] = SectionDoc(
                    node=node,
                    info=info,
                    title_path=outline.title_path(path),
                    text=data.decode("utf-8", errors="replace"),
                    parent=parent if parent != doc_path else None,
                )
        for path, s in sections.items():
            if s.parent is not None and s.parent in sections:
                sections[s.parent].children.append(path)
        df: Counter[str] = Counter()
        total = 0
        for s in sections.values():
            title = s.info.title  # its own title: the parents' titles are in their own texts
            summary = s.info.summary or ""
            tokens = terms(title) * TITLE_REPEAT + terms(summary) + terms(s.text)
            s.tf = Counter(tokens)
            s.length = len(tokens)
            total += s.length
            df.update(s.tf.keys())
        avg = total / len(sections) if sections else 1.0
        corpus = cls(
            tree=tree.name,
            outlines=outlines,
            sections=sections,
            by_id={s.node.id: p for p, s in sections.items()},
            df=df,
            avg_length=max(avg, 1.0),
        )
        corpus._build_postings()
        return corpus

    def _build_postings(self) -> None:
        vocab = self.vocabulary
        for t in self.df:
            vocab.setdefault(t, len(vocab))
        own = [s.tf for s in self.sections.values()]
        sub: dict[str, Counter[str]] = {}
        for path in reversed(list(self.sections)):  # children come after their parent
            s = self.sections[path]
            tf = Counter(s.tf)
            for child in s.children:
                tf.update(sub[child])
            sub[path] = tf
        self.own = _postings(own, vocab)
        self.subtree = _postings([sub[p] for p in self.sections], vocab, SUBTREE_B)

    def idf(self, term: str) -> float:
        n = len(self.sections)
        d = self.df.get(term, 0)
        return math.log(1 + (n - d + 0.5) / (d + 0.5))

    def bm25(
        self, query: str, *, within: set[str] | None = None, subtree: bool = False
    ) -> list[tuple[str, float]]:
        """Section paths by BM25 of ``query`` over their own texts (or, with ``subtree``, over
        their subtrees' texts), best first (ties: document order). A query term counts
        ``1 + log(occurrences)`` times."""
        postings = self.subtree if subtree else self.own
        if postings is None:
            return []
        q = Counter(t for t in terms(query) if t in self.vocabulary)
        weights = {self.vocabulary[t]: 1 + math.log(n) for t, n in q.items()}
        scores = postings.score_weights(weights)
        found = np.flatnonzero(scores > 0)
        found = found[np.lexsort((found, -scores[found]))]
        paths = list(self.sections)
        out = [(paths[i], float(scores[i])) for i in found]
        if within is not None:
            out = [(p, v) for p, v in out if p in within]
        return out

    def top_section(self, path: str) -> str:
        s = self.sections[path]
        while s.parent is not None and s.parent in self.sections:
            path = s.parent
            s = self.sections[path]
        return path

    def rank(
        self, query: str, semantic: SemanticScores | None = None, refined: int | None = None
    ) -> list[tuple[str, float]]:
        """Sections for ``query``, best first (ties: document order), by the linear scorer of
        :mod:`~treeseek.search.document.ranking` over subtree and own-text BM25 (and, given
        the question's ``semantic`` cosines to the tree's section vectors, over those too),
        refined by the boosted trees (only the linear scorer's best ``refined``, when given:
        see :func:`~treeseek.search.document.ranking.score_candidates`)."""
        how = score_candidates if refined is None else partial(score_candidates, refined=refined)
        candidates, scores = self._scored(query, how, semantic)
        paths = list(self.sections)
        order = np.lexsort((candidates, -scores))
        return [(paths[candidates[i]], float(scores[i])) for i in order]

    def candidate_features(
        self, query: str, semantic: SemanticScores | None = None
    ) -> tuple[list[str], npt.NDArray[np.float64]]:
        """The flat ranking's candidates for ``query`` (section paths) and their features (for
        fitting :data:`~treeseek.search.document.ranking.WEIGHTS`, or
        :data:`~treeseek.search.document.ranking.VECTOR_WEIGHTS` with ``semantic``)."""
        candidates, features = self._scored(query, candidate_features, semantic)
        paths = list(self.sections)
        return [paths[i] for i in candidates], features

    def _scored(
        self, query: str, how: _Candidates, semantic: SemanticScores | None
    ) -> tuple[npt.NDArray[np.intp], _Array]:
        if self.own is None or self.subtree is None:
            return np.zeros(0, dtype=np.intp), np.zeros(0)
        q = Counter(t for t in terms(query) if t in self.vocabulary)
        weights = {self.vocabulary[t]: 1 + math.log(n) for t, n in q.items()}
        return how(
            self._features(),
            {t: self.idf(t) for t in q},
            self.subtree.score_weights(weights),
            self.own.score_weights(weights),
            semantic,
        )

    def _features(self) -> SectionFeatures:
        if self.features is None:
            self.features = self._build_features()
        return self.features

    def _build_features(self) -> SectionFeatures:
        index = {p: i for i, p in enumerate(self.sections)}
        docs: dict[str, int] = {}
        doc_terms: list[set[str]] = []
        document: list[int] = []
        for s in self.sections.values():
            if s.info.document not in docs:
                docs[s.info.document] = len(docs)
                doc_terms.append(set())
            document.append(docs[s.info.document])
            doc_terms[docs[s.info.document]].update(s.tf)
        sections = list(self.sections.values())
        titles = [frozenset(terms(s.info.title)) for s in sections]
        return SectionFeatures(
            top=np.array([s.parent is None for s in sections], dtype=bool),
            level=np.array([min(max(1, s.info.level), MAX_LEVEL) / MAX_LEVEL for s in sections]),
            release_notes=np.array(
                [is_release_notes_path(s.info.document) for s in sections], dtype=bool
            ),
            document=np.array(document, dtype=np.int64),
            parent=np.array([index.get(s.parent or "", -1) for s in sections], dtype=np.int64),
            children=[np.array([index[c] for c in s.children], dtype=np.int64) for s in sections],
            own_terms=[frozenset(s.tf) for s in sections],
            document_terms=[frozenset(t) for t in doc_terms],
            title_terms=titles,
            title_mass=[sum(self.idf(t) for t in title) for title in titles],
            label_terms=[frozenset(_label_terms(s.info.labels)) for s in sections],
            path_terms=[frozenset(_path_terms(s.info.document)) for s in sections],
        )

    def vector(self, tf: Counter[str]) -> dict[str, float]:
        vec = {t: (1 + math.log(n)) * self.idf(t) for t, n in tf.items() if n > 0}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        return {t: v / norm for t, v in vec.items()}


@dataclass(frozen=True, slots=True)
class SectionVectors:
    """A tree's stored section vectors of one model, in the corpus's section order."""

    model: str
    sections: npt.NDArray[np.float32]

    @classmethod
    def load(cls, store: Store, corpus: SectionCorpus, model: str) -> SectionVectors | None:
        """The vectors of ``model`` (kind :data:`~treeseek.index.section_vectors.SECTION_KIND`)
        when every section of ``corpus`` has one, else None (a tree indexed without vectors,
        or with another model: the ranking stays lexical)."""
        keys = [VectorKey(s.node.content_hash or "", p) for p, s in corpus.sections.items()]
        if not keys or any(not k.content_hash for k in keys):
            return None
        found = store.code().vectors(model, SECTION_KIND, keys)
        if len(found) < len(keys) or len({v.shape[0] for v in found.values()}) != 1:
            return None
        return cls(model, np.vstack([found[k] for k in keys]).astype(np.float32))

    def cosines(self, query: npt.NDArray[np.float32]) -> SemanticScores:
        """The question's cosine to every section."""
        q = np.asarray(query, dtype=np.float32)
        return SemanticScores(section=(self.sections @ q).astype(np.float64))


def _label_terms(labels: tuple[str, ...]) -> list[str]:
    return [t for label in labels for t in terms(label.replace("-", " ").replace("_", " "))]


def _path_terms(document: str) -> list[str]:
    stem = document.rsplit(".", 1)[0]
    return terms(stem.replace("/", " ").replace("-", " ").replace("_", " "))
