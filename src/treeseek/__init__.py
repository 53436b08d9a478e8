"""treeseek: a context database for code repositories.

    import treeseek
    with treeseek.open("repo.db") as db:
        db.index("path/to/checkout", name="repo")
        print([n.path for n in db.children("repo")])

The public API is :func:`open` and the :class:`Database` it returns; errors derive from
:class:`TreeseekError` (see :mod:`treeseek.errors`).
"""

from treeseek.database import Database, open
from treeseek.errors import (
    BuildError,
    ConfigError,
    NodeNotFound,
    PathError,
    SchemaError,
    StoreError,
    TreeNotFound,
    TreeseekError,
)
from treeseek.index.run import ChangedFile, IndexHook, IndexProgress, IndexReport
from treeseek.trees.model import ContentStatus, Node, NodeType, TreeInfo, TreeSource

__all__ = [
    "BuildError",
    "ChangedFile",
    "ConfigError",
    "ContentStatus",
    "Database",
    "IndexHook",
    "IndexProgress",
    "IndexReport",
    "Node",
    "NodeNotFound",
    "NodeType",
    "PathError",
    "SchemaError",
    "StoreError",
    "TreeInfo",
    "TreeNotFound",
    "TreeSource",
    "TreeseekError",
    "open",
]
