"""Security helpers both doors share: the bearer token, the loopback rule, the
missing-extra error."""

from __future__ import annotations

import importlib.util
import ipaddress
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from treeseek.errors import ConfigError

TOKEN_ENV = "TREESEEK_TOKEN"
#: shortest token accepted (a guessable token is no protection)
MIN_TOKEN_CHARS = 16


def require_extra(extra: str, modules: Sequence[str]) -> None:
    """ConfigError naming the extra to install when one of ``modules`` is missing."""
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(
            f"this command needs the `{extra}` extra ({', '.join(missing)} not installed):"
            f" pip install 'treeseek[{extra}]'"
        )


def read_token(
    token_file: str | Path | None = None, environ: Mapping[str, str] | None = None
) -> str | None:
    """The bearer token: the first line of ``token_file``, else ``$TREESEEK_TOKEN``, else
    None (no auth)."""
    env = os.environ if environ is None else environ
    if token_file is not None:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip().split("\n")[0].strip()
        except OSError as exc:
            raise ConfigError(f"cannot read the token file {token_file}: {exc.strerror}") from exc
        if not token:
            raise ConfigError(f"the token file {token_file} is empty")
    else:
        token = env.get(TOKEN_ENV, "").strip()
        if not token:
            return None
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"the token is {len(token)} characters; use at least {MIN_TOKEN_CHARS}"
            " (e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
        )
    return token


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token."""
    if token is None and not is_loopback(host):
        raise ConfigError(
            f"refusing to listen on {host} without a token: anyone who can reach it could read"
            f" every indexed file; set ${TOKEN_ENV} or --token-file, or bind 127.0.0.1"
        )


def check_listen(host: str, port: int) -> None:
    """Refuse at once, in one line, an address this process cannot listen on (a port in use,
    a name that does not resolve), instead of a "serving ..." banner followed by the web
    server's own error. Binds a socket as uvicorn does (``SO_REUSEADDR``) and closes it."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            raise ConfigError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}; pick another --port"
                " (or stop what holds this one)"
            ) from exc
