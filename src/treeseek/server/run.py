"""Run the HTTP API with uvicorn: one process, or ``workers`` processes on one PostgreSQL
database.

Several workers: uvicorn binds the socket once and starts ``workers`` processes (spawned, not
forked), each building its own app with :func:`worker_app` from the settings the parent put
in ``$TREESEEK_SERVE`` (JSON): each opens its own store, so each has its own connection pool.
Requests are spread over the workers by the kernel (one connection, one worker). A SQLite
database is served by one process: ``workers > 1`` on SQLite is refused (SQLite is a file
with one writer at a time, made for one process; a database server is the way to many).
An index job runs in the worker that accepted it; its status is on the database's job board
(:mod:`treeseek.store.jobs`), so ``/v1/jobs/{id}`` answers in every worker.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treeseek.service.security import (
    TOKEN_ENV,
    check_bind,
    check_listen,
    is_loopback,
    read_token,
    require_extra,
)

if TYPE_CHECKING:
    from fastapi import FastAPI

    from treeseek.service import Limits

#: the settings of the worker processes (JSON of :class:`WorkerSettings`)
SERVE_ENV = "TREESEEK_SERVE"


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """What every worker process of one server needs to build its app."""

    db: str
    token: str | None = None
    index_roots: list[str] = field(default_factory=list)
    max_seconds: float = 60.0
    llm: str | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> WorkerSettings:
        raw: dict[str, Any] = json.loads(text)
        return cls(
            db=str(raw["db"]),
            token=raw.get("token"),
            index_roots=[str(r) for r in raw.get("index_roots") or []],
            max_seconds=float(raw.get("max_seconds", 60.0)),
            llm=raw.get("llm"),
        )


def worker_app() -> FastAPI:
    """The app of one worker process (uvicorn's factory): its own database and pool."""
    import treeseek
    from treeseek.llm.select import navigator_from_spec
    from treeseek.server.app import create_app
    from treeseek.service import Jobs, Limits, Service

    settings = WorkerSettings.from_json(os.environ[SERVE_ENV])
    database = treeseek.open(settings.db)
    service = Service(
        database,
        limits=Limits(max_seconds=settings.max_seconds),
        navigator=navigator_from_spec(settings.llm),
        index_roots=settings.index_roots,
        prewarm=True,
    )
    jobs = Jobs(service)
    app = create_app(service, token=settings.token, jobs=jobs)

    def close() -> None:
        service.close()
        jobs.close()
        database.close()

    app.router.on_shutdown.append(close)
    return app


__all__ = ["TOKEN_ENV", "check_bind", "is_loopback", "read_token", "require_extra", "serve"]


def serve(
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    db: str | Path | None = None,
    token: str | None = None,
    index_roots: Sequence[str | Path] = (),
    limits: Limits | None = None,
    llm: str | None = None,
    log_level: str = "info",
    workers: int = 1,
) -> None:
    """Serve the HTTP API until interrupted (``workers`` processes: PostgreSQL only)."""
    require_extra("server", ["fastapi", "uvicorn"])
    check_bind(host, token)
    check_listen(host, port)
    import uvicorn

    import treeseek
    from treeseek.errors import ConfigError
    from treeseek.llm.select import navigator_from_spec
    from treeseek.server.app import create_app
    from treeseek.service import Jobs, Limits, Service

    if workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
    database = treeseek.open(db)  # migrates once, before any worker starts
    location = getattr(database.store, "url", None) or getattr(database.store, "path", "?")
    auth = "bearer token" if token else "no auth (loopback only)"
    if workers > 1:
        url = getattr(database.store, "url", None)
        database.close()
        if not isinstance(url, str):
            raise ConfigError(
                f"--workers {workers} needs a PostgreSQL database (--db postgresql://...): the"
                f" SQLite database {location} is served by one process (run --workers 1, or copy"
                " it to PostgreSQL with `treeseek db copy`)"
            )
        settings = WorkerSettings(
            db=url,
            token=token,
            index_roots=[str(r) for r in index_roots],
            max_seconds=(limits or Limits()).max_seconds,
            llm=llm,
        )
        os.environ[SERVE_ENV] = settings.to_json()
        print(
            f"treeseek {treeseek.__version__} serving http://{host}:{port}/v1 ({auth};"
            f" {workers} worker processes on {_redact(url)})",
            file=sys.stderr,
            flush=True,
        )
        uvicorn.run(
            "treeseek.server.run:worker_app",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_level=log_level,
            server_header=False,
        )
        return
    service = Service(
        database,
        limits=limits,
        navigator=navigator_from_spec(llm),
        index_roots=index_roots,
        prewarm=True,
    )
    jobs = Jobs(service)
    app = create_app(service, token=token, jobs=jobs)
    shown = _redact(location) if isinstance(location, str) else location
    print(
        f"treeseek {treeseek.__version__} serving http://{host}:{port}/v1 ({auth};"
        f" database {shown})",
        file=sys.stderr,
        flush=True,
    )
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level, server_header=False)
    finally:
        service.close()
        jobs.close()
        database.close()


def _redact(url: str) -> str:
    from treeseek.store.postgres import redact

    return redact(url)
