"""``treeseek serve --workers N``: a real server of 2 worker processes on loopback over one
real PostgreSQL database (each worker its own store and pool), where an index job started
through one worker answers in every worker; SQLite refuses more than one worker; statement
timeouts cancel a statement with a clear error."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

import treeseek
from treeseek.cli import app
from treeseek.cli.app import load_commands
from treeseek.errors import ConfigError, StatementTimeout
from treeseek.store.postgres import PostgresStore, Timeouts, pool_max

SRC = Path(__file__).resolve().parents[2] / "src"
QUESTION = {"question": "UserService get_user", "k": 3}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(base: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited at start"
        try:
            if httpx.get(f"{base}/v1/health", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    pytest.fail("the server did not answer within 180 s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@contextmanager
def _serve(url: str, port: int, *extra: str) -> Iterator[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "TREESEEK_TOKEN": ""}
    env.pop("TREESEEK_TOKEN")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "treeseek",
            "serve",
            "--db",
            url,
            "--port",
            str(port),
            "--workers",
            "2",
            "--statement-timeout",
            "20",
            *extra,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: stopped with its workers
    )
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_healthy(base, proc)
        yield base
    finally:
        _stop(proc)
    assert proc.stderr is not None
    banner = proc.stderr.read().decode("utf-8", "replace")
    assert "2 worker processes" in banner, banner
    assert "password" not in banner


def test_two_worker_processes_serve_one_postgres_database(
    project: Path, postgres_url: Callable[[], str]
) -> None:
    url = postgres_url()
    with treeseek.open(url) as db:
        db.index(project, name="demo")
        expected = [
            h.path for h in db.query("demo", QUESTION["question"], strategy="flat", k=3).files
        ]
    with _serve(url, _free_port()) as base:

        def ask(_: int) -> tuple[int, list[str]]:
            # a new connection per request: the kernel hands it to either worker
            with httpx.Client(base_url=base, timeout=60) as client:
                worker = client.get("/v1/health").json()["worker"]
                reply = client.post("/v1/trees/demo/query", json=QUESTION)
                assert reply.status_code == 200, reply.text
                return int(worker), [f["path"] for f in reply.json()["files"]]

        seen: dict[int, list[list[str]]] = {}
        with ThreadPoolExecutor(max_workers=8) as pool:
            for _ in range(10):  # rounds of 16 until both workers answered
                for worker, paths in pool.map(ask, range(16)):
                    seen.setdefault(worker, []).append(paths)
                if len(seen) == 2:
                    break
        assert len(seen) == 2, f"one worker answered everything: {list(seen)}"
        for answers in seen.values():  # each worker reads the same database
            assert all(paths == expected for paths in answers)


def _rounds(ask: Callable[[int], Any], done: Callable[[list[Any]], bool]) -> list[Any]:
    """Rounds of 16 requests on new connections (the kernel hands each to either worker)
    until ``done`` says the answers so far are enough; a guard stops a server that never
    gets there."""
    answers: list[Any] = []
    deadline = time.monotonic() + 300
    with ThreadPoolExecutor(max_workers=8) as pool:
        while not done(answers):
            if time.monotonic() > deadline:
                pytest.fail(f"not done after 300 s: {answers[-3:]}")
            answers.extend(pool.map(ask, range(16)))
    return answers


def test_an_index_job_answers_in_every_worker(
    project: Path, postgres_url: Callable[[], str]
) -> None:
    url = postgres_url()
    with _serve(url, _free_port(), "--index-root", str(project)) as base:
        with httpx.Client(base_url=base, timeout=60) as client:
            submitter = int(client.get("/v1/health").json()["worker"])
            reply = client.post("/v1/trees/demo/index", json={"source": str(project)})
            assert reply.status_code == 202, reply.text
            job_id = reply.json()["id"]

        def ask(_: int) -> tuple[int, dict[str, Any], list[str]]:
            with httpx.Client(base_url=base, timeout=60) as client:
                worker = int(client.get("/v1/health").json()["worker"])
                got = client.get(f"/v1/jobs/{job_id}")
                assert got.status_code == 200, (worker, got.text)
                listed = client.get("/v1/jobs")
                assert listed.status_code == 200, listed.text
                return worker, got.json(), [j["id"] for j in listed.json()["jobs"]]

        def other_saw_it_done(answers: list[Any]) -> bool:
            return any(w != submitter and job["state"] == "done" for w, job, _ in answers)

        answers = _rounds(ask, other_saw_it_done)
        workers = {w for w, _, _ in answers}
        assert submitter in workers and len(workers) == 2
        for _, job, listed in answers:
            assert job["id"] == job_id and job["tree"] == "demo" and listed == [job_id]
            assert job["state"] in ("queued", "running", "done"), job
        done = next(job for w, job, _ in answers if w != submitter and job["state"] == "done")
        assert done["report"]["tree"] == "demo" and done["report"]["files"] > 0
        assert done["phase"] == "done" and done["error"] is None

        def query(_: int) -> tuple[int, int]:
            with httpx.Client(base_url=base, timeout=60) as client:
                worker = int(client.get("/v1/health").json()["worker"])
                return worker, client.post("/v1/trees/demo/query", json=QUESTION).status_code

        queried = _rounds(query, lambda got: len({w for w, _ in got}) == 2)
        assert all(status == 200 for _, status in queried)  # the new tree, in every worker
        with httpx.Client(base_url=base, timeout=60) as client:
            assert client.get("/v1/jobs/job-nonexistent").status_code == 404


def test_sqlite_refuses_more_than_one_worker(db_path: Path) -> None:
    load_commands()
    result = CliRunner().invoke(app, ["serve", "--db", str(db_path), "--workers", "2"])
    assert result.exit_code != 0
    assert "needs a PostgreSQL database" in result.output, result.output
    with pytest.raises(ConfigError, match="at least 1"):
        from treeseek.server import serve

        serve(db=db_path, workers=0)


def test_a_statement_past_the_timeout_is_cancelled_with_a_clear_error(
    postgres_url: Callable[[], str],
) -> None:
    store = PostgresStore(postgres_url(), timeouts=Timeouts(read_ms=200))
    try:
        with (
            pytest.raises(StatementTimeout, match=r"statement timeout \(0\.2 s\)") as caught,
            store._connection() as conn,
        ):
            conn.execute("SELECT pg_sleep(5)")
        assert "TREESEEK_PG_STATEMENT_TIMEOUT" in str(caught.value)
        assert store.trees() == []  # the pool's connection is usable afterwards
    finally:
        store.close()


def test_a_limit_shorter_than_the_type_lookup_still_connects(
    postgres_url: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a pooled connection looks up pgvector's types before the limit applies: when the
    # lookup ran under it and took longer (a tiny limit, a loaded server), no connection was
    # ever made and every read waited 60 s for "couldn't get a connection"
    import pgvector.psycopg

    real = pgvector.psycopg.register_vector

    def slow_lookup(conn: Any) -> None:
        conn.execute("SELECT pg_sleep(0.3)")  # the type lookup on a slow server
        real(conn)

    monkeypatch.setattr(pgvector.psycopg, "register_vector", slow_lookup)
    url = postgres_url()
    PostgresStore(url).close()  # migrated
    store = PostgresStore(url, timeouts=Timeouts(read_ms=100))
    try:
        with (
            pytest.raises(StatementTimeout, match=r"statement timeout \(0\.1 s\)"),
            store._connection() as conn,
        ):
            conn.execute("SELECT pg_sleep(5)")
    finally:
        store.close()


def test_timeouts_come_from_the_environment() -> None:
    assert Timeouts.from_env({}) == Timeouts()
    env: dict[str, Any] = {"TREESEEK_PG_STATEMENT_TIMEOUT": "2.5", "TREESEEK_PG_WRITE_TIMEOUT": "0"}
    assert Timeouts.from_env(env) == Timeouts(read_ms=2500, write_ms=0)
    with pytest.raises(ConfigError, match="TREESEEK_PG_STATEMENT_TIMEOUT"):
        Timeouts.from_env({"TREESEEK_PG_STATEMENT_TIMEOUT": "soon"})


@pytest.mark.parametrize("raw", ["inf", "nan", "1e12", "-1"])
def test_a_timeout_postgresql_cannot_take_is_one_clear_error(raw: str) -> None:
    # before: "inf" was an OverflowError traceback; 1e12 ms is past PostgreSQL's int limit
    with pytest.raises(ConfigError, match=r"TREESEEK_PG_STATEMENT_TIMEOUT must be .* to 2,147,483"):
        Timeouts.from_env({"TREESEEK_PG_STATEMENT_TIMEOUT": raw})
    load_commands()
    result = CliRunner().invoke(app, ["serve", "--statement-timeout", raw, "--db", "x.db"])
    assert result.exit_code == 2, result.output


def test_the_pool_size_comes_from_the_environment_or_is_one_clear_error(
    postgres_url: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # before: int() at import time, a ValueError traceback for "abc"; 0 was taken silently
    assert pool_max({}) == 8
    assert pool_max({"TREESEEK_PG_POOL_MAX": "3"}) == 3
    url = postgres_url()
    for raw in ("abc", "0"):
        monkeypatch.setenv("TREESEEK_PG_POOL_MAX", raw)
        with pytest.raises(ConfigError, match=f"TREESEEK_PG_POOL_MAX must be .* got '{raw}'"):
            store = PostgresStore(url)
            try:
                store.trees()
            finally:
                store.close()
