"""Answers the doors can encode: a non-UTF-8 file name is shown, not a crash.

Paths are stored as Python strings with surrogate escapes for bytes that are not UTF-8 (a
``bad\\xffname.py`` on disk is ``'bad\\udcffname.py'``), which JSON over HTTP and MCP's UTF-8
messages cannot carry: serializing one failed the whole answer (HTTP 500 for every query that
ranked such a file; over MCP stdio the server died). :func:`utf8_safe` shows each such byte as
``\\xNN``, as the CLI's text output does, and leaves every other value alone.
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def utf8_text(text: str) -> str:
    """``text`` with each surrogate-escaped byte as ``\\xNN`` (any other lone surrogate as
    ``\\udNNN``); unchanged when it is valid UTF-8 already."""
    return _SURROGATE.sub(_visible, text)


def utf8_safe(value: Any) -> Any:
    """A plain-JSON value (dicts, lists, strings, numbers) whose strings all encode as UTF-8."""
    if isinstance(value, str):
        return utf8_text(value)
    if isinstance(value, dict):
        return {utf8_safe(k): utf8_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [utf8_safe(v) for v in value]
    return value
