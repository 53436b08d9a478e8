"""The path-list builder: a tree from repo-relative paths, with no contents.

This is how the benchmark's trees (``git ls-tree -r --name-only`` listings) are loaded. Input is
a text file (one path per line), a JSON list of strings, or stdin (``-``). Lines are taken
verbatim except for the line ending; blank lines are skipped; ``./`` prefixes and repeated
slashes are normalized; a trailing ``/`` marks a directory (so empty directories can be listed).
A path that tries to leave the tree (absolute, or with a ``..`` part) is a :class:`PathError`.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from treeseek.errors import BuildError, PathError
from treeseek.text.encoding import wide_text_as_utf8
from treeseek.trees.model import NodeType, TreeSource, is_clean_path
from treeseek.trees.path_only import ListedPaths
from treeseek.trees.source import SourceEntry, SourceWarnings, TreeBuilder

STDIN = "-"


def normalize_listed_path(raw: str) -> tuple[str, NodeType]:
    """Clean one listed path; ``("", DIRECTORY)`` means "the root" (nothing to add)."""
    path = raw
    if "\\" in path and "/" not in path:
        # a Windows listing: a/b\c would be ambiguous, so only convert pure backslash paths
        path = path.replace("\\", "/")
    if path.startswith("/") or re.match(r"[A-Za-z]:[/\\]", path):
        raise PathError(
            f"listed path {raw!r} is absolute; a path list holds repo-relative paths"
            " (strip the checkout's directory)"
        )
    is_dir = path.endswith("/")
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            raise PathError(f"listed path {raw!r} leaves the tree ('..'); list paths inside it")
        if "\x00" in part:
            raise PathError(f"listed path {raw!r} contains a NUL byte")
        parts.append(part)
    return "/".join(parts), NodeType.DIRECTORY if is_dir else NodeType.FILE


def _all_clean(paths: list[str]) -> bool:
    """Whether every path is clean and needs no normalizing, tested on all of them at once
    (C-level substring searches instead of several Python-level tests a path).

    ``True`` means :func:`_needs_work` is false for every path. The converse need not hold: a
    newline inside a path can make this answer ``False`` for clean paths, which only costs the
    per-path checks.
    """
    try:
        joined = "\n".join(paths)
    except TypeError:  # not all strings: the per-path checks say which one
        return False
    if not joined or joined[0] == "/" or joined[-1] == "/" or "\n\n" in joined:
        return False
    if any(bad in joined for bad in ("\n/", "/\n", "//", "\x00", "\\")):
        return False
    if ":" in joined and any(len(p) > 2 and p[1] == ":" for p in paths):
        return False
    # a "." or ".." part anywhere, with both separators made one
    parts = "/" + joined.replace("\n", "/") + "/"
    return "/./" not in parts and "/../" not in parts


def _needs_work(path: str) -> bool:
    """Whether a listed path must be normalized or rejected (rare): backslashes, a drive
    letter, or anything :func:`~treeseek.trees.model.is_clean_path` refuses."""
    return "\\" in path or (len(path) > 2 and path[1] == ":") or not is_clean_path(path)


_ENTRY_SLOTS = tuple(
    getattr(SourceEntry, name).__set__
    for name in ("path", "type", "size", "signature", "read", "problem")
)


def _file_entry(path: str, file_type: NodeType) -> SourceEntry:
    """``SourceEntry(path, FILE)`` without the frozen dataclass's per-field ``__setattr__``
    (path lists hold 100k+ paths; a test checks the result equals the constructor's)."""
    entry: SourceEntry = object.__new__(SourceEntry)
    s_path, s_type, s_size, s_signature, s_read, s_problem = _ENTRY_SLOTS
    s_path(entry, path)
    s_type(entry, file_type)
    s_size(entry, None)
    s_signature(entry, None)
    s_read(entry, None)
    s_problem(entry, None)
    return entry


class PathListBuilder(TreeBuilder):
    """Entries from an in-memory list of paths (files have :attr:`ContentStatus.ABSENT`)."""

    source = TreeSource.PATH_LIST

    def __init__(self, paths: Iterable[str], *, root: str = "<paths>") -> None:
        self._paths = paths
        self.root = root

    def listed_paths(self) -> ListedPaths:
        """Every listed path, checked and normalized, without a :class:`SourceEntry` each:
        what :meth:`entries` yields, for the indexer's path-only fast path."""
        if not isinstance(self._paths, list):
            self._paths = list(self._paths)  # an iterator: keep it for entries()
        raw = self._paths
        if "" in raw:
            raw = [p for p in raw if p != ""]
        if _all_clean(raw):
            return ListedPaths(raw, [])
        files: list[str] = []
        dirs: list[str] = []
        for entry in self._entries(raw):
            (files if entry.type is NodeType.FILE else dirs).append(entry.path)
        return ListedPaths(files, dirs)

    def entries(self, warnings: SourceWarnings) -> Iterator[SourceEntry]:
        return self._entries(self._paths)

    @staticmethod
    def _entries(paths: Iterable[str]) -> Iterator[SourceEntry]:
        file_type = NodeType.FILE
        needs_work = _needs_work
        for raw in paths:
            if not isinstance(raw, str):
                raise BuildError(f"a path list holds strings, got {type(raw).__name__}: {raw!r}")
            if not raw:
                continue
            if not needs_work(raw):
                yield _file_entry(raw, file_type)
                continue
            path, node_type = normalize_listed_path(raw)
            if path:
                yield SourceEntry(path, node_type)

    # -- constructors --------------------------------------------------------------------
    @classmethod
    def from_text(cls, text: str, *, root: str = "<paths>") -> PathListBuilder:
        """Parse a JSON list (when the text starts with ``[``) or one path per line."""
        text = text.removeprefix("\ufeff")  # a byte order mark is not part of the first path
        stripped = text.lstrip()
        if stripped.startswith("["):
            try:
                data = json.loads(stripped)
            except json.JSONDecodeError as exc:
                raise BuildError(
                    f"{root}: looks like JSON but does not parse ({exc.msg} at line"
                    f" {exc.lineno}); give a JSON list of strings or one path per line"
                ) from exc
            if not isinstance(data, list):
                raise BuildError(f"{root}: expected a JSON list of paths")
            return cls(data, root=root)
        return cls([line.rstrip("\r") for line in text.split("\n")], root=root)

    @classmethod
    def from_file(cls, path: str | Path) -> PathListBuilder:
        """Read a path list from a file, or from stdin when ``path`` is ``-``."""
        if str(path) == STDIN:
            return cls.from_stream(sys.stdin, root="<stdin>")
        file = Path(path)
        try:
            raw = file.read_bytes()
        except FileNotFoundError as exc:
            raise BuildError(f"path list {file} does not exist") from exc
        except OSError as exc:
            raise BuildError(f"cannot read path list {file}: {exc.strerror}") from exc
        raw = wide_text_as_utf8(raw) or raw  # a UTF-16 list (PowerShell's `>`), say
        return cls.from_text(raw.decode("utf-8", "surrogateescape"), root=str(file.resolve()))

    @classmethod
    def from_stream(cls, stream: IO[str], *, root: str = "<stdin>") -> PathListBuilder:
        return cls.from_text(stream.read(), root=root)
