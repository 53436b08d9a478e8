"""Symbol names and spans on inputs a real repository has (found by auditing real trees)."""

from __future__ import annotations

from pathlib import Path

import treeseek
from treeseek.code.parse import index_file
from treeseek.context.outline import render_file_outline

CPP_HEADER = """// Copyright (c) 2012 - present, Victor Zverovich
// All rights reserved.

#ifndef FMT_WIDGET_H_
#define FMT_WIDGET_H_

#include <string>

namespace fmt {
namespace detail {

template <typename T> class buffer {
 public:
  buffer() = default;
  auto size() const -> size_t { return size_; }

 private:
  size_t size_ = 0;
};

struct monostate {
  constexpr monostate() {}
};

}  // namespace detail

inline auto to_string(int value) -> std::string {
  return std::to_string(value);
}

}  // namespace fmt

#endif  // FMT_WIDGET_H_
"""

C_HEADER = """/* A C library header that C++ can include. */
#ifndef UV_H
#define UV_H
#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>

typedef struct uv_loop_s uv_loop_t;

struct uv_loop_s {
  void* data;
  unsigned int active_handles;
};

int uv_loop_init(uv_loop_t* loop);

static inline int uv_is_active(const uv_loop_t* loop) {
  return loop->active_handles > 0;
}

#ifdef __cplusplus
}
#endif
#endif /* UV_H */
"""


def _spans(path: str, text: str) -> dict[str, tuple[str, int, int]]:
    ix = index_file(path, text.encode())
    return {s.qname: (s.kind.value, s.start_line, s.end_line) for s in ix.symbols}


def test_cpp_header_with_h_suffix_is_parsed_as_cpp() -> None:
    ix = index_file("include/fmt/widget.h", CPP_HEADER.encode())
    assert ix.language == "cpp"
    assert ix.parse_error is None
    assert _spans("include/fmt/widget.h", CPP_HEADER) == _spans(
        "include/fmt/widget.hpp", CPP_HEADER
    )
    spans = _spans("include/fmt/widget.h", CPP_HEADER)
    assert spans["buffer"] == ("class", 12, 19)
    assert spans["buffer.size"] == ("method", 15, 15)
    assert spans["monostate"] == ("class", 21, 23)
    assert spans["to_string"] == ("function", 27, 29)


def test_c_header_stays_c() -> None:
    ix = index_file("include/uv.h", C_HEADER.encode())
    assert ix.language == "c"
    spans = _spans("include/uv.h", C_HEADER)
    assert spans == {
        "uv_loop_s": ("class", 12, 15),
        "uv_is_active": ("function", 19, 21),
    }


PY_OVERLOADS = """from typing import overload
import typing


class HTTPBasicAuth:
    @overload
    def __init__(self, username: str) -> None: ...
    @typing.overload
    def __init__(self, username: bytes) -> None: ...

    def __init__(self, username):
        def check(name):
            return name

        self.username = check(username)


@overload
def parse(x: int) -> int: ...
@overload
def parse(x: str) -> str: ...
def parse(x):
    return x
"""

TS_OVERLOADS = """export function string(): ZodString;
export function string<T extends string>(params?: string): ZodType<T>;
export function string(params?: string): ZodString {
  return core._string(ZodString, params);
}
"""


def test_overload_stubs_do_not_take_the_implementations_name() -> None:
    """`expand path::f` names the implementation, not the first `@overload` stub before it."""
    spans = _spans("src/auth.py", PY_OVERLOADS)
    assert spans["HTTPBasicAuth.__init__"] == ("method", 11, 15)
    assert spans["HTTPBasicAuth.__init__.check"] == ("function", 12, 13)
    assert spans["HTTPBasicAuth.__init__@2"] == ("method", 6, 7)
    assert spans["HTTPBasicAuth.__init__@3"] == ("method", 8, 9)
    assert spans["parse"] == ("function", 22, 23)
    assert {spans["parse@2"], spans["parse@3"]} == {("function", 18, 19), ("function", 20, 21)}
    ix = index_file("src/auth.py", PY_OVERLOADS.encode())
    calls = {(e.src, e.dst_ref) for e in ix.edges if e.type.value == "calls"}
    assert ("HTTPBasicAuth.__init__", "check") in calls

    ts = _spans("src/schemas.ts", TS_OVERLOADS)
    assert ts["string"] == ("function", 3, 5)
    assert ts["string@2"] == ("function", 1, 1)
    assert ts["string@3"] == ("function", 2, 2)
    chunks = index_file("src/schemas.ts", TS_OVERLOADS.encode()).chunks
    assert [(c.symbol, c.start_line, c.end_line) for c in chunks if c.start_line == 3] == [
        ("string", 3, 5)
    ]


def test_outline_says_def_for_a_repeated_definition(tmp_path: Path) -> None:
    """`f@2` is a function like `f`: the outline line says `def` for both."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "compat.py").write_text(
        "try:\n    import json\n\n    def loads(s):\n        return json.loads(s)\n"
        "except ImportError:\n\n    def loads(s):\n        return eval(s)\n"
    )
    with treeseek.open(tmp_path / "t.db") as db:
        db.index(root, name="t")
        outline = db.outline("t", "compat.py").files[0]
    names = [item.name_path for item in outline.items]
    assert names == ["compat.py::loads", "compat.py::loads@2"]
    text = render_file_outline("compat.py", outline.lines, outline.items)
    assert text.splitlines()[1:] == ["  4-5 def loads(s)", "  8-9 def loads(s)"]


def test_callers_of_a_repeated_definition(tmp_path: Path) -> None:
    """Calls name `of`, never `of@2`: the callers of a second overload are the calls of its
    name that reach the overloads, as candidates (which overload a call reaches is not
    known), and the first overload keeps its resolved callers."""
    root = tmp_path / "repo"
    (root / "com" / "ex").mkdir(parents=True)
    (root / "com" / "ex" / "Factory.java").write_text(
        "package com.ex;\n"
        "public class Factory {\n"
        "  public static Factory of(String a, String b) { return new Factory(); }\n"
        '  public static Factory of(String a) { return of(a, "type"); }\n'
        "}\n"
    )
    (root / "com" / "ex" / "Main.java").write_text(
        "package com.ex;\n"
        "public class Main {\n"
        "  public static void main(String[] args) { Factory.of(args[0]); }\n"
        "}\n"
    )
    with treeseek.open(tmp_path / "t.db") as db:
        db.index(root, name="t")
        node, first = db.call_sites("t", "callers", "com/ex/Factory.java::Factory.of")
        assert node == "com/ex/Factory.java::Factory.of"
        node2, second = db.call_sites("t", "callers", "com/ex/Factory.java::Factory.of@2")
    assert node2 == "com/ex/Factory.java::Factory.of@2"
    assert {(s.caller, s.status) for s in first} == {
        ("com/ex/Factory.java::Factory.of@2", "resolved"),
        ("com/ex/Main.java::Main.main", "resolved"),
    }
    assert {(s.caller, s.status) for s in second} == {
        ("com/ex/Factory.java::Factory.of@2", "candidate"),
        ("com/ex/Main.java::Main.main", "candidate"),
    }


CPP_TEMPLATES = """namespace fmt {
template <typename T, typename Enable = void> class iterator_buffer {
 public:
  auto out() -> T { return out_; }
};

template <typename OutputIt>
class iterator_buffer<
    OutputIt,
    enable_if_t<is_contiguous<typename OutputIt::container_type>::value>>
    : public container_buffer<typename OutputIt::container_type> {
 public:
  auto out() -> OutputIt { return OutputIt(this->container); }
};

template <typename T>
struct is_contiguous<T, void_t<decltype(std::declval<T&>().data())>>
    : std::true_type {};

template <typename T, size_t SIZE>
void basic_memory_buffer<T, SIZE, std::allocator<T>>::grow(size_t size) {
  this->set(size);
}

GTEST_API_ Cardinality AtLeast(int n) { return Between(n, INT_MAX); }

struct format_to_result {
  FMT_CONSTEXPR operator char*() const { return out; }
};
}  // namespace fmt
"""


def test_cpp_template_specializations_and_macro_prefixes_get_plain_names() -> None:
    """A specialization is named by its template (args in the signature), a member defined
    out of line by its class without the arguments, a function after a macro by itself."""
    ix = index_file("include/fmt/base.hpp", CPP_TEMPLATES.encode())
    spans = {s.qname: (s.kind.value, s.start_line, s.end_line) for s in ix.symbols}
    assert spans == {
        "iterator_buffer": ("class", 2, 5),
        "iterator_buffer.out": ("method", 4, 4),
        "iterator_buffer@2": ("class", 7, 14),
        "iterator_buffer@2.out": ("method", 13, 13),
        "is_contiguous": ("class", 16, 18),
        "basic_memory_buffer.grow": ("method", 20, 23),
        "AtLeast": ("function", 25, 25),
        "format_to_result": ("class", 27, 29),
        "format_to_result.operator char*": ("method", 28, 28),
    }
    special = next(s for s in ix.symbols if s.qname == "iterator_buffer@2")
    assert special.signature.startswith("class iterator_buffer< OutputIt, enable_if_t<")


def test_cpp_misparse_does_not_make_a_class_a_function() -> None:
    """Unexpanded macros (fmt's base.h) can leave tree-sitter a 'function' whose return type
    is a whole class body: its name then spanned the class and owned its members."""
    broken = (
        "template <typename Char, int NUM_ARGS> class format_string_checker {\n"
        " private:\n"
        "  type types_[max_of<size_t>(1, NUM_ARGS)];\n"
        "  }\n"
        "  FMT_CONSTEXPR void on_text(const Char*, const Char*) {}\n"
    )
    spans = _spans("include/fmt/base.h", broken)
    assert spans == {"format_string_checker": ("class", 1, 4)}


def test_attributes_and_member_decorators_are_in_the_span() -> None:
    """Rust `#[cfg(unix)]` / `#[test]` and TypeScript member decorators are siblings before
    the definition in the syntax tree: the span starts at them, as a Python decorator's does
    (two `#[cfg]` variants of one function differ only there)."""
    rust = (
        "/// Docs.\n"
        "#[cfg(unix)]\n"
        "#[inline]\n"
        "pub fn is_block_device(md: &Metadata) -> bool {\n"
        "    true\n"
        "}\n"
        "\n"
        "#[cfg(windows)]\n"
        "pub fn is_block_device(_: &Metadata) -> bool {\n"
        "    false\n"
        "}\n"
        "\n"
        "impl DirEntry {\n"
        "    #[inline]\n"
        "    pub fn normal() -> Self {\n"
        "        Self {}\n"
        "    }\n"
        "}\n"
    )
    ix = index_file("src/filesystem.rs", rust.encode())
    spans = {s.qname: (s.start_line, s.end_line, s.decorators) for s in ix.symbols}
    assert spans == {
        "is_block_device": (2, 6, ("#[cfg(unix)]", "#[inline]")),
        "is_block_device@2": (8, 11, ("#[cfg(windows)]",)),
        "DirEntry.normal": (14, 17, ("#[inline]",)),
    }
    assert ix.symbols[0].docstring == "Docs."

    ts = (
        "export class A {\n"
        "  @HostListener('click')\n"
        "  onClick(e: Event): void {\n"
        "    this.x();\n"
        "  }\n"
        "\n"
        "  @Get(':id')\n"
        "  @Auth()\n"
        "  static async find(id: string) {}\n"
        "}\n"
    )
    ix = index_file("src/a.ts", ts.encode())
    spans = {s.qname: (s.start_line, s.end_line, s.decorators) for s in ix.symbols}
    assert spans == {
        "A": (1, 10, ()),
        "A.onClick": (2, 5, ("HostListener('click')",)),
        "A.find": (7, 9, ("Get(':id')", "Auth()")),
    }


def test_functions_in_a_rust_module_are_functions() -> None:
    rust = (
        "pub trait Get { fn get(&self); }\n"
        "impl Get for Cache { fn get(&self) {} }\n"
        "#[cfg(test)]\n"
        "mod tests {\n"
        "    use super::*;\n"
        "    #[test]\n"
        "    fn dash_prefixed_paths_detected() {}\n"
        "}\n"
    )
    kinds = {s.qname: s.kind.value for s in index_file("src/a.rs", rust.encode()).symbols}
    assert kinds == {
        "Get": "class",
        "Get.get": "method",
        "Cache.get": "method",
        "tests.dash_prefixed_paths_detected": "function",
    }


def test_ruby_class_self_block_methods_are_the_class_methods() -> None:
    """`class << self` holds the class's own methods, like `def self.x`: `Utils.escape`,
    static, not `Utils.<<self.escape`; its calls belong to the class (a symbol)."""
    ruby = (
        "module Rack\n"
        "  module Utils\n"
        "    class << self\n"
        "      attr_accessor :key_space_limit\n"
        "\n"
        "      def default_query_parser\n"
        "        QueryParser.make_default(65_536)\n"
        "      end\n"
        "    end\n"
        "\n"
        "    def self.escape(s)\n"
        "      s\n"
        "    end\n"
        "  end\n"
        "end\n"
    )
    ix = index_file("lib/rack/utils.rb", ruby.encode())
    syms = {s.qname: (s.kind.value, s.start_line, s.end_line, s.parent) for s in ix.symbols}
    assert syms == {
        "Rack": ("class", 1, 15, None),
        "Rack.Utils": ("class", 2, 14, "Rack"),
        "Rack.Utils.default_query_parser": ("method", 6, 8, "Rack.Utils"),
        "Rack.Utils.escape": ("method", 11, 13, "Rack.Utils"),
    }
    assert all(s.lang_payload.get("static") for s in ix.symbols if s.kind.value == "method")
    calls = {(e.src, e.dst_ref) for e in ix.edges if e.type.value == "calls"}
    assert calls == {
        ("Rack.Utils", "attr_accessor"),
        ("Rack.Utils.default_query_parser", "QueryParser.make_default"),
    }


JAVA_ANONYMOUS = """package com.google.gson.internal.bind;

public final class TypeAdapters {
  private TypeAdapters() {}

  public static final TypeAdapter<Class> CLASS =
      new TypeAdapter<Class>() {
        @Override
        public void write(JsonWriter out, Class value) {}

        @Override
        public Class read(JsonReader in) {
          return null;
        }
      };

  public static final TypeAdapter<BitSet> BIT_SET =
      new TypeAdapter<BitSet>() {
        @Override
        public BitSet read(JsonReader in) {
          return new BitSet();
        }
      };

  private enum Api {
    JACKSON_STREAM {
      @Override
      Parser newParser() {
        return new JacksonStreamParser();
      }
    },
    GSON_STREAM {
      @Override
      Parser newParser() {
        return new GsonStreamParser();
      }
    };

    abstract Parser newParser();
  }
}
"""


def test_java_anonymous_class_members_are_named_by_their_field() -> None:
    """Methods of `CLASS = new TypeAdapter<Class>() {...}` and of an enum constant's body are
    not members of the outer class: they were `TypeAdapters.read`, `read@2`, ... (gson's
    TypeAdapters: dozens), now `TypeAdapters.CLASS.read`, `Api.JACKSON_STREAM.newParser`."""
    ix = index_file("gson/TypeAdapters.java", JAVA_ANONYMOUS.encode())
    syms = {s.qname: (s.kind.value, s.start_line, s.end_line, s.parent) for s in ix.symbols}
    assert syms == {
        "TypeAdapters": ("class", 3, 41, None),
        "TypeAdapters.TypeAdapters": ("method", 4, 4, "TypeAdapters"),
        "TypeAdapters.CLASS.write": ("method", 8, 9, "TypeAdapters"),
        "TypeAdapters.CLASS.read": ("method", 11, 14, "TypeAdapters"),
        "TypeAdapters.BIT_SET.read": ("method", 19, 22, "TypeAdapters"),
        "TypeAdapters.Api": ("class", 25, 40, "TypeAdapters"),
        "TypeAdapters.Api.JACKSON_STREAM.newParser": ("method", 27, 30, "TypeAdapters.Api"),
        "TypeAdapters.Api.GSON_STREAM.newParser": ("method", 33, 36, "TypeAdapters.Api"),
        "TypeAdapters.Api.newParser": ("method", 39, 39, "TypeAdapters.Api"),
    }


C_FIELD_MACROS = """struct uv_prepare_s {
  UV_HANDLE_FIELDS
  UV_PREPARE_PRIVATE_FIELDS
};

UV_EXTERN int uv_prepare_init(uv_loop_t*, uv_prepare_t* prepare);

struct uv_timer_s {
  UV_HANDLE_FIELDS
  UV_TIMER_PRIVATE_FIELDS
};

int uv_timer_start(uv_timer_t* handle,
                   uv_timer_cb cb,
                   uint64_t timeout) {
  return uv__timer_start(handle,
                         cb,
                         timeout,
                         NULL
                         );
}
"""

CPP_NAMESPACE_MACROS = """#include <string>

FMT_BEGIN_NAMESPACE
namespace detail {
template <typename T> class allocator {
 public:
  void deallocate(T* p, size_t) { std::free(p); }
};
}  // namespace detail

FMT_BEGIN_EXPORT

template <typename T, size_t SIZE = inline_buffer_size>
class basic_memory_buffer : public detail::buffer<T> {
 private:
  T store_[SIZE];

  FMT_CONSTEXPR20 void deallocate() {
    T* data = this->data();
    if (data != store_) alloc_.deallocate(data, this->capacity());
  }
};

FMT_END_EXPORT
FMT_END_NAMESPACE
"""


def test_lines_holding_only_a_macro_do_not_derail_c_and_cpp_parsing() -> None:
    """A line that is one upper-case macro name (libuv's struct field lists, fmt's
    FMT_BEGIN_NAMESPACE) is invisible to tree-sitter's grammar: structs swallowed the ones
    after them (uv.h: uv_timer_s spanning 470 lines) and C++ classes vanished."""
    spans = _spans("include/uv.h", C_FIELD_MACROS)
    assert spans == {
        "uv_prepare_s": ("class", 1, 4),
        "uv_timer_s": ("class", 8, 11),
        "uv_timer_start": ("function", 13, 21),
    }
    ix = index_file("include/uv.h", C_FIELD_MACROS.encode())
    calls = {(e.src, e.dst_ref) for e in ix.edges if e.type.value == "calls"}
    assert calls == {("uv_timer_start", "uv__timer_start")}  # a macro argument left alone
    spans = _spans("include/fmt/format.h", CPP_NAMESPACE_MACROS)
    assert spans == {
        "allocator": ("class", 5, 8),
        "allocator.deallocate": ("method", 7, 7),
        "basic_memory_buffer": ("class", 13, 22),
        "basic_memory_buffer.deallocate": ("method", 18, 21),
    }


def test_c_function_returning_a_function_pointer_is_named() -> None:
    c = (
        "static int (*get_handler(int kind))(int) {\n"
        "  return handlers[kind];\n"
        "}\n"
        "\n"
        "void (*signal(int sig, void (*func)(int)))(int) {\n"
        "  return func;\n"
        "}\n"
    )
    assert _spans("src/x.c", c) == {
        "get_handler": ("function", 1, 3),
        "signal": ("function", 5, 7),
    }


def test_functions_made_by_a_test_macro_are_named_by_the_invocation() -> None:
    """`TEST(format_test, locking) {...}` (gtest, C++) was `TEST`, `TEST@2`, ... `TEST@107` in
    one file; libuv's `TEST_IMPL(tcp_open) {...}` (C) was no symbol at all."""
    cpp = (
        "TEST(format_test, locking) {\n"
        "  EXPECT_EQ(1, 1);\n"
        "}\n"
        "\n"
        "TEST_F(file_test, close) { EXPECT_TRUE(f.close()); }\n"
        "\n"
        "class RE {\n"
        " public:\n"
        "  RE(const char* regex) { Init(regex); }\n"
        "};\n"
    )
    assert _spans("test/format-test.cc", cpp) == {
        "TEST(format_test, locking)": ("function", 1, 3),
        "TEST_F(file_test, close)": ("function", 5, 5),
        "RE": ("class", 7, 10),
        "RE.RE": ("method", 9, 9),
    }
    c = (
        "TEST_IMPL(tcp_open) {\n"
        "  uv_os_sock_t sock;\n"
        "  return 0;\n"
        "}\n"
        "\n"
        "static void close_cb(uv_handle_t* handle) {\n"
        "  close_cb_called++;\n"
        "}\n"
    )
    assert _spans("test/test-tcp-open.c", c) == {
        "TEST_IMPL(tcp_open)": ("function", 1, 4),
        "close_cb": ("function", 6, 8),
    }


JS_COMMONJS = """'use strict';
const path = require('path');

function Router(options) {
  this.stack = [];
}

Router.prototype.use = function use(fn) {
  this.stack.push(fn);
  return this;
};

module.exports = Router;
module.exports.helper = function helper(req) {
  return path.join(req);
};
exports.parse = (s) => JSON.parse(s);

export const api = {
  get: (url) => fetch(url),
  post(url, body) {
    return fetch(url, body);
  },
};
"""


def test_functions_assigned_to_exports_prototypes_and_object_literals() -> None:
    """`exports.parse = (s) => ...`, `Router.prototype.use = function ...` and the functions of
    `const api = {...}` were no symbols (or a bare top-level `post`); their calls were
    module-level."""
    ix = index_file("lib/router.js", JS_COMMONJS.encode())
    syms = {s.qname: (s.kind.value, s.start_line, s.end_line, s.parent) for s in ix.symbols}
    assert syms == {
        "Router": ("function", 4, 6, None),
        "Router.use": ("method", 8, 11, "Router"),
        "helper": ("function", 14, 16, None),
        "parse": ("function", 17, 17, None),
        "api.get": ("method", 20, 20, None),
        "api.post": ("method", 21, 23, None),
    }
    exported = {s.qname for s in ix.symbols if s.lang_payload.get("exported")}
    assert exported == {"helper", "parse"}
    calls = {(e.src, e.dst_ref) for e in ix.edges if e.type.value == "calls"}
    assert {
        ("Router.use", "this.stack.push"),
        ("helper", "path.join"),
        ("parse", "JSON.parse"),
        ("api.get", "fetch"),
        ("api.post", "fetch"),
    } <= calls
    ts = index_file("src/router.ts", JS_COMMONJS.encode())
    assert {s.qname for s in ts.symbols} == set(syms)


def test_outline_language_of_a_cpp_header_named_h(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "widget.h").write_text(CPP_HEADER)
    (root / "uv.h").write_text(C_HEADER)
    with treeseek.open(tmp_path / "t.db") as db:
        db.index(root, name="t")
        assert db.outline("t", "widget.h").files[0].language == "cpp"
        assert db.outline("t", "uv.h").files[0].language == "c"


def test_typescript_namespace_members_are_qualified_by_it() -> None:
    """Code calls them `util.assertEqual(...)`: zod's v3 helpers had `assertEqual` at top level."""
    ts = (
        "export namespace util {\n"
        "  export function assertEqual<T>(_: T) {}\n"
        "  export const arrayToEnum = <T extends string>(items: T[]) => items;\n"
        "  export class Helper {\n"
        "    run() {}\n"
        "  }\n"
        "}\n"
        "namespace a.b {\n"
        "  function g() {}\n"
        "}\n"
    )
    ix = index_file("src/helpers/util.ts", ts.encode())
    syms = {s.qname: (s.kind.value, s.start_line, s.end_line, s.parent) for s in ix.symbols}
    assert syms == {
        "util.assertEqual": ("function", 2, 2, None),
        "util.arrayToEnum": ("function", 3, 3, None),
        "util.Helper": ("class", 4, 6, None),
        "util.Helper.run": ("method", 5, 5, "util.Helper"),
        "a.b.g": ("function", 9, 9, None),
    }


def test_java_record_compact_constructor_is_a_symbol() -> None:
    java = (
        "public record Point(int x, int y) {\n"
        "  public Point {\n"
        "    if (x < 0) throw new IllegalArgumentException();\n"
        "  }\n"
        "}\n"
    )
    assert _spans("src/Point.java", java) == {
        "Point": ("class", 1, 5),
        "Point.Point": ("method", 2, 4),
    }


def test_a_type_whose_methods_come_first_keeps_its_chunk() -> None:
    """gin's tree.go defines node's addChild (71) before `type node struct` (99): the struct's
    block was cut at its 'first member', above its own start, so it had no chunk of its own."""
    go = (
        "package gin\n"
        "\n"
        "func (n *node) addChild(child *node) {\n"
        "\tn.children = append(n.children, child)\n"
        "}\n"
        "\n"
        "type node struct {\n"
        "\tpath     string\n"
        "\tchildren []*node\n"
        "}\n"
        "\n"
        "func (n *node) incrementChildPrio(pos int) int {\n"
        "\treturn pos\n"
        "}\n"
    )
    chunks = index_file("tree.go", go.encode()).chunks
    assert [(c.start_line, c.end_line, c.symbol) for c in chunks] == [
        (1, 1, None),
        (3, 5, "node.addChild"),
        (7, 10, "node"),
        (12, 14, "node.incrementChildPrio"),
    ]


def test_outline_nests_only_what_a_span_contains(tmp_path: Path) -> None:
    """A Go method or a Rust trait impl's method has its type as parent wherever it is: the
    outline indented it under whatever top-level function came before it, as if nested."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "tree.go").write_text(
        "package gin\n"
        "\n"
        "type node struct {\n"
        "\tpath string\n"
        "}\n"
        "\n"
        "func longestCommonPrefix(a, b string) int {\n"
        "\treturn 0\n"
        "}\n"
        "\n"
        "func (n *node) addChild(child *node) {\n"
        "\tn.path = child.path\n"
        "}\n"
    )
    (root / "entry.rs").write_text(
        "pub struct DirEntry {\n"
        "    inner: u8,\n"
        "}\n"
        "\n"
        "impl DirEntry {\n"
        "    pub fn path(&self) -> u8 {\n"
        "        self.inner\n"
        "    }\n"
        "}\n"
    )
    with treeseek.open(tmp_path / "t.db") as db:
        db.index(root, name="t")
        go = db.outline("t", "tree.go").files[0]
        rs = db.outline("t", "entry.rs").files[0]
    assert [(i.name_path, i.depth) for i in go.items] == [
        ("tree.go::node", 0),
        ("tree.go::longestCommonPrefix", 0),
        ("tree.go::node.addChild", 0),
    ]
    assert [(i.name_path, i.depth) for i in rs.items] == [
        ("entry.rs::DirEntry", 0),
        ("entry.rs::DirEntry.path", 1),  # right after its struct
    ]


def test_anonymous_default_exports_are_named_default() -> None:
    """`export default class { m() {} }` gave a top-level function `m`; an anonymous
    `export default function () {}` or arrow was no symbol."""
    for path in ("src/page.ts", "src/page.js"):
        cls = "export default class {\n  m() {\n    return 1;\n  }\n}\n"
        assert _spans(path, cls) == {"default": ("class", 1, 5), "default.m": ("method", 2, 4)}
        fn = "export default function () {\n  return 1;\n}\n"
        assert _spans(path, fn) == {"default": ("function", 1, 3)}
        arrow = "export default async (req, res) => {\n  res.send(1);\n};\n"
        assert _spans(path, arrow) == {"default": ("function", 1, 3)}
        named = "export default function handler(req) {\n  return req;\n}\n"
        assert _spans(path, named) == {"handler": ("function", 1, 3)}
