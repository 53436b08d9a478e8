"""Python: symbols with spans, edges, chunks and degraded paths of ``index_file``."""

from __future__ import annotations

import textwrap

from treeseek.code.model import ChunkType, EdgeType, SymbolKind
from treeseek.code.parse import index_file

USERS = textwrap.dedent(
    '''\
    """User endpoints."""
    import os
    import json as j
    from fastapi import APIRouter
    from .services import UserService as US
    from ..models import *

    router = APIRouter(prefix="/users")
    MAX_USERS = 100


    class Base:
        pass


    @router.get("/{user_id}")
    async def get_user(user_id: str) -> dict:
        """Return one user."""
        service = US()
        return service.get_user(user_id)


    class Admin(Base, metaclass=Meta):
        """Admin docs."""

        level = 3

        @staticmethod
        def check(x):
            def inner():
                return os.path.join("a", "b")

            return inner()

        def _run(self):
            self.check(1)
            self.check(2)
            super()._run()
            print(len([]))
    '''
)


def _by_qname(path: str, text: str) -> dict[str, object]:
    return {s.qname: s for s in index_file(path, text.encode()).symbols}


def test_symbols_have_qnames_kinds_spans_and_details() -> None:
    ix = index_file("app/api/users.py", USERS.encode())
    assert ix.language == "python"
    assert ix.module == "app.api.users"
    assert ix.parse_error is None
    syms = {s.qname: s for s in ix.symbols}
    assert list(syms) == [
        "MAX_USERS",
        "Base",
        "get_user",
        "Admin",
        "Admin.check",
        "Admin.check.inner",
        "Admin._run",
    ]
    get_user = syms["get_user"]
    assert get_user.kind is SymbolKind.FUNCTION
    assert (get_user.start_line, get_user.end_line) == (16, 20)  # decorator included
    assert get_user.signature == "get_user(user_id: str) -> dict"
    assert get_user.decorators == ("router.get",)
    assert get_user.docstring == "Return one user."
    assert get_user.lang_payload["async"] is True
    assert get_user.is_entry_candidate  # it handles a route
    admin = syms["Admin"]
    assert admin.kind is SymbolKind.CLASS
    assert admin.signature == "Admin(Base, metaclass=Meta)"
    assert admin.docstring == "Admin docs."
    assert (admin.start_line, admin.end_line) == (23, 39)
    check = syms["Admin.check"]
    assert check.kind is SymbolKind.METHOD and check.parent == "Admin"
    assert check.lang_payload["staticmethod"] is True
    inner = syms["Admin.check.inner"]
    assert inner.kind is SymbolKind.FUNCTION and inner.parent == "Admin.check"
    assert syms["Admin._run"].lang_payload["visibility"] == "private"
    assert syms["MAX_USERS"].kind is SymbolKind.CONST


def test_edges_imports_calls_inherits() -> None:
    ix = index_file("app/api/users.py", USERS.encode())
    imports = [e for e in ix.edges if e.type is EdgeType.IMPORTS]
    refs = {e.dst_ref: e.lang_payload for e in imports}
    assert refs["os"] == {"module": "os", "level": 0}
    assert refs["json"] == {"module": "json", "level": 0, "alias": "j"}
    assert refs[".services.UserService"] == {
        "module": "services",
        "level": 1,
        "name": "UserService",
        "alias": "US",
    }
    assert refs["..models.*"]["name"] == "*"
    calls = {(e.src, e.dst_ref): e for e in ix.edges if e.type is EdgeType.CALLS}
    assert ("get_user", "US") in calls
    assert ("get_user", "service.get_user") in calls
    assert ("Admin.check.inner", "os.path.join") in calls
    assert calls[("Admin._run", "self.check")].lang_payload["count"] == 2
    assert ("Admin._run", "super()._run") in calls
    # builtins that the file does not rebind are noise, not edges
    assert not any(dst in ("print", "len") for _, dst in calls)
    inherits = [(e.src, e.dst_ref) for e in ix.edges if e.type is EdgeType.INHERITS]
    assert inherits == [("Admin", "Base")]


def test_chunks_symbol_blocks_class_header_and_windows() -> None:
    ix = index_file("app/api/users.py", USERS.encode())
    spans = [(c.type, c.start_line, c.end_line, c.symbol) for c in ix.chunks]
    assert spans == [
        (ChunkType.WINDOW, 1, 9, None),
        (ChunkType.SYMBOL_BLOCK, 12, 13, "Base"),
        (ChunkType.SYMBOL_BLOCK, 16, 20, "get_user"),
        (ChunkType.SYMBOL_BLOCK, 23, 26, "Admin"),  # header: docstring and attributes
        (ChunkType.SYMBOL_BLOCK, 28, 33, "Admin.check"),  # nested inner() stays inside
        (ChunkType.SYMBOL_BLOCK, 35, 39, "Admin._run"),
    ]
    assert [c.index for c in ix.chunks] == list(range(len(ix.chunks)))
    lines = USERS.splitlines()
    for c in ix.chunks:
        assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])


def test_long_function_is_split_inside_its_span_and_long_module_is_windowed() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(300))
    text = f"def big():\n{body}\n    return x0\n" + "\n".join(f"y{i} = {i}" for i in range(200))
    ix = index_file("m.py", text.encode())
    big = [c for c in ix.chunks if c.symbol == "big"]
    assert [(c.start_line, c.end_line) for c in big] == [
        (1, 80),
        (66, 145),
        (131, 210),
        (196, 275),
        (261, 302),
    ]
    assert all(c.type is ChunkType.SYMBOL_BLOCK for c in big)
    windows = [(c.start_line, c.end_line) for c in ix.chunks if c.type is ChunkType.WINDOW]
    assert windows == [(303, 382), (368, 447), (433, 502)]


def test_unknown_language_binary_and_bad_encoding_degrade() -> None:
    text = "\n".join(f"line {i}" for i in range(100)).encode()
    notes = index_file("docs/notes.txt", text)
    assert notes.language is None and notes.parse_error is None
    assert [(c.start_line, c.end_line) for c in notes.chunks] == [(1, 80), (66, 100)]
    binary = index_file("img/logo.py", b"\x89PNG\x00\x00\x01")
    assert binary.chunks == () and binary.parse_error == "binary content"
    latin = index_file("legacy.py", "def caf\xe9():\n    return 'd\xe9j\xe0'\n".encode("latin-1"))
    assert [s.name for s in latin.symbols] == ["café"]
    broken = index_file("broken.py", b"def ok():\n    return 1\n\ndef bad(:\n    pass\n")
    assert broken.parse_error == "syntax errors (recovered)"
    assert "ok" in {s.qname for s in broken.symbols}
    assert broken.chunks


def test_empty_file_and_crlf() -> None:
    empty = index_file("pkg/__init__.py", b"")
    assert empty.module == "pkg" and empty.chunks == () and empty.symbols == ()
    crlf = index_file("w.py", b"def f():\r\n    return 1\r\n")
    (chunk,) = crlf.chunks
    assert chunk.text == "def f():\n    return 1" and chunk.symbol == "f"


def test_index_many_in_worker_processes_matches_index_file() -> None:
    from treeseek.code.parse import index_many

    items = [(f"pkg/m{i}.py", f"def f{i}(x):\n    return g(x)\n".encode()) for i in range(70)]
    items.append(("web/a.ts", b"export class A { run(): void { b(); } }\n"))
    parallel = list(index_many(items, workers=2, chunksize=8))
    assert parallel == [index_file(p, d) for p, d in items]
    assert list(index_many(items[:3], workers=2)) == [index_file(p, d) for p, d in items[:3]]


def test_language_from_shebang_and_module_names() -> None:
    script = index_file("bin/tool", b"#!/usr/bin/env python3\ndef main():\n    return 0\n")
    assert script.language == "python" and [s.qname for s in script.symbols] == ["main"]
    assert index_file("bin/run", b"#!/bin/sh\necho hi\n").language is None
    assert index_file("src/pkg/sub/__init__.py", b"").module == "pkg.sub"
    assert index_file("src/pkg/sub/mod.pyi", b"").module == "pkg.sub.mod"
    assert index_file("web/src/components/index.tsx", b"").module == "web/src/components"
    assert index_file("crates/core/src/a/mod.rs", b"").module == "crate::a"
    assert index_file("src/main/java/com/acme/App.java", b"").module == "com.acme.App"


def test_minified_files_are_windows_only() -> None:
    body = ";".join(f"function f{i}(a){{return g(a)}}" for i in range(2000))
    ix = index_file("static/app.min.js", body.encode())
    assert ix.parse_error == "minified (not parsed)" and ix.symbols == () and ix.edges == ()
    assert len(ix.chunks) == 1 and len(ix.chunks[0].text) <= 16_000
    normal = "\n".join(f"function f{i}(a) {{ return g(a); }}" for i in range(2000))
    assert len(index_file("static/app.js", normal.encode()).symbols) == 2000
