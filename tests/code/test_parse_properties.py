"""Properties of ``index_file`` on arbitrary input: it never raises, and chunks cover every
line with content (not blank, not a lone ``}`` or ``end``) with in-range, ordered, correctly
numbered spans."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from treeseek.code.chunks import is_filler
from treeseek.code.parse import index_file

_PATHS = [
    "m.py",
    "a.js",
    "a.ts",
    "a.tsx",
    "a.go",
    "a.rs",
    "A.java",
    "a.c",
    "a.cpp",
    "a.rb",
    "a.cs",
    "notes.txt",
    "Makefile",
]

# fragments of real syntax, so the generated files exercise the extractors, not only errors
_FRAGMENTS = [
    "def f(x):\n    return g(x)\n",
    "class A(B):\n    def m(self):\n        self.n()\n",
    "@app.get('/x')\nasync def h():\n    pass\n",
    "import os\nfrom . import y as z\n",
    "function f() { return g(); }\n",
    "class C extends D { m() { this.n(); } }\n",
    "func (s *S) M() { s.N() }\n",
    "impl T for S { fn m(&self) { self.n(); } }\n",
    "public class J { void m() { n(); } }\n",
    "int main(void) { return f(1); }\n",
    "module M\n  class K < L\n    def m; end\n  end\nend\n",
    '#include "x.h"\n',
    "\n\n",
    "    \t\n",
    "}}}((([[[\n",
    "'''unterminated\n",
]


@settings(max_examples=150, deadline=None)
@given(
    path=st.sampled_from(_PATHS),
    parts=st.lists(
        st.one_of(st.sampled_from(_FRAGMENTS), st.text(max_size=40)), min_size=0, max_size=25
    ),
)
def test_never_raises_and_chunks_cover_nonblank_lines(path: str, parts: list[str]) -> None:
    text = "".join(parts)
    ix = index_file(path, text.encode("utf-8", "surrogatepass"))
    if ix.parse_error == "binary content":
        assert ix.chunks == ()
        return
    lines = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace").split("\n")
    n = len(lines) - (1 if lines and lines[-1] == "" else 0)
    for i, chunk in enumerate(ix.chunks):
        assert chunk.index == i
        assert 1 <= chunk.start_line <= chunk.end_line <= n
    starts = [c.start_line for c in ix.chunks]
    assert starts == sorted(starts)
    for no in range(1, n + 1):
        if not is_filler(lines[no - 1]):
            assert any(c.start_line <= no <= c.end_line for c in ix.chunks), no
    for sym in ix.symbols:
        assert 1 <= sym.start_line <= sym.end_line


@settings(max_examples=80, deadline=None)
@given(path=st.sampled_from(_PATHS), data=st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(path: str, data: bytes) -> None:
    ix = index_file(path, data)
    assert ix.module is not None
