"""The PostgreSQL job board (:mod:`treeseek.store.jobs`): one row per job in ``index_jobs``.

Each status is written on a connection of its own in autocommit (never inside the index
job's write transaction, which commits only at its end), so every worker sees it at once.
Every write stamps ``heartbeat`` with the database's ``now()``; every read first records the
unfinished jobs whose heartbeat is older than ``LOST_AFTER_SECONDS`` as failed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from treeseek.store import jobs
from treeseek.store.jobs import KEPT_JOBS, LOST_ERROR, JobRecord

if TYPE_CHECKING:
    import psycopg

Connect = Callable[[], AbstractContextManager["psycopg.Connection[Any]"]]

_COLUMNS = "id, tree, source, rev, state, phase, done, total, error, report, created, finished"


def _record(row: Sequence[Any]) -> JobRecord:
    return JobRecord(
        id=str(row[0]),
        tree=str(row[1]),
        source=str(row[2]),
        rev=row[3],
        state=str(row[4]),
        phase=str(row[5]),
        done=int(row[6]),
        total=None if row[7] is None else int(row[7]),
        error=row[8],
        report=None if row[9] is None else json.loads(row[9]),
        created=float(row[10]),
        finished=None if row[11] is None else float(row[11]),
    )


class PostgresJobBoard:
    """Implements ``JobBoard``; ``connect`` lends an autocommit connection of the pool."""

    def __init__(self, connect: Connect) -> None:
        self._connect = connect

    def put(self, job: JobRecord) -> None:
        report = None if job.report is None else json.dumps(job.report)
        with self._connect() as conn:
            inserted = conn.execute(
                f"INSERT INTO index_jobs({_COLUMNS}) VALUES"
                " (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state,"
                " phase = EXCLUDED.phase, done = EXCLUDED.done, total = EXCLUDED.total,"
                " error = EXCLUDED.error, report = EXCLUDED.report,"
                " finished = EXCLUDED.finished, heartbeat = now() RETURNING (xmax = 0)",
                (
                    job.id,
                    job.tree,
                    job.source,
                    job.rev,
                    job.state,
                    job.phase,
                    job.done,
                    job.total,
                    job.error,
                    report,
                    job.created,
                    job.finished,
                ),
            ).fetchone()
            if inserted is not None and inserted[0]:  # a new job: forget the oldest finished
                conn.execute(
                    "DELETE FROM index_jobs WHERE state IN ('done', 'failed') AND seq <"
                    " (SELECT seq FROM index_jobs WHERE state IN ('done', 'failed')"
                    " ORDER BY seq DESC OFFSET %s LIMIT 1)",
                    (KEPT_JOBS - 1,),
                )

    def touch(self, job_ids: list[str]) -> None:
        if not job_ids:
            return
        with self._connect() as conn:
            conn.execute(
                "UPDATE index_jobs SET heartbeat = now()"
                " WHERE id = ANY(%s) AND state IN ('queued', 'running')",
                (job_ids,),
            )

    @staticmethod
    def _fail_lost(conn: psycopg.Connection[Any]) -> None:
        """Record every unfinished job whose process stopped touching it as failed."""
        seconds = jobs.LOST_AFTER_SECONDS
        conn.execute(
            "UPDATE index_jobs SET state = 'failed', error = %s,"
            " finished = extract(epoch FROM now())"
            " WHERE state IN ('queued', 'running')"
            " AND heartbeat < now() - make_interval(secs => %s)",
            (LOST_ERROR.format(seconds=seconds), seconds),
        )

    def get(self, job_id: str) -> JobRecord | None:
        with self._connect() as conn:
            self._fail_lost(conn)
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM index_jobs WHERE id = %s", (job_id,)
            ).fetchone()
        return None if row is None else _record(row)

    def recent(self) -> list[JobRecord]:
        with self._connect() as conn:
            self._fail_lost(conn)
            rows = conn.execute(f"SELECT {_COLUMNS} FROM index_jobs ORDER BY seq").fetchall()
        return [_record(r) for r in rows]
