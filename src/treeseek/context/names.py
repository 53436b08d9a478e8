"""Name paths (``path::Qualified.name``) and line ranges (``path:40-90``), in and out.

A name path names a symbol of the code index: the file's repo-relative path, ``::``, and the
symbol's qualified name within the file (``sessions.py::Session.resolve_redirects``). Inputs
may be short:

- the path part may be a unique path suffix (``sessions.py`` for ``requests/sessions.py``);
- the name part may be a unique suffix of a qualified name (``resolve_redirects``);
- the path part may be left out (``Session.resolve_redirects``): the name is looked up in the
  whole tree.

A short form that matches one symbol resolves to it; one that matches several raises
:class:`~treeseek.errors.AmbiguousSymbol` with the candidates' full name paths. Never a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from treeseek.code.model import Symbol, split_symbol_id, symbol_id
from treeseek.context.source import TreeSource
from treeseek.errors import AmbiguousSymbol, ConfigError, NodeNotFound, PathError


@dataclass(frozen=True, slots=True)
class ResolvedSymbol:
    path: str
    symbol: Symbol

    @property
    def name_path(self) -> str:
        return symbol_id(self.path, self.symbol.qname)


def _normalize(path: str) -> str:
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if path.startswith("/") or ".." in parts:
        raise PathError(f"path {path!r} is not inside the tree; give a repo-relative path")
    return "/".join(parts)


def resolve_file(source: TreeSource, path: str) -> str:
    """A file path as stored: exact, else the unique file whose path ends with ``/path``."""
    path = _normalize(path)
    node = source.node(path)
    if node is not None:
        if not node.is_file:
            raise NodeNotFound(f"{path} is a directory, not a file")
        return path
    matches = [p for p in source.file_paths() if p.endswith("/" + path)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise AmbiguousSymbol(path, sorted(matches), what="files")
    raise NodeNotFound(
        f"no file {path!r} in tree {source.tree!r}; use `treeseek show {source.tree}` to list it"
    )


def _in_file(path: str, symbols: list[Symbol], name: str) -> list[Symbol]:
    exact = [s for s in symbols if s.qname == name]
    if exact:
        return exact
    return [s for s in symbols if s.qname.endswith("." + name) or s.name == name]


def resolve_symbol(source: TreeSource, ref: str) -> ResolvedSymbol:
    """The one symbol ``ref`` names (see the module); raises NodeNotFound / AmbiguousSymbol."""
    ref = ref.strip()
    path_part, name = split_symbol_id(ref)
    if name is None:  # no "::": a (possibly dotted) name anywhere in the tree
        return _resolve_in_tree(source, ref)
    if not name:
        raise NodeNotFound(f"{ref!r} names no symbol; write path::Qualified.name")
    path = resolve_file(source, path_part)
    found = _in_file(path, source.symbols(path), name)
    if len(found) == 1:
        return ResolvedSymbol(path, found[0])
    if found:
        raise AmbiguousSymbol(ref, [symbol_id(path, s.qname) for s in found])
    known = ", ".join(s.qname for s in source.symbols(path)[:8])
    raise NodeNotFound(
        f"no symbol {name!r} in {path}" + (f" (it has {known} ...)" if known else " (no symbols)")
    )


def _resolve_in_tree(source: TreeSource, name: str) -> ResolvedSymbol:
    if not name:
        raise ConfigError("give a symbol name")  # nothing to look up: bad input, not a miss
    code = source.code
    if code is None:
        raise NodeNotFound(f"tree {source.tree!r} has no code index to look {name!r} up in")
    by_hash = source.hashes()
    last = name.rsplit(".", 1)[-1]
    hits = code.symbols_named([name, last], by_hash.keys())
    candidates: dict[str, tuple[str, Symbol | None]] = {}
    for h in hits:
        if h.qname != name and not h.qname.endswith("." + name) and h.name != name:
            continue
        for path in by_hash.get(h.content_hash, ()):
            candidates[symbol_id(path, h.qname)] = (path, None)
    if not candidates:
        raise NodeNotFound(f"no symbol named {name!r} in tree {source.tree!r}")
    if len(candidates) > 1:
        raise AmbiguousSymbol(name, sorted(candidates))
    ((found, (path, _)),) = candidates.items()
    qname = split_symbol_id(found)[1] or ""
    symbol = next(s for s in source.symbols(path) if s.qname == qname)
    return ResolvedSymbol(path, symbol)


# -- line ranges -------------------------------------------------------------------------------

_RANGE = re.compile(r"(?P<path>.+?):(?P<start>\d+)?(?:(?P<dash>-)(?P<end>\d+)?)?", re.DOTALL)


def parse_range(spec: str) -> tuple[str, int | None, int | None]:
    """``path:A-B`` -> (path, A, B); ``path:A`` -> (path, A, A); ``path:A-`` -> (path, A,
    None: to the end); ``path:-B`` -> (path, 1, B); ``path`` -> (path, None, None)."""
    m = _RANGE.fullmatch(spec)
    if m is None or (m["start"] is None and m["end"] is None):
        if ":" in spec and re.search(r":[^/]*$", spec) and not spec.endswith(":"):
            tail = spec.rsplit(":", 1)[1]
            if re.fullmatch(r"[\d\s,-]+", tail):
                raise PathError(
                    f"bad line range {tail!r}: write PATH:START-END (1-based, inclusive)"
                )
        return spec, None, None
    start = int(m["start"]) if m["start"] is not None else 1
    if m["dash"] is None:
        end: int | None = start
    else:
        end = int(m["end"]) if m["end"] is not None else None
    return m["path"], start, end


def check_range(path: str, n: int, start: int, end: int | None) -> tuple[int, int]:
    """Validated 1-based inclusive bounds within a file of ``n`` lines (``end=None``: to the
    end); raises PathError with a one-line explanation."""
    if start < 1:
        shown = f"{start}-{end}" if end is not None else f"{start}-"  # not "0-None"
        raise PathError(f"bad line range {shown}: line numbers start at 1")
    last = n if end is None else end
    if end is not None and last < start:
        raise PathError(
            f"bad line range {start}-{end}: the end is before the start; write START-END"
        )
    if n == 0:
        raise PathError(f"{path} is empty: it has no line {start}")
    if start > n:
        raise PathError(
            f"line {start} is past the end of {path} ({n} lines); give a range within 1-{n}"
        )
    if last > n:
        raise PathError(
            f"lines {start}-{last} run past the end of {path} ({n} lines); give a range within"
            f" 1-{n}"
        )
    return start, last
