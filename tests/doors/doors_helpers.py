"""Helpers of the doors' tests: a small project and real servers on loopback.

:func:`live` runs an ASGI app under a real uvicorn server in a thread, on a socket bound to
127.0.0.1 port 0 (the OS picks a free port), and stops it afterwards.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

TOKEN = "test-token-0123456789abcdef"

USERS = '''"""User routes."""
from fastapi import FastAPI

from app.service import UserService

app = FastAPI()


@app.get("/users/{user_id}")
async def get_user(user_id: str):
    service = UserService()
    return service.get_user(user_id)
'''

SERVICE = '''"""The user service."""


class UserService:
    """Loads users."""

    def get_user(self, user_id):
        return {"id": user_id, "name": normalize_name(user_id)}

    def delete_user(self, user_id):
        return None


def normalize_name(name):
    return name.strip().title()


class AdminService(UserService):
    def get_user(self, user_id):
        return {"id": user_id, "admin": True}
'''


def make_project(root: Path) -> Path:
    (root / "app" / "api").mkdir(parents=True)
    (root / "app" / "__init__.py").write_text("")
    (root / "app" / "api" / "__init__.py").write_text("")
    (root / "app" / "api" / "users.py").write_text(USERS)
    (root / "app" / "service.py").write_text(SERVICE)
    (root / "README.md").write_text("# demo\n\nA user service with HTTP routes.\n")
    (root / "big.txt").write_text("".join(f"line {n}\n" for n in range(1, 201)))
    secret = root.parent / "outside-secret.txt"
    secret.write_text("not for clients\n")
    os.symlink(secret, root / "leak.txt")  # a symlink out of the root: never indexed
    return root


@contextmanager
def live(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on 127.0.0.1 (a free port); yields the base URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(600):
            if server.started or not thread.is_alive():
                break
            threading.Event().wait(0.05)
        assert server.started, "uvicorn did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
