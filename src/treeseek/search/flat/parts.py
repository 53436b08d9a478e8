"""BM25 over one tree's chunks or symbol documents, with that tree's statistics.

The code index stores each content's parts (its chunks; its symbols' documents) as term counts
(:class:`~treeseek.store.code_base.PartTerms`), shared by every tree holding the content. A
:class:`PartIndex` puts the parts of one tree's contents into one
:class:`~treeseek.search.flat.bm25.BM25Postings` with FTS5's IDF, so a part scores what
SQLite FTS5's ``bm25()`` gave it when the database held only this tree, whatever else the
database holds. Parts are ordered by content hash, then part index (ties keep that order).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter

import numpy as np
import numpy.typing as npt

from treeseek.code.model import SymbolKind
from treeseek.search.flat.bm25 import BM25Postings
from treeseek.store.code_base import CodeStore, PartLayer, SymbolHit, SymbolRow


@dataclass(frozen=True, slots=True)
class RankedPart:
    """One part of the tree by score: its content, its index within the content, its score."""

    content_hash: str
    index: int
    score: float


class PartIndex:
    """BM25 of one layer's parts over the given contents (one tree's).

    ``hashes`` lists the contents with parts, sorted; content ``c``'s parts are documents
    ``first[c] .. first[c + 1] - 1``. ``missing``: contents asked for that have no part row
    (no parts, or a layer the database lacks).
    """

    def __init__(self, code: CodeStore, layer: PartLayer, contents: Collection[str]) -> None:
        self.layer = layer
        # the stored rows, each array column joined with one copy (bytes, then one view)
        rows = sorted(code.part_term_blobs(layer, contents), key=itemgetter(0))
        self.hashes: list[str] = [r[0] for r in rows]
        self.missing = len(set(contents)) - len(self.hashes)
        self._position = {h: i for i, h in enumerate(self.hashes)}
        lengths, sizes, term_ids, counts = (
            np.frombuffer(b"".join(map(itemgetter(column), rows)), dtype=np.uint32)
            for column in (1, 2, 3, 4)
        )
        # each content's number of parts: its lengths array's (a uint32, 4 bytes, a part)
        sized = np.fromiter((len(r[1]) for r in rows), dtype=np.int64, count=len(rows))
        per_content = sized // 4
        self.first: npt.NDArray[np.int64] = np.concatenate(([0], np.cumsum(per_content))).astype(
            np.int64
        )
        #: each document's content (an index into ``hashes``) and part index in the content
        self.doc_content: npt.NDArray[np.int32] = np.repeat(
            np.arange(len(rows), dtype=np.int32), per_content
        )
        self.doc_part: npt.NDArray[np.int64] = np.arange(int(self.first[-1]), dtype=np.int64) - (
            np.repeat(self.first[:-1], per_content)
        )
        self.postings = BM25Postings(lengths, sizes, term_ids, counts, idf="fts5")

    @property
    def size(self) -> int:
        """How many parts the tree has (the ``N`` of BM25)."""
        return self.postings.size

    def doc_freqs(self, term_ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """How many of the tree's parts contain each term."""
        return self.postings.doc_freqs(term_ids)

    def score(self, query_term_counts: Mapping[int, int]) -> npt.NDArray[np.float64]:
        """Every part's BM25 for the query (term id -> weight), in document order."""
        return self.postings.score(query_term_counts)

    def best_per_content(
        self, values: npt.NDArray[np.float64], contents: Collection[str]
    ) -> dict[str, float]:
        """The largest of ``values`` (one per document) over each of ``contents``' parts
        (contents without parts are absent)."""
        out: dict[str, float] = {}
        for h in contents:
            c = self._position.get(h)
            if c is not None and self.first[c + 1] > self.first[c]:
                out[h] = float(values[self.first[c] : self.first[c + 1]].max())
        return out

    def contents_mask(self, keep: Collection[str]) -> npt.NDArray[np.bool_]:
        """Per document: whether its content is in ``keep``."""
        ok = np.fromiter((h in keep for h in self.hashes), dtype=bool, count=len(self.hashes))
        return ok[self.doc_content]

    def top_docs(
        self, scores: npt.NDArray[np.float64], mask: npt.NDArray[np.bool_], limit: int
    ) -> npt.NDArray[np.intp]:
        """The ``limit`` best-scoring documents among ``mask``, best first (ties in document
        order)."""
        hit = np.flatnonzero((scores > 0) & mask)
        if len(hit) > limit:
            # the limit-th best score, then every part at least that good (a tie at the cut
            # keeps document order)
            cut = np.partition(scores[hit], len(hit) - limit)[len(hit) - limit]
            hit = hit[scores[hit] >= cut]
        ordered: npt.NDArray[np.intp] = hit[np.argsort(-scores[hit], kind="stable")][:limit]
        return ordered

    def top(
        self, scores: npt.NDArray[np.float64], mask: npt.NDArray[np.bool_], limit: int
    ) -> list[RankedPart]:
        """:meth:`top_docs` as ranked parts."""
        return [self.ranked(int(d), scores) for d in self.top_docs(scores, mask, limit)]

    def best_two(
        self, scores: npt.NDArray[np.float64], mask: npt.NDArray[np.bool_], limit: int
    ) -> tuple[list[RankedPart], list[float]]:
        """Among the ``limit`` best documents of ``mask``: each content's best part (contents
        in the order of their best part) and the score of its second best (0 without one)."""
        order = self.top_docs(scores, mask, limit)
        content = self.doc_content[order]
        _, first = np.unique(content, return_index=True)
        first.sort()  # contents in the order of their best part
        rest = np.ones(len(order), dtype=bool)
        rest[first] = False
        later = np.flatnonzero(rest)
        second = np.zeros(len(self.hashes), dtype=np.float64)
        seconds, at = np.unique(content[later], return_index=True)
        second[seconds] = scores[order[later[at]]]
        best = [self.ranked(int(d), scores) for d in order[first]]
        return best, second[content[first]].tolist()

    def best_of(
        self, scores: npt.NDArray[np.float64], contents: Collection[str]
    ) -> dict[str, RankedPart]:
        """The best-scoring part of each of ``contents`` (contents where nothing scores are
        absent; a tie goes to the first part)."""
        out: dict[str, RankedPart] = {}
        for h in contents:
            c = self._position.get(h)
            if c is None:
                continue
            lo, hi = int(self.first[c]), int(self.first[c + 1])
            if hi <= lo:
                continue
            d = lo + int(np.argmax(scores[lo:hi]))
            if scores[d] > 0:
                out[h] = self.ranked(d, scores)
        return out

    def ranked(self, doc: int, scores: npt.NDArray[np.float64]) -> RankedPart:
        """Document ``doc`` as a ranked part."""
        return RankedPart(
            self.hashes[int(self.doc_content[doc])], int(self.doc_part[doc]), float(scores[doc])
        )


class SymbolCatalog:
    """One tree's symbols by name and by qualified name, read once (``symbol_rows``): exact
    symbol lookups for query understanding in memory, whatever else the database holds
    (the store's ``symbols_named`` reads every tree's symbols of a name, then filters).

    Built for a large tree's first query (a 47,000-file tree has ~400,000 symbols): the
    symbols stay the rows they were read as, in catalog order (by content hash, then symbol
    order), and a name finds its rows through the sorted hashes of the names (numpy), so
    the catalog makes no object and no dict entry per symbol. A symbol becomes a
    :class:`SymbolHit` when a lookup returns it.
    """

    def __init__(self, rows: Sequence[SymbolRow]) -> None:
        #: the symbols in catalog order: by content (a stable sort keeps symbol order)
        self._rows = sorted(rows, key=itemgetter(0))
        digests = list(map(itemgetter(0), self._rows))
        self._qnames: list[str] = list(map(itemgetter(1), self._rows))
        self._names: list[str] = list(map(itemgetter(2), self._rows))
        per_content = Counter(digests)  # contents in catalog order (dicts keep it)
        #: the contents with symbols, ascending; content ``c``'s symbols are the rows
        #: ``first[c] .. first[c + 1] - 1``
        self.hashes: list[str] = list(per_content)
        counts = np.fromiter(per_content.values(), dtype=np.int64, count=len(per_content))
        self._first = np.concatenate(([0], np.cumsum(counts))).astype(np.int64).tolist()
        self._position = {h: i for i, h in enumerate(self.hashes)}
        #: the contents with symbols (what a lookup over the whole tree keeps)
        self.contents: frozenset[str] = frozenset(self.hashes)
        self._content = digests
        self._by_name = _NameIndex(self._names)
        self._by_qname = _NameIndex(self._qnames)
        #: name hits made so far, by position (questions ask for the same names again)
        self._hits: dict[int, SymbolHit] = {}

    def qname(self, content_hash: str, index: int) -> str | None:
        """The qualified name of a content's ``index``-th symbol (None: no such symbol)."""
        c = self._position.get(content_hash)
        if c is None or index < 0:
            return None
        row = self._first[c] + index
        return self._qnames[row] if row < self._first[c + 1] else None

    def symbols_named(self, names: Sequence[str], hashes: Collection[str]) -> list[SymbolHit]:
        """Symbols whose name or qualified name is one of ``names`` (each symbol once), of
        contents in ``hashes``, by content hash and symbol order."""
        keep = hashes if isinstance(hashes, (set, frozenset)) else set(hashes)
        content = self._content
        found: set[int] = set()
        for n in dict.fromkeys(names):
            for row in self._by_name.rows(n, self._names) + self._by_qname.rows(n, self._qnames):
                if content[row] in keep:
                    found.add(row)
        hits = self._hits
        out = []
        for row in sorted(found):
            hit = hits.get(row)
            if hit is None:
                digest, qname, name, kind, start, end = self._rows[row]
                hit = hits[row] = SymbolHit(
                    digest, qname, name, _SYMBOL_KINDS[kind], start, end, 0.0
                )
            out.append(hit)
        return out


class TreeSymbols:
    """Exact symbol lookups of one tree: the store's name indexes for the first lookups
    (:attr:`LOOKUPS`), the tree's :class:`SymbolCatalog` after.

    Reading a tree's every symbol for the catalog costs a large tree's first query about a
    second (400,000 rows); a lookup by the name indexes costs milliseconds, but does not
    stay in memory and reads the names' symbols of every tree. A command-line query (one
    process, one question) looks names up once or twice; a process's later queries, and a
    server's warm-up, build the catalog. Both answer alike: the symbols of the contents
    asked for whose name or qualified name is one of the names, each once, by content hash
    and symbol order.
    """

    #: lookups by the store before the catalog is built
    LOOKUPS = 2

    def __init__(
        self, code: CodeStore, catalog: Callable[[], SymbolCatalog], built: Callable[[], bool]
    ) -> None:
        """``catalog()``: the tree's catalog, built on first use; ``built()``: whether it
        is built yet."""
        self._code = code
        self._catalog = catalog
        self._built = built
        self._lookups = 0

    def symbols_named(self, names: Sequence[str], hashes: Collection[str]) -> list[SymbolHit]:
        """See :meth:`SymbolCatalog.symbols_named`."""
        if self._lookups >= self.LOOKUPS or self._built():
            return self._catalog().symbols_named(names, hashes)
        self._lookups += 1
        return [
            SymbolHit(digest, qname, name, _SYMBOL_KINDS[kind], start, end, 0.0)
            for digest, qname, name, kind, start, end in self._code.symbol_rows_named(names, hashes)
        ]


class _NameIndex:
    """The rows of a column of names by name: the names' hashes sorted (numpy), a name's
    rows the ones whose hash is the name's and whose name is the name."""

    def __init__(self, column: Sequence[str]) -> None:
        keys = np.fromiter(map(hash, column), dtype=np.int64, count=len(column))
        self._order = np.argsort(keys, kind="stable")
        self._keys = keys[self._order]

    def rows(self, name: str, column: Sequence[str]) -> list[int]:
        """The rows of ``column`` (the column indexed) holding ``name``."""
        key = hash(name)
        lo = int(np.searchsorted(self._keys, key, side="left"))
        hi = int(np.searchsorted(self._keys, key, side="right"))
        if lo == hi:
            return []
        return [row for row in self._order[lo:hi].tolist() if column[row] == name]


#: a stored kind value -> the kind (a dict lookup: the enum call costs more)
_SYMBOL_KINDS: dict[str, SymbolKind] = {k.value: k for k in SymbolKind}


__all__ = ("PartIndex", "RankedPart", "SymbolCatalog", "TreeSymbols")
