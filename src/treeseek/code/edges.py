"""C2: the dependency edges of one parsed file, as written (before cross-file resolution).

* imports: one edge per imported name (Python, Rust, Go, Java, C#, C/C++, Ruby) or per import
  statement (JS/TS, with the bound names in the payload). The payload carries what resolution
  needs: ``module``, ``name``, ``alias``, ``level`` (Python relative dots), ``local`` (C
  ``#include "x.h"``).
* calls: ``dst_ref`` is the callee as a dotted chain (``self.save``, ``os.path.join``,
  ``super().save``, ``?.join`` for a call on an expression); repeated calls from the same symbol
  to the same reference are one edge with a ``count``.
* inherits: class -> each base/interface/trait as written.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass, field
from typing import Any

from tree_sitter import Node

from treeseek.code.languages import family
from treeseek.code.model import Edge, EdgeType, SymbolKind
from treeseek.code.source import Source, line_of
from treeseek.code.symbols import SymbolTable

_SIMPLE_REF = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$#][\w$]*)*")
_HERITAGE_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*")
_HERITAGE_SKIP = frozenset(
    {"extends", "implements", "public", "private", "protected", "virtual", "class", "struct"}
)
_PY_BUILTINS = frozenset(dir(builtins))
_REF_LIMIT = 200


@dataclass(slots=True)
class _EdgeSink:
    """Collects edges; calls and inherits with the same (type, src, dst) merge into one edge
    with a ``count``, imports never merge (each is one binding)."""

    merged: dict[tuple[EdgeType, str, str], list[Any]] = field(default_factory=dict)
    unique: list[Edge] = field(default_factory=list)

    def add(
        self, type_: EdgeType, src: str, dst: str, line: int, payload: dict[str, Any] | None = None
    ) -> None:
        key = (type_, src, dst)
        got = self.merged.get(key)
        if got is None:
            self.merged[key] = [line, payload or {}, 1]
        else:
            got[2] += 1

    def add_unique(
        self, type_: EdgeType, src: str, dst: str, line: int, payload: dict[str, Any]
    ) -> None:
        self.unique.append(Edge(type_, src, dst, line, payload))

    def result(self) -> list[Edge]:
        out = list(self.unique)
        for (type_, src, dst), (line, payload, count) in self.merged.items():
            if count > 1:
                payload = {**payload, "count": count}
            out.append(Edge(type_, src, dst, line, payload))
        out.sort(key=lambda e: e.line)
        return out


def extract_edges(src: Source, table: SymbolTable) -> list[Edge]:
    fam = family(src.language)
    sink = _EdgeSink()
    owner = table.owners.owner
    if fam == "python":
        bound = _python_imports(src, owner, sink)
        bound.update(s.name for s in table.symbols if s.parent is None)
        _python_calls(src, owner, sink, bound)
    else:
        _imports(fam, src, owner, sink)
        _calls(fam, src, owner, sink)
    _inherits(fam, src, table, sink)
    return sink.result()


# --- references -----------------------------------------------------------------------------


def callee_ref(text: str) -> str:
    """A call target as a dotted chain: ``a.b(x).c`` -> ``a.b().c``; ``Vec::<T>::new`` ->
    ``Vec.new``; anything that is not a name chain at its root becomes ``?``."""
    if _SIMPLE_REF.fullmatch(text):
        return text
    if len(text) > _REF_LIMIT * 4:
        text = text[-_REF_LIMIT * 4 :]
    for keyword in ("new ", "await "):
        if text.startswith(keyword):  # `new Foo(x).bar` -> `Foo().bar`
            text = text[len(keyword) :].lstrip()
    text = text.replace("::", ".").replace("->", ".").replace("?.", ".")
    for pattern, repl in _NESTED:
        for _ in range(_MAX_NESTING):
            text, n = pattern.subn(repl, text)
            if not n:
                break
    ref = _SPACE.sub("", text)
    while ".." in ref:
        ref = ref.replace("..", ".")
    if not _CHAIN.fullmatch(ref):
        tail = ref.rsplit(".", 1)[-1] if "." in ref else ""
        ref = f"?.{tail}" if tail and _SIMPLE_REF.fullmatch(tail) else "?"
    return ref.replace("\x01", "()").replace("\x02", "[]").replace("\x03", "{}")[:_REF_LIMIT]


_MAX_NESTING = 8
# innermost bracket pairs first, repeatedly: arguments -> "()", indexes -> "[]", generics -> ""
_NESTED = (
    (re.compile(r"\([^()]*\)"), "\x01"),
    (re.compile(r"\[[^\[\]]*\]"), "\x02"),
    (re.compile(r"<[^<>()]*>"), ""),
    (re.compile(r"\{[^{}]*\}"), "\x03"),
)
_SPACE = re.compile(r"\s+")
_CHAIN = re.compile(
    r"[A-Za-z_$][\w$]*(?:\x01|\x02|\x03)*(?:\.[A-Za-z_$#][\w$]*(?:\x01|\x02|\x03)*)*"
)


def _call_kind(ref: str) -> str:
    return "method_call" if "." in ref else "function_call"


# --- Python ---------------------------------------------------------------------------------


def _python_imports(src: Source, owner: Any, sink: _EdgeSink) -> set[str]:
    bound: set[str] = set()
    for node in src.sorted_nodes("import"):
        where = owner(node.start_byte)
        line = line_of(node)
        if node.type == "import_statement":
            for name_node in node.children_by_field_name("name"):
                alias = None
                target = name_node
                if name_node.type == "aliased_import":
                    target = name_node.child_by_field_name("name") or name_node
                    alias = src.field_text(name_node, "alias")
                module = src.text(target)
                payload: dict[str, Any] = {"module": module, "level": 0}
                if alias:
                    payload["alias"] = alias
                    bound.add(alias)
                else:
                    bound.add(module.split(".", 1)[0])
                sink.add_unique(EdgeType.IMPORTS, where, module, line, payload)
            continue
        module_node = node.child_by_field_name("module_name")
        level = 0
        module = ""
        if module_node is not None:
            if module_node.type == "relative_import":
                for child in module_node.children:
                    if child.type == "import_prefix":
                        level = src.text(child).count(".")
                    elif child.type == "dotted_name":
                        module = src.text(child)
            else:
                module = src.text(module_node)
        prefix = "." * level + module
        names = node.children_by_field_name("name")
        if not names:  # wildcard
            payload = {"module": module, "level": level, "name": "*"}
            sink.add_unique(EdgeType.IMPORTS, where, f"{prefix}.*", line, payload)
            continue
        for name_node in names:
            alias = None
            target = name_node
            if name_node.type == "aliased_import":
                target = name_node.child_by_field_name("name") or name_node
                alias = src.field_text(name_node, "alias")
            name = src.text(target)
            payload = {"module": module, "level": level, "name": name}
            if alias:
                payload["alias"] = alias
            bound.add(alias or name)
            dst = f"{prefix}.{name}" if not prefix.endswith(".") else f"{prefix}{name}"
            sink.add_unique(EdgeType.IMPORTS, where, dst, line, payload)
    return bound


def _python_calls(src: Source, owner: Any, sink: _EdgeSink, bound: set[str]) -> None:
    data = src.data
    edges = sink.merged
    for fn in src.nodes("callee"):
        ref = callee_ref(data[fn.start_byte : fn.end_byte].decode("utf-8", "replace"))
        if ref in _PY_BUILTINS and ref not in bound:
            continue
        key = (EdgeType.CALLS, owner(fn.start_byte), ref)
        got = edges.get(key)
        if got is None:
            kind = "method_call" if "." in ref else "function_call"
            edges[key] = [fn.start_point[0] + 1, {"callsite_kind": kind}, 1]
        else:
            got[2] += 1


# --- other languages ------------------------------------------------------------------------

_CALLEE_FIELDS: dict[str, tuple[str, ...]] = {
    "call_expression": ("function",),
    "new_expression": ("constructor", "type"),
    "invocation_expression": ("function",),
    "object_creation_expression": ("type",),
}


def _calls(fam: str, src: Source, owner: Any, sink: _EdgeSink) -> None:
    for node in src.sorted_nodes("call"):
        t = node.type
        kind = "constructor" if t in ("new_expression", "object_creation_expression") else ""
        if t == "method_invocation":  # Java
            obj = node.child_by_field_name("object")
            name = src.field_text(node, "name")
            text = f"{src.text(obj)}.{name}" if obj is not None else name
        elif t == "call":  # Ruby
            receiver = node.child_by_field_name("receiver")
            name = src.field_text(node, "method")
            if receiver is None and name in ("require", "require_relative", "load"):
                _ruby_require(src, node, name, owner, sink)
                continue
            text = f"{src.text(receiver)}.{name}" if receiver is not None else name
        else:
            callee = None
            for f in _CALLEE_FIELDS.get(t, ("function",)):
                callee = node.child_by_field_name(f)
                if callee is not None:
                    break
            if callee is None:
                continue
            text = src.text(callee)
            is_js_call = fam in ("javascript", "typescript") and t == "call_expression"
            if is_js_call and text in ("require", "import"):
                _js_require(src, node, owner, sink)
                continue
        if not text:
            continue
        ref = callee_ref(text)
        sink.add(
            EdgeType.CALLS,
            owner(node.start_byte),
            ref,
            line_of(node),
            {"callsite_kind": kind or _call_kind(ref)},
        )


def _first_string_arg(src: Source, node: Node) -> str | None:
    args = node.child_by_field_name("arguments")
    if args is None:
        return None
    for child in args.named_children:
        if child.type in ("string", "template_string", "string_literal"):
            return src.text(child).strip("'\"`")
        return None
    return None


def _js_require(src: Source, node: Node, owner: Any, sink: _EdgeSink) -> None:
    spec = _first_string_arg(src, node)
    if spec:
        payload = {"module": spec, "kind": "require"}
        sink.add_unique(EdgeType.IMPORTS, owner(node.start_byte), spec, line_of(node), payload)


def _ruby_require(src: Source, node: Node, name: str, owner: Any, sink: _EdgeSink) -> None:
    spec = _first_string_arg(src, node)
    if spec:
        payload = {"module": spec, "kind": name, "local": name == "require_relative"}
        sink.add_unique(EdgeType.IMPORTS, owner(node.start_byte), spec, line_of(node), payload)


def _imports(fam: str, src: Source, owner: Any, sink: _EdgeSink) -> None:
    for node in src.sorted_nodes("import"):
        where = owner(node.start_byte)
        line = line_of(node)
        if fam in ("javascript", "typescript"):
            _js_import(src, node, where, line, sink)
        elif fam == "go":
            path = src.field_text(node, "path").strip('"`')
            payload: dict[str, Any] = {"module": path}
            alias = src.field_text(node, "name")
            if alias:
                payload["alias"] = alias
            sink.add_unique(EdgeType.IMPORTS, where, path, line, payload)
        elif fam == "rust":
            arg = node.child_by_field_name("argument")
            for path, rust_alias in _rust_use_paths(src.text(arg)):
                payload = {"module": path}
                if rust_alias:
                    payload["alias"] = rust_alias
                sink.add_unique(EdgeType.IMPORTS, where, path, line, payload)
        elif fam == "java":
            text = src.text(node).strip().rstrip(";").split(None, 1)[-1]
            static = text.startswith("static ")
            path = text.removeprefix("static ").replace(" ", "")
            sink.add_unique(EdgeType.IMPORTS, where, path, line, {"module": path, "static": static})
        elif fam == "csharp":
            body = src.text(node).strip().rstrip(";").split(None, 1)[-1].strip()
            payload = {}
            if body.startswith("static "):
                body = body[7:].strip()
                payload["static"] = True
            if "=" in body:
                alias, _, body = (p.strip() for p in body.partition("="))
                payload["alias"] = alias
            path = body.replace(" ", "")
            payload["module"] = path
            sink.add_unique(EdgeType.IMPORTS, where, path, line, payload)
        elif fam in ("c", "cpp"):
            path_node = node.child_by_field_name("path")
            if path_node is None:
                continue
            raw = src.text(path_node).strip()
            local = raw.startswith('"')
            path = raw.strip('"<>')
            payload = {"module": path, "local": local}
            sink.add_unique(EdgeType.IMPORTS, where, path, line, payload)


def _js_import(src: Source, node: Node, where: str, line: int, sink: _EdgeSink) -> None:
    source = node.child_by_field_name("source")
    if source is None:
        return
    spec = src.text(source).strip("'\"`")
    names: list[list[str]] = []
    payload: dict[str, Any] = {"module": spec}
    if node.type == "export_statement":  # `export {a as b} from "./x"`, `export * from "./y"`
        payload["reexport"] = True
        for child in node.named_children:
            if child.type == "export_clause":
                for spec_node in child.named_children:
                    name = src.field_text(spec_node, "name")
                    names.append([name, src.field_text(spec_node, "alias") or name])
            elif child.type == "namespace_export":
                payload["namespace"] = src.text(child).split()[-1]
        if names:
            payload["names"] = names
        elif "namespace" not in payload:
            payload["star"] = True
        sink.add_unique(EdgeType.IMPORTS, where, spec, line, payload)
        return
    for child in node.children:
        if child.type != "import_clause":
            continue
        for part in child.named_children:
            if part.type == "identifier":
                payload["default"] = src.text(part)
            elif part.type == "namespace_import":
                ids = [c for c in part.named_children if c.type == "identifier"]
                if ids:
                    payload["namespace"] = src.text(ids[-1])
            elif part.type == "named_imports":
                for spec_node in part.named_children:
                    if spec_node.type != "import_specifier":
                        continue
                    name = src.field_text(spec_node, "name")
                    alias = src.field_text(spec_node, "alias") or name
                    names.append([name, alias])
    if names:
        payload["names"] = names
    sink.add_unique(EdgeType.IMPORTS, where, spec, line, payload)


def _rust_use_paths(text: str) -> list[tuple[str, str | None]]:
    """Expand a Rust use tree: ``a::{b, c::d as e}`` -> [(a::b, None), (a::c::d, e)]."""
    text = re.sub(r"\s*(::|[{},])\s*", r"\1", " ".join(text.split()))
    out: list[tuple[str, str | None]] = []

    def expand(prefix: str, tree: str) -> None:
        tree = tree.strip()
        if not tree:
            return
        brace = tree.find("{")
        if brace >= 0 and tree.endswith("}"):
            head = tree[:brace].rstrip(":")
            base = f"{prefix}::{head}" if prefix and head else (prefix or head)
            for part in _split_top(tree[brace + 1 : -1]):
                expand(base, part)
            return
        path, _, alias = tree.partition(" as ")
        full = f"{prefix}::{path}" if prefix else path
        if full.endswith("::self"):
            full = full[: -len("::self")]
        out.append((full, alias.strip() or None))

    expand("", text)
    return out


def _split_top(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p]


# --- inheritance ----------------------------------------------------------------------------

_HERITAGE_CHILDREN = frozenset(
    {
        "class_heritage",
        "extends_clause",
        "implements_clause",
        "extends_type_clause",
        "superclass",
        "super_interfaces",
        "extends_interfaces",
        "base_list",
        "base_class_clause",
    }
)


def _inherits(fam: str, src: Source, table: SymbolTable, sink: _EdgeSink) -> None:
    for sym in table.symbols:
        if sym.kind is not SymbolKind.CLASS:
            continue
        node = table.nodes[sym.qname]
        if fam == "python":
            bases = node.child_by_field_name("superclasses")
            if bases is None:
                continue
            for arg in bases.named_children:
                if arg.type == "keyword_argument":
                    continue
                ref = callee_ref(src.text(arg))
                sink.add(EdgeType.INHERITS, sym.qname, ref, line_of(arg), {"relation": "extends"})
            continue
        texts: list[str] = []
        for child in node.children:
            if child.type in _HERITAGE_CHILDREN:
                texts.append(src.text(child))
        if fam == "go":
            texts.extend(_go_embedded(src, node))
        for text in texts:
            relation = "implements" if "implements" in text else "extends"
            for ref in _heritage_names(text):
                sink.add(EdgeType.INHERITS, sym.qname, ref, sym.start_line, {"relation": relation})
    if fam == "rust":
        for node in src.nodes("def.container"):
            trait = node.child_by_field_name("trait")
            if node.type != "impl_item" or trait is None:
                continue
            type_name = re.sub(r"<.*>", "", src.field_text(node, "type")).split("::")[-1]
            for ref in _heritage_names(src.text(trait)):
                sink.add(EdgeType.INHERITS, type_name, ref, line_of(node), {"relation": "impl"})


def _heritage_names(text: str) -> list[str]:
    text = text.lstrip().removeprefix("<")  # Ruby: `class A < B`
    depth = 0
    flat: list[str] = []
    for ch in text:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth = max(0, depth - 1)
        elif depth == 0:
            flat.append(ch)
    names = _HERITAGE_NAME.findall("".join(flat))
    return [n.replace("::", ".") for n in names if n not in _HERITAGE_SKIP]


def _go_embedded(src: Source, node: Node) -> list[str]:
    type_node = node.child_by_field_name("type")
    if type_node is None or type_node.type not in ("struct_type", "interface_type"):
        return []
    out: list[str] = []
    for child in type_node.named_children:
        if child.type == "field_declaration_list":
            for f in child.named_children:
                if f.type == "field_declaration" and f.child_by_field_name("name") is None:
                    out.append(src.field_text(f, "type").lstrip("*"))
        elif child.type in ("type_elem", "constraint_elem"):
            out.append(src.text(child))
    return out
