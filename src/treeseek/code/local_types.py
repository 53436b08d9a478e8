"""What the local names of a Python file are bound to, read from its source at query time.

The stored code index keeps calls as written (``app.register_blueprint``) but not what ``app``
is. This module reads one file again and records, per scope, the bindings that say it:

* ``x = Ctor(...)`` / ``x = factory(...)`` -> the callee reference (``"flask.Flask"``);
* ``x: Type = ...`` / ``x: Type`` -> the annotation's class reference;
* ``with Ctor(...) as x`` -> the callee reference (``with`` of a call binds what ``__enter__``
  returns; for the context managers of a tree that is almost always the object itself);
* ``return x`` / ``return Ctor(...)`` -> what the function returns, for callers that follow a
  factory or a pytest fixture to the object it makes.

Scopes are the code index's qualified names (``Class.method``, ``outer.inner``; ``""`` is the
module), found from the given symbol line ranges, so the result lines up with stored edges. The
first binding of a name in a scope wins, as in :mod:`treeseek.code.symbols`. Pure: bytes in,
data out.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from tree_sitter import Node, QueryCursor

from treeseek.code.languages import ts_parser, ts_query
from treeseek.code.param_types import type_ref

_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")

_QUERY = """
(assignment left: (identifier) @name right: (call function: (_) @ctor)) @bind
(assignment left: (identifier) @name type: (type) @annotation) @bind
(as_pattern (call function: (_) @ctor) alias: (as_pattern_target (identifier) @name)) @bind
(return_statement (identifier) @returned) @bind
(return_statement (call function: (_) @ctor)) @bind
"""


@dataclass(frozen=True, slots=True)
class Binding:
    """A local name's type reference as written: ``ref`` is a class or a callable (whose
    result is the value); ``call`` says which (an annotation names the class itself)."""

    ref: str
    call: bool


@dataclass(slots=True)
class LocalTypes:
    """``scope -> name -> binding`` and ``scope -> what it returns`` of one file."""

    names: dict[str, dict[str, Binding]] = field(default_factory=dict)
    returns: dict[str, Binding] = field(default_factory=dict)
    returned_names: dict[str, str] = field(default_factory=dict)  # scope -> `return x`

    def binding(self, scope: str, name: str) -> Binding | None:
        return self.names.get(scope, {}).get(name)

    def returned(self, scope: str) -> Binding | None:
        """What function ``scope`` returns: a call, or a local name bound in it."""
        found = self.returns.get(scope)
        if found is not None:
            return found
        name = self.returned_names.get(scope)
        return self.binding(scope, name) if name is not None else None


@dataclass(frozen=True, slots=True)
class ScopeSpan:
    qname: str
    start_line: int
    end_line: int


def local_types(data: bytes, scopes: Iterable[ScopeSpan]) -> LocalTypes:
    """The bindings of a Python file's source ``data``; ``scopes`` are its functions and
    classes (the stored symbols) with their 1-based inclusive line ranges."""
    owner = _Owner(scopes)
    root = ts_parser("python").parse(data).root_node
    out = LocalTypes()
    for _, match in QueryCursor(ts_query("python", _QUERY)).matches(root):
        bind = match["bind"][0]
        scope = owner.at(bind.start_point[0] + 1)
        if "returned" in match:
            out.returned_names.setdefault(scope, _text(data, match["returned"][0]))
            continue
        binding = _binding(data, match)
        if binding is None:
            continue
        if "name" in match:
            out.names.setdefault(scope, {}).setdefault(_text(data, match["name"][0]), binding)
        else:
            out.returns.setdefault(scope, binding)
    return out


def _binding(data: bytes, match: dict[str, list[Node]]) -> Binding | None:
    if "annotation" in match:
        ref = type_ref(_text(data, match["annotation"][0]))
        return Binding(ref, call=False) if ref else None
    ref = _text(data, match["ctor"][0])
    return Binding(ref, call=True) if _DOTTED.fullmatch(ref) else None


def _text(data: bytes, node: Node) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", "replace")


class _Owner:
    """The innermost scope holding a line (scopes nest; the latest start that still covers the
    line is the innermost)."""

    def __init__(self, scopes: Iterable[ScopeSpan]) -> None:
        self.spans = sorted(scopes, key=lambda s: (s.start_line, -s.end_line))
        self.starts = [s.start_line for s in self.spans]

    def at(self, line: int) -> str:
        i = bisect.bisect_right(self.starts, line) - 1
        while i >= 0:
            span = self.spans[i]
            if span.start_line <= line <= span.end_line:
                return span.qname
            i -= 1
        return ""
