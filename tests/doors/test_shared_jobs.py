"""Index jobs on a database served by several processes: the status of a job one process runs
is on the store's job board (PostgreSQL), so another process's ``Jobs`` gets, lists and waits
for it; a SQLite database (one process) keeps its jobs in memory, as before."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import treeseek
from treeseek.service import Jobs, Service
from treeseek.store.jobs import KEPT_JOBS, JobBoard, JobRecord


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
