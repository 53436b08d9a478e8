"""The HTTP API: ``treeseek serve`` (FastAPI + uvicorn, the optional ``server`` extra).

    treeseek serve --host 127.0.0.1 --port 8080           # loopback: a token is optional
    TREESEEK_TOKEN=... treeseek serve --host 0.0.0.0      # any other address needs one

:func:`create_app` (in :mod:`treeseek.server.app`) builds the ASGI app over a
:class:`~treeseek.service.Service`; :func:`serve` runs it with uvicorn.
"""

from treeseek.server.run import (
    TOKEN_ENV,
    check_bind,
    is_loopback,
    read_token,
    require_extra,
    serve,
)

__all__ = ["TOKEN_ENV", "check_bind", "is_loopback", "read_token", "require_extra", "serve"]
