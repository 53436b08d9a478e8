"""Indexing: one incremental indexer for every tree source, and the hooks that derive layers.

:mod:`treeseek.index.run` reads a builder's entries, stores what changed in one atomic write
and calls each :class:`IndexHook`; :mod:`treeseek.index.code_hook` derives the code layers
(C0-C3, term counts, optional vectors) of the files that changed.
"""

from treeseek.index.run import (
    DEFAULT_MAX_FILE_BYTES,
    ChangedFile,
    IndexHook,
    IndexProgress,
    IndexReport,
    ProgressCallback,
    default_hooks,
    index_tree,
)

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "ChangedFile",
    "IndexHook",
    "IndexProgress",
    "IndexReport",
    "ProgressCallback",
    "default_hooks",
    "index_tree",
]
