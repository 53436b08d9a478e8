"""Run the HTTP API with uvicorn."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from treeseek.service.security import (
    TOKEN_ENV,
    check_bind,
    is_loopback,
    read_token,
    require_extra,
)

if TYPE_CHECKING:
    from treeseek.service import Limits

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
) -> None:
    """Serve the HTTP API until interrupted."""
    require_extra("server", ["fastapi", "uvicorn"])
    check_bind(host, token)
    import uvicorn

    import treeseek
    from treeseek.llm.select import navigator_from_spec
    from treeseek.server.app import create_app
    from treeseek.service import Jobs, Service

    database = treeseek.open(db)
    service = Service(
        database, limits=limits, navigator=navigator_from_spec(llm), index_roots=index_roots
    )
    jobs = Jobs(service)
    app = create_app(service, token=token, jobs=jobs)
    auth = "bearer token" if token else "no auth (loopback only)"
    print(
        f"treeseek {treeseek.__version__} serving http://{host}:{port}/v1 ({auth};"
        f" database {getattr(database.store, 'path', '?')})",
        file=sys.stderr,
        flush=True,
    )
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level, server_header=False)
    finally:
        jobs.close()
        database.close()
