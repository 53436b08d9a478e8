"""The job board: index jobs' status where every process serving one database can read it.

``treeseek serve --workers N`` runs N processes on one PostgreSQL database; an index job runs
in the process that accepted it, but its status must answer in every one (a client's next
request may reach another worker). So the status of each job is a row of the database
(:class:`JobRecord`), written by the process running the job at every change and read by
any. A SQLite database is served by one process: its jobs live in that process and its store
has no board (:meth:`treeseek.store.base.Store.jobs` is None).

A process can die inside a job (killed, out of memory, its machine gone) without writing
``failed``. So the process running jobs *touches* its unfinished ones every
:data:`HEARTBEAT_SECONDS`, and a board reads a queued or running job untouched for
:data:`LOST_AFTER_SECONDS` (in the database's clock, so the processes' clocks do not matter)
as failed, and records it so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

#: finished jobs a board keeps (older ones are forgotten as new ones arrive)
KEPT_JOBS = 200
#: how often a process touches the unfinished jobs it runs
HEARTBEAT_SECONDS = 10.0
#: an unfinished job untouched this long has lost its process: it reads as failed
LOST_AFTER_SECONDS = 60.0
#: the error of such a job
LOST_ERROR = "the process running this job stopped (no heartbeat for {seconds:.0f} s)"


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

    def touch(self, job_ids: list[str]) -> None:
        """Say that the process running these unfinished jobs is alive."""

    def get(self, job_id: str) -> JobRecord | None:
        """A job's last status (a lost job's as failed), or None if it is not kept."""

    def recent(self) -> list[JobRecord]:
        """The jobs kept (:data:`KEPT_JOBS` finished ones and every unfinished one), oldest
        first."""
