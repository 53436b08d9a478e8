"""treeseek: a context database for code repositories.

    import treeseek
    with treeseek.open("repo.db") as db:
        db.index("path/to/checkout", name="repo")
        result = db.query("repo", "where are node ids derived from paths", k=5)
        print([hit.path for hit in result.files])

The public API is :func:`open`, the :class:`Database` it returns, the types its methods take
and return (:class:`QueryOptions`, :class:`Result`, :class:`FileHit`, :class:`IndexReport`,
:class:`Node`, ...); errors derive from :class:`TreeseekError` (see :mod:`treeseek.errors`).
Everything here is in ``__all__`` (a test keeps the two in step).
"""

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from treeseek.database import Database, open
from treeseek.errors import (
    AmbiguousSymbol,
    BuildError,
    ConfigError,
    CorruptDatabase,
    DeadlineExceeded,
    DiskFull,
    LLMError,
    LLMResponseError,
    NodeNotFound,
    PathError,
    ReadOnlyDatabase,
    RetrievalError,
    SchemaError,
    StatementTimeout,
    StoreError,
    TreeNotFound,
    TreeseekError,
)
from treeseek.index.run import ChangedFile, IndexHook, IndexProgress, IndexReport
from treeseek.search.base import FileHit, QueryOptions, Result
from treeseek.trees.model import ContentStatus, Node, NodeType, TreeInfo, TreeSource

try:
    __version__ = _version("treeseek")
except _PackageNotFoundError:  # pragma: no cover - a source checkout without metadata
    __version__ = "0.0.0+unknown"

__all__ = [
    "AmbiguousSymbol",
    "BuildError",
    "ChangedFile",
    "ConfigError",
    "ContentStatus",
    "CorruptDatabase",
    "Database",
    "DeadlineExceeded",
    "DiskFull",
    "FileHit",
    "IndexHook",
    "IndexProgress",
    "IndexReport",
    "LLMError",
    "LLMResponseError",
    "Node",
    "NodeNotFound",
    "NodeType",
    "PathError",
    "QueryOptions",
    "ReadOnlyDatabase",
    "Result",
    "RetrievalError",
    "SchemaError",
    "StatementTimeout",
    "StoreError",
    "TreeInfo",
    "TreeNotFound",
    "TreeSource",
    "TreeseekError",
    "open",
]
