"""C3: HTTP routes and CLI commands of a Python file, found by AST shape.

* FastAPI / Flask: a decorator call ``<obj>.<verb|route|api_route|websocket>("/path", ...)`` on
  a function, or ``<obj>.add_api_route`` / ``<obj>.add_url_rule`` calls. The framework comes
  from what ``<obj>`` was bound to at module level (``FastAPI()``, ``APIRouter()``, ``Flask()``,
  ``Blueprint()``), else from the file's imports. Router prefixes (``APIRouter(prefix=...)``,
  ``Blueprint(url_prefix=...)``) are joined to the route.
* Typer: ``@<obj>.command(...)`` where ``<obj> = Typer()``; Click: ``@click.command``,
  ``@click.group``, ``@<group>.command``; the command name is the explicit one or the function
  name with ``_`` -> ``-`` (what both do).
* argparse: each ``ArgumentParser(...)`` and each ``<subparsers>.add_parser("name")``, with its
  ``add_argument`` option strings and the ``set_defaults(func=...)`` handler.
* Django: ``path()`` / ``re_path()`` / ``url()`` entries of ``urlpatterns`` (nested
  ``include([...])`` lists get their prefix), and management commands
  (``management/commands/<name>.py`` defining ``class Command``).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any

from tree_sitter import Node

from treeseek.code.model import Edge, EdgeType, Entrypoint
from treeseek.code.source import Source, line_of
from treeseek.code.symbols import SymbolTable, python_string_value

_HTTP_VERBS = frozenset({"get", "post", "put", "delete", "patch", "options", "head", "trace"})
_ROUTE_METHODS = _HTTP_VERBS | {"route", "api_route", "websocket"}
_FASTAPI_CTORS = frozenset({"FastAPI", "APIRouter"})
_FLASK_CTORS = frozenset({"Flask", "Blueprint", "Quart"})
_DJANGO_ROUTE_FUNCS = frozenset({"path", "re_path", "url"})
_ENTRY_CALLS = frozenset(
    {
        b"add_api_route",
        b"add_url_rule",
        b"ArgumentParser",
        b"add_parser",
        b"add_argument",
        b"set_defaults",
    }
)
_ENTRY_IMPORTS = frozenset({"fastapi", "flask", "quart", "starlette", "typer", "click", "argparse"})


@dataclass(slots=True)
class _FileFacts:
    imports: set[str] = field(default_factory=set)  # top-level imported packages
    ctor_of: dict[str, str] = field(default_factory=dict)  # var -> constructor name
    prefix_of: dict[str, str] = field(default_factory=dict)  # var -> router prefix
    click_groups: set[str] = field(default_factory=set)  # functions decorated as click groups


def extract_entrypoints(src: Source, table: SymbolTable, edges: list[Edge]) -> list[Entrypoint]:
    facts = _facts(src, table, edges)
    out: list[Entrypoint] = []
    out.extend(_django_urls(src))
    out.extend(_django_command(src, table))
    if not facts.imports & _ENTRY_IMPORTS and not _route_decorated(table):
        return sorted(out, key=lambda e: e.line)
    for sym in table.symbols:
        node = table.nodes[sym.qname]
        parent = node.parent
        if node.type != "function_definition" or parent is None:
            continue
        if parent.type != "decorated_definition":
            continue
        for dec in parent.children:
            if dec.type == "decorator":
                ep = _from_decorator(src, facts, dec, sym.qname, sym.name)
                if ep is not None:
                    out.append(ep)
    out.extend(_from_calls(src, facts, table))
    out.sort(key=lambda e: e.line)
    return out


def _route_decorated(table: SymbolTable) -> bool:
    """Some function has a ``@<obj>.<verb|route>`` decorator (an app imported from elsewhere)."""
    return any(
        "." in d and d.rsplit(".", 1)[1] in _ROUTE_METHODS
        for sym in table.symbols
        for d in sym.decorators
    )


def _facts(src: Source, table: SymbolTable, edges: list[Edge]) -> _FileFacts:
    facts = _FileFacts()
    for e in edges:
        if e.type is EdgeType.IMPORTS:
            module = str(e.lang_payload.get("module", ""))
            if module:
                facts.imports.add(module.split(".", 1)[0])
    if not facts.imports & _ENTRY_IMPORTS and not _route_decorated(table):
        return facts
    for node in src.sorted_nodes("assign"):
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if left is None or right is None or left.type != "identifier" or right.type != "call":
            continue
        ctor = src.field_text(right, "function").rsplit(".", 1)[-1]
        var = src.text(left)
        facts.ctor_of[var] = ctor
        prefix = _kwarg_string(src, right, ("prefix", "url_prefix"))
        if prefix:
            facts.prefix_of[var] = prefix
    for sym in table.symbols:
        if any(d in ("click.group", "group") or d.endswith(".group") for d in sym.decorators):
            facts.click_groups.add(sym.name)
    return facts


def _args(node: Node) -> tuple[list[Node], dict[str, Node]]:
    args = node.child_by_field_name("arguments")
    positional: list[Node] = []
    keywords: dict[str, Node] = {}
    if args is None:
        return positional, keywords
    for child in args.named_children:
        if child.type == "keyword_argument":
            name = child.child_by_field_name("name")
            value = child.child_by_field_name("value")
            if name is not None and value is not None:
                keywords[name.text.decode() if name.text else ""] = value
        elif child.type not in ("comment", "list_splat", "dictionary_splat"):
            positional.append(child)
    return positional, keywords


def _kwarg_string(src: Source, call: Node, names: tuple[str, ...]) -> str | None:
    _, kw = _args(call)
    for n in names:
        if n in kw:
            return python_string_value(src, kw[n])
    return None


def _string_list(src: Source, node: Node | None) -> list[str]:
    if node is None or node.type not in ("list", "tuple", "set"):
        return []
    out = []
    for child in node.named_children:
        value = python_string_value(src, child)
        if value is not None:
            out.append(value)
    return out


def _join(prefix: str | None, route: str) -> str:
    if not prefix:
        return route
    return prefix.rstrip("/") + ("/" + route.lstrip("/") if route else "")


def _from_decorator(
    src: Source, facts: _FileFacts, dec: Node, qname: str, name: str
) -> Entrypoint | None:
    expr = dec.named_children[0] if dec.named_child_count else None
    if expr is None:
        return None
    call = expr if expr.type == "call" else None
    fn = call.child_by_field_name("function") if call is not None else expr
    if fn is None:
        return None
    if fn.type == "attribute":
        obj = src.field_text(fn, "object")
        method = src.field_text(fn, "attribute")
    elif fn.type == "identifier":
        obj, method = "", src.text(fn)
    else:
        return None
    positional, kw = _args(call) if call is not None else ([], {})
    line = line_of(dec)
    if method in _ROUTE_METHODS and call is not None and obj:
        route_node = positional[0] if positional else kw.get("path") or kw.get("rule")
        route = python_string_value(src, route_node)
        if route is None:
            return None
        framework = _web_framework(facts, obj, method)
        guessed = framework is None
        if framework is None:
            if not route.startswith("/"):
                return None
            # the app object comes from another module: the decorator's shape decides
            framework = "flask" if method == "route" else "fastapi"
        if method in _HTTP_VERBS:
            methods = [method.upper()]
        elif method == "websocket":
            methods = ["WEBSOCKET"]
        else:
            methods = [m.upper() for m in _string_list(src, kw.get("methods"))] or ["GET"]
        return Entrypoint(
            "http",
            framework,
            _join(facts.prefix_of.get(obj), route),
            qname,
            line,
            {"methods": methods, "framework_guessed": True} if guessed else {"methods": methods},
        )
    if method in ("command", "group"):
        framework = _cli_framework(facts, obj)
        if framework is None:
            return None
        explicit = python_string_value(src, positional[0]) if positional else None
        if explicit is None and "name" in kw:
            explicit = python_string_value(src, kw["name"])
        command = explicit or name.replace("_", "-")
        payload: dict[str, Any] = {"group": method == "group"}
        if obj and obj not in ("click", "typer"):
            payload["parent"] = obj
        return Entrypoint("cli", framework, command, qname, line, payload)
    return None


def _web_framework(facts: _FileFacts, obj: str, method: str) -> str | None:
    ctor = facts.ctor_of.get(obj)
    if ctor in _FASTAPI_CTORS:
        return "fastapi"
    if ctor in _FLASK_CTORS:
        return "flask"
    if "fastapi" in facts.imports:
        return "fastapi"
    if facts.imports & {"flask", "quart"}:
        return "flask"
    return None


def _cli_framework(facts: _FileFacts, obj: str) -> str | None:
    ctor = facts.ctor_of.get(obj)
    if obj == "typer" or ctor == "Typer":
        return "typer"
    if obj == "click" or ctor in ("Group", "group") or obj in facts.click_groups:
        return "click"
    if "click" in facts.imports and obj:
        return "click"
    if "typer" in facts.imports and obj:
        return "typer"
    return None


def _assigned_var(src: Source, call: Node) -> str | None:
    parent = call.parent
    if parent is not None and parent.type == "assignment":
        left = parent.child_by_field_name("left")
        if left is not None and left.type == "identifier":
            return src.text(left)
    return None


def _from_calls(src: Source, facts: _FileFacts, table: SymbolTable) -> list[Entrypoint]:
    out: list[Entrypoint] = []
    parsers: dict[str, int] = {}  # parser var -> index in out
    arguments: dict[str, list[str]] = {}
    handlers: dict[str, str] = {}
    owner = table.owners.owner
    data = src.data
    for fn in src.nodes("callee"):
        last = data[fn.start_byte : fn.end_byte].rsplit(b".", 1)[-1].strip()
        if last not in _ENTRY_CALLS:
            continue
        call = fn.parent
        if call is None:
            continue
        if fn.type == "attribute":
            obj = src.field_text(fn, "object")
            method = src.field_text(fn, "attribute")
        elif fn.type == "identifier":
            obj, method = "", src.text(fn)
        else:
            continue
        positional, kw = _args(call)
        line = line_of(call)
        if method in ("add_api_route", "add_url_rule") and obj:
            route = python_string_value(src, positional[0]) if positional else None
            if route is None:
                continue
            if method == "add_api_route":
                handler_node = positional[1] if len(positional) > 1 else kw.get("endpoint")
                framework = "fastapi"
            else:
                handler_node = kw.get("view_func") or (
                    positional[2] if len(positional) > 2 else None
                )
                framework = "flask"
            methods = [m.upper() for m in _string_list(src, kw.get("methods"))] or ["GET"]
            out.append(
                Entrypoint(
                    "http",
                    framework,
                    _join(facts.prefix_of.get(obj), route),
                    src.text(handler_node) or None,
                    line,
                    {"methods": methods},
                )
            )
        elif method == "ArgumentParser" and (obj == "argparse" or "argparse" in facts.imports):
            prog = _kwarg_string(src, call, ("prog",))
            var = _assigned_var(src, call)
            enclosing = owner(call.start_byte) or None
            command = prog or posixpath.splitext(posixpath.basename(src.path))[0]
            if var:
                parsers[var] = len(out)
            out.append(Entrypoint("cli", "argparse", command, enclosing, line, {"arguments": []}))
        elif method == "add_parser" and obj and positional:
            name = python_string_value(src, positional[0])
            if name is None:
                continue
            var = _assigned_var(src, call)
            if var:
                parsers[var] = len(out)
            out.append(
                Entrypoint("cli", "argparse", name, None, line, {"arguments": [], "sub": True})
            )
        elif method == "add_argument" and obj:
            flags = [python_string_value(src, p) for p in positional]
            arguments.setdefault(obj, []).extend(f for f in flags if f)
        elif method == "set_defaults" and obj and "func" in kw:
            handlers[obj] = src.text(kw["func"])
    for var, i in parsers.items():
        ep = out[i]
        payload = {**ep.lang_payload, "arguments": arguments.get(var, [])}
        out[i] = Entrypoint(
            ep.entry_type,
            ep.framework,
            ep.route_or_command,
            handlers.get(var, ep.handler),
            ep.line,
            payload,
        )
    return out


def _django_urls(src: Source) -> list[Entrypoint]:
    out: list[Entrypoint] = []
    for node in src.sorted_nodes("assign"):
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if left is None or right is None or src.text(left) != "urlpatterns":
            continue
        _walk_patterns(src, right, "", out, 0)
    return out


def _walk_patterns(src: Source, node: Node, prefix: str, out: list[Entrypoint], depth: int) -> None:
    if depth > 6:
        return
    if node.type in ("list", "tuple", "parenthesized_expression"):
        for child in node.named_children:
            _walk_patterns(src, child, prefix, out, depth + 1)
        return
    if node.type == "binary_operator":  # [..] + [..]
        for side in ("left", "right"):
            operand = node.child_by_field_name(side)
            if operand is not None:
                _walk_patterns(src, operand, prefix, out, depth + 1)
        return
    if node.type != "call":
        return
    fn_name = src.field_text(node, "function").rsplit(".", 1)[-1]
    if fn_name not in _DJANGO_ROUTE_FUNCS:
        return
    positional, kw = _args(node)
    if not positional:
        return
    route = python_string_value(src, positional[0])
    if route is None:
        return
    full = prefix + route
    target = positional[1] if len(positional) > 1 else kw.get("view")
    payload: dict[str, object] = {"methods": [], "kind": fn_name}
    name = _kwarg_string(src, node, ("name",))
    if name:
        payload["name"] = name
    handler: str | None = None
    if target is not None and target.type == "call":
        callee = src.field_text(target, "function")
        if callee.rsplit(".", 1)[-1] == "include":
            inc_args, _ = _args(target)
            if inc_args:
                inner = inc_args[0]
                module = python_string_value(src, inner)
                if module is not None:
                    payload["include"] = module
                elif inner.type in ("list", "tuple"):
                    _walk_patterns(src, inner, full, out, depth + 1)
                    return
                else:
                    payload["include"] = src.text(inner)
        elif callee.endswith(".as_view"):
            handler = callee[: -len(".as_view")]
            payload["as_view"] = True
        else:
            handler = callee
    elif target is not None:
        handler = src.text(target)
    out.append(Entrypoint("http", "django", full, handler, line_of(node), payload))


def _django_command(src: Source, table: SymbolTable) -> list[Entrypoint]:
    parts = src.path.split("/")
    if len(parts) < 3 or parts[-3:-1] != ["management", "commands"]:
        return []
    by_qname = table.by_qname()
    if "Command" not in by_qname:
        return []
    name = posixpath.splitext(parts[-1])[0]
    if name.startswith("_"):
        return []
    handler = "Command.handle" if "Command.handle" in by_qname else "Command"
    cmd = by_qname["Command"]
    arguments: list[str] = []
    data = src.data
    for fn in src.nodes("callee"):
        if not data[fn.start_byte : fn.end_byte].endswith(b".add_argument"):
            continue
        if table.owners.owner(fn.start_byte) != "Command.add_arguments" or fn.parent is None:
            continue
        positional, _ = _args(fn.parent)
        arguments.extend(v for v in (python_string_value(src, p) for p in positional) if v)
    payload = {"help": _class_help(src, table) or cmd.docstring or "", "arguments": arguments}
    return [Entrypoint("cli", "django", name, handler, cmd.start_line, payload)]


def _class_help(src: Source, table: SymbolTable) -> str | None:
    """``help = "..."`` in the body of ``class Command``."""
    body = table.nodes["Command"].child_by_field_name("body")
    for stmt in body.named_children if body is not None else ():
        if stmt.type == "expression_statement" and stmt.named_child_count:
            stmt = stmt.named_children[0]
        if stmt.type != "assignment":
            continue
        left = stmt.child_by_field_name("left")
        if left is not None and src.text(left) == "help":
            return python_string_value(src, stmt.child_by_field_name("right"))
    return None
