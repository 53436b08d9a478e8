"""The job board: index jobs' status where every process serving one database can read it.

``treeseek serve --workers N`` runs N processes on one PostgreSQL database; an index job runs
in the process that accepted it, but its status must answer in every one (a client's next
request may reach another worker). So the status of each job is a row of the database
(:class:`JobRecord`), written by the process running the job at every change and read by
any. A SQLite database is served by one process: its jobs live in that process and its store
has no board (:meth:`treeseek.store.base.Store.jobs` is None).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

#: finished jobs a board keeps (older ones are forgotten as new ones arrive)
KEPT_JOBS = 200


@dataclass(frozen=True, slots=True)
class JobRecord:
    """The status of one index job. ``state``: queued, running, done, failed; ``phase``:
    queued, scan, read, write, done; ``report``: what the run changed (JSON-able), once
    done."""

    id: str
    tree: str
    source: str
    rev: str | None
    state: str
    phase: str
    done: int
    total: int | None
    error: str | None
    report: dict[str, Any] | None
    created: float
    finished: float | None

    @property
    def finished_running(self) -> bool:
        return self.state in ("done", "failed")


@runtime_checkable
class JobBoard(Protocol):
    """Index jobs' status shared by every process of one database."""

    def put(self, job: JobRecord) -> None:
        """Record a job's status (insert, or replace the job's previous status); visible to
        every process at once (not part of any write transaction of the caller)."""

    def get(self, job_id: str) -> JobRecord | None: ...

    def recent(self) -> list[JobRecord]:
        """The jobs kept (:data:`KEPT_JOBS` finished ones and every unfinished one), oldest
        first."""
