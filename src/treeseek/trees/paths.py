"""Resolving a path an LLM returned to one of the candidate paths (spec: path-resolution.md).

Rules, in order:

1. Normalize the returned text: backslashes to ``/``, surrounding quotes/whitespace and a
   trailing ``/`` stripped, ``./`` segments removed, ``..`` folded (a path escaping the root
   matches nothing); an absolute path under ``tree_root`` becomes relative to it; any other
   leading ``/`` means the tree root (``/django/db`` is ``django/db``).
2. EXACT match against the candidates' repo-relative paths.
3. If the candidates were rendered under a ``Path prefix`` (Block), ``prefix/returned`` matched
   exactly: the model echoed the displayed, prefix-relative path.
4. A displayed suffix of at least two components (``models/query.py`` for
   ``django/db/models/query.py``) matched on a component boundary, accepted only when exactly one
   candidate has it.
5. Nothing else. A bare basename never matches by suffix (no basename fallback): ``common.py``
   with ``dir1/common.py`` and ``dir2/common.py`` is no match, and it stays no match even with a
   single ``common.py`` candidate unless that candidate's full or displayed path is exactly
   ``common.py``. Ambiguous suffixes are no match. Every outcome is logged.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

log = logging.getLogger(__name__)


class MatchKind(StrEnum):
    EXACT = "exact"  # normalized path equals a candidate path
    PREFIXED = "prefixed"  # Path prefix + returned path equals a candidate path
    SUFFIX = "suffix"  # unique multi-component suffix of one candidate path
    AMBIGUOUS = "ambiguous"  # several candidates share the suffix: no match
    NONE = "none"  # nothing matched


@dataclass(frozen=True, slots=True)
class PathMatch:
    returned: str  # what the model returned
    normalized: str | None  # after normalization (None: not a usable path)
    kind: MatchKind
    path: str | None = None  # the matched candidate path
    candidates: tuple[str, ...] = ()  # the tied candidates when ambiguous

    @property
    def found(self) -> bool:
        return self.path is not None


def _clean_root(tree_root: str | None) -> str | None:
    if not tree_root:
        return None
    root = posixpath.normpath(tree_root.replace("\\", "/"))
    return None if root in ("/", ".") else root


def normalize_returned_path(raw: str, tree_root: str | None = None) -> str | None:
    """A repo-relative form of ``raw``, or ``None`` if it escapes the root or is empty."""
    text = raw.strip().strip("`'\"").strip().replace("\\", "/")
    if not text:
        return None
    root = _clean_root(tree_root)
    if root is not None and (text == root or text.startswith(root + "/")):
        text = text[len(root) :]
    text = text.lstrip("/")
    if not text:
        return None
    norm = posixpath.normpath(text)
    if norm == "." or norm == ".." or norm.startswith("../"):
        return None
    return norm


class PathResolver:
    """Resolves returned paths against one candidate set (built once per rank call)."""

    def __init__(
        self,
        paths: Iterable[str],
        *,
        tree_root: str | None = None,
        path_prefix: str | None = None,
    ) -> None:
        self._paths: dict[str, None] = {}
        for p in paths:
            self._paths.setdefault(p.strip("/"), None)
        self.tree_root = tree_root
        self.path_prefix = (path_prefix or "").replace("\\", "/").strip("/") or None
        self._suffixes: dict[str, list[str]] | None = None
        self._basenames: dict[str, int] | None = None

    def _suffix_index(self) -> dict[str, list[str]]:
        if self._suffixes is None:
            index: dict[str, list[str]] = {}
            for p in self._paths:
                parts = p.split("/")
                # proper suffixes with >= 2 components
                for i in range(1, len(parts) - 1):
                    index.setdefault("/".join(parts[i:]), []).append(p)
            self._suffixes = index
        return self._suffixes

    def _basename_counts(self) -> dict[str, int]:
        if self._basenames is None:
            counts: dict[str, int] = {}
            for p in self._paths:
                name = p.rpartition("/")[2]
                counts[name] = counts.get(name, 0) + 1
            self._basenames = counts
        return self._basenames

    def resolve(self, raw: str, *, log_outcome: bool = True) -> PathMatch:
        """Match ``raw``; the outcome is logged unless ``log_outcome`` is false (a caller
        resolving many paths of one reply logs the first few and a summary)."""
        norm = normalize_returned_path(raw, self.tree_root)
        match = self._match(raw, norm)
        if not log_outcome:
            return match
        if match.kind is MatchKind.AMBIGUOUS:
            log.warning(
                "returned path %r (normalized %r) is ambiguous among %s: not matched",
                raw[:200],
                norm,
                list(match.candidates),
            )
        elif match.found:
            log.info(
                "returned path %r (normalized %r) matched %s: %r",
                raw[:200],
                norm and norm[:200],
                match.kind,
                match.path,
            )
        elif norm is not None and "/" not in norm:
            shared = self._basename_counts().get(norm, 0)
            log.warning(
                "returned path %r is a bare name matching no candidate path exactly "
                "(%d candidates have that basename; basenames are never matched): not matched",
                raw[:200],
                shared,
            )
        else:
            log.warning(
                "returned path %r (normalized %r) matches no candidate",
                raw[:200],
                norm and norm[:200],
            )
        return match

    def _match(self, raw: str, norm: str | None) -> PathMatch:
        if norm is None:
            return PathMatch(raw, None, MatchKind.NONE)
        if norm in self._paths:
            return PathMatch(raw, norm, MatchKind.EXACT, norm)
        if self.path_prefix is not None:
            joined = f"{self.path_prefix}/{norm}"
            if joined in self._paths:
                return PathMatch(raw, norm, MatchKind.PREFIXED, joined)
        if "/" in norm:
            hits = self._suffix_index().get(norm, [])
            if len(hits) == 1:
                return PathMatch(raw, norm, MatchKind.SUFFIX, hits[0])
            if len(hits) > 1:
                return PathMatch(raw, norm, MatchKind.AMBIGUOUS, candidates=tuple(hits))
        return PathMatch(raw, norm, MatchKind.NONE)


def resolve_path(
    raw: str,
    paths: Iterable[str],
    *,
    tree_root: str | None = None,
    path_prefix: str | None = None,
) -> PathMatch:
    """One-shot :meth:`PathResolver.resolve`."""
    return PathResolver(paths, tree_root=tree_root, path_prefix=path_prefix).resolve(raw)
