"""C1: the symbol catalog of one parsed file.

Definitions come from the language's query captures (``def.*``); nesting is recovered from
byte spans, so a method's qname is ``Class.method`` and a nested function's is
``outer.inner``. The result also carries an :class:`~treeseek.code.source.Owners` index that
maps any byte offset to its innermost symbol, which the edge extractor uses.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from dataclasses import dataclass, field
from typing import Any

from tree_sitter import Node

from treeseek.code.languages import family
from treeseek.code.model import Symbol, SymbolKind
from treeseek.code.param_types import type_ref
from treeseek.code.source import Owners, Source, collapse, end_line_of, line_of

_DOC_LIMIT = 2000
_SIG_LIMIT = 300
_UPPER_CONST = re.compile(r"^_*[A-Z][A-Z0-9_]*$")
_STRING_PREFIX = re.compile(r"^[rRbBuUfF]*('''|\"\"\"|'|\")")


@dataclass(slots=True)
class SymbolTable:
    symbols: list[Symbol] = field(default_factory=list)
    owners: Owners = field(default_factory=Owners)
    # qname -> the definition node (for the entrypoint and edge extractors)
    nodes: dict[str, Node] = field(default_factory=dict)

    def by_qname(self) -> dict[str, Symbol]:
        return {s.qname: s for s in self.symbols}


@dataclass(slots=True)
class _Def:
    node: Node  # the definition node
    outer: Node  # node including decorators (Python decorated_definition), for the span
    role: str  # "class" | "function" | "const" | "container"
    name: str
    qualifier: str = ""  # e.g. Go receiver type, C++ "Foo" of "Foo::bar"
    payload: dict[str, Any] = field(default_factory=dict)
    stub: bool = False  # an overload signature (Python @overload, TypeScript): no body
    # the first of the attributes / decorators just before ``outer`` that the syntax tree keeps
    # as its siblings (Rust `#[cfg(unix)]`, TypeScript member decorators): the span starts there
    lead: Node | None = None


def extract_symbols(src: Source) -> SymbolTable:
    fam = family(src.language)
    defs: list[_Def] = []
    for role in ("class", "function", "const", "container"):
        for node in src.nodes(f"def.{role}"):
            d = _describe(fam, src, node, role)
            if d is not None and d.name:
                defs.append(d)
    defs.sort(key=lambda d: (d.node.start_byte, -d.node.end_byte))
    table = _assemble(fam, src, defs)
    if fam == "python" and src.nodes("attr"):
        _python_attribute_types(src, table)
    return table


_DOTTED = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*")


def _python_attribute_types(src: Source, table: SymbolTable) -> None:
    """Record ``attributes: {name: type ref}`` on classes, from ``self.x = Foo(...)``,
    ``self.x: Foo = ...`` in methods and ``x: Foo`` in the class body (first one wins)."""
    by_qname = {s.qname: i for i, s in enumerate(table.symbols)}
    found: dict[str, dict[str, str]] = {}
    for node in src.sorted_nodes("attr"):
        left = node.child_by_field_name("left")
        if left is None:
            continue
        owner = table.owners.owner(node.start_byte)
        if left.type == "identifier":  # class-level `x: Foo`
            cls, name = owner, src.text(left)
        else:
            if src.field_text(left, "object") != "self":
                continue
            i = by_qname.get(owner)
            cls = (table.symbols[i].parent or "") if i is not None else ""
            name = src.field_text(left, "attribute")
        i = by_qname.get(cls)
        if i is None or table.symbols[i].kind is not SymbolKind.CLASS:
            continue
        annotation = node.child_by_field_name("type")
        right = node.child_by_field_name("right")
        ref = ""
        if annotation is not None:
            ref = type_ref(src.text(annotation))
        elif right is not None and right.type == "call":
            callee = src.field_text(right, "function")
            ref = callee if _DOTTED.fullmatch(callee) else ""
        if ref:
            found.setdefault(cls, {}).setdefault(name, ref)
    for cls, attributes in found.items():
        i = by_qname[cls]
        sym = table.symbols[i]
        payload = {**sym.lang_payload, "attributes": attributes}
        table.symbols[i] = dataclasses.replace(sym, lang_payload=payload)


def _assemble(fam: str, src: Source, defs: list[_Def]) -> SymbolTable:
    table = SymbolTable()
    spans: list[tuple[int, int, str]] = []
    stack: list[tuple[_Def, str]] = []  # (def, qname)
    seen: dict[str, int] = {}
    order: list[str] = []  # the qname of each def
    unlinked: set[int] = set()
    for d in defs:
        while stack and stack[-1][0].node.end_byte <= d.node.start_byte:
            stack.pop()
        parent_def, parent_q = stack[-1] if stack else (None, "")
        prefix = parent_q
        if d.qualifier:
            prefix = f"{prefix}.{d.qualifier}" if prefix else d.qualifier
        qname = f"{prefix}.{d.name}" if prefix else d.name
        if d.payload.get("singleton"):  # Ruby `class << self`: the class's own methods
            qname = parent_q
        elif d.role == "container":  # an impl block shares its type's name: no suffix
            pass
        elif qname in seen:  # overloads, redefinitions: keep qnames unique within the file
            seen[qname] += 1
            qname = f"{qname}@{seen[qname]}"
        else:
            seen[qname] = 1
        stack.append((d, qname))
        order.append(qname)
        spans.append((d.node.start_byte, d.node.end_byte, qname))
        if d.role == "container":
            continue
        in_class = parent_def is not None and (
            parent_def.role == "class"
            or (parent_def.role == "container" and parent_def.node.type not in _MODULES)
        )  # (a Rust `mod`, a TypeScript `namespace` qualify names but hold functions)
        if d.role == "class":
            kind = SymbolKind.CLASS
        elif d.role == "const":
            kind = SymbolKind.CONST
        elif in_class or d.qualifier:
            kind = SymbolKind.METHOD
        else:
            kind = SymbolKind.FUNCTION
        parent = _symbol_parent(stack)
        if parent_def is not None and parent_def.node.type == "variable_declarator":
            unlinked.add(len(table.symbols))  # in `const api = {...}`: no parent by name
        if parent_def is not None and parent_def.payload.get("singleton"):
            d.payload["static"] = True
        sym = _build(fam, src, d, qname, kind, parent)
        table.symbols.append(sym)
        table.nodes[qname] = d.node
    renames = _implementations_first(defs, order)
    if renames:
        spans = [(a, b, _renamed(q, renames)) for a, b, q in spans]
        table.symbols = [
            dataclasses.replace(
                sym,
                qname=_renamed(sym.qname, renames),
                parent=_renamed(sym.parent, renames) if sym.parent else sym.parent,
            )
            for sym in table.symbols
        ]
        table.nodes = {_renamed(q, renames): n for q, n in table.nodes.items()}
    known = {sym.qname for sym in table.symbols}
    # code belongs to its innermost *symbol*: a container that is not one (a JS/TS object
    # literal, a TypeScript namespace, a Java anonymous class) names nothing a caller id
    # can be given back as, so what it holds outside its members is its enclosing symbol's
    table.owners = Owners.build([span for span in spans if span[2] in known])
    for i, sym in enumerate(table.symbols):
        if sym.parent is None and "." in sym.qname and i not in unlinked:
            outer = sym.qname.rsplit(".", 1)[0]
            if outer in known:  # Rust impl / C++ out-of-line / Go receiver methods
                table.symbols[i] = dataclasses.replace(sym, parent=outer)
    return table


def _implementations_first(defs: list[_Def], qnames: list[str]) -> dict[str, str]:
    """Renames that give an overloaded function's plain qname to its implementation: the
    overload signatures before it (``@overload`` stubs, TypeScript signatures) got the plain
    qname first, so ``expand path::f`` showed a stub. The stubs take ``@2``, ``@3``, ... in
    order, then the other definitions, as without stubs."""
    groups: dict[str, list[int]] = {}
    for i, q in enumerate(qnames):
        if defs[i].role != "container":
            groups.setdefault(_SUFFIX.sub("", q), []).append(i)
    renames: dict[str, str] = {}
    for base, members in groups.items():
        if len(members) < 2 or not defs[members[0]].stub:
            continue
        if all(defs[i].stub for i in members):
            continue
        impl = next(i for i in members if not defs[i].stub)
        ordered = [impl] + [i for i in members if i != impl]
        for n, i in enumerate(ordered, start=1):
            new = base if n == 1 else f"{base}@{n}"
            if new != qnames[i]:
                renames[qnames[i]] = new
    return renames


_SUFFIX = re.compile(r"@\d+$")


def _renamed(qname: str, renames: dict[str, str]) -> str:
    """``qname`` after ``renames`` of itself or of an enclosing qname (``a@3.b`` -> ``a.b``)."""
    if qname in renames:
        return renames[qname]
    cut = len(qname)
    while (cut := qname.rfind(".", 0, cut)) > 0:
        head = qname[:cut]
        if head in renames:
            return renames[head] + qname[cut:]
    return qname


_MODULES = frozenset({"mod_item", "internal_module"})


def _symbol_parent(stack: list[tuple[_Def, str]]) -> str | None:
    for d, q in reversed(stack[:-1]):
        if d.role != "container":
            return q
    return None


def _build(
    fam: str, src: Source, d: _Def, qname: str, kind: SymbolKind, parent: str | None
) -> Symbol:
    if fam == "python":
        return _python_symbol(src, d, qname, kind, parent)
    node = d.node
    decorators = _annotations(fam, src, node)
    if d.outer is not node:
        decorators = _annotations(fam, src, d.outer) + decorators
    if d.lead is not None and fam != "rust":  # (Rust's are read by _annotations)
        decorators = _sibling_decorators(src, d.lead, d.outer) + decorators
    payload = dict(d.payload)
    payload.update(_modifiers(fam, src, node, d.name))
    return Symbol(
        qname=qname,
        name=d.name,
        kind=kind,
        start_line=line_of(d.lead or d.outer),
        end_line=end_line_of(d.outer),
        signature=_generic_signature(src, node),
        decorators=decorators,
        docstring=_leading_comment(src, d.outer),
        parent=parent,
        lang_payload=payload,
    )


# --- Python ---------------------------------------------------------------------------------


def _python_symbol(
    src: Source, d: _Def, qname: str, kind: SymbolKind, parent: str | None
) -> Symbol:
    node = d.node
    if d.role == "const":
        stmt = node.parent or node  # the assignment
        return Symbol(
            qname=qname,
            name=d.name,
            kind=kind,
            start_line=line_of(stmt),
            end_line=end_line_of(stmt),
            signature=collapse(src.text(stmt), 200),
            parent=parent,
        )
    decorators: tuple[str, ...] = ()
    if d.outer is not node:
        decorators = tuple(
            _python_decorator(src, c) for c in d.outer.children if c.type == "decorator"
        )
    payload: dict[str, Any] = {}
    name = d.name
    if d.role == "class":
        bases = node.child_by_field_name("superclasses")
        signature = f"{name}{src.text(bases)}" if bases is not None else name
    else:
        params = src.field_text(node, "parameters")
        ret = node.child_by_field_name("return_type")
        signature = f"{name}{params}" + (f" -> {src.text(ret)}" if ret is not None else "")
        first = node.child(0)
        payload["async"] = first is not None and first.type == "async"
        for flag in ("staticmethod", "classmethod", "property"):
            if flag in decorators:
                payload[flag] = True
    payload["visibility"] = (
        "private" if name.startswith("_") and not name.endswith("__") else "public"
    )
    return Symbol(
        qname=qname,
        name=name,
        kind=kind,
        start_line=line_of(d.outer),
        end_line=end_line_of(d.outer),
        signature=collapse(signature, _SIG_LIMIT),
        decorators=decorators,
        docstring=_python_docstring(src, node),
        parent=parent,
        lang_payload=payload,
    )


def _python_decorator(src: Source, decorator: Node) -> str:
    expr = decorator.named_children[0] if decorator.named_child_count else decorator
    if expr.type == "call":
        expr = expr.child_by_field_name("function") or expr
    return collapse(src.text(expr), 120)


def _python_docstring(src: Source, node: Node) -> str | None:
    body = node.child_by_field_name("body")
    if body is None or body.named_child_count == 0:
        return None
    lit = body.named_children[0]
    if lit.type == "expression_statement" and lit.named_child_count:
        lit = lit.named_children[0]
    if lit.type != "string":
        return None
    return _clean_string(src.text(lit))


def _clean_string(text: str) -> str | None:
    m = _STRING_PREFIX.match(text)
    if m is None:
        return None
    quote = m.group(1)
    inner = text[m.end() :]
    if inner.endswith(quote):
        inner = inner[: -len(quote)]
    doc = inspect.cleandoc(inner[: _DOC_LIMIT * 2])
    return doc[:_DOC_LIMIT] or None


def python_string_value(src: Source, node: Node | None) -> str | None:
    """The value of a plain (non f-) string literal node, or None."""
    if node is None or node.type != "string":
        return None
    text = src.text(node)
    m = _STRING_PREFIX.match(text)
    if m is None or "f" in text[: m.start(1)].lower():
        return None
    quote = m.group(1)
    inner = text[m.end() :]
    return inner[: -len(quote)] if inner.endswith(quote) else inner


# --- other languages ------------------------------------------------------------------------


_SIBLING_ATTRIBUTES = {"rust": "attribute_item", "typescript": "decorator"}


def _lead(fam: str, outer: Node) -> Node | None:
    """The first of the attribute / decorator siblings right before ``outer``, if any."""
    kind = _SIBLING_ATTRIBUTES.get(fam)
    if kind is None:
        return None
    lead = None
    prev = outer.prev_sibling
    while prev is not None and prev.type == kind:
        lead, prev = prev, prev.prev_sibling
    return lead


def _sibling_decorators(src: Source, lead: Node, outer: Node) -> tuple[str, ...]:
    out: list[str] = []
    node: Node | None = lead
    while node is not None and node.start_byte < outer.start_byte:
        out.append(collapse(src.text(node).lstrip("@"), 120))
        node = node.next_sibling
    return tuple(out)


def _describe(fam: str, src: Source, node: Node, role: str) -> _Def | None:
    d = _describe_any(fam, src, node, role)
    if d is not None and d.role != "container":
        d.lead = _lead(fam, d.outer)
    return d


def _describe_any(fam: str, src: Source, node: Node, role: str) -> _Def | None:
    if fam == "python":
        if role == "const":
            name = src.text(node)
            return _Def(node, node, "const", name) if _UPPER_CONST.match(name) else None
        outer = node.parent if node.parent and node.parent.type == "decorated_definition" else node
        stub = outer is not node and any(
            _python_decorator(src, c)
            in ("overload", "typing.overload", "typing_extensions.overload", "t.overload")
            for c in outer.children
            if c.type == "decorator"
        )
        return _Def(node, outer, role, src.field_text(node, "name"), stub=stub)
    if fam in ("javascript", "typescript"):
        return _describe_js(src, node, role)
    if fam == "go":
        return _describe_go(src, node, role)
    if fam == "rust":
        return _describe_rust(src, node, role)
    if fam in ("c", "cpp"):
        return _describe_c(src, node, role)
    if fam == "ruby":
        return _describe_ruby(src, node, role)
    # java, csharp
    return _Def(node, node, role, src.field_text(node, "name"))


_JS_FUNCTION_VALUES = ("arrow_function", "function_expression", "class")
_JS_EXPORTABLE = frozenset(
    {
        "class_declaration",
        "abstract_class_declaration",
        "function_declaration",
        "generator_function_declaration",
        "interface_declaration",
        "enum_declaration",
        "type_alias_declaration",
    }
)


def _describe_js(src: Source, node: Node, role: str) -> _Def | None:
    if role == "const":
        name = src.text(node)
        value = node.parent.child_by_field_name("value") if node.parent else None
        if value is not None and value.type in _JS_FUNCTION_VALUES:
            return None  # captured as a function
        return _Def(node, node.parent or node, "const", name) if _UPPER_CONST.match(name) else None
    default = node.parent is not None and node.parent.type == "export_statement"
    if node.type == "class":
        name = src.field_text(node, "name")
        if not name and node.parent is not None and node.parent.type == "variable_declarator":
            name = src.field_text(node.parent, "name")
        if not name and default:  # `export default class {`
            return _Def(node, node.parent or node, role, "default", payload={"exported": True})
        return _Def(node, node, role, name) if name else None
    if default and node.type in ("arrow_function", "function_expression"):
        name = src.field_text(node, "name") or "default"  # `export default function () {`
        is_async = node.child(0) is not None and src.text(node.child(0)) == "async"
        flags = {"exported": True, "async": True} if is_async else {"exported": True}
        return _Def(node, node.parent or node, role, name, payload=flags)
    if node.type == "assignment_expression":
        return _describe_js_assignment(src, node, role)
    parent = node.parent
    if node.type in _JS_EXPORTABLE and parent is not None and parent.type == "export_statement":
        name = src.field_text(node, "name")
        return _Def(node, parent, role, name, payload={"exported": True})
    name_node = node.child_by_field_name("name")
    if node.type == "field_definition":  # JS class field `handle = () => {}`
        name_node = node.child_by_field_name("property")
    elif node.type == "pair":  # `{ get: (url) => ... }`
        name_node = node.child_by_field_name("key")
    if name_node is None or name_node.type not in (
        "identifier",
        "property_identifier",
        "private_property_identifier",
        "type_identifier",
        "nested_identifier",  # namespace a.b
    ):
        return None
    payload: dict[str, Any] = {}
    has_value = node.type in (
        "variable_declarator",
        "field_definition",
        "public_field_definition",
        "pair",
    )
    value = node.child_by_field_name("value") if has_value else node
    first = value.child(0) if value is not None else None
    if first is not None and first.type == "async":
        payload["async"] = True
    outer = node
    if node.type == "variable_declarator" and node.parent is not None:
        outer = node.parent  # the `const f = () => {}` statement
    if outer.parent is not None and outer.parent.type == "export_statement":
        outer = outer.parent
        payload["exported"] = True
    stub = node.type == "function_signature"  # `function f(x: T): R;` before its body
    return _Def(node, outer, role, src.text(name_node), payload=payload, stub=stub)


_JS_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")


def _describe_js_assignment(src: Source, node: Node, role: str) -> _Def | None:
    """``exports.f = () => ...``, ``module.exports.f = function ...`` (exported ``f``),
    ``Foo.prototype.f = function ...`` and ``Foo.f = ...`` (``Foo.f``)."""
    left = node.child_by_field_name("left")
    if left is None:
        return None
    name = src.field_text(left, "property")
    target = src.field_text(left, "object")
    right = node.child_by_field_name("right")
    payload: dict[str, Any] = {}
    if right is not None and right.child(0) is not None and right.child(0).type == "async":
        payload["async"] = True
    outer = node.parent or node  # the statement, with its `;`
    if target in ("exports", "module.exports"):
        return _Def(node, outer, role, name, payload={**payload, "exported": True})
    target = target.removesuffix(".prototype")
    if not _JS_DOTTED.fullmatch(target) or target == "module":
        return None
    return _Def(node, outer, role, name, qualifier=target, payload=payload)


def _describe_go(src: Source, node: Node, role: str) -> _Def | None:
    if role == "const":
        return _Def(node, node.parent or node, "const", src.text(node))
    name = src.field_text(node, "name")
    if node.type == "method_declaration":
        receiver = node.child_by_field_name("receiver")
        rtype = re.sub(r"[\s*()]|\[.*\]", "", _last_word_type(src.text(receiver)))
        return _Def(node, node, role, name, qualifier=rtype, payload={"receiver": rtype})
    parent = node.parent
    if node.type == "type_spec" and parent is not None and parent.named_child_count == 1:
        return _Def(node, parent, role, name)  # `type X struct{}`: keep its doc comment
    return _Def(node, node, role, name)


def _last_word_type(receiver: str) -> str:
    inner = receiver.strip().strip("()").strip()
    parts = inner.split()
    return parts[-1] if parts else ""


def _describe_rust(src: Source, node: Node, role: str) -> _Def | None:
    if node.type == "impl_item":
        type_text = src.field_text(node, "type")
        name = re.sub(r"<.*>", "", type_text).split("::")[-1].strip()
        payload: dict[str, Any] = {}
        trait = node.child_by_field_name("trait")
        if trait is not None:
            payload["trait"] = src.text(trait)
        return _Def(node, node, "container", name, payload=payload)
    return _Def(node, node, role, src.field_text(node, "name"))


def _describe_c(src: Source, node: Node, role: str) -> _Def | None:
    outer = node
    while outer.parent is not None and outer.parent.type == "template_declaration":
        outer = outer.parent  # `template <typename T>` belongs to the definition's span
    if node.type == "type_definition":
        inner = node.child_by_field_name("type")
        if inner is None or inner.child_by_field_name("body") is None:
            return None
        if inner.child_by_field_name("name") is not None:
            return None  # `typedef struct foo {..} foo_t;`: the struct itself is captured
        return _Def(node, node, "class", src.field_text(node, "declarator"))
    if role == "class":
        name_node = node.child_by_field_name("name")
        if name_node is not None and name_node.type == "template_type":
            name_node = name_node.child_by_field_name("name")  # a specialization: `foo<T*>`
        return _Def(node, outer, role, _c_name(src.text(name_node)))
    returned = node.child_by_field_name("type")
    if returned is not None and returned.child_by_field_name("body") is not None:
        return None  # `class X {...} f() {}`: macros misparsed, the class is captured alone
    made = _macro_made(src, node)
    if made:
        return _Def(node, outer, role, made)
    target = _c_function_name(node)
    if target is None:
        return None
    text = src.text(target)
    if target.type == "qualified_identifier":
        scope, _, name = text.rpartition("::")
        scope = " ".join(_without_template_args(scope).split())
        if _C_MISPARSED.search(scope):
            return None  # macros made the parser take a class body for a scope
        return _Def(node, outer, role, _c_name(name), qualifier=scope.replace("::", "."))
    return _Def(node, outer, role, _c_name(text))


_MACRO_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


def _macro_made(src: Source, node: Node) -> str:
    """``TEST(suite, name)`` / ``TEST_IMPL(name)``: a function a macro invocation defines
    outside any class (test frameworks), named by the invocation; else ''."""
    if node.parent is not None and node.parent.type == "field_declaration_list":
        return ""  # a constructor of a class with an upper-case name
    declarator = node.child_by_field_name("declarator")
    returned = node.child_by_field_name("type")
    if declarator is None:
        return ""
    if declarator.type == "parenthesized_declarator":  # C: `TEST_IMPL(name) {`
        if returned is None or not _MACRO_NAME.fullmatch(src.text(returned)):
            return ""
        if declarator.named_child_count != 1 or declarator.named_children[0].type != "identifier":
            return ""
        return src.text(returned) + src.text(declarator)
    if declarator.type != "function_declarator" or returned is not None:
        return ""
    name = declarator.child_by_field_name("declarator")
    params = declarator.child_by_field_name("parameters")
    if name is None or params is None or not _MACRO_NAME.fullmatch(src.text(name)):
        return ""
    for param in params.named_children:  # bare names, as a macro's arguments are
        if param.type != "parameter_declaration" or param.child_by_field_name("declarator"):
            return ""
    return collapse(src.text(declarator), 200)


def _c_function_name(node: Node) -> Node | None:
    """The name node of a C/C++ function definition: what its innermost function declarator
    declares (``int (*get_handler(int kind))(int)`` declares ``get_handler``)."""
    declarator = node.child_by_field_name("declarator")
    function: Node | None = None
    while declarator is not None:
        if declarator.type == "function_declarator":
            function = declarator
        elif not declarator.type.endswith("_declarator"):
            break
        inner = declarator.child_by_field_name("declarator")
        if inner is None and declarator.type == "parenthesized_declarator":
            inner = declarator.named_children[0] if declarator.named_child_count else None
        declarator = inner
    return function.child_by_field_name("declarator") if function is not None else None


_C_MISPARSED = re.compile(r"[{};()]")
_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")


def _without_template_args(text: str) -> str:
    """``a<b<c>>::d<e>`` -> ``a::d``: the names of a C++ scope, as calls write them."""
    prev = ""
    while prev != text:
        prev, text = text, _TEMPLATE_ARGS.sub("", text)
    return text


def _c_name(text: str) -> str:
    """The name of a C/C++ definition: ``operator char*`` as written (whitespace collapsed),
    else without template arguments (an explicit specialization ``f<int>``) and without
    the words a macro the parser did not expand left before it (``GTEST_API_ Cardinality
    AtLeast`` -> ``AtLeast``)."""
    words = text.split()
    if not words:
        return ""
    if words[0].startswith("operator") or words[0].startswith("~operator"):
        return " ".join(words)
    words = _without_template_args(" ".join(words)).split()
    return words[-1] if words else ""


def _describe_ruby(src: Source, node: Node, role: str) -> _Def | None:
    if role == "const":
        return _Def(node, node.parent or node, "const", src.text(node))
    if node.type == "singleton_class":
        return _Def(node, node, "container", "<<self", payload={"singleton": True})
    name = src.field_text(node, "name")
    payload: dict[str, Any] = {}
    if node.type == "singleton_method":
        payload["static"] = True
    if node.type == "class" or node.type == "module":
        payload["ruby_kind"] = node.type
        name = name.replace("::", ".")
    return _Def(node, node, role, name, payload=payload)


def _generic_signature(src: Source, node: Node) -> str:
    body = node.child_by_field_name("body")
    if body is not None and body.start_byte > node.start_byte:
        text = src.data[node.start_byte : body.start_byte].decode("utf-8", "replace")
    else:
        text = src.text(node)
        for stop in ("{", "\n"):
            cut = text.find(stop)
            if cut > 0:
                text = text[:cut]
    if "#" in text or "//" in text:  # a comment between header and body (Ruby, C++)
        text = "\n".join(
            line for line in text.split("\n") if not line.lstrip().startswith(("#", "//"))
        )
    return collapse(text.rstrip(" {=:"), _SIG_LIMIT)


_XML_TAG = re.compile(r"</?(summary|remarks|returns|param|see|c|code|para)\b[^>]*>")
_COMMENT_MARKS = re.compile(r"^\s*(///?|/\*\*?|\*/|\*|#)\s?")


def _leading_comment(src: Source, node: Node) -> str | None:
    lines: list[str] = []
    expected = node.start_point[0]
    anchor = node
    while (
        anchor.prev_sibling is None
        and anchor.parent is not None
        and anchor.parent.start_byte == anchor.start_byte
    ):
        anchor = anchor.parent
    prev = anchor.prev_sibling
    while prev is not None:
        if prev.type in ("attribute_item", "attribute_list", "decorator"):
            expected = prev.start_point[0]
            prev = prev.prev_sibling
            continue
        if "comment" not in prev.type or end_line_of(prev) < expected:
            break
        lines[:0] = src.text(prev).splitlines()
        expected = prev.start_point[0]
        prev = prev.prev_sibling
        if len(lines) > 60:
            break
    if not lines:
        return None
    cleaned = [_COMMENT_MARKS.sub("", line).rstrip("*/ ").rstrip() for line in lines]
    text = _XML_TAG.sub("", "\n".join(cleaned)).strip()
    return text[:_DOC_LIMIT] or None


def _annotations(fam: str, src: Source, node: Node) -> tuple[str, ...]:
    out: list[str] = []
    for child in node.children:
        if child.type in ("decorator", "attribute_list"):
            out.append(collapse(src.text(child).lstrip("@"), 120))
        elif child.type == "modifiers":
            for m in child.children:
                if m.type in ("annotation", "marker_annotation"):
                    out.append(collapse(src.text(m).lstrip("@"), 120))
    if fam == "rust":
        prev = node.prev_sibling
        while prev is not None and prev.type == "attribute_item":
            out.insert(0, collapse(src.text(prev), 120))
            prev = prev.prev_sibling
    return tuple(out)


_VISIBILITY_WORDS = ("public", "private", "protected", "internal")


def _modifiers(fam: str, src: Source, node: Node, name: str) -> dict[str, Any]:
    payload: dict[str, Any] = {}
    for child in node.children:
        t = child.type
        if t in ("modifiers", "modifier", "accessibility_modifier", "visibility_modifier"):
            words = src.text(child).split()
            for w in words:
                if w in _VISIBILITY_WORDS:
                    payload["visibility"] = w
                elif w.startswith("pub"):
                    payload["visibility"] = "public"
                elif w in ("static", "abstract", "async", "final", "override", "virtual"):
                    payload[w] = True
        elif t in ("async", "static"):
            payload[t] = True
    if fam == "go" and name:
        payload["visibility"] = "public" if name[0].isupper() else "private"
    elif (fam == "rust" and "visibility" not in payload) or (
        fam in ("javascript", "typescript") and name.startswith("#")
    ):
        payload["visibility"] = "private"
    return payload
