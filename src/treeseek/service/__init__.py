"""What the two doors (the HTTP API, :mod:`treeseek.server`, and the MCP server,
:mod:`treeseek.mcp`) share: one :class:`Service` over a :class:`~treeseek.database.Database`
with per-request limits, safe paths and plain-JSON answers, and the index :class:`Jobs`
(background index runs with progress, done only after the commit).

Every method is synchronous and safe to call from several threads at once: the SQLite store
opens one connection per thread, so each request reads on its own connection and sees the
last committed version of a tree (an index job's commit is atomic).
"""

from treeseek.service.core import (
    GRAPH_RELATIONS,
    LimitExceeded,
    Limits,
    Service,
    check_path,
    error_kind,
)
from treeseek.service.jobs import Job, Jobs

__all__ = [
    "GRAPH_RELATIONS",
    "Job",
    "Jobs",
    "LimitExceeded",
    "Limits",
    "Service",
    "check_path",
    "error_kind",
]
