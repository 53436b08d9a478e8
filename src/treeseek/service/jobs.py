"""Index jobs: index or re-index a tree in the background, with progress.

One worker thread runs the jobs one after the other (SQLite has one writer at a time anyway);
queries keep running on other threads and read the previous version of the tree until the
job's single transaction commits. A job is ``done`` only after that commit: its ``report``
then says what changed, and the tree is readable at once.

    jobs = Jobs(service)
    job = jobs.submit(tree="django")            # re-index from where it was built
    job = jobs.submit(source="/src/app", tree="app")
    jobs.wait(job.id, timeout=60)               # or poll jobs.get(job.id).to_dict()

Where several processes serve one database (``treeseek serve --workers N`` on PostgreSQL), a
job runs in the process that accepted it and every change of its status is written to the
store's job board (:mod:`treeseek.store.jobs`): any process answers ``get``, ``list`` and
``wait`` for any job. A store without a board (SQLite, one process) keeps jobs in memory.
A heartbeat thread touches this process's unfinished jobs on the board, so that if the process
dies inside a job the others read the job as failed (:mod:`treeseek.store.jobs`).
"""

from __future__ import annotations

import itertools
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treeseek.errors import BuildError, NodeNotFound, TreeseekError
from treeseek.index.run import IndexProgress, IndexReport
from treeseek.store import jobs as board_timing
from treeseek.store.jobs import KEPT_JOBS, JobRecord
from treeseek.trees.model import TreeSource

if TYPE_CHECKING:
    from treeseek.service.core import Service

#: how often ``wait`` reads the board for a job another process runs
POLL_SECONDS = 0.2
#: jobs one process keeps queued (not yet running); a request for a job already queued with the
#: same tree, source and revision gets that job instead of a new one
MAX_QUEUED_JOBS = 32

Listener = Callable[["Job"], None]


@dataclass
class Job:
    """One index run. ``state``: queued, running, done, failed."""

    id: str
    tree: str
    source: str
    rev: str | None = None
    replace: bool = False  # the tree may become ``source``'s (see treeseek.index.origin)
    state: str = "queued"
    phase: str = "queued"  # scan (listing files), read, write (committing), done
    done: int = 0
    total: int | None = None
    error: str | None = None
    report: dict[str, Any] | None = None
    created: float = field(default_factory=time.time)
    finished: float | None = None
    _event: threading.Event = field(default_factory=threading.Event, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tree": self.tree,
            "source": self.source,
            "rev": self.rev,
            "state": self.state,
            "phase": self.phase,
            "done": self.done,
            "total": self.total,
            "error": self.error,
            "report": self.report,
        }

    def record(self) -> JobRecord:
        return JobRecord(
            id=self.id,
            tree=self.tree,
            source=self.source,
            rev=self.rev,
            state=self.state,
            phase=self.phase,
            done=self.done,
            total=self.total,
            error=self.error,
            report=self.report,
            created=self.created,
            finished=self.finished,
        )

    @classmethod
    def from_record(cls, record: JobRecord) -> Job:
        """A job another process runs, as its last recorded status."""
        job = cls(
            id=record.id,
            tree=record.tree,
            source=record.source,
            rev=record.rev,
            state=record.state,
            phase=record.phase,
            done=record.done,
            total=record.total,
            error=record.error,
            report=record.report,
            created=record.created,
            finished=record.finished,
        )
        if record.finished_running:
            job._event.set()
        return job


def report_dict(report: IndexReport) -> dict[str, Any]:
    return {
        "tree": report.tree.name,
        "files": report.tree.file_count,
        "added": report.added,
        "changed": report.changed,
        "removed": report.removed,
        "unchanged": report.unchanged,
        "binary": report.binary,
        "too_large": report.too_large,
        "unreadable": report.unreadable,
        "warnings": len(report.warnings),
        "seconds": round(report.seconds, 3),
    }


class Jobs:
    """The index jobs of one server (thread-safe), shared with the other processes serving
    its database through the store's job board when it has one."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self._board = service.db.store.jobs()
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="treeseek-index")
        self._closed = threading.Event()
        if self._board is not None:
            threading.Thread(
                target=self._heartbeat, name="treeseek-job-heartbeat", daemon=True
            ).start()

    def close(self) -> None:
        self._closed.set()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _heartbeat(self) -> None:
        """Touch this process's unfinished jobs on the board until :meth:`close`."""
        assert self._board is not None
        while not self._closed.wait(board_timing.HEARTBEAT_SECONDS):
            with self._lock:
                ids = [j.id for j in self._jobs.values() if j.state in ("queued", "running")]
            try:
                self._board.touch(ids)
            except Exception:  # the database is unreachable: try again at the next beat
                continue

    def submit(
        self,
        *,
        tree: str | None = None,
        source: str | None = None,
        rev: str | None = None,
        replace: bool = False,
        listener: Listener | None = None,
    ) -> Job:
        """Queue an index run: ``source`` (a directory under the server's index roots, or a
        git repository with ``rev``) into ``tree``, or re-index ``tree`` from the source it
        was built from. Errors in the request (unknown tree, bad directory, a full queue) raise at
        once; a request for a job already queued (same tree, source, rev) returns that job;
        errors of the run fail the job."""
        if source is None:
            if tree is None:
                raise BuildError("give a tree to re-index, or a source directory to index")
            info = self.service.db.tree(tree)  # TreeNotFound
            if info.source is TreeSource.GIT:
                git_dir, _, commit = info.root.rpartition("@")
                source_path = git_dir
                rev = rev or commit
            elif info.source is TreeSource.FILESYSTEM:
                source_path = info.root
            else:
                raise BuildError(
                    f"tree {tree!r} was built from a {info.source.value}; only directory and"
                    " git trees can be re-indexed here"
                )
            if not Path(source_path).is_dir():
                raise NodeNotFound(
                    f"{source_path}, where tree {tree!r} was built, is gone; if it moved,"
                    " index the new directory into it as source with replace"
                )
        else:
            source_path = str(self.service.check_index_source(source))
            if tree is None:
                tree = Path(source_path).name.removesuffix(".git") or "tree"
            if not self.service.db.store.has_tree(tree):  # as the run would: now, not failed
                from treeseek.database import check_new_tree_name

                check_new_tree_name(tree)
            elif not replace:  # refused now, not as a failed job (the run checks it again)
                self._check_origin(tree, source_path, rev)
        with self._lock:
            waiting = [j for j in self._jobs.values() if j.state == "queued"]
            for queued in waiting:  # not started yet: it will read what this one would
                if (queued.tree, queued.source, queued.rev, queued.replace) == (
                    tree,
                    source_path,
                    rev,
                    replace,
                ):
                    return queued
            if len(waiting) >= MAX_QUEUED_JOBS:
                from treeseek.service.core import LimitExceeded

                raise LimitExceeded(
                    f"{len(waiting)} index jobs are already queued, this server's limit; wait"
                    " for them to finish (GET /v1/jobs) and submit again"
                )
            job = Job(id=self._new_id(), tree=tree, source=source_path, rev=rev, replace=replace)
            self._jobs[job.id] = job
            while len(self._jobs) > KEPT_JOBS:
                oldest = next(iter(self._jobs.values()))
                if oldest.state in ("queued", "running"):
                    break
                self._jobs.popitem(last=False)
        self._publish(job)
        self._pool.submit(self._run, job, listener)
        return job

    def _check_origin(self, tree: str, source_path: str, rev: str | None) -> None:
        """BuildError now when ``tree`` exists and was built from elsewhere than
        ``source_path`` (:func:`treeseek.index.origin.check_origin`, as the run does)."""
        from treeseek.database import is_bare_git_repository
        from treeseek.index.origin import check_origin
        from treeseek.trees.git import checkout_git_dir

        path = Path(source_path).resolve()
        if rev is not None or is_bare_git_repository(path):
            kind, root = TreeSource.GIT, f"{checkout_git_dir(path)}@{rev or 'HEAD'}"
        else:
            kind, root = TreeSource.FILESYSTEM, str(path)
        check_origin(self.service.db.store, tree, kind, root)

    def _new_id(self) -> str:
        """``job-N`` in one process; with a board, ids no other process can also make."""
        if self._board is None:
            return f"job-{next(self._ids)}"
        return f"job-{secrets.token_hex(8)}"

    def _publish(self, job: Job) -> None:
        """Record the job's status where every process of the database reads it."""
        if self._board is not None:
            self._board.put(job.record())

    def _run(self, job: Job, listener: Listener | None) -> None:
        def progress(event: IndexProgress) -> None:
            job.phase, job.done, job.total = event.phase, event.done, event.total
            self._publish(job)
            if listener is not None:
                listener(job)

        job.state = job.phase = "running"
        if listener is not None:
            listener(job)
        try:
            self._publish(job)
            report = self.service.db.index(
                job.source, name=job.tree, rev=job.rev, progress=progress, replace=job.replace
            )
        except TreeseekError as exc:
            job.state, job.error = "failed", str(exc)
        except Exception as exc:  # a job never takes the server down
            job.state, job.error = "failed", f"{type(exc).__name__}: {exc}"
        else:
            # the report is returned after the commit: the new version is readable now
            job.report = report_dict(report)
            job.state = job.phase = "done"
            # done/total of a finished job: the files it checked (the last phase's count is
            # the nodes written, 0/0 when nothing changed); the report says what changed
            job.done = job.total = report.tree.file_count
        job.finished = time.time()
        try:
            self._publish(job)
        except Exception as exc:  # the run's outcome stands; say why others cannot see it
            job.error = f"{job.error + '; ' if job.error else ''}status not shared: {exc}"
        job._event.set()
        if listener is not None:
            listener(job)

    def get(self, job_id: str) -> Job:
        """A job of this process, or (with a board) of any process serving the database."""
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None and self._board is not None:
            record = self._board.get(job_id)
            job = None if record is None else Job.from_record(record)
        if job is None:
            raise NodeNotFound(f"no index job {job_id!r}")
        return job

    def list(self) -> list[Job]:
        """The jobs kept, oldest first (with a board: those of every process)."""
        if self._board is not None:
            return [Job.from_record(r) for r in self._board.recent()]
        with self._lock:
            return list(self._jobs.values())

    def wait(self, job_id: str, timeout: float | None = None) -> Job:
        """The job once it has finished, or as it is when ``timeout`` seconds have passed."""
        job = self.get(job_id)
        with self._lock:
            mine = job_id in self._jobs
        if mine or self._board is None:
            job._event.wait(timeout)
            return job
        deadline = None if timeout is None else time.monotonic() + timeout
        while not job._event.is_set():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            time.sleep(POLL_SECONDS if left is None else min(POLL_SECONDS, left))
            job = self.get(job_id)
        return job
