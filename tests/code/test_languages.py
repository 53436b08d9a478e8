"""Per-language symbols, spans, edges and chunks on small real snippets."""

from __future__ import annotations

from treeseek.code.model import EdgeType, FileCodeIndex, SymbolKind
from treeseek.code.parse import index_file

JS = r"""import React, { useState as useS } from 'react';
import * as utils from './utils';
const helper = require('../lib/helper');
export const MAX_SIZE = 10;

/** Greets people. */
export class Greeter extends Base {
  constructor(name) { super(); this.name = name; }
  async greet() { return utils.format(this.name); }
  #secret() { helper.run(); }
}

export function main() {
  const g = new Greeter("x");
  g.greet();
}

const add = (a, b) => a + b;
"""

TS = r"""import { Service } from "./service";

export interface Repo<T> extends Base<T> {
  find(id: string): T;
}

@Injectable()
export class UserRepo extends BaseRepo implements Repo<User>, Other {
  private cache: Map<string, User> = new Map();
  public async find(id: string): Promise<User> {
    return this.cache.get(id) ?? new Service().load(id);
  }
}

export type Id = string;
export enum Color { Red, Green }
function topLevel(x: number): number { return x * 2; }
"""

GO = r"""package server

import (
	"fmt"
	h "net/http"
	"github.com/acme/proj/internal/store"
)

const MaxConns = 10

// Server serves things.
type Server struct {
	store.Base
	addr string
}

type Handler interface {
	Serve() error
}

// Start starts the server.
func (s *Server) Start() error {
	fmt.Println("start")
	return h.ListenAndServe(s.addr, nil)
}

func New(addr string) *Server {
	return &Server{addr: addr}
}
"""

RUST = r"""use crate::store::{Store, Item as It};
use std::collections::HashMap;

/// A cache.
#[derive(Debug)]
pub struct Cache {
    map: HashMap<String, It>,
}

pub trait Get {
    fn get(&self, k: &str) -> Option<&It>;
}

impl Get for Cache {
    fn get(&self, k: &str) -> Option<&It> {
        self.map.get(k)
    }
}

impl Cache {
    pub fn new() -> Self {
        let s = Store::open();
        Cache { map: HashMap::new() }
    }
}

pub const LIMIT: usize = 5;

fn helper() { Cache::new(); }
"""

JAVA = r"""package com.acme.app;

import com.acme.store.Repo;
import java.util.List;

/** The app. */
@Service
public class App extends BaseApp implements Runnable, Closeable {
    private final Repo repo;

    public App(Repo repo) { this.repo = repo; }

    @Override
    public void run() {
        List<String> xs = repo.findAll();
        helper(xs);
        new Thread(this).start();
    }

    private static void helper(List<String> xs) {}
}
"""

C = r"""#include <stdio.h>
#include "util.h"

struct point { int x; int y; };

typedef struct { int w; } size_t2;

/* Adds. */
static int add(int a, int b) {
    return a + b;
}

int main(void) {
    printf("%d\n", add(1, 2));
    util_run();
    return 0;
}
"""

CPP = r"""#include "shape.hpp"
#include <vector>

namespace geo {

class Circle : public Shape, private Named {
public:
    double area() const override { return 3.14 * r * r; }
private:
    double r;
};

double Circle::perimeter() const {
    return 2 * 3.14 * helper(r);
}

}  // namespace geo

int main() {
    auto c = new geo::Circle();
    std::vector<int> v;
    v.push_back(c->area());
}
"""

RUBY = r"""require 'json'
require_relative 'lib/helper'

module Shop
  # An order.
  class Order < Base
    TAX = 0.2

    def initialize(items)
      @items = items
    end

    def total
      Helper.sum(@items) * (1 + TAX)
    end

    def self.build(data)
      new(JSON.parse(data))
    end
  end
end
"""

CSHARP = r"""using System;
using Acme.Store;

namespace Acme.App
{
    /// <summary>The app.</summary>
    [Serializable]
    public class App : BaseApp, IDisposable
    {
        private readonly Repo repo;

        public App(Repo repo) { this.repo = repo; }

        public async Task RunAsync()
        {
            var items = repo.FindAll();
            Console.WriteLine(items.Count);
            var h = new Helper();
        }

        public void Dispose() {}
    }

    public interface IThing { void Do(); }
}
"""


def _ix(path: str, text: str) -> FileCodeIndex:
    ix = index_file(path, text.encode())
    assert ix.parse_error is None, ix.parse_error
    return ix


def _syms(ix: FileCodeIndex) -> dict[str, tuple[str, int, int, str | None]]:
    return {s.qname: (s.kind.value, s.start_line, s.end_line, s.parent) for s in ix.symbols}


def _edges(ix: FileCodeIndex, type_: EdgeType) -> set[tuple[str, str]]:
    return {(e.src, e.dst_ref) for e in ix.edges if e.type is type_}


def _chunk_covering(ix: FileCodeIndex, line: int) -> set[str | None]:
    return {c.symbol for c in ix.chunks if c.start_line <= line <= c.end_line}


def test_javascript() -> None:
    ix = _ix("web/src/greeter.js", JS)
    assert ix.language == "javascript" and ix.module == "web/src/greeter"
    assert _syms(ix) == {
        "MAX_SIZE": ("const", 4, 4, None),
        "Greeter": ("class", 7, 11, None),
        "Greeter.constructor": ("method", 8, 8, "Greeter"),
        "Greeter.greet": ("method", 9, 9, "Greeter"),
        "Greeter.#secret": ("method", 10, 10, "Greeter"),
        "main": ("function", 13, 16, None),
        "add": ("function", 18, 18, None),
    }
    greeter = next(s for s in ix.symbols if s.name == "Greeter")
    assert greeter.docstring == "Greets people." and greeter.lang_payload["exported"]
    assert next(s for s in ix.symbols if s.name == "greet").lang_payload["async"] is True
    imports = {e.dst_ref: e.lang_payload for e in ix.edges if e.type is EdgeType.IMPORTS}
    assert imports["react"]["default"] == "React"
    assert imports["react"]["names"] == [["useState", "useS"]]
    assert imports["./utils"]["namespace"] == "utils"
    assert imports["../lib/helper"]["kind"] == "require"
    calls = _edges(ix, EdgeType.CALLS)
    assert {("Greeter.greet", "utils.format"), ("main", "Greeter"), ("main", "g.greet")} <= calls
    assert _edges(ix, EdgeType.INHERITS) == {("Greeter", "Base")}


def test_typescript_and_tsx() -> None:
    for path in ("src/repo.ts", "src/repo.tsx"):
        ix = _ix(path, TS)
        syms = _syms(ix)
        assert syms["Repo"][0] == "class"  # interface
        assert syms["UserRepo.find"] == ("method", 10, 12, "UserRepo")
        assert syms["Color"][0] == "class" and syms["topLevel"][0] == "function"
        user_repo = next(s for s in ix.symbols if s.name == "UserRepo")
        assert user_repo.decorators == ("Injectable()",)
        assert user_repo.start_line == 7  # decorator and export included
        find = next(s for s in ix.symbols if s.name == "find")
        assert find.lang_payload == {"visibility": "public", "async": True}
        assert _edges(ix, EdgeType.INHERITS) == {
            ("Repo", "Base"),
            ("UserRepo", "BaseRepo"),
            ("UserRepo", "Repo"),
            ("UserRepo", "Other"),
        }
        assert ("UserRepo.find", "Service().load") in _edges(ix, EdgeType.CALLS)


def test_go() -> None:
    ix = _ix("internal/server/server.go", GO)
    assert ix.module == "internal/server" and ix.package == "server"
    assert _syms(ix) == {
        "MaxConns": ("const", 9, 9, None),
        "Server": ("class", 12, 15, None),
        "Handler": ("class", 17, 19, None),
        "Server.Start": ("method", 22, 25, "Server"),
        "New": ("function", 27, 29, None),
    }
    start = next(s for s in ix.symbols if s.name == "Start")
    assert start.docstring == "Start starts the server."
    assert start.lang_payload == {"receiver": "Server", "visibility": "public"}
    imports = {e.dst_ref: e.lang_payload for e in ix.edges if e.type is EdgeType.IMPORTS}
    assert imports["net/http"] == {"module": "net/http", "alias": "h"}
    assert "github.com/acme/proj/internal/store" in imports
    assert ("Server.Start", "h.ListenAndServe") in _edges(ix, EdgeType.CALLS)
    assert _edges(ix, EdgeType.INHERITS) == {("Server", "store.Base")}  # embedding


def test_rust() -> None:
    ix = _ix("src/cache.rs", RUST)
    assert ix.module == "crate::cache"
    syms = _syms(ix)
    assert syms["Cache"] == ("class", 5, 8, None)  # `#[derive(Debug)]` included
    assert syms["Cache.new"] == ("method", 21, 24, "Cache")  # from `impl Cache`
    assert syms["Cache.get"] == ("method", 15, 17, "Cache")  # from `impl Get for Cache`
    assert syms["Get.get"] == ("method", 11, 11, "Get")
    assert syms["LIMIT"][0] == "const" and syms["helper"][0] == "function"
    cache = next(s for s in ix.symbols if s.qname == "Cache")
    assert cache.decorators == ("#[derive(Debug)]",) and cache.docstring == "A cache."
    imports = {
        e.dst_ref: e.lang_payload.get("alias") for e in ix.edges if e.type is EdgeType.IMPORTS
    }
    assert imports == {
        "crate::store::Store": None,
        "crate::store::Item": "It",
        "std::collections::HashMap": None,
    }
    assert ("Cache", "Get") in _edges(ix, EdgeType.INHERITS)
    assert {("Cache.new", "Store.open"), ("helper", "Cache.new")} <= _edges(ix, EdgeType.CALLS)


def test_java() -> None:
    ix = _ix("src/main/java/com/acme/app/App.java", JAVA)
    assert ix.module == "com.acme.app.App" and ix.package == "com.acme.app"
    syms = _syms(ix)
    assert syms["App"] == ("class", 7, 21, None)
    assert syms["App.App"] == ("method", 11, 11, "App")  # constructor
    assert syms["App.run"] == ("method", 13, 18, "App")
    app = next(s for s in ix.symbols if s.qname == "App")
    assert app.decorators == ("Service",) and app.docstring == "The app."
    helper = next(s for s in ix.symbols if s.name == "helper")
    assert helper.lang_payload == {"visibility": "private", "static": True}
    assert _edges(ix, EdgeType.INHERITS) == {
        ("App", "BaseApp"),
        ("App", "Runnable"),
        ("App", "Closeable"),
    }
    calls = _edges(ix, EdgeType.CALLS)
    assert {("App.run", "repo.findAll"), ("App.run", "helper"), ("App.run", "Thread")} <= calls
    assert {e.dst_ref for e in ix.edges if e.type is EdgeType.IMPORTS} == {
        "com.acme.store.Repo",
        "java.util.List",
    }


def test_c() -> None:
    ix = _ix("src/main.c", C)
    assert _syms(ix) == {
        "point": ("class", 4, 4, None),
        "size_t2": ("class", 6, 6, None),
        "add": ("function", 9, 11, None),
        "main": ("function", 13, 17, None),
    }
    assert next(s for s in ix.symbols if s.name == "add").docstring == "Adds."
    assert next(s for s in ix.symbols if s.name == "main").is_entry_candidate
    includes = {e.dst_ref: e.lang_payload["local"] for e in ix.edges if e.type is EdgeType.IMPORTS}
    assert includes == {"stdio.h": False, "util.h": True}
    assert {("main", "add"), ("main", "util_run")} <= _edges(ix, EdgeType.CALLS)
    assert _chunk_covering(ix, 10) == {"add"}


def test_cpp() -> None:
    ix = _ix("src/circle.cpp", CPP)
    syms = _syms(ix)
    assert syms["Circle"] == ("class", 6, 11, None)
    assert syms["Circle.area"] == ("method", 8, 8, "Circle")
    assert syms["Circle.perimeter"] == ("method", 13, 15, "Circle")  # out-of-line definition
    assert _edges(ix, EdgeType.INHERITS) == {("Circle", "Shape"), ("Circle", "Named")}
    calls = _edges(ix, EdgeType.CALLS)
    assert {("Circle.perimeter", "helper"), ("main", "geo.Circle"), ("main", "c.area")} <= calls


def test_ruby() -> None:
    ix = _ix("lib/shop/order.rb", RUBY)
    assert _syms(ix) == {
        "Shop": ("class", 4, 21, None),
        "Shop.Order": ("class", 6, 20, "Shop"),
        "Shop.Order.initialize": ("method", 9, 11, "Shop.Order"),
        "Shop.Order.total": ("method", 13, 15, "Shop.Order"),
        "Shop.Order.build": ("method", 17, 19, "Shop.Order"),
    }
    order = next(s for s in ix.symbols if s.qname == "Shop.Order")
    assert order.docstring == "An order." and order.signature == "class Order < Base"
    assert next(s for s in ix.symbols if s.name == "build").lang_payload["static"] is True
    imports = {e.dst_ref: e.lang_payload["local"] for e in ix.edges if e.type is EdgeType.IMPORTS}
    assert imports == {"json": False, "lib/helper": True}
    assert ("Shop.Order.total", "Helper.sum") in _edges(ix, EdgeType.CALLS)
    assert _edges(ix, EdgeType.INHERITS) == {("Shop.Order", "Base")}


def test_csharp() -> None:
    ix = _ix("src/App.cs", CSHARP)
    assert ix.package == "Acme.App"
    syms = _syms(ix)
    assert syms["App.RunAsync"] == ("method", 14, 19, "App")
    assert syms["IThing"][0] == "class" and syms["IThing.Do"][3] == "IThing"
    app = next(s for s in ix.symbols if s.qname == "App")
    assert app.docstring == "The app." and app.decorators == ("[Serializable]",)
    run = next(s for s in ix.symbols if s.name == "RunAsync")
    assert run.lang_payload == {"visibility": "public", "async": True}
    assert _edges(ix, EdgeType.INHERITS) == {("App", "BaseApp"), ("App", "IDisposable")}
    assert {("App.RunAsync", "repo.FindAll"), ("App.RunAsync", "Helper")} <= _edges(
        ix, EdgeType.CALLS
    )
    assert {e.dst_ref for e in ix.edges if e.type is EdgeType.IMPORTS} == {"System", "Acme.Store"}


def test_every_language_chunks_cover_all_lines_with_content() -> None:
    cases = {
        "a.js": JS,
        "a.ts": TS,
        "a.go": GO,
        "a.rs": RUST,
        "A.java": JAVA,
        "a.c": C,
        "a.cpp": CPP,
        "a.rb": RUBY,
        "a.cs": CSHARP,
    }
    for path, text in cases.items():
        ix = _ix(path, text)
        lines = text.split("\n")
        for no, line in enumerate(lines, 1):
            if line.strip() not in ("", "}", "end", "};"):
                assert any(c.start_line <= no <= c.end_line for c in ix.chunks), (path, no)
        assert all(c.symbol is None or c.symbol in {s.qname for s in ix.symbols} for c in ix.chunks)
        kinds = {s.kind for s in ix.symbols}
        assert SymbolKind.CLASS in kinds or SymbolKind.FUNCTION in kinds


def test_class_field_arrow_functions_are_methods() -> None:
    ts = _ix("a.ts", "class A {\n  handle = async () => { b(); };\n  private n: number = 1;\n}\n")
    assert _syms(ts)["A.handle"] == ("method", 2, 2, "A")
    assert next(s for s in ts.symbols if s.name == "handle").lang_payload["async"] is True
    js = _ix("a.jsx", "class A {\n  handle = () => { b(); };\n}\n")
    assert _syms(js)["A.handle"] == ("method", 2, 2, "A")
    assert ("A.handle", "b") in _edges(js, EdgeType.CALLS)
