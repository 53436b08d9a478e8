"""Declared parameter types, read back from a symbol's signature text.

``charge(order: Order, *, n: int = 1)`` -> ``{"order": "Order", "n": "int"}``. Resolution uses
them to follow ``order.total()`` to ``Order.total`` when the parameter's declared type is a
class of the tree. Styles: ``name: Type`` (Python, TypeScript, Rust), ``Type name`` (Java, C#,
C/C++), ``name Type`` (Go). Wrappers are unwrapped to the class that matters:
``Optional[X]``, ``X | None``, ``&mut X``, ``*X``, ``List<X>`` -> ``X`` only for the nullable
and reference forms; ``List<X>`` stays ``List``.
"""

from __future__ import annotations

import re

_NAME_CHAIN = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*")
_NULLABLE = re.compile(r"^(?:typing\.)?Optional\[(.*)\]$")
_MODIFIERS = frozenset(
    {"final", "const", "ref", "out", "in", "params", "readonly", "this", "mut", "struct"}
)


def parameter_types(signature: str, family: str) -> dict[str, str]:
    """Parameter name -> declared type reference (dotted), for the parameters that have one."""
    open_at = signature.find("(")
    if open_at < 0:
        return {}
    inside = _balanced(signature[open_at:])
    params = _top_level_split(inside)
    if family == "go" and signature.startswith("func ("):  # receiver, then the parameters
        rest = signature[open_at + len(inside) + 2 :]
        second = rest.find("(")
        if second >= 0:
            params += _top_level_split(_balanced(rest[second:]))
    out: dict[str, str] = {}
    for raw in params:
        param = raw.split("=", 1)[0].strip()
        if not param:
            continue
        name, type_text = _split(param, family)
        if not name or not type_text:
            continue
        ref = type_ref(type_text)
        if ref:
            out[name] = ref
    return out


def _balanced(text: str) -> str:
    """The inside of the first parenthesised group of ``text`` (which starts with ``(``)."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
            if depth == 0:
                return text[1:i]
    return text[1:]


def _top_level_split(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _split(param: str, family: str) -> tuple[str, str]:
    if family in ("python", "typescript", "javascript", "rust"):
        if ":" not in param:
            return "", ""
        name, _, type_text = param.partition(":")
        name = name.strip().lstrip("*&").removeprefix("mut ").strip()
        for word in ("public ", "private ", "protected ", "readonly "):
            name = name.removeprefix(word)
        return name.rstrip("?").strip(), type_text.strip()
    words = param.replace("*", " * ").replace("&", " & ").split()
    words = [w for w in words if not w.startswith("@") and w not in _MODIFIERS]
    if len(words) < 2:
        return "", ""
    if family == "go":
        return words[0], " ".join(words[1:])
    return words[-1], " ".join(words[:-1])


def type_ref(type_text: str) -> str:
    """The class reference a type annotation names (``Optional[X]``, ``X | None``, ``&X`` ->
    ``X``), or ``""``."""
    text = type_text.strip().strip("'\"")
    m = _NULLABLE.match(text)
    if m:
        text = m.group(1)
    if "|" in text:
        options = [t.strip() for t in text.split("|") if t.strip() not in ("None", "null", "")]
        if len(options) != 1:
            return ""
        text = options[0]
    text = text.lstrip("&*").removeprefix("mut ").removeprefix("dyn ").removeprefix("impl ")
    found = _NAME_CHAIN.match(text.strip().strip("'\""))
    return found.group(0).replace("::", ".") if found else ""
