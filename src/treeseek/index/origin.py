"""Where a tree was built from, and the rule that keeps one name for one origin.

A tree's ``root`` records its origin: a directory, ``GITDIR@COMMIT``, a document file or a
directory of documents. Indexing under an existing tree's name from *another* origin would
replace that tree with an unrelated one (``treeseek index ~/b --name a`` when ``a`` is
``~/a``), so :func:`check_origin` refuses it unless asked to replace (``--replace``,
``replace=True``). The same origin is re-indexed as always, whatever commit: a checkout's
directory, its git directory (``--rev``) and a linked worktree's git directory count as one.
A moved checkout (the old root is gone) is refused as well, with a message that says so:
``--replace`` re-points the tree at the new place, and only files that changed are written.
Path lists carry no location worth comparing (``<stdin>``, a list file) and are not checked.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from treeseek.errors import BuildError
from treeseek.store import Store
from treeseek.trees.git import checkout_git_dir
from treeseek.trees.model import TreeSource

#: how each door asks to replace a tree
REPLACE = "--replace; replace=true over HTTP and MCP, replace=True in Python"


def location(source: TreeSource, root: str) -> str:
    """The place a root names: the git directory of ``GITDIR@COMMIT``, else the root."""
    if source is TreeSource.GIT and "@" in root:
        return root.rpartition("@")[0]
    return root


def _places(source: TreeSource, root: str) -> set[str]:
    where = location(source, root)
    places = {where}
    if source is TreeSource.GIT and os.path.basename(where) == ".git":
        places.add(os.path.dirname(where))  # the checkout a --rev of it was read from
    elif source is TreeSource.FILESYSTEM:
        with contextlib.suppress(BuildError, OSError):  # its git dir (linked worktrees)
            places.add(str(checkout_git_dir(Path(where))))
    return places


def same_origin(old_source: TreeSource, old_root: str, source: TreeSource, root: str) -> bool:
    """Whether two roots name one origin (see the module)."""
    if TreeSource.PATH_LIST in (old_source, source):
        return True
    return bool(_places(old_source, old_root) & _places(source, root))


def check_origin(store: Store, name: str, source: TreeSource, root: str) -> None:
    """BuildError when tree ``name`` exists and was built from another origin than ``root``
    (the caller skips this when asked to replace the tree)."""
    if not store.has_tree(name):
        return
    old = store.tree(name)
    if (old.source is TreeSource.DOCUMENT) != (source is TreeSource.DOCUMENT):
        return  # the indexers refuse a document tree for a directory one, and the reverse
    if same_origin(old.source, old.root, source, root):
        return
    was, now = location(old.source, old.root), location(source, root)
    if not os.path.exists(was):
        raise BuildError(
            f"tree {name!r} was indexed from {was}, which no longer exists; if the checkout"
            f" moved to {now}, replace the tree ({REPLACE}) to re-point it there (only files"
            " that changed are written); else give another name (--name)"
        )
    raise BuildError(
        f"tree {name!r} was indexed from {was}, not {now}; give another name (--name) to keep"
        f" both, or replace the tree ({REPLACE}) to make {name!r} the tree of {now}"
    )
