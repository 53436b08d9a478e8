"""The import graph around the learned ranking's candidates, and personalized PageRank on it.

The code index stores each content's import edges as written (``dst_ref``: ``..models``,
``sympy.core.expr``, ``../helpers/util.js``, ``fmt/core.h``, ``com.google.gson.Gson``). At
query time :class:`ImportResolver` maps a reference to the tree's files by the path conventions
every language shares (a relative path from the importing file, a path suffix, a dotted module
or package-qualified class), without reading the sources again; what does not resolve to a
file of the tree (the standard library, a dependency) is dropped. :func:`personalized_pagerank`
then ranks the candidates of one question the way aider's repository map ranks files: a random
walk over the import links among them (both directions), restarting at the files the question
points at (the fused order's first files and the files it names), so a file the question's
files import, or that imports them, gains. The walk only sees the question's candidates and
anchors, so its cost is a few dozen edge reads (cached per tree) and a tiny power iteration.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence

import numpy as np

from treeseek.search.flat.understanding import TreeNames

#: extensions tried after a relative reference without one (``./types`` -> ``./types.ts``)
_TRY_EXTENSIONS: tuple[str, ...] = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".py", ".rs", ".go")
#: the written extension of a relative import vs the source's (``.js`` -> ``.ts``)
_SWAPPED: dict[str, tuple[str, ...]] = {
    ".js": (".ts", ".tsx"),
    ".mjs": (".mts",),
    ".jsx": (".tsx",),
}


class ImportResolver:
    """Maps an import reference written in one file to files of the tree (exact lookups)."""

    def __init__(self, names: TreeNames) -> None:
        self._names = names

    def resolve(self, importer: str, ref: str) -> list[str]:
        """The tree's files ``ref`` (written in ``importer``) names; [] when none does."""
        ref = ref.strip().strip("\"'<>")
        if not ref:
            return []
        if ref.startswith(("./", "../")):
            return self._relative_path(importer, ref)
        if ref.startswith("."):
            return self._relative_module(importer, ref)
        if "/" in ref:
            return self._names.resolve_path(ref) or self._names.resolve_path(
                ref.rpartition("/")[2] + _extension(importer)
            )
        if "." in ref and not _looks_like_file(ref):
            return self._dotted(importer, ref)
        return self._names.resolve_path(ref) if _looks_like_file(ref) else []

    def _relative_path(self, importer: str, ref: str) -> list[str]:
        base = posixpath.normpath(posixpath.join(posixpath.dirname(importer), ref))
        paths = self._names.paths
        if base in paths:
            return [base]
        stem, ext = posixpath.splitext(base)
        for alt in _SWAPPED.get(ext, ()):
            if stem + alt in paths:
                return [stem + alt]
        for ext in _TRY_EXTENSIONS:
            for cand in (base + ext, f"{base}/index{ext}", f"{base}/mod{ext}"):
                if cand in paths:
                    return [cand]
        return []

    def _relative_module(self, importer: str, ref: str) -> list[str]:
        """Python's ``from ..a.b import c``: up ``level - 1`` packages, then the dotted rest."""
        level = len(ref) - len(ref.lstrip("."))
        rest = ref[level:]
        base = posixpath.dirname(importer)
        for _ in range(level - 1):
            base = posixpath.dirname(base)
        parts = [p for p in rest.split(".") if p]
        paths = self._names.paths
        for k in range(len(parts), -1, -1):  # the longest prefix that is a module
            stem = "/".join([base, *parts[:k]] if base else parts[:k])
            for cand in (f"{stem}.py", f"{stem}/__init__.py"):
                if cand in paths:
                    return [cand]
        return []

    def _dotted(self, importer: str, ref: str) -> list[str]:
        """A dotted module (Python) or a package-qualified class (Java, Kotlin, C#, Scala):
        the longest prefix that names a file of the tree."""
        found, _ = self._names.resolve_module(ref)
        if found:
            return found
        ext = _extension(importer)
        parts = ref.split(".")
        for k in range(len(parts), 1, -1):
            hit = self._names.by_suffix("/".join(parts[:k]) + ext)
            if hit and len(hit) <= 2:
                return list(hit)
        return []


def _extension(path: str) -> str:
    return posixpath.splitext(path)[1]


def _looks_like_file(ref: str) -> bool:
    """``uv.h``, ``format.h``: a file name (a short alphabetic extension after the last dot)."""
    stem, _, ext = ref.rpartition(".")
    return bool(stem) and 0 < len(ext) <= 4 and ext.isalpha() and ext.islower()


def personalized_pagerank(
    nodes: Sequence[str],
    links: Mapping[str, Sequence[str]],
    restart: Mapping[str, float],
    *,
    damping: float = 0.5,
    iterations: int = 30,
) -> dict[str, float]:
    """Personalized PageRank of ``nodes`` over ``links`` (node -> the nodes it imports; walked
    both ways), restarting at ``restart`` (node -> weight, normalized here). A node without
    links keeps only its restart share; with no restart weight every node scores 0."""
    index = {n: i for i, n in enumerate(nodes)}
    n = len(nodes)
    total = sum(w for node, w in restart.items() if node in index and w > 0)
    if n == 0 or total <= 0:
        return dict.fromkeys(nodes, 0.0)
    # the undirected links as index pairs, each once (a dense n x n matrix is 200 MB and a
    # second per query at the ~5,000 candidates of a monorepo question)
    pairs: set[tuple[int, int]] = set()
    for src, dsts in links.items():
        i = index.get(src)
        if i is None:
            continue
        for dst in dsts:
            j = index.get(dst)
            if j is not None and j != i:
                pairs.add((i, j) if i < j else (j, i))
    ordered = sorted(pairs)
    lo = np.fromiter((a for a, _ in ordered), dtype=np.int64, count=len(ordered))
    hi = np.fromiter((b for _, b in ordered), dtype=np.int64, count=len(ordered))
    src_idx = np.concatenate((lo, hi))
    dst_idx = np.concatenate((hi, lo))
    degree = np.bincount(src_idx, minlength=n).astype(np.float64)
    share = np.zeros(n, dtype=np.float64)  # 1 / degree: what each link carries
    np.divide(1.0, degree, out=share, where=degree > 0)
    r = np.zeros(n, dtype=np.float64)
    for node, w in restart.items():
        if node in index and w > 0:
            r[index[node]] = w / total
    p = r.copy()
    isolated = degree == 0
    for _ in range(iterations):
        # a node without links gives its mass back to the restart distribution
        stuck = float(p[isolated].sum())
        walked = np.bincount(dst_idx, weights=(p * share)[src_idx], minlength=n)
        p = (1 - damping) * r + damping * (walked + stuck * r)
    return {node: float(p[i]) for node, i in index.items()}


__all__ = ("ImportResolver", "personalized_pagerank")
