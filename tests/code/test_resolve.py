"""Cross-file resolution over small real trees, one per language."""

from __future__ import annotations

import textwrap

from treeseek.code.model import EdgeType, FileCodeIndex, Resolution, ResolvedEdge
from treeseek.code.parse import index_file
from treeseek.code.resolve import ResolvedTree, resolve_tree


def _tree(files: dict[str, str]) -> dict[str, FileCodeIndex]:
    return {p: index_file(p, textwrap.dedent(t).encode()) for p, t in files.items()}


def _find(rt: ResolvedTree, path: str, src: str, ref: str, type_: EdgeType) -> ResolvedEdge:
    hits = [
        e
        for e in rt.edges
        if e.src_path == path and e.src == src and e.dst_ref == ref and e.type is type_
    ]
    assert len(hits) == 1, (path, src, ref, [(e.src, e.dst_ref) for e in rt.edges])
    return hits[0]


def _dst(e: ResolvedEdge) -> tuple[str, str | None, str | None]:
    return (e.resolution.value, e.dst_path, e.dst_symbol)


PY_TREE = {
    "src/shop/__init__.py": """\
        from .models import Order
        from .services.billing import charge as bill
        """,
    "src/shop/models.py": """\
        from django.db import models

        class Base(models.Model):
            def save(self, *args):
                return 1

            def clean(self):
                return 2

        class Order(Base):
            def save(self, *args):
                self.clean()
                return super().save(*args)

            def total(self):
                return helper(self)

        def helper(order):
            return 0
        """,
    "src/shop/services/__init__.py": "",
    "src/shop/services/billing.py": """\
        import shop.models as m
        import shop.services
        from ..models import Order, helper as h
        from .. import models
        from . import tax
        from .tax import *

        def charge(order: Order) -> int:
            o = Order()
            o.total()
            Order().total()
            m.Order.save(order)
            models.helper(order)
            h(order)
            rate()
            tax.rate()
            shop.services.tax.rate()
            return json.dumps(order)

        class Invoice(m.Base):
            def save(self):
                return self.clean()
        """,
    "src/shop/services/tax.py": """\
        def rate():
            return 0.2
        """,
    "src/app.py": """\
        from shop import Order, bill
        import shop

        def run():
            bill(Order())
            shop.Order.total(None)
            shop.missing()
        """,
}


def test_python_imports_absolute_relative_aliases_and_reexports() -> None:
    rt = resolve_tree(_tree(PY_TREE))
    billing = "src/shop/services/billing.py"
    imp = EdgeType.IMPORTS
    assert _dst(_find(rt, billing, "", "shop.models", imp)) == (
        "resolved",
        "src/shop/models.py",
        None,
    )
    assert _dst(_find(rt, billing, "", "..models.Order", imp)) == (
        "resolved",
        "src/shop/models.py",
        "Order",
    )
    assert _dst(_find(rt, billing, "", "..models.helper", imp))[2] == "helper"
    assert _dst(_find(rt, billing, "", "..models", imp)) == (
        "resolved",
        "src/shop/models.py",
        None,
    )
    assert _dst(_find(rt, billing, "", ".tax", imp))[1] == "src/shop/services/tax.py"
    assert _dst(_find(rt, billing, "", ".tax.*", imp))[1] == "src/shop/services/tax.py"
    # third-party: no destination
    assert _dst(_find(rt, "src/shop/models.py", "", "django.db.models", imp)) == (
        "partial",
        None,
        None,
    )
    # re-export through the package __init__: `from shop import Order, bill`
    assert _dst(_find(rt, "src/app.py", "", "shop.Order", imp)) == (
        "resolved",
        "src/shop/models.py",
        "Order",
    )
    assert _dst(_find(rt, "src/app.py", "", "shop.bill", imp)) == (
        "resolved",
        billing,
        "charge",
    )


def test_python_calls_and_inherits_through_bindings_and_classes() -> None:
    rt = resolve_tree(_tree(PY_TREE))
    billing = "src/shop/services/billing.py"
    models = "src/shop/models.py"
    calls = EdgeType.CALLS

    def call(path: str, src: str, ref: str) -> tuple[str, str | None, str | None]:
        return _dst(_find(rt, path, src, ref, calls))

    assert call(billing, "charge", "Order") == ("resolved", models, "Order")
    assert call(billing, "charge", "Order().total") == ("resolved", models, "Order.total")
    assert call(billing, "charge", "m.Order.save") == ("resolved", models, "Order.save")
    assert call(billing, "charge", "models.helper") == ("resolved", models, "helper")
    assert call(billing, "charge", "h") == ("resolved", models, "helper")
    assert call(billing, "charge", "rate") == ("resolved", "src/shop/services/tax.py", "rate")
    assert call(billing, "charge", "tax.rate") == ("resolved", "src/shop/services/tax.py", "rate")
    assert call(billing, "charge", "shop.services.tax.rate")[2] == "rate"
    assert call(billing, "charge", "o.total") == ("partial", None, None)  # a local variable
    assert call(billing, "charge", "json.dumps") == ("partial", None, None)
    # self / super through the hierarchy, inherited methods included
    assert call(models, "Order.save", "self.clean") == ("resolved", models, "Base.clean")
    assert call(models, "Order.save", "super().save") == ("resolved", models, "Base.save")
    assert call(models, "Order.total", "helper") == ("resolved", models, "helper")
    assert call(billing, "Invoice.save", "self.clean") == ("resolved", models, "Base.clean")
    app = "src/app.py"
    assert call(app, "run", "bill") == ("resolved", billing, "charge")
    assert call(app, "run", "shop.Order.total") == ("resolved", models, "Order.total")
    assert call(app, "run", "shop.missing") == ("partial", "src/shop/__init__.py", None)
    inh = EdgeType.INHERITS
    assert _dst(_find(rt, models, "Order", "Base", inh)) == ("resolved", models, "Base")
    assert _dst(_find(rt, billing, "Invoice", "m.Base", inh)) == ("resolved", models, "Base")
    assert _dst(_find(rt, models, "Base", "models.Model", inh)) == ("partial", None, None)


def test_python_class_scope_is_not_visible_from_methods() -> None:
    rt = resolve_tree(
        _tree(
            {
                "m.py": """\
                    def helper():
                        return 1

                    class A:
                        def helper(self):
                            return 2

                        def run(self):
                            return helper()
                    """
            }
        )
    )
    assert _dst(_find(rt, "m.py", "A.run", "helper", EdgeType.CALLS)) == (
        "resolved",
        "m.py",
        "helper",
    )


def test_import_cycles_and_self_inheritance_terminate() -> None:
    rt = resolve_tree(
        _tree(
            {
                "pkg/__init__.py": "from .a import *\n",
                "pkg/a.py": "from .b import *\nfrom .b import thing\n",
                "pkg/b.py": "from .a import *\nfrom .a import thing\n",
                "pkg/c.py": """\
                    from pkg import thing
                    class Loop(Loop):
                        def f(self):
                            return self.g()
                    thing()
                    """,
            }
        )
    )
    assert _dst(_find(rt, "pkg/c.py", "", "thing", EdgeType.CALLS))[0] == "partial"
    assert _dst(_find(rt, "pkg/c.py", "Loop.f", "self.g", EdgeType.CALLS)) == (
        "partial",
        "pkg/c.py",
        "Loop",
    )


def test_django_urlconf_handlers_resolve_to_views() -> None:
    rt = resolve_tree(
        _tree(
            {
                "shop/views.py": """\
                    def index(request):
                        return None

                    class ItemDetail(View):
                        pass
                    """,
                "shop/urls.py": """\
                    from django.urls import path
                    from . import views

                    urlpatterns = [
                        path("", views.index),
                        path("items/<int:pk>/", views.ItemDetail.as_view()),
                    ]
                    """,
            }
        )
    )
    handlers = [
        (e.entrypoint.route_or_command, e.handler_path, e.handler_symbol) for e in rt.entrypoints
    ]
    assert handlers == [
        ("", "shop/views.py", "index"),
        ("items/<int:pk>/", "shop/views.py", "ItemDetail"),
    ]


def test_javascript_and_typescript_relative_imports() -> None:
    rt = resolve_tree(
        _tree(
            {
                "web/src/util/index.ts": "export function format(x: string) { return x; }\n",
                "web/src/model.ts": """\
                    export class User { save(): void {} }
                    export default class Admin extends User {}
                    """,
                "web/src/app.tsx": """\
                    import * as util from "./util";
                    import Admin, { User as U } from "./model";
                    import React from "react";
                    const lib = require("./model.js");

                    export function App() {
                        util.format("x");
                        const u = new U();
                        U.prototype.save();
                        return new Admin();
                    }
                    class Root extends U {}
                    """,
            }
        )
    )
    app = "web/src/app.tsx"
    imp = EdgeType.IMPORTS
    assert _dst(_find(rt, app, "", "./util", imp)) == ("resolved", "web/src/util/index.ts", None)
    assert _dst(_find(rt, app, "", "./model", imp))[1] == "web/src/model.ts"
    assert _dst(_find(rt, app, "", "./model.js", imp))[1] == "web/src/model.ts"
    assert _dst(_find(rt, app, "", "react", imp)) == ("partial", None, None)
    calls = EdgeType.CALLS
    assert _dst(_find(rt, app, "App", "util.format", calls)) == (
        "resolved",
        "web/src/util/index.ts",
        "format",
    )
    assert _dst(_find(rt, app, "App", "U", calls)) == ("resolved", "web/src/model.ts", "User")
    assert _dst(_find(rt, app, "App", "Admin", calls)) == ("resolved", "web/src/model.ts", "Admin")
    assert _dst(_find(rt, app, "Root", "U", EdgeType.INHERITS))[2] == "User"


def test_go_package_paths_and_same_package_calls() -> None:
    rt = resolve_tree(
        _tree(
            {
                "internal/store/store.go": """\
                    package store

                    type Base struct{}

                    func Open(path string) *Base { return &Base{} }
                    """,
                "internal/store/util.go": "package store\n\nfunc helper() {}\n",
                "cmd/app/main.go": """\
                    package main

                    import (
                        "fmt"
                        st "github.com/acme/proj/internal/store"
                    )

                    func main() {
                        st.Open("x")
                        fmt.Println("hi")
                    }
                    """,
                "internal/store/more.go": "package store\n\nfunc More() { helper() }\n",
            }
        )
    )
    main = "cmd/app/main.go"
    assert _dst(_find(rt, main, "", "github.com/acme/proj/internal/store", EdgeType.IMPORTS))[
        1
    ].startswith("internal/store/")
    assert _dst(_find(rt, main, "main", "st.Open", EdgeType.CALLS)) == (
        "resolved",
        "internal/store/store.go",
        "Open",
    )
    assert _dst(_find(rt, main, "main", "fmt.Println", EdgeType.CALLS))[0] == "partial"
    assert _dst(_find(rt, "internal/store/more.go", "More", "helper", EdgeType.CALLS)) == (
        "resolved",
        "internal/store/util.go",
        "helper",
    )


def test_go_import_names_the_file_named_like_its_package() -> None:
    """A package import is one file's edge: the file named like the package (gin.go imports
    render/render.go), not the alphabetically first one (render/bson.go) or a test."""
    rt = resolve_tree(
        _tree(
            {
                "render/a_test.go": "package render\n\nfunc TestX() {}\n",
                "render/bson.go": "package render\n\ntype BSON struct{}\n",
                "render/render.go": "package render\n\ntype Render interface{}\n",
                "internal/fs/afs.go": "package fs\n\nfunc A() {}\n",
                "internal/fs/fs_test.go": "package fs\n\nfunc TestFS() {}\n",
                "gin.go": (
                    "package gin\n\n"
                    'import (\n\t"github.com/gin-gonic/gin/render"\n'
                    '\t"github.com/gin-gonic/gin/internal/fs"\n)\n\n'
                    "func Run() { fs.A() }\n"
                ),
            }
        )
    )
    render = _find(rt, "gin.go", "", "github.com/gin-gonic/gin/render", EdgeType.IMPORTS)
    assert _dst(render) == ("resolved", "render/render.go", None)
    fs = _find(rt, "gin.go", "", "github.com/gin-gonic/gin/internal/fs", EdgeType.IMPORTS)
    assert _dst(fs) == ("resolved", "internal/fs/afs.go", None)


def test_rust_use_crate_paths() -> None:
    rt = resolve_tree(
        _tree(
            {
                "src/store/mod.rs": "pub struct Store;\nimpl Store { pub fn open() {} }\n",
                "src/cache.rs": """\
                    use crate::store::{Store, Store as S};
                    use super::util::helper;

                    fn build() {
                        Store::open();
                        S::open();
                        helper();
                        crate::store::Store::open();
                    }
                    """,
                "src/util.rs": "pub fn helper() {}\n",
            }
        )
    )
    cache = "src/cache.rs"
    uses = [e for e in rt.edges if e.src_path == cache and e.type is EdgeType.IMPORTS]
    assert [(e.dst_ref, e.lang_payload.get("alias"), _dst(e)) for e in uses] == [
        ("crate::store::Store", None, ("resolved", "src/store/mod.rs", "Store")),
        ("crate::store::Store", "S", ("resolved", "src/store/mod.rs", "Store")),
        ("super::util::helper", None, ("resolved", "src/util.rs", "helper")),
    ]
    for ref in ("Store.open", "S.open", "crate.store.Store.open"):
        assert _dst(_find(rt, cache, "build", ref, EdgeType.CALLS)) == (
            "resolved",
            "src/store/mod.rs",
            "Store.open",
        )
    assert _dst(_find(rt, cache, "build", "helper", EdgeType.CALLS)) == (
        "resolved",
        "src/util.rs",
        "helper",
    )


def test_java_and_csharp_packages() -> None:
    rt = resolve_tree(
        _tree(
            {
                "src/main/java/com/acme/store/Repo.java": """\
                    package com.acme.store;
                    public class Repo { public static Repo open() { return new Repo(); } }
                    """,
                "src/main/java/com/acme/app/Util.java": """\
                    package com.acme.app;
                    class Util { static void help() {} }
                    """,
                "src/main/java/com/acme/app/App.java": """\
                    package com.acme.app;
                    import com.acme.store.Repo;
                    public class App extends Repo {
                        void run() { Repo.open(); Util.help(); }
                    }
                    """,
                "Acme/Store/Repo.cs": """\
                    namespace Acme.Store { public class Repo { public void Find() {} } }
                    """,
                "Acme/App/App.cs": """\
                    using Acme.Store;
                    namespace Acme.App {
                        public class App : Repo { void Run() { var r = new Repo(); } }
                    }
                    """,
            }
        )
    )
    app = "src/main/java/com/acme/app/App.java"
    repo = "src/main/java/com/acme/store/Repo.java"
    assert _dst(_find(rt, app, "", "com.acme.store.Repo", EdgeType.IMPORTS)) == (
        "resolved",
        repo,
        "Repo",
    )
    assert _dst(_find(rt, app, "App.run", "Repo.open", EdgeType.CALLS)) == (
        "resolved",
        repo,
        "Repo.open",
    )
    assert _dst(_find(rt, app, "App.run", "Util.help", EdgeType.CALLS))[1:] == (
        "src/main/java/com/acme/app/Util.java",
        "Util.help",
    )
    assert _dst(_find(rt, app, "App", "Repo", EdgeType.INHERITS))[1] == repo
    assert _dst(_find(rt, "Acme/App/App.cs", "App.Run", "Repo", EdgeType.CALLS)) == (
        "resolved",
        "Acme/Store/Repo.cs",
        "Repo",
    )
    assert _dst(_find(rt, "Acme/App/App.cs", "App", "Repo", EdgeType.INHERITS))[1] == (
        "Acme/Store/Repo.cs"
    )


def test_c_includes_and_ruby_requires() -> None:
    rt = resolve_tree(
        _tree(
            {
                "src/util.h": "int util_run(void);\n",
                "src/util.c": '#include "util.h"\nint util_run(void) { return 0; }\n',
                "src/main.c": """\
                    #include <stdio.h>
                    #include "util.h"
                    int main(void) { return util_run(); }
                    """,
                "lib/shop/helper.rb": "module Helper\n  def self.sum(xs)\n    0\n  end\nend\n",
                "lib/shop/order.rb": """\
                    require_relative "helper"
                    class Order
                      def total
                        Helper.sum([])
                      end
                    end
                    """,
            }
        )
    )
    assert _dst(_find(rt, "src/main.c", "", "util.h", EdgeType.IMPORTS)) == (
        "resolved",
        "src/util.h",
        None,
    )
    assert _dst(_find(rt, "src/main.c", "", "stdio.h", EdgeType.IMPORTS))[0] == "partial"
    assert _dst(_find(rt, "src/main.c", "main", "util_run", EdgeType.CALLS)) == (
        "resolved",
        "src/util.c",
        "util_run",
    )
    order = "lib/shop/order.rb"
    assert _dst(_find(rt, order, "", "helper", EdgeType.IMPORTS))[1] == "lib/shop/helper.rb"
    assert _dst(_find(rt, order, "Order.total", "Helper.sum", EdgeType.CALLS)) == (
        "resolved",
        "lib/shop/helper.rb",
        "Helper.sum",
    )


def test_resolution_is_a_function_of_indexes_and_paths() -> None:
    files = _tree(PY_TREE)
    first = resolve_tree(files)
    again = resolve_tree(dict(reversed(list(files.items()))))
    key = lambda e: (e.src_path, e.src, e.dst_ref, e.line, e.type.value)  # noqa: E731
    assert sorted(first.edges, key=key) == sorted(again.edges, key=key)
    assert first.stats()["resolved"] > 20
    assert all(e.resolution is Resolution.PARTIAL or e.dst_path is not None for e in first.edges)


def test_a_test_root_package_does_not_shadow_a_third_party_module_elsewhere() -> None:
    rt = resolve_tree(
        _tree(
            {
                "tests/sphinx/__init__.py": "",
                "tests/sphinx/test_ext.py": "from sphinx import helper\n",
                "tests/sphinx/helper.py": "def run():\n    return 1\n",
                "docs/_ext/djangodocs.py": "from sphinx import addnodes\n",
            }
        )
    )
    inside = _find(rt, "tests/sphinx/test_ext.py", "", "sphinx.helper", EdgeType.IMPORTS)
    assert _dst(inside) == ("resolved", "tests/sphinx/helper.py", None)
    outside = _find(rt, "docs/_ext/djangodocs.py", "", "sphinx.addnodes", EdgeType.IMPORTS)
    assert _dst(outside) == ("partial", None, None)  # the installed sphinx, not tests/sphinx


def test_java_package_falls_back_to_the_path_when_the_index_has_none() -> None:
    import dataclasses

    files = _tree(
        {
            "src/main/java/com/acme/store/Repo.java": (
                "package com.acme.store;\npublic class Repo { static void open() {} }\n"
            ),
            "src/main/java/com/acme/app/App.java": (
                "package com.acme.app;\nimport com.acme.store.Repo;\n"
                "class App { void run() { Repo.open(); } }\n"
            ),
        }
    )
    stripped = {p: dataclasses.replace(ix, package=None) for p, ix in files.items()}
    rt = resolve_tree(stripped)
    app = "src/main/java/com/acme/app/App.java"
    assert _dst(_find(rt, app, "App.run", "Repo.open", EdgeType.CALLS)) == (
        "resolved",
        "src/main/java/com/acme/store/Repo.java",
        "Repo.open",
    )


def test_typescript_barrel_reexports() -> None:
    rt = resolve_tree(
        _tree(
            {
                "ui/button.ts": "export class Button { click(): void {} }\n",
                "ui/forms/input.ts": "export function input(): void {}\n",
                "ui/forms/index.ts": 'export * from "./input";\n',
                "ui/index.ts": (
                    'export { Button as Btn } from "./button";\n'
                    'export * from "./forms";\n'
                    'export * as forms from "./forms";\n'
                ),
                "app.ts": """\
                    import { Btn, input, forms } from "./ui";

                    function main(): void {
                        new Btn().click();
                        input();
                        forms.input();
                    }
                    """,
            }
        )
    )
    calls = EdgeType.CALLS
    assert _dst(_find(rt, "app.ts", "main", "Btn", calls)) == ("resolved", "ui/button.ts", "Button")
    assert _dst(_find(rt, "app.ts", "main", "Btn().click", calls)) == (
        "resolved",
        "ui/button.ts",
        "Button.click",
    )
    assert _dst(_find(rt, "app.ts", "main", "input", calls)) == (
        "resolved",
        "ui/forms/input.ts",
        "input",
    )
    assert _dst(_find(rt, "app.ts", "main", "forms.input", calls)) == (
        "resolved",
        "ui/forms/input.ts",
        "input",
    )
    reexport = _find(rt, "ui/index.ts", "", "./button", EdgeType.IMPORTS)
    assert reexport.lang_payload["reexport"] is True and reexport.dst_path == "ui/button.ts"


def test_calls_on_parameters_follow_their_declared_types() -> None:
    rt = resolve_tree(
        _tree(
            {
                "shop/models.py": """\
                    class Base:
                        def save(self):
                            return 1

                    class Order(Base):
                        def total(self):
                            return 0
                    """,
                "shop/billing.py": """\
                    from typing import Optional

                    from shop.models import Order

                    def charge(order: Order, other: Optional["Order"] = None, n: int = 1):
                        def inner():
                            return order.total()

                        order.save()
                        other.total()
                        n.bit_length()
                        return inner()
                    """,
                "src/main/java/a/Repo.java": "package a;\nclass Repo { void findAll() {} }\n",
                "src/main/java/a/App.java": (
                    "package a;\nclass App { void run(final Repo repo) { repo.findAll(); } }\n"
                ),
                "web/repo.ts": "export class Repo { find(): void {} }\n",
                "web/app.ts": (
                    'import { Repo } from "./repo";\n'
                    "export function load(r: Repo | null): void { r.find(); }\n"
                ),
            }
        )
    )
    billing = "shop/billing.py"
    calls = EdgeType.CALLS
    assert _dst(_find(rt, billing, "charge.inner", "order.total", calls)) == (
        "resolved",
        "shop/models.py",
        "Order.total",
    )
    assert _dst(_find(rt, billing, "charge", "order.save", calls)) == (
        "resolved",
        "shop/models.py",
        "Base.save",  # inherited
    )
    assert _dst(_find(rt, billing, "charge", "other.total", calls))[2] == "Order.total"
    assert _dst(_find(rt, billing, "charge", "n.bit_length", calls)) == ("partial", None, None)
    assert _dst(_find(rt, "src/main/java/a/App.java", "App.run", "repo.findAll", calls)) == (
        "resolved",
        "src/main/java/a/Repo.java",
        "Repo.findAll",
    )
    assert _dst(_find(rt, "web/app.ts", "load", "r.find", calls)) == (
        "resolved",
        "web/repo.ts",
        "Repo.find",
    )


def test_self_attribute_calls_follow_recorded_attribute_types() -> None:
    files = _tree(
        {
            "app/engine.py": """\
                class Engine:
                    def start(self):
                        return 1

                class Turbo(Engine):
                    pass
                """,
            "app/car.py": """\
                from app import engine
                from app.engine import Engine

                class Car:
                    wheels: "Engine"

                    def __init__(self):
                        self.engine = engine.Turbo()
                        self.spare: Engine = make_spare()
                        self.count = len([])

                    def drive(self):
                        self.engine.start()
                        self.spare.start()
                        self.wheels.start()
                        self.count.bit_length()

                class SportsCar(Car):
                    def drive(self):
                        return self.engine.start()
                """,
        }
    )
    car = next(s for s in files["app/car.py"].symbols if s.qname == "Car")
    assert car.lang_payload["attributes"] == {
        "wheels": "Engine",
        "engine": "engine.Turbo",
        "spare": "Engine",
        "count": "len",
    }
    rt = resolve_tree(files)
    calls = EdgeType.CALLS
    engine_start = ("resolved", "app/engine.py", "Engine.start")
    assert _dst(_find(rt, "app/car.py", "Car.drive", "self.engine.start", calls)) == engine_start
    assert _dst(_find(rt, "app/car.py", "Car.drive", "self.spare.start", calls)) == engine_start
    assert _dst(_find(rt, "app/car.py", "Car.drive", "self.wheels.start", calls)) == engine_start
    assert _dst(_find(rt, "app/car.py", "Car.drive", "self.count.bit_length", calls)) == (
        "partial",
        "app/car.py",
        "Car",
    )
    # inherited attribute
    assert _dst(_find(rt, "app/car.py", "SportsCar.drive", "self.engine.start", calls)) == (
        engine_start
    )


def test_cpp_namespace_qualified_calls_and_out_of_line_methods() -> None:
    rt = resolve_tree(
        _tree(
            {
                "geo/circle.hpp": "namespace geo {\nclass Circle {\n  double area();\n};\n}\n",
                "geo/circle.cpp": (
                    '#include "circle.hpp"\n'
                    "namespace geo {\ndouble Circle::area() { return 1.0; }\n}\n"
                ),
                "main.cpp": (
                    '#include "geo/circle.hpp"\n'
                    "int main() { auto c = new geo::Circle(); std::sort(0, 0); return 0; }\n"
                ),
            }
        )
    )
    assert _dst(_find(rt, "main.cpp", "main", "geo.Circle", EdgeType.CALLS)) == (
        "resolved",
        "geo/circle.hpp",
        "Circle",
    )
    assert _dst(_find(rt, "main.cpp", "main", "std.sort", EdgeType.CALLS))[0] == "partial"


def test_python_script_without_py_suffix_resolves_its_imports() -> None:
    # sympy's bin/test: python by its shebang, outside python_module_roots' *.py files
    files = {
        "pkg/__init__.py": "",
        "pkg/core.py": "def run():\n    return 1\n",
        "bin/test": "#!/usr/bin/env python\nfrom pkg.core import run\n\nrun()\n",
    }
    indexes = _tree(files)
    assert indexes["bin/test"].language == "python"
    rt = resolve_tree(indexes)
    assert _find(rt, "bin/test", "", "pkg.core.run", EdgeType.IMPORTS).dst_path == "pkg/core.py"
    call = _find(rt, "bin/test", "", "run", EdgeType.CALLS)
    assert (call.dst_path, call.dst_symbol) == ("pkg/core.py", "run")
