"""Serve the MCP tools over stdio or streamable HTTP."""

from __future__ import annotations

import hmac
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from treeseek.service.security import check_bind, check_listen, require_extra


def run(
    *,
    db: str | Path | None = None,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    index_roots: Sequence[str | Path] | None = None,
    llm: str | None = None,
) -> None:
    """Serve until the client disconnects (stdio) or until interrupted (HTTP, at
    ``http://HOST:PORT/mcp``). ``index_roots``: directories the ``index`` tool may read (None:
    over stdio any, the agent runs as the user; over HTTP none, as ``treeseek serve``: a client
    of a socket, another local user or a token holder, must not index and read any directory
    this process can read)."""
    require_extra("mcp", ["mcp", "uvicorn"] if http else ["mcp"])
    if http:
        check_bind(host, token)
        check_listen(host, port)
        if index_roots is None:
            index_roots = []
    import anyio

    import treeseek
    from treeseek.llm.select import navigator_from_spec
    from treeseek.mcp.server import build_server
    from treeseek.service import Jobs, Service

    database = treeseek.open(db)
    service = Service(
        database,
        navigator=navigator_from_spec(llm),
        index_roots=index_roots,
        prewarm=True,
    )
    jobs = Jobs(service)
    server = build_server(service, jobs)
    try:
        if not http:
            anyio.run(server.run_stdio_async)
            return
        import uvicorn

        app: Any = server.streamable_http_app(host=host)
        if token is not None:
            app = BearerAuth(app, token)
        print(
            f"treeseek {treeseek.__version__} MCP at http://{host}:{port}/mcp"
            f" ({'bearer token' if token else 'no auth (loopback only)'})",
            file=sys.stderr,
            flush=True,
        )
        uvicorn.run(app, host=host, port=port, log_level="warning", server_header=False)
    finally:
        service.close()
        jobs.close()
        database.close()


class BearerAuth:
    """Every HTTP request must carry ``Authorization: Bearer TOKEN`` (401 otherwise)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            scheme, _, value = given.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(value.strip(), self.token):
                body = b'{"error": "missing or wrong bearer token"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
