"""The MCP server driven by the SDK's own client: over stdio (a real subprocess) and over
streamable HTTP on loopback."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from doors_helpers import TOKEN, live
from mcp import Client
from mcp.client.stdio import StdioServerParameters

import treeseek
from treeseek.mcp.run import BearerAuth
from treeseek.mcp.server import build_server
from treeseek.service import Service

SRC = str(Path(treeseek.__file__).resolve().parents[1])
TOOLS = {"trees", "search", "read", "outline", "find_symbol", "references", "index"}


def text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def stdio_params(db_path: Path, cwd: Path) -> StdioServerParameters:
    env = {
        "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(cwd),
        "TREESEEK_LLM": "lexical",
    }
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "treeseek", "mcp", "--db", str(db_path)],
        env=env,
        cwd=str(cwd),
    )


def run(session: Callable[[Client], Awaitable[None]], server: Any) -> None:
    async def main() -> None:
        async with Client(server, read_timeout_seconds=120) as client:
            await session(client)

    anyio.run(main)


async def exercise(client: Client, project: Path) -> None:
    """The calls both transports must answer the same way."""
    tools = await client.list_tools()
    assert {t.name for t in tools.tools} == TOOLS
    for tool in tools.tools:
        assert tool.description and len(tool.description) > 40, tool.name
        assert tool.input_schema.get("additionalProperties") is False, tool.name  # as called
    schemas = {t.name: t.input_schema["properties"] for t in tools.tools}
    assert schemas["references"]["kind"]["enum"] == [
        "callers",
        "callees",
        "importers",
        "imports",
        "subclasses",
        "superclasses",
    ]
    language = [b for b in schemas["search"]["language"]["anyOf"] if b.get("type") == "string"]
    assert "python" in language[0]["enum"] and "cobol" not in language[0]["enum"]

    listed = text(await client.call_tool("trees", {}))
    assert listed.startswith("demo: ") and "indexed" in listed

    found = await client.call_tool(
        "search", {"tree": "demo", "question": "normalize_name", "k": 3, "budget": 0}
    )
    assert not found.is_error
    lines = text(found).splitlines()
    assert lines[0].startswith("demo · flat · indexed")
    assert lines[1].startswith("1. app/service.py")
    assert "best:" in lines[1]

    read = text(
        await client.call_tool("read", {"tree": "demo", "path": "big.txt", "start": 9, "end": 11})
    )
    assert read == "big.txt:9-11 of 200\n 9:line 9\n10:line 10\n11:line 11"

    callers = text(
        await client.call_tool(
            "references",
            {"tree": "demo", "name": "app/service.py::normalize_name", "kind": "callers"},
        )
    )
    assert "app/service.py::UserService.get_user" in callers

    # errors: one line, as tool errors; the server keeps serving
    for args, needle in (
        ({"tool": "read", "tree": "nope", "path": "x.py"}, "no tree named 'nope'"),
        ({"tool": "read", "tree": "demo", "path": "big.txt", "start": 300}, "past the end"),
        ({"tool": "read", "tree": "demo", "path": "big.txt", "start": 5, "end": 2}, "bad line"),
        ({"tool": "read", "tree": "demo", "path": "../etc/passwd"}, "not inside the tree"),
        ({"tool": "search", "tree": "nope", "question": "x"}, "no tree named"),
        ({"tool": "references", "tree": "demo", "name": "x", "kind": "friends"}, "unknown kind"),
        ({"tool": "references", "tree": "demo", "name": "nope.py::f"}, "not found"),
        ({"tool": "index", "tree": "nope"}, "no tree named"),
        ({"tool": "search", "tree": "demo"}, "bad arguments: question: Field required"),
        # a filter that cannot match is an error, not "no files found"
        ({"tool": "search", "tree": "demo", "question": "x", "path": "../"}, "not inside the"),
        ({"tool": "search", "tree": "demo", "question": "x", "path": "nope/"}, "no node 'nope'"),
        ({"tool": "search", "tree": "demo", "question": "x", "language": "cobol"}, "unknown lang"),
        ({"tool": "find_symbol", "tree": "demo", "name": "n" * 100_000}, "more characters)"),
        # a misspelt argument is an error, not silently the default
        (
            {"tool": "search", "tree": "demo", "question": "x", "top_k": 3},
            "bad arguments: unknown argument top_k; this tool takes tree, question, k, budget",
        ),
        ({"tool": "trees", "verbose": True}, "unknown argument verbose; this tool takes none"),
        ({"tool": "search", "tree": "demo", "question": "x", "budget": -1}, "budget must be"),
        (
            {"tool": "read", "tree": "demo", "path": "big.txt", "start": "one"},
            "bad arguments: start: Input should be a valid integer",
        ),
    ):
        tool = args.pop("tool")
        failed = await client.call_tool(tool, args)
        assert failed.is_error, (tool, args)
        message = text(failed)
        assert needle in message and "\n" not in message and "Traceback" not in message
        assert len(message) < 1_100, len(message)  # bounded, whatever the arguments

    filtered = text(
        await client.call_tool(
            "search", {"tree": "demo", "question": "user", "path": "app/api", "k": 5, "budget": 0}
        )
    )
    assert [line.split()[1] for line in filtered.splitlines()[1:]] == ["app/api/users.py"]
    scoped = text(
        await client.call_tool("search", {"tree": "demo", "question": "user", "path": "app/api"})
    )
    assert [line for line in scoped.splitlines() if line.startswith("== ")] == [
        "== app/api/users.py:1-12  app/api/users.py::get_user"
    ], scoped

    spans = text(
        await client.call_tool(
            "search", {"tree": "demo", "question": "normalize_name title", "budget": 400}
        )
    )
    head, _, body = spans.partition("\n")
    assert "/400 tokens" in head
    assert "== app/service.py:" in body and ":def normalize_name(name):" in body
    symbol = text(await client.call_tool("find_symbol", {"tree": "demo", "name": "normalize_name"}))
    assert symbol.splitlines()[0].startswith("app/service.py::normalize_name  app/service.py:")
    assert "def normalize_name(name):" in symbol
    ambiguous = await client.call_tool("find_symbol", {"tree": "demo", "name": "get_user"})
    assert ambiguous.is_error
    assert "app/service.py::UserService.get_user" in text(ambiguous)
    assert "app/service.py::AdminService.get_user" in text(ambiguous)
    outline = text(await client.call_tool("outline", {"tree": "demo", "path": "app/service.py"}))
    assert "UserService" in outline and "normalize_name" in outline

    # index: progress while it runs, done only once committed (then searchable)
    (project / "app" / "late.py").write_text("def latecomer_function():\n    return 1\n")
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    indexed = await client.call_tool("index", {"tree": "demo"}, progress_callback=on_progress)
    assert not indexed.is_error, text(indexed)
    assert "1 added" in text(indexed) and "committed" in text(indexed)
    assert progress and progress[-1][2] == "committed demo"
    after = text(
        await client.call_tool(
            "search", {"tree": "demo", "question": "latecomer_function", "budget": 0}
        )
    )
    assert after.splitlines()[1].startswith("1. app/late.py"), after

    # another directory under the name: refused (the tree stays), unless replace
    copy = project.parent / "copy"
    shutil.copytree(project, copy / project.name)
    other = {"path": str(copy / project.name), "tree": "demo"}
    refused = await client.call_tool("index", other)
    assert refused.is_error and "was indexed from" in text(refused)
    assert "replace=true" in text(refused)
    replaced = await client.call_tool("index", {**other, "replace": True})
    assert not replaced.is_error, text(replaced)
    back = await client.call_tool("index", {"path": str(project), "tree": "demo", "replace": True})
    assert not back.is_error, text(back)


def test_mcp_over_stdio_subprocess(db_path: Path, project: Path, tmp_path: Path) -> None:
    async def session(client: Client) -> None:
        await exercise(client, project)

    run(session, stdio_params(db_path, tmp_path))


def test_mcp_over_streamable_http(db_path: Path, project: Path) -> None:
    db = treeseek.open(db_path)
    try:
        server = build_server(Service(db, freshness_ttl=0))
        with live(server.streamable_http_app(host="127.0.0.1")) as url:

            async def session(client: Client) -> None:
                await exercise(client, project)

            run(session, url + "/mcp")
    finally:
        db.close()


def test_mcp_http_with_a_token_refuses_other_requests(db_path: Path) -> None:
    db = treeseek.open(db_path)
    try:
        app = BearerAuth(build_server(Service(db)).streamable_http_app(host="127.0.0.1"), TOKEN)
        with live(app) as url:
            hello = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"},
                },
            }
            headers = {"Accept": "application/json, text/event-stream"}
            refused = httpx.post(url + "/mcp", json=hello, headers=headers)
            assert refused.status_code == 401
            wrong = httpx.post(
                url + "/mcp", json=hello, headers={**headers, "Authorization": "Bearer x"}
            )
            assert wrong.status_code == 401
            accepted = httpx.post(
                url + "/mcp", json=hello, headers={**headers, "Authorization": f"Bearer {TOKEN}"}
            )
            assert accepted.status_code == 200
            assert "treeseek" in accepted.text
    finally:
        db.close()


def test_mcp_http_refuses_a_public_address_without_a_token(db_path: Path) -> None:
    from treeseek.errors import ConfigError
    from treeseek.mcp import run as run_mcp

    with pytest.raises(ConfigError, match="without a token"):
        run_mcp(db=db_path, http=True, host="0.0.0.0", port=1)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("roots", [[], ["--index-root"]])
def test_mcp_http_indexes_new_directories_only_under_index_roots(
    db_path: Path, tmp_path: Path, roots: list[str]
) -> None:
    """``treeseek mcp --http`` is a socket anyone on the machine (or a token holder) reaches:
    like ``treeseek serve`` it indexes no new directory without ``--index-root``."""
    import subprocess
    import time

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.py").write_text("API_KEY = 'do-not-serve'\n")
    port = _free_port()
    args = [sys.executable, "-m", "treeseek", "mcp", "--http", "--port", str(port)]
    args += ["--db", str(db_path), *(["--index-root", str(tmp_path)] if roots else [])]
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(args, env=env, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(600):  # until it listens
            try:
                httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.1)

        async def session(client: Client) -> None:
            result = await client.call_tool("index", {"path": str(elsewhere), "tree": "leak"})
            if roots:
                assert not result.is_error, text(result)
                assert "indexed leak" in text(result)
            else:
                assert result.is_error
                assert "indexes no new directories" in text(result)
                assert "no tree named 'leak'" in text(
                    await client.call_tool("read", {"tree": "leak", "path": "secret.py"})
                )

        run(session, f"http://127.0.0.1:{port}/mcp")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_non_utf8_file_name_does_not_end_the_stdio_session(tmp_path: Path) -> None:
    """A name with a non-UTF-8 byte (stored as a surrogate escape) in an answer used to kill
    the server mid-session; it is shown as ``\\xNN``."""
    root = tmp_path / "weird"
    root.mkdir()
    (root / os.fsdecode(b"bad\xffname.py")).write_text("def odd_name_handler():\n    return 2\n")
    (root / os.fsdecode(b"dir\xff")).mkdir()
    (root / os.fsdecode(b"dir\xff") / "inner.py").write_text("y = 1\n")
    db_path = tmp_path / "w.db"
    with treeseek.open(db_path) as db:
        db.index(root, name="weird")

    async def session(client: Client) -> None:
        for budget in (0, 500):
            found = await client.call_tool(
                "search", {"tree": "weird", "question": "odd_name_handler", "budget": budget}
            )
            assert not found.is_error and "bad\\xffname.py" in text(found), text(found)
        outline = await client.call_tool("outline", {"tree": "weird", "path": ""})
        assert "bad\\xffname.py" in text(outline)
        assert "weird" in text(await client.call_tool("trees", {}))  # still serving

    run(session, stdio_params(db_path, tmp_path))

    # an error naming such a path (a client that sends one as a JSON escape) is shown too:
    # "dir\\xff is a directory, not a file"
    from mcp.server.mcpserver.exceptions import ToolError

    with treeseek.open(db_path) as db:
        server = build_server(Service(db))
        args = {"tree": "weird", "path": "dir\udcff"}
        with pytest.raises(ToolError) as caught:
            anyio.run(server.call_tool, "read", args)
        assert "dir\\xff is a directory" in str(caught.value)
        str(caught.value).encode("utf-8")


def test_read_of_a_section_takes_its_document_s_line_numbers(tmp_path: Path) -> None:
    """search shows a section as ``guide.md/1-guide/2-configure:9-11`` (its document's lines):
    read takes and answers those numbers, as ``treeseek cat`` does (it took the section's own,
    so the lines search named were 'past the end')."""
    guide = tmp_path / "guide.md"
    guide.write_text(
        "# Guide\n\nIntro.\n\n## Install\n\nRun pip.\n\n## Configure\n\nSet the knobs.\n"
    )
    db_path = tmp_path / "g.db"
    with treeseek.open(db_path) as db:
        db.index(guide, name="guide")
        section = "guide.md/1-guide/2-configure"
        assert db.lines("guide", section).start_line == 9
        server = build_server(Service(db, freshness_ttl=0))
        with live(server.streamable_http_app(host="127.0.0.1")) as url:

            async def session(client: Client) -> None:
                args = {"tree": "guide", "path": section}
                whole = text(await client.call_tool("read", args))
                assert (
                    whole
                    == f"{section}:9-11 of 3 (lines 9-11)\n 9:## Configure\n10:\n11:Set the knobs."
                )
                part = text(await client.call_tool("read", {**args, "start": 11, "end": 11}))
                assert part == f"{section}:11-11 of 3 (lines 9-11)\n11:Set the knobs."
                before = await client.call_tool("read", {**args, "start": 2, "end": 3})
                assert before.is_error and "lines 9-11 of its document" in text(before)
                doc = text(
                    await client.call_tool(
                        "read", {"tree": "guide", "path": "guide.md", "start": 9, "end": 9}
                    )
                )
                assert doc == "guide.md:9-9 of 11\n9:## Configure"

            run(session, url + "/mcp")


def test_search_with_a_path_ranks_the_files_under_it(tmp_path: Path) -> None:
    """``search(path=...)`` ranks the files under ``path``, not the whole tree's best few
    filtered afterwards: a directory whose files all rank below the whole tree's first k x 5
    (tests, docs) answered "no files found" although its files match."""
    root = tmp_path / "shop"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    for n in range(12):  # every one of them matches better than the test does
        (root / "src" / f"widget_{n}.py").write_text(
            f'"""Widget pricing {n}."""\n\n\ndef widget_price_{n}(widget):\n'
            "    return widget.price * widget.count  # widget price widget\n"
        )
    (root / "tests" / "test_widget.py").write_text(
        "def test_price():\n    assert compute(3) == 9  # widget\n"
    )
    db_path = tmp_path / "s.db"
    with treeseek.open(db_path) as db:
        db.index(root, name="shop")
        server = build_server(Service(db))

        async def session(client: Client) -> None:
            args = {"tree": "shop", "question": "widget price", "k": 1, "path": "tests"}
            found = await client.call_tool("search", {**args, "budget": 0})
            assert not found.is_error, text(found)
            assert text(found).splitlines()[1].startswith("1. tests/test_widget.py"), text(found)
            # with a budget (the default), the spans of the files under it, as unscoped
            spans = await client.call_tool("search", args)
            assert not spans.is_error, text(spans)
            body = text(spans)
            assert "\n== tests/test_widget.py:1-2" in body and "def test_price" in body, body
            assert "== src/" not in body, body

        run(session, server)


def test_search_with_a_language_ranks_the_files_of_that_language(tmp_path: Path) -> None:
    """``search(language=...)`` ranks that language's files, as ``path`` ranks a
    directory's: a language whose files all rank below the tree's first k x 5 answered
    "no files found"."""
    root = tmp_path / "app"
    root.mkdir()
    for n in range(12):
        (root / f"widget_{n}.py").write_text(
            f"def widget_price_{n}(widget):\n    return widget.price  # widget price widget\n"
        )
    (root / "widget.js").write_text("export function price(w) { return w.widget; }\n")
    db_path = tmp_path / "l.db"
    with treeseek.open(db_path) as db:
        db.index(root, name="app")
        server = build_server(Service(db))

        async def session(client: Client) -> None:
            args = {"tree": "app", "question": "widget price", "k": 1, "language": "javascript"}
            found = await client.call_tool("search", {**args, "budget": 0})
            assert not found.is_error, text(found)
            assert text(found).splitlines()[1].startswith("1. widget.js"), text(found)
            spans = text(await client.call_tool("search", args))
            assert "\n== widget.js:1-1" in spans and ".py" not in spans, spans

        run(session, server)


def test_search_with_a_language_keeps_a_cpp_header_named_h(tmp_path: Path) -> None:
    """A C++ header named ``.h`` is parsed as C++ (a line only C++ has); ``search(language=
    "cpp")`` ranked it and then filtered the answer by the file's suffix (``.h``: c), so
    the headers, most of a C++ library's code, were never in it."""
    root = tmp_path / "lib"
    root.mkdir()
    (root / "format.h").write_text(
        "namespace fmt {\ntemplate <typename T> class formatter {\n public:\n"
        "  void format_spec(T value);\n};\n}  // namespace fmt\n"
    )
    (root / "plain.h").write_text("int format_spec_plain(int value);\n")
    (root / "format.cc").write_text('#include "format.h"\nint unrelated() { return 0; }\n')
    db_path = tmp_path / "h.db"
    with treeseek.open(db_path) as db:
        db.index(root, name="lib")
        server = build_server(Service(db))

        async def session(client: Client) -> None:
            for language, first in (("cpp", "format.h"), ("c", "plain.h")):
                found = await client.call_tool(
                    "search",
                    {
                        "tree": "lib",
                        "question": "formatter format_spec",
                        "k": 1,
                        "language": language,
                        "budget": 0,
                    },
                )
                assert not found.is_error, text(found)
                assert text(found).splitlines()[1].startswith(f"1. {first}"), text(found)

        run(session, server)


def test_a_tree_whose_directory_is_gone_is_not_told_to_call_index(tmp_path: Path) -> None:
    """trees and search said 'STALE since ... (): call index' for a tree whose directory
    no longer exists, and index then failed ('where tree was built, is gone'): they say the
    directory is gone, as `treeseek trees` does ('root missing')."""
    root = tmp_path / "gone"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("def vanishing_helper():\n    return 1\n")
    db_path = tmp_path / "g.db"
    with treeseek.open(db_path) as db:
        db.index(root, name="gone")
        shutil.rmtree(root)
        server = build_server(Service(db, freshness_ttl=0))

        async def session(client: Client) -> None:
            listed = text(await client.call_tool("trees", {}))
            found = text(
                await client.call_tool(
                    "search", {"tree": "gone", "question": "vanishing_helper", "budget": 0}
                )
            )
            for answer in (listed, found.splitlines()[0]):
                assert f"{root} no longer exists" in answer, answer
                assert "call index" not in answer and "()" not in answer, answer
            assert "1. pkg/a.py" in found  # the stored copy still answers

        run(session, server)


def _ledger_tree(root: Path) -> None:
    """Files of many short lines: what line numbers and span headers add weighs most."""
    root.mkdir()
    for n in range(6):
        body = "".join(
            f"def ledger_entry_{n}_{m}(ledger, amount):\n"
            + "".join(f"    ledger.post(amount, {i})  # ledger balance\n" for i in range(12))
            + "    return ledger\n\n\n"
            for m in range(8)
        )
        (root / f"ledger_{n}.py").write_text(f'"""Ledger {n}."""\n\n\n{body}')


def test_a_budgeted_search_answer_fits_its_budget_as_shown(tmp_path: Path) -> None:
    """``budget`` bounds the answer the agent reads: the spans with their line numbers and
    headers (it bounded the spans' text alone, and the answer shown ran 25-35% over it)."""
    from treeseek.llm.tokens import count_tokens

    root = tmp_path / "ledger"
    _ledger_tree(root)
    db_path = tmp_path / "b.db"
    with treeseek.open(db_path) as db:
        db.index(root, name="ledger")
        server = build_server(Service(db))

        async def session(client: Client) -> None:
            for budget in (300, 1500, 4000):
                found = await client.call_tool(
                    "search",
                    {"tree": "ledger", "question": "ledger post balance", "budget": budget},
                )
                answer = text(found)
                assert not found.is_error, answer
                shown = count_tokens(answer)
                assert shown <= budget, (budget, shown)
                assert shown > budget * 0.8, (budget, shown)  # not starved either
                head = answer.splitlines()[0]
                assert head.endswith(f" · {shown}/{budget} tokens"), head
            tiny = text(
                await client.call_tool(
                    "search", {"tree": "ledger", "question": "ledger post balance", "budget": 30}
                )
            )
            assert count_tokens(tiny) <= 30 or "no span fits in 30 tokens" in tiny, tiny
            assert "no matching code" not in tiny, tiny  # the files match; the budget is small

        run(session, server)


def test_read_of_a_file_changed_on_disk_says_so(tmp_path: Path) -> None:
    """An agent edits a file, then reads it back through treeseek: the answer is the stored
    copy, and it said nothing (the lines it asked for were the old ones). read, find_symbol
    and outline say the file changed (or is gone) since it was indexed, until it is
    re-indexed."""
    root = tmp_path / "proj"
    root.mkdir()
    source = root / "calc.py"
    source.write_text("def add(a, b):\n    return a + b\n")
    (root / "other.py").write_text("def keep():\n    return 1\n")
    db_path = tmp_path / "c.db"
    with treeseek.open(db_path) as db:
        db.index(root, name="proj")
        server = build_server(Service(db, freshness_ttl=0))

        async def session(client: Client) -> None:
            calls: list[tuple[str, dict[str, Any]]] = [
                ("read", {"tree": "proj", "path": "calc.py", "start": 1, "end": 2}),
                ("find_symbol", {"tree": "proj", "name": "add"}),
                ("outline", {"tree": "proj", "path": "calc.py"}),
            ]
            for tool, args in calls:  # fresh: no note
                assert "since it was indexed" not in text(await client.call_tool(tool, args))
            source.write_text("# a comment first\ndef add(a, b):\n    return b + a\n")
            for tool, args in calls:
                answer = text(await client.call_tool(tool, args))
                head = answer.splitlines()[0] if tool != "outline" else answer
                assert "the file changed on disk since it was indexed" in head, answer
                assert "call index" in head, answer
            other = text(await client.call_tool("read", {"tree": "proj", "path": "other.py"}))
            assert "since it was indexed" not in other  # only the changed file says so
            source.unlink()
            gone = text(await client.call_tool(*calls[0]))
            assert "the file is gone from disk since it was indexed" in gone, gone
            source.write_text("# a comment first\ndef add(a, b):\n    return b + a\n")
            assert not (await client.call_tool("index", {"tree": "proj"})).is_error
            after = text(await client.call_tool("find_symbol", {"tree": "proj", "name": "add"}))
            assert "since it was indexed" not in after and after.startswith(
                "calc.py::add  calc.py:2-3"
            ), after

        run(session, server)


def test_an_outline_fits_its_budget_and_says_what_it_left_out(tmp_path: Path) -> None:
    """outline of a directory had no bound but the server's (100,000 tokens): pytest's
    ``src/_pytest`` was one 68,000-token answer. It takes ``budget`` (tokens of the answer as
    shown); what does not fit is named (the files left out by subdirectory) with what to ask
    for instead."""
    from treeseek.llm.tokens import count_tokens

    root = tmp_path / "ledger"
    _ledger_tree(root)
    for sub in ("audit", "report"):
        (root / sub).mkdir()
        for n in range(3):
            (root / sub / f"{sub}_{n}.py").write_text(
                "".join(f"def {sub}_step_{n}_{m}(x):\n    return x\n\n\n" for m in range(20))
            )
    db_path = tmp_path / "o.db"
    with treeseek.open(db_path) as db:
        db.index(root, name="ledger")
        server = build_server(Service(db))

        async def session(client: Client) -> None:
            whole = text(await client.call_tool("outline", {"tree": "ledger", "path": ""}))
            assert "more files" not in whole and "report/report_2.py" in whole
            cut = text(
                await client.call_tool("outline", {"tree": "ledger", "path": "", "budget": 300})
            )
            assert count_tokens(cut) <= 300, count_tokens(cut)
            last = cut.splitlines()[-1]
            assert "more files" in last and "audit/ (2)" in last and "report/ (3)" in last, cut
            assert cut.splitlines()[-2].startswith("  ... 5 more symbols from L61 on"), cut
            assert "raise budget" in last, last
            one = text(
                await client.call_tool(
                    "outline", {"tree": "ledger", "path": "audit/audit_0.py", "budget": 100}
                )
            )
            assert count_tokens(one) <= 100, count_tokens(one)
            assert one.splitlines()[-1].startswith("  ... 1"), one  # symbols left out, said
            assert "more symbols from L" in one.splitlines()[-1], one
            refused = await client.call_tool("outline", {"tree": "ledger", "path": "", "budget": 5})
            assert refused.is_error and "at least 100 tokens" in text(refused)

        run(session, server)


def test_errors_say_what_to_call_among_the_mcp_tools(db_path: Path) -> None:
    """An agent on MCP cannot run `treeseek trees` or `treeseek show`, and has no tool that
    "lists" a directory: the errors that said so name the tools it has."""
    db = treeseek.open(db_path)
    try:
        server = build_server(Service(db))

        async def session(client: Client) -> None:
            for tool, args, needle in (
                ("search", {"tree": "Demo", "question": "x"}, "call trees to list"),
                ("read", {"tree": "demo", "path": "app/nope.py"}, "outline a directory"),
                ("outline", {"tree": "demo", "path": "nope"}, "outline a directory"),
                ("read", {"tree": "demo", "path": "app"}, "outline it to see"),
            ):
                failed = await client.call_tool(tool, args)
                message = text(failed)
                assert failed.is_error and needle in message, message
                assert "`treeseek" not in message and "list it instead" not in message, message

        run(session, server)
    finally:
        db.close()


def test_an_outline_without_symbols_says_what_to_do(tmp_path: Path) -> None:
    """outline of a Markdown file answered its bare path, and of a directory without code
    'no symbols': the agent could not tell an empty answer from a failed one."""
    root = tmp_path / "site"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "guide.md").write_text("# Guide\n\nRun it.\n")
    (root / "main.py").write_text("def main():\n    return 0\n")
    db_path = tmp_path / "d.db"
    with treeseek.open(db_path) as db:
        db.index(root, name="site")
        server = build_server(Service(db))

        async def session(client: Client) -> None:
            one = text(await client.call_tool("outline", {"tree": "site", "path": "docs/guide.md"}))
            assert one == "docs/guide.md  (no symbols: read it)", one
            none = text(await client.call_tool("outline", {"tree": "site", "path": "docs"}))
            assert none == "no code files under docs: read a file, or search", none

        run(session, server)


def test_a_tree_search_strategy_without_an_llm_says_so(db_path: Path) -> None:
    """``strategy`` had no listed values and no word on what it needs: an agent that asked
    for ``auto`` (the first value the error lists) on a server without an LLM got the
    lexical navigator's tree search, which matches words of paths only, and 'no files found'
    for a question flat answers, with nothing saying why."""
    db = treeseek.open(db_path)
    try:
        server = build_server(Service(db))

        async def session(client: Client) -> None:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            schema = tools["search"].input_schema["properties"]["strategy"]
            values = next(b for b in schema["anyOf"] if b.get("type") == "string")["enum"]
            assert "flat" in values and "auto" in values and "block" in values
            assert "without an LLM" in (tools["search"].description or "")
            for strategy in ("auto", "block", "beam"):
                answer = text(
                    await client.call_tool(
                        "search",
                        {"tree": "demo", "question": "normalize", "strategy": strategy},
                    )
                )
                assert "note: no LLM on this server" in answer, answer
            flat = text(await client.call_tool("search", {"tree": "demo", "question": "normalize"}))
            assert "no LLM" not in flat, flat

        run(session, server)
    finally:
        db.close()


def test_find_symbol_fits_its_budget_and_says_where_to_read_on(tmp_path: Path) -> None:
    """find_symbol of a large class showed all of it: pylint's VariablesChecker was one
    25,000-token answer. It takes ``budget`` (tokens as shown, 8,000 by default) and cuts at
    a whole line, saying where to read on."""
    from treeseek.llm.tokens import count_tokens

    root = tmp_path / "big"
    root.mkdir()
    methods = "".join(
        f"    def step_{n}(self, value):\n        return value + {n}  # step {n}\n\n"
        for n in range(150)
    )
    (root / "engine.py").write_text(f"class Engine:\n    '''Runs steps.'''\n\n{methods}")
    db_path = tmp_path / "f.db"
    with treeseek.open(db_path) as db:
        db.index(root, name="big")
        server = build_server(Service(db))

        async def session(client: Client) -> None:
            whole = text(await client.call_tool("find_symbol", {"tree": "big", "name": "Engine"}))
            assert "cut at line" not in whole and whole.endswith("# step 149"), whole[-200:]
            args = {"tree": "big", "name": "Engine", "budget": 500}
            cut = text(await client.call_tool("find_symbol", args))
            assert count_tokens(cut) <= 500, count_tokens(cut)
            head, *lines = cut.splitlines()
            last = int(lines[-1].split(":", 1)[0])
            assert f"(cut at line {last} to fit 500 tokens: read on with start={last + 1}" in head
            assert "or outline the file" in head, head
            refused = await client.call_tool("find_symbol", {**args, "budget": 10})
            assert refused.is_error and "at least 100 tokens" in text(refused)

        run(session, server)


def test_read_fits_its_budget_and_says_where_to_read_on(db_path: Path) -> None:
    """read of a whole file was bounded only by 5,000 lines or 100,000 characters (pytest's
    python.py: 20,851 tokens in one answer). It takes ``budget`` (tokens as shown, 8,000 by
    default) and cuts at a whole line, saying where to read on."""
    from treeseek.llm.tokens import count_tokens

    db = treeseek.open(db_path)
    try:
        server = build_server(Service(db))

        async def session(client: Client) -> None:
            whole = text(await client.call_tool("read", {"tree": "demo", "path": "big.txt"}))
            assert whole.startswith("big.txt:1-200 of 200\n") and "cut at" not in whole
            args = {"tree": "demo", "path": "big.txt", "start": 11, "budget": 150}
            cut = text(await client.call_tool("read", args))
            assert count_tokens(cut) <= 150, count_tokens(cut)
            head, *lines = cut.splitlines()
            last = int(lines[-1].split(":", 1)[0])
            assert head == (
                f"big.txt:11-{last} of 200 (cut at line {last} to fit 150 tokens: read on with"
                f" start={last + 1})"
            ), head
            refused = await client.call_tool("read", {**args, "budget": 10})
            assert refused.is_error and "at least 100 tokens" in text(refused)

        run(session, server)
    finally:
        db.close()


def test_an_outline_over_the_server_limit_is_cut_not_refused(tmp_path: Path) -> None:
    """outline of a whole large tree (pytest's: 185,116 tokens) was refused ('outline a
    subdirectory') after it was built: with a budget the answer is its first files and the
    rest by subdirectory, a map of the tree, for what the refusal had already paid."""
    from treeseek.service import Limits

    root = tmp_path / "ledger"
    _ledger_tree(root)
    db_path = tmp_path / "l.db"
    with treeseek.open(db_path) as db:
        db.index(root, name="ledger")
        server = build_server(Service(db, limits=Limits(max_budget=300)))

        async def session(client: Client) -> None:
            cut = await client.call_tool("outline", {"tree": "ledger", "path": "", "budget": 250})
            assert not cut.is_error, text(cut)
            assert text(cut).splitlines()[-1].startswith("... "), text(cut)
            assert "more files not shown" in text(cut), text(cut)

        run(session, server)


def test_an_outline_cut_to_a_budget_reads_no_further_than_the_server_limit(
    tmp_path: Path,
) -> None:
    """The cut outline of a whole tree stops reading at the server's limit (a 47,000-file
    tree's whole outline took 14 s and 1.3 GB to show 8,000 tokens of it): the files past it
    are named, not outlined, and the answer still counts every file it left out."""
    import re

    from treeseek.service import Limits

    root = tmp_path / "ledger"
    _ledger_tree(root)
    (root / "notes.txt").write_text("not code\n")
    db_path = tmp_path / "l.db"
    with treeseek.open(db_path) as db:
        db.index(root, name="ledger")
        service = Service(db, limits=Limits(max_budget=300))
        data = service.outline("ledger", "", whole=False)
        assert 1 <= len(data["files"]) < 6
        assert len(data["files"]) + len(data["unread"]) == 6  # notes.txt is not code
        assert not {f["path"] for f in data["files"]} & set(data["unread"])
        server = build_server(service)

        async def session(client: Client) -> None:
            cut = text(
                await client.call_tool("outline", {"tree": "ledger", "path": "", "budget": 250})
            )
            shown = {line.split()[0] for line in cut.splitlines() if line.startswith("ledger_")}
            left = re.search(r"\.\.\. (\d+) more files not shown", cut)
            assert left is not None, cut
            assert len(shown) + int(left.group(1)) == 6, cut

        run(session, server)
