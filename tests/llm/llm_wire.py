"""Loopback provider servers for the adapter tests: real HTTP on 127.0.0.1, scripted replies.

Each test queues responses (status, JSON body, headers, a delay before answering); the server
records every request (path, headers, JSON body) and the highest number of requests it was
serving at once.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from treeseek.llm.base import Candidate, RankRequest, Segment


@dataclass
class Reply:
    body: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    #: write the body one byte at a time, this many seconds apart (a trickling server)
    trickle_s: float = 0.0


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class LoopbackServer:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        #: answers requests when no queued reply is left: request body -> reply
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self.received: list[Received] = []
        self.in_flight = 0
        self.peak_in_flight = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                with server._lock:
                    server.received.append(
                        Received(
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            json.loads(raw or b"{}"),
                        )
                    )
                    if server.replies:
                        reply = server.replies.popleft()
                    elif server.responder is not None:
                        reply = server.responder(server.received[-1].body)
                    else:
                        reply = Reply({"error": {"type": "test", "message": "no reply left"}}, 500)
                    server.in_flight += 1
                    server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
                try:
                    if reply.delay_s:
                        time.sleep(reply.delay_s)
                    data = (
                        reply.body
                        if isinstance(reply.body, bytes)
                        else json.dumps(reply.body).encode()
                    )
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    if reply.trickle_s:
                        for i in range(len(data)):
                            self.wfile.write(data[i : i + 1])
                            self.wfile.flush()
                            time.sleep(reply.trickle_s)
                    else:
                        self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)
                finally:
                    with server._lock:
                        server.in_flight -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def start(self) -> LoopbackServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def anthropic_tool_reply(
    ranked_ids: list[Any],
    done: bool = True,
    *,
    input_tokens: int = 11,
    cache_write: int = 0,
    cache_read: int = 0,
    output_tokens: int = 7,
    text: str | None = None,
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    content.append(
        {
            "type": "tool_use",
            "id": "toolu_01",
            "name": "rank",
            "input": {"ranked_ids": ranked_ids, "done": done},
        }
    )
    return anthropic_message(content, input_tokens, cache_write, cache_read, output_tokens)


def anthropic_message(
    content: list[dict[str, Any]],
    input_tokens: int = 11,
    cache_write: int = 0,
    cache_read: int = 0,
    output_tokens: int = 7,
) -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "cache_creation_input_tokens": cache_write,
            "cache_read_input_tokens": cache_read,
            "output_tokens": output_tokens,
        },
    }


def anthropic_text_reply(text: str) -> dict[str, Any]:
    return anthropic_message([{"type": "text", "text": text}])


def openai_reply(
    arguments: str | None,
    *,
    content: str | None = None,
    prompt_tokens: int = 100,
    cached_tokens: int | None = 0,
    completion_tokens: int = 9,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if arguments is not None:
        message["tool_calls"] = [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "rank", "arguments": arguments},
            }
        ]
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "test-model",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if arguments else "stop"}
        ],
        "usage": usage,
    }


def rank_args(ranked_ids: list[Any], done: bool = True) -> str:
    return json.dumps({"ranked_ids": ranked_ids, "done": done})


def make_request(
    *,
    segments: tuple[Segment, ...] = (Segment("=== TREE ===\n- id: n1 ...", cache=True),),
    candidates: tuple[Candidate, ...] | None = None,
    pick_limit: int = 3,
    tree_root: str | None = None,
    path_prefix: str | None = None,
) -> RankRequest:
    cands = candidates or (
        Candidate("n1", "django", "directory"),
        Candidate("n2", "django/db/models/query.py", "file"),
        Candidate("n3", "docs", "directory"),
        Candidate("n4", "dir1/common.py", "file"),
        Candidate("n5", "dir2/common.py", "file"),
    )
    return RankRequest(
        segments=segments,
        message="Query: why is QuerySet slow\nSelectable ids: n1..n5",
        query="why is QuerySet slow",
        candidates=cands,
        pick_limit=pick_limit,
        tree_root=tree_root,
        path_prefix=path_prefix,
    )
