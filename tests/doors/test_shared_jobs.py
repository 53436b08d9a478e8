"""Index jobs on a database served by several processes: the status of a job one process runs
is on the store's job board (PostgreSQL), so another process's ``Jobs`` gets, lists and waits
for it, and a job whose process died reads as failed; a SQLite database (one process) keeps
its jobs in memory, as before."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import treeseek
from treeseek.service import Job, Jobs, Service
from treeseek.store import jobs as board_timing
from treeseek.store.jobs import KEPT_JOBS, LOST_ERROR, JobBoard, JobRecord


def _record(n: int, state: str) -> JobRecord:
    return JobRecord(
        id=f"job-{n}",
        tree="t",
        source="/src",
        rev=None,
        state=state,
        phase=state,
        done=0,
        total=None,
        error=None,
        report={"n": n} if state == "done" else None,
        created=float(n),
        finished=float(n) if state == "done" else None,
    )


def test_a_job_of_one_process_is_seen_and_awaited_by_another(
    project: Path, postgres_url: Callable[[], str]
) -> None:
    url = postgres_url()
    with treeseek.open(url) as first_db, treeseek.open(url) as second_db:
        first = Jobs(Service(first_db, index_roots=[project]))
        second = Jobs(Service(second_db, index_roots=[project]))
        try:
            job = first.submit(tree="demo", source=str(project))
            assert second.get(job.id).tree == "demo"
            assert job.id in [j.id for j in second.list()]
            seen = second.wait(job.id, timeout=600)
            assert seen.state == "done", seen.to_dict()
            assert seen.to_dict() == first.wait(job.id).to_dict()
            assert seen.report is not None and seen.report["files"] > 0
            again = second.submit(tree="demo")  # ids of two processes never collide
            assert again.id != job.id
            assert first.wait(again.id, timeout=600).state == "done"
            assert [j.id for j in first.list()] == [job.id, again.id]
        finally:
            first.close()
            second.close()


def test_the_board_keeps_the_newest_finished_jobs_and_every_unfinished_one(
    postgres_url: Callable[[], str],
) -> None:
    with treeseek.open(postgres_url()) as db:
        board = db.store.jobs()
        assert isinstance(board, JobBoard)
        board.put(_record(0, "running"))
        for n in range(1, KEPT_JOBS + 6):
            board.put(_record(n, "done"))
        board.put(_record(0, "running"))  # an update is not a new job
        kept = board.recent()
        assert [r.id for r in kept] == ["job-0"] + [f"job-{n}" for n in range(6, KEPT_JOBS + 6)]
        assert board.get("job-3") is None
        assert board.get(f"job-{KEPT_JOBS}") == _record(KEPT_JOBS, "done")


def test_sqlite_jobs_stay_in_the_process(db_path: Path, project: Path) -> None:
    with treeseek.open(db_path) as db:
        assert db.store.jobs() is None
        jobs = Jobs(Service(db, index_roots=[project]))
        try:
            job = jobs.submit(tree="demo", source=str(project))
            assert job.id == "job-1"
            assert jobs.wait(job.id, timeout=600).state == "done"
            assert [j.id for j in jobs.list()] == ["job-1"]
        finally:
            jobs.close()


#: a worker that dies (SIGKILL, nothing written after) inside its job, once the job's first
#: progress is on the board
_DYING_WORKER = textwrap.dedent(
    """
    import os, signal, sys, threading
    import treeseek
    from treeseek.service import Jobs, Service

    url, project = sys.argv[1], sys.argv[2]
    calls = []

    def listener(job):
        calls.append(job.state)
        if len(calls) == 2:  # the first progress event, published as running
            os.kill(os.getpid(), signal.SIGKILL)

    db = treeseek.open(url)
    jobs = Jobs(Service(db, index_roots=[project]))
    jobs.submit(tree="demo", source=project, listener=listener)
    threading.Event().wait(600)
    """
)


def test_a_job_whose_process_died_reads_as_failed(
    project: Path, postgres_url: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = postgres_url()
    with treeseek.open(url):
        pass  # migrate before the worker starts
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    worker = subprocess.run(
        [sys.executable, "-c", _DYING_WORKER, url, str(project)], env=env, timeout=600
    )
    assert worker.returncode == -9
    with treeseek.open(url) as db:
        jobs = Jobs(Service(db, index_roots=[project]))
        try:
            (job,) = jobs.list()
            assert job.state == "running"  # its last word, younger than LOST_AFTER_SECONDS
            monkeypatch.setattr(board_timing, "LOST_AFTER_SECONDS", 1.0)
            time.sleep(1.5)
            lost = jobs.wait(job.id, timeout=60)
            assert lost.state == "failed"
            assert lost.error == LOST_ERROR.format(seconds=1.0)
            assert [j.state for j in jobs.list()] == ["failed"]  # recorded so
        finally:
            jobs.close()


def test_the_heartbeat_keeps_a_long_job_running(
    project: Path, postgres_url: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(board_timing, "HEARTBEAT_SECONDS", 0.1)
    monkeypatch.setattr(board_timing, "LOST_AFTER_SECONDS", 1.0)
    url = postgres_url()
    release = threading.Event()
    calls: list[str] = []

    def slow(job: Job) -> None:
        calls.append(job.state)
        if len(calls) == 2:  # hold the job running, past LOST_AFTER_SECONDS
            release.wait(60)

    with treeseek.open(url) as first_db, treeseek.open(url) as second_db:
        first = Jobs(Service(first_db, index_roots=[project]))
        second = Jobs(Service(second_db, index_roots=[project]))
        try:
            job = first.submit(tree="demo", source=str(project), listener=slow)
            time.sleep(2.5)
            assert second.get(job.id).state == "running"
            release.set()
            assert second.wait(job.id, timeout=600).state == "done"
        finally:
            release.set()
            first.close()
            second.close()
