"""The builder seam: a source lists its entries; the indexer turns them into a stored tree.

Builders (filesystem, path list, git commit, ...) only enumerate what exists. They do not hash,
store or diff: :mod:`treeseek.index.run` does that once for every source, which is what makes
incremental re-indexing (and reuse across git commits) the same machinery everywhere.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from treeseek.trees.model import NodeType, TreeSource


@dataclass(frozen=True, slots=True)
class SourceEntry:
    """One path a source found. Directories are implied by file paths but may be listed too
    (an empty directory only exists if listed)."""

    path: str  # repo-relative POSIX path, never "" (the root is implicit)
    type: NodeType
    size: int | None = None
    #: cheap change detector: "size:mtime_ns" on disk, the blob id in git, None if no content
    signature: str | None = None
    #: reads the bytes when the indexer decides it needs them (None: no content exists)
    read: Callable[[], bytes] | None = None
    #: why the content is missing even though the file exists ("unreadable", ...)
    problem: str | None = None


@dataclass(slots=True)
class SourceWarnings:
    """Non-fatal problems met while listing (unreadable dirs, symlink loops, ...)."""

    messages: list[str] = field(default_factory=list)

    def add(self, message: str) -> None:
        self.messages.append(message)


class TreeBuilder(ABC):
    """Lists the entries of one source."""

    source: TreeSource
    #: what TreeInfo.root records (an absolute directory, a file name, "git-dir@commit")
    root: str

    @abstractmethod
    def entries(self, warnings: SourceWarnings) -> Iterator[SourceEntry]:
        """Yield every file (and optionally directory) entry of the source."""
