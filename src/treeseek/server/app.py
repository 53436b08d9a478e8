"""The HTTP API (FastAPI): versioned ``/v1`` routes over :class:`~treeseek.service.Service`.

Security: a bearer token when one is configured (every route but ``/v1/health``); without
one, only requests addressed to a loopback name (``Host``: DNS rebinding is refused); request
bodies capped in size, per-request limits (question size, k, budget, lines, wall time), paths
checked (:func:`~treeseek.service.check_path`), no CORS headers (browsers on other origins
cannot call it), no interactive docs (the OpenAPI document is at ``/v1/openapi.json``).
Errors are JSON ``{"error": {"type", "message"}}`` with a 4xx status; an unexpected failure
is a 500 with one line, never a traceback, and never stops the server.

Database work is synchronous: each request runs it on a worker thread (one SQLite
connection per thread), bounded by the wall-time limit.
"""

from __future__ import annotations

import functools
import hmac
import json
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import anyio
from fastapi import Body, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import treeseek
from treeseek.errors import TreeseekError
from treeseek.llm.deadline import resolve_deadline_s
from treeseek.server import models as m
from treeseek.service import Jobs, Service, error_kind
from treeseek.service.core import error_message
from treeseek.service.encoding import utf8_safe

log = logging.getLogger("treeseek.server")

T = TypeVar("T")

#: request bodies larger than this are refused (413)
MAX_BODY_BYTES = 1 << 20
API = "/v1"
OPEN_PATHS = frozenset({f"{API}/health"})

_STATUS = {
    "not_found": 404,
    "ambiguous": 409,
    "bad_request": 400,
    "limit": 413,
    "unavailable": 503,
    "upstream": 502,
    "timeout": 504,
    "internal": 500,
}


def _error(status: int, kind: str, message: str, **extra: Any) -> JSONResponse:
    body: dict[str, Any] = {"type": kind, "message": message}
    body.update({k: v for k, v in extra.items() if v is not None})
    body = utf8_safe(body)  # a non-UTF-8 name in a message
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": body}, status_code=status, headers=headers)


class GuardMiddleware:
    """Bearer-token auth and the request body cap, before any route runs (pure ASGI)."""

    def __init__(self, app: ASGIApp, token: str | None, max_body: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if self.token is None and not _loopback_host(headers.get(b"host", b"")):
            # no token means loopback only: a page that rebinds its domain to 127.0.0.1 still
            # sends its own name as Host, and is refused (DNS rebinding)
            await _error(421, "misdirected", "this server answers only to localhost names")(
                scope, receive, send
            )
            return
        if self.token is not None and scope.get("path") not in OPEN_PATHS:
            given = headers.get(b"authorization", b"")
            scheme, _, value = given.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(value.strip(), self.token):
                reason = "missing bearer token" if not given else "wrong bearer token"
                await _error(401, "unauthorized", f"{reason}: send Authorization: Bearer TOKEN")(
                    scope, receive, send
                )
                return
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            await _error(413, "limit", f"request body over {self.max_body} bytes")(
                scope, receive, send
            )
            return
        seen = 0

        async def capped() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise _BodyTooLarge
            return message

        try:
            await self.app(scope, capped, send)
        except _BodyTooLarge:
            await _error(413, "limit", f"request body over {self.max_body} bytes")(
                scope, receive, send
            )


def _loopback_host(host: bytes) -> bool:
    name = host.decode("latin-1").strip().lower()
    if name.startswith("["):
        name = name[1 : name.find("]")] if "]" in name else name
    else:
        name = name.rpartition(":")[0] or name if name.count(":") == 1 else name
    return name in ("localhost", "127.0.0.1", "::1") or name.startswith("127.")


class _BodyTooLarge(Exception):
    pass


def create_app(service: Service, *, token: str | None = None, jobs: Jobs | None = None) -> FastAPI:
    """The API over ``service``; ``token``: the bearer token every request must carry."""
    jobs = jobs or Jobs(service)
    app = FastAPI(
        title="treeseek",
        version=treeseek.__version__,
        description="A context database for code repositories: trees, questions, files, "
        "symbols, the code graph and C0-C3 code retrieval.",
        openapi_url=f"{API}/openapi.json",
        docs_url=None,
        redoc_url=None,
        responses={
            400: {"model": m.ErrorResponse},
            401: {"model": m.ErrorResponse},
            404: {"model": m.ErrorResponse},
        },
    )
    app.state.service = service
    app.state.jobs = jobs
    app.add_middleware(GuardMiddleware, token=token)
    seconds = service.limits.max_seconds

    async def run(fn: Callable[[], T]) -> T:
        """Run database work on a worker thread, within the wall-time limit."""
        with anyio.fail_after(seconds):
            return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)

    @app.exception_handler(TreeseekError)
    async def treeseek_error(request: Request, exc: TreeseekError) -> JSONResponse:
        kind = error_kind(exc)
        candidates = getattr(exc, "candidates", None)
        message = error_message(exc)
        return _error(_STATUS.get(kind, 400), kind, message, candidates=candidates)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors()[:5]:
            if err.get("type") == "json_invalid":  # loc is ("body", character offset)
                at = err.get("loc", ())[-1]
                reason = err.get("ctx", {}).get("error", "invalid")
                problems.append(f"malformed JSON body at character {at}: {reason}")
                continue
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            problems.append(f"{where or 'body'}: {err.get('msg', 'invalid')}")
        return _error(422, "invalid_request", "; ".join(problems) or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # an unknown route (404) or method (405): the same error shape as every other answer
        kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "bad_request")
        message = {
            404: f"no route {request.url.path}; the routes are listed at {API}/openapi.json",
            405: f"{request.method} is not allowed on {request.url.path}",
        }.get(exc.status_code, str(exc.detail))
        response = _error(exc.status_code, kind, message)
        response.headers.update(exc.headers or {})  # 405's Allow
        return response

    @app.exception_handler(TimeoutError)
    async def timeout(request: Request, exc: TimeoutError) -> JSONResponse:
        return _error(504, "timeout", f"the request took over {seconds:g}s (this server's limit)")

    @app.exception_handler(json.JSONDecodeError)
    async def bad_json(request: Request, exc: json.JSONDecodeError) -> JSONResponse:
        return _error(400, "invalid_request", f"malformed JSON: {exc.msg}")

    @app.middleware("http")
    async def unexpected(request: Request, call_next: Callable[[Request], Awaitable[Any]]) -> Any:
        # a middleware, not an exception handler: Starlette re-raises from its 500 handler, and
        # the client can then see a reset connection instead of the JSON error
        try:
            return await call_next(request)
        except Exception as exc:
            log.error("unexpected error on %s: %s", request.url.path, exc, exc_info=exc)
            return _error(500, "internal", f"internal error ({type(exc).__name__}); see the log")

    Handler = Callable[..., Awaitable[Any]]

    def utf8_answers(route: Callable[[Handler], Handler]) -> Callable[[Handler], Handler]:
        """``route``, its handler's answer made encodable (non-UTF-8 names as ``\\xNN``)."""

        def decorate(fn: Handler) -> Handler:
            @functools.wraps(fn)
            async def handler(*args: Any, **kwargs: Any) -> Any:
                return utf8_safe(await fn(*args, **kwargs))

            return route(handler)

        return decorate

    def get(path: str, model: type[Any]) -> Callable[[Handler], Handler]:
        return utf8_answers(
            app.get(API + path, response_model=model, response_model_exclude_none=False)
        )

    def post(
        path: str, model: type[Any], status: int = 200, *, exclude_unset: bool = False
    ) -> Callable[[Handler], Handler]:
        return utf8_answers(
            app.post(
                API + path,
                response_model=model,
                status_code=status,
                response_model_exclude_unset=exclude_unset,
            )
        )

    @get("/health", m.Health)
    async def health() -> dict[str, Any]:
        return {"status": "ok", "version": treeseek.__version__, "worker": os.getpid()}

    @get("/trees", m.TreeList)
    async def list_trees(freshness: bool = True) -> dict[str, Any]:
        """The indexed trees, each with what it was built from and whether that changed."""
        return {"trees": await run(lambda: service.trees(freshness=freshness))}

    @get("/trees/{tree}", m.Tree)
    async def show_tree(tree: str) -> dict[str, Any]:
        return await run(lambda: service.tree(tree))

    @app.delete(API + "/trees/{tree}", response_model=m.Deleted)
    async def delete_tree(tree: str) -> dict[str, Any]:
        await run(lambda: service.delete(tree))
        return {"deleted": tree}

    @get("/trees/{tree}/nodes", m.NodesResponse)
    async def nodes(
        tree: str,
        path: Annotated[str, Query(description="directory (or file) inside the tree")] = "",
        depth: Annotated[int, Query(description="levels below path")] = 1,
    ) -> dict[str, Any]:
        from treeseek.service.core import node_dict

        data = await run(lambda: service.show(tree, path, depth))
        return {**data, "nodes": [node_dict(n) for n in data["nodes"]]}

    @post("/trees/{tree}/index", m.JobOut, status=202)
    async def index_tree(
        tree: str, body: Annotated[m.IndexRequest | None, Body()] = None
    ) -> dict[str, Any]:
        """Index ``source`` into ``tree``, or re-index ``tree`` from where it was built: a job
        (poll ``/v1/jobs/{id}``; ``done`` only after the new version is committed)."""
        req = body or m.IndexRequest()
        job = await run(
            lambda: jobs.submit(tree=tree, source=req.source, rev=req.rev, replace=req.replace)
        )
        return job.to_dict()

    @get("/jobs", m.JobList)
    async def list_jobs() -> dict[str, Any]:
        return {"jobs": [j.to_dict() for j in jobs.list()]}

    @get("/jobs/{job_id}", m.JobOut)
    async def get_job(job_id: str) -> dict[str, Any]:
        return jobs.get(job_id).to_dict()

    @post("/trees/{tree}/query", m.QueryResponse)
    async def query(tree: str, body: m.QueryRequest) -> dict[str, Any]:
        """The files that answer a question (the CLI's options), or with ``budget`` the
        budgeted context: line spans with their text; with the tree's freshness."""
        options = body.model_dump(exclude={"question", "content", "k", "budget", "disclose"})
        if options.get("ranker") == "none":
            options["ranker"] = None
        budget = body.budget
        if body.disclose is not None:
            options["disclose"] = body.disclose
        # the request ends at the wall-time limit (a 504, the worker thread abandoned): the
        # query's LLM calls end there too, not at its own later deadline (paid, unread)
        deadline = resolve_deadline_s(options.get("deadline_s"))
        if deadline is None or deadline > seconds:
            options["deadline_s"] = seconds
        return await run(
            lambda: service.query(
                tree, body.question, k=body.k, budget=budget, content=body.content, **options
            )
        )

    @get("/trees/{tree}/files", m.FileResponse)
    async def read_file(
        tree: str,
        path: Annotated[str, Query(description="repo-relative file path")],
        start: Annotated[int | None, Query(description="first line (1-based)")] = None,
        end: Annotated[int | None, Query(description="last line (inclusive)")] = None,
    ) -> dict[str, Any]:
        """A stored file's text (from the database, not the disk), or a line range of it."""
        return await run(lambda: service.read(tree, path, start, end))

    @get("/trees/{tree}/symbols", m.SymbolsResponse)
    async def symbols(
        tree: str, path: Annotated[str, Query(description="repo-relative file path")]
    ) -> dict[str, Any]:
        """A file's symbols (C1): name paths, kinds, signatures and line spans."""
        return await run(lambda: service.symbols(tree, path))

    @get("/trees/{tree}/outline", m.OutlineResponse)
    async def outline(
        tree: str,
        path: Annotated[str, Query(description="a file, or a directory (all its files)")] = "",
    ) -> dict[str, Any]:
        """The symbols of a file or of every code file under a directory: name paths, kinds,
        signatures, line spans, first docstring lines."""
        return await run(lambda: service.outline(tree, path))

    @get("/trees/{tree}/symbols/find", m.ResolvedSymbolOut)
    async def find_symbol(
        tree: str,
        name: Annotated[
            str, Query(description="a name path (path::Qual.name) or a unique short name")
        ],
    ) -> dict[str, Any]:
        """One symbol with its code; 409 with the candidates when the name is ambiguous."""
        return await run(lambda: service.find_symbol(tree, name))

    @get("/trees/{tree}/graph/{relation}", m.GraphResponse)
    async def graph(
        tree: str,
        relation: str,
        name: Annotated[
            str | None,
            Query(description="path, name path (path::Qual.name), dotted module or module.qname"),
        ] = None,
        hops: int = 1,
        kinds: Annotated[str | None, Query(description="neighbours: comma-separated")] = None,
        transitive: bool = False,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """The code graph: callers, callees, importers, imports, subclasses, superclasses,
        members, neighbours (within ``hops``), entrypoints."""
        wanted = [k.strip() for k in kinds.split(",") if k.strip()] if kinds else None
        return await run(
            lambda: service.graph(
                tree, relation, name, hops=hops, kinds=wanted, transitive=transitive, limit=limit
            )
        )

    @post("/retrieve", m.RetrieveResponse, exclude_unset=True)
    async def retrieve(body: m.RetrieveRequest) -> dict[str, Any]:
        """The code-retrieval endpoint of ``code-retrieval-layers.json``: ``{tree (or
        project_id / rag_session_id), query, layers?, limit?}`` -> ``{items}``, C0-C3 items
        with their metadata, line spans and per-item scores, ordered C3 > C1 > C2 > C0 within
        a lexical rank; when the code layers find nothing (always on a document tree), the
        best documentation sections as ``DOCS`` items and ``fallback: "docs"``."""
        from treeseek.errors import ConfigError

        named = [body.tree, body.project_id, body.rag_session_id]
        given = list(dict.fromkeys(name for name in named if name))
        if not given:
            raise ConfigError("give tree (or project_id / rag_session_id)")
        if len(given) > 1:  # which one was meant is not guessed
            raise ConfigError(
                f"tree, project_id and rag_session_id name one tree; they say {given!r:.200}"
            )
        tree = given[0]
        return await run(
            lambda: service.code_items(tree, body.query, layers=body.layers, limit=body.limit)
        )

    return app
