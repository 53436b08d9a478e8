"""Every edge's source is a symbol of its file's catalog or the module (""): the caller ids
of ``references`` (``path::qname``) are given back to ``find_symbol`` and ``references``,
which know only the catalog's symbols. Calls inside a container that is not itself a symbol
(a JS/TS object literal's values, a TypeScript namespace's statements, a Java anonymous
class's initializers) were owned by the container (``types.ts::coerce``), a name nothing
accepted."""

from __future__ import annotations

import pytest

from treeseek.code.model import EdgeType
from treeseek.code.parse import index_file

CASES = {
    "a.ts": (
        b"export const coerce = {\n  string: ((arg) => Make.create(arg)) as Maker,\n"
        b"  n: make(1),\n};\nnamespace Util {\n  export function f() { return g(); }\n"
        b"  init();\n}\n",
        {("", "Make.create"), ("", "make"), ("Util.f", "g"), ("", "init")},
    ),
    "b.js": (
        b"const api = {\n  get() { return fetchIt(); },\n  limit: compute(3),\n};\n",
        {("api.get", "fetchIt"), ("", "compute")},
    ),
    "D.java": (
        b"class D {\n  void m() {\n    Runnable r = new Runnable() {\n      int x = compute();\n"
        b"      public void run() { work(); }\n    };\n  }\n}\n",
        {("D.m", "Runnable"), ("D.m", "compute"), ("D.m.r.run", "work")},
    ),
}


@pytest.mark.parametrize("path", sorted(CASES))
def test_calls_in_a_container_belong_to_the_enclosing_symbol(path: str) -> None:
    data, expected = CASES[path]
    index = index_file(path, data)
    names = {symbol.qname for symbol in index.symbols}
    calls = {(e.src, e.dst_ref) for e in index.edges if e.type is EdgeType.CALLS}
    assert calls == expected, calls
    for edge in index.edges:
        assert edge.src == "" or edge.src in names, (edge, sorted(names))
