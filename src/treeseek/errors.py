"""The treeseek exception tree.

Every error treeseek raises on purpose derives from :class:`TreeseekError`, so callers can catch
one type. Each message says what went wrong and, where there is one, what to do about it.

    TreeseekError
    ├── ConfigError                 bad option, unknown provider, missing key
    ├── StoreError                  the database cannot be opened or used
    │   ├── SchemaError             the schema is newer than this treeseek, or a migration failed
    │   └── TreeNotFound            no tree by that name
    ├── NodeNotFound                no node with that id / path in the tree
    │   └── AmbiguousSymbol         a short symbol name matches several symbols (.candidates)
    ├── BuildError                  a tree could not be built (source missing, not a directory ...)
    ├── PathError                   a path escapes the tree root or cannot be resolved
    ├── LLMError                    the LLM provider failed after retries
    │   └── LLMResponseError        the provider answered, but not with a usable rank call
    ├── DeadlineExceeded            a query ran out of time (its deadline) before it had an answer
    └── RetrievalError              a retriever could not run (e.g. unsupported tree source)
"""

from __future__ import annotations


class TreeseekError(Exception):
    """Base class of every error treeseek raises on purpose."""


class ConfigError(TreeseekError):
    """An option, environment variable or config file value is invalid."""


class StoreError(TreeseekError):
    """The database cannot be opened, read or written."""


class StatementTimeout(StoreError):
    """A database statement ran longer than the database's statement timeout."""


class SchemaError(StoreError):
    """The database schema is unknown to this version of treeseek."""


class CorruptDatabase(StoreError):
    """The database file is damaged: reads of its damaged pages fail and nothing is written
    to it until ``treeseek db check`` finds it intact."""


class DiskFull(StoreError):
    """A write ran out of disk space or hit a file-size limit (it was rolled back)."""


class ReadOnlyDatabase(StoreError):
    """The database can be read but not written (file mode, directory or mount)."""


class TreeNotFound(StoreError):
    """No tree with the given name exists in the database."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no tree named {name!r}; run `treeseek trees` to list the indexed trees")
        self.name = name


class NodeNotFound(TreeseekError):
    """No node with the given id or path exists in the tree."""


class AmbiguousSymbol(NodeNotFound):
    """A symbol name (or a path suffix of a name path) matches several symbols: never a
    guess; ``candidates`` lists their full name paths (``path::Qual.name``)."""

    def __init__(self, name: str, candidates: list[str], what: str = "symbols") -> None:
        shown = ", ".join(candidates[:10]) + (" ..." if len(candidates) > 10 else "")
        super().__init__(f"{name!r} matches {len(candidates)} {what}: {shown}; give one of these")
        self.name = name
        self.candidates = list(candidates)


class BuildError(TreeseekError):
    """A tree could not be built from its source."""


class PathError(TreeseekError):
    """A path escapes the tree root or cannot be matched to the index."""


class LLMError(TreeseekError):
    """The LLM provider failed (after retries)."""


class LLMResponseError(LLMError):
    """The provider answered, but the reply was not a usable `rank` tool call."""


class DeadlineExceeded(TreeseekError):
    """A query reached its deadline (``--deadline``, ``TREESEEK_DEADLINE``, ``deadline_s``)."""


class RetrievalError(TreeseekError):
    """A retriever could not run on this tree."""
