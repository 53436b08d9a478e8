"""The files whose edges can resolve to a node: a complete superset, from stored rows.

The reverse relations (``importers``, ``subclasses``) ask which edges of the whole tree resolve
to one node. Resolving every file is what the whole graph does; :class:`ReverseIndex` instead
reads the tree's import and base-class rows as written (short text columns: no symbols, no
calls, no payloads but those of the few imports with aliases) and keeps the files whose rows
*can* name the node, which :class:`~treeseek.search.graph.lookup.TreeLookup` then resolves
exactly. The superset is complete because of how resolution names a target (see
:mod:`treeseek.code.resolve_python`, :mod:`treeseek.code.resolve_other`):

* a reference reaches a symbol through named steps only: a scope lookup, an import binding, a
  re-export followed by name (``find``), a member or an inherited method all match a name of
  the reference's text, or a name an import binds under another name (``import a as b``,
  ``from m import X as Y``, ``export {X as Y}``, ``using Y = N.X``). So the names a row can
  reach the symbol by are its last name and the aliases of every import row that mentions one
  of them, to a fixed point (:meth:`ReverseIndex.aliases`). Texts are compared by *tokens*
  (runs of word characters): a name that is a dotted, ``::`` or ``/`` part of a reference is a
  token of it, whatever the language's separators.
* the steps that reach a class without naming it are the receiver forms: ``self.x`` /
  ``cls.x`` / ``this.x`` (the enclosing class, an attribute's type) and a parameter's declared
  type (``def f(p: Base): class A(p.X)``, a class nested in a function). Rows of those forms
  are always kept.
* an import resolves to a file by its module or path: the file's module name's last part, its
  stem, its directory for ``__init__``/``index``/``mod``/Go packages, or a name re-exported
  from it (its top-level symbols and their aliases); a relative import's base comes from the
  importer's own path, so one is kept when a directory of the importer is named like the file;
  a row with no word at all (``'.'``, ``'..'``) or a ``self``/``super``/``crate`` path is kept.

Tests compare both ways on real trees (``tests/search/test_graph_reverse.py``); a file left
out wrongly changes an answer there.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass

from treeseek.code.model import Symbol, SymbolKind, split_symbol_id
from treeseek.code.modules import module_name, rust_module
from treeseek.store.code_base import CodeStore

_WORD = re.compile(r"[\w$]+")
#: the receiver heads a resolver answers from the enclosing class (or its attributes)
_SELF_HEADS = frozenset({"self", "cls", "this"})
#: path words that name a module relative to the importer (Rust)
_RELATIVE_WORDS = frozenset({"self", "super", "crate"})
#: file stems that name their directory (``pkg/__init__.py``, ``dir/index.ts``, ``a/mod.rs``)
_DIRECTORY_STEMS = frozenset({"__init__", "index", "mod", "lib", "main"})


def words(text: str) -> frozenset[str]:
    """The tokens of ``text``: runs of word characters (and ``$``)."""
    return frozenset(_WORD.findall(text))


def _strings(value: object) -> Iterator[str]:
    """Every string value of a decoded JSON payload (its keys are not names)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _aliases(payload: object) -> set[str]:
    """The names an import row binds under a name of its own: ``alias`` (Python, Rust, C#)
    and the second of each JavaScript ``[name, alias]`` pair."""
    found: set[str] = set()
    if not isinstance(payload, dict):
        return found
    alias = payload.get("alias")
    if isinstance(alias, str):
        found.update(_WORD.findall(alias))
    names = payload.get("names")
    if isinstance(names, list):
        for pair in names:
            if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str):
                found.update(_WORD.findall(pair[1]))
    return found


@dataclass(frozen=True, slots=True)
class _Row:
    digest: str
    src: str  # the class, for a base-class row ("" for an import)
    dst_ref: str
    words: tuple[str, ...]  # of dst_ref


class ReverseIndex:
    """The import and base-class rows of one tree's contents, read once, and the candidate
    files of a reverse query drawn from them (see the module docstring)."""

    def __init__(self, code: CodeStore, paths_of: Mapping[str, list[str]]) -> None:
        self._code = code
        #: content hash -> the tree's paths with that content
        self._paths_of = paths_of
        self._imports: list[_Row] | None = None
        #: the import rows that bind a name of their own: (the words they mention, the names)
        self._bindings: list[tuple[frozenset[str], frozenset[str]]] | None = None
        self._inherits: list[_Row] | None = None
        #: content hash -> its symbols' kinds by qualified name (read for nested classes)
        self._kinds: dict[str, dict[str, SymbolKind]] = {}

    # --- rows -------------------------------------------------------------------------------

    def imports(self) -> list[_Row]:
        """Every import row of the tree's contents (the import as written)."""
        if self._imports is None:
            refs = self._code.import_refs(self._paths_of)
            findall = _WORD.findall
            self._imports = [
                _Row(digest, "", ref, tuple(findall(ref)))
                for digest in sorted(refs)
                for ref in refs[digest]
            ]
        return self._imports

    def inherits(self) -> list[_Row]:
        """Every base-class row of the tree's contents (class, base as written)."""
        if self._inherits is None:
            refs = self._code.base_refs(self._paths_of)
            findall = _WORD.findall
            self._inherits = [
                _Row(digest, src, ref, tuple(findall(ref)))
                for digest in sorted(refs)
                for src, ref in refs[digest]
            ]
        return self._inherits

    def aliases(self, names: Iterable[str]) -> set[str]:
        """``names`` and every name an import row binds while mentioning one of them, to a
        fixed point: each name a reference can reach one of ``names`` by."""
        if self._bindings is None:
            bindings = []
            rows = self._code.import_bindings(self._paths_of)
            for digest in sorted(rows):
                for ref, payload in rows[digest]:
                    decoded = json.loads(payload)
                    bound = _aliases(decoded)
                    if bound:
                        words_of = set(_WORD.findall(ref))
                        for value in _strings(decoded):
                            words_of.update(_WORD.findall(value))
                        bindings.append((frozenset(words_of), frozenset(bound)))
            self._bindings = bindings
        found = set(names)
        pending = self._bindings
        changed = True
        while changed:
            changed = False
            rest = []
            for mentions, binds in pending:
                if found.isdisjoint(mentions):
                    rest.append((mentions, binds))
                elif not binds <= found:
                    found |= binds
                    changed = True
            pending = rest
        return found

    def _by_path(self, rows: Iterable[_Row]) -> dict[str, set[tuple[str, str]]]:
        """path -> the ``(src, dst_ref)`` of ``rows`` in its content (every path that has it)."""
        out: dict[str, set[tuple[str, str]]] = {}
        for row in rows:
            for path in self._paths_of.get(row.digest, ()):
                out.setdefault(path, set()).add((row.src, row.dst_ref))
        return out

    # --- candidates ---------------------------------------------------------------------------

    def importer_candidates(
        self, path: str, language: str | None, modules: Collection[str], symbols: Iterable[Symbol]
    ) -> dict[str, set[tuple[str, str]]]:
        """The import rows that can resolve to file ``path`` (of ``language``, known as the
        dotted ``modules``, defining ``symbols``), by the file they are in: ``{path: {("",
        dst_ref)}}``; the rows of a file left out cannot."""
        keys = _file_keys(path, language, modules, symbols)
        rows = self.imports()
        if keys is None:
            return self._by_path(rows)
        names = self.aliases(keys | _exported(symbols))
        found: list[_Row] = []
        relative: list[_Row] = []
        for row in rows:
            w = row.words
            if not w or not names.isdisjoint(w) or not _RELATIVE_WORDS.isdisjoint(w):
                found.append(row)
            elif row.dst_ref.startswith("."):  # Python: the base is the importer's package
                relative.append(row)
        out = self._by_path(found)
        for where, refs in self._by_path(relative).items():
            if _relative_base_named(where, keys):
                out.setdefault(where, set()).update(refs)
        return out

    def subclass_candidates(self, nodes: Iterable[str]) -> dict[str, set[tuple[str, str]]]:
        """The base-class rows that can resolve to one of ``nodes`` (symbol ids; a file node
        takes every base), by the file they are in: ``{path: {(class, base)}}``."""
        rows = self.inherits()
        names: set[str] = set()
        for node in nodes:
            qname = split_symbol_id(node)[1]
            last = words(qname.rsplit(".", 1)[-1]) if qname else frozenset()
            if not last:  # a module or a name with no word: any base may end there
                return self._by_path(rows)
            names |= last
        names = self.aliases(names)
        found: list[_Row] = []
        nested: list[_Row] = []
        for row in rows:
            ref = row.dst_ref
            if not names.isdisjoint(row.words) or ref.split(".", 1)[0] in _SELF_HEADS:
                found.append(row)
            elif "." in row.src and "." in ref:
                nested.append(row)
        # a base `p.X` of a class nested in a function may go through that function's
        # parameter `p: Base` (Resolver.typed_parameter): only under a symbol that is not a
        # class, which the symbols' kinds tell without reading the files
        kinds = self._kinds
        unread = {r.digest for r in nested} - kinds.keys()
        heads = self._code.symbol_heads(unread)
        for digest in unread:
            kinds[digest] = {h.qname: h.kind for h in heads.get(digest, ())}
        for row in nested:
            if _under_a_function(row.src.rsplit(".", 1)[0], kinds.get(row.digest, {})):
                found.append(row)
        return self._by_path(found)


def _relative_base_named(importer: str, keys: Collection[str]) -> bool:
    """Whether a relative import of file ``importer`` can name a module called one of
    ``keys``: its base package, and each package above it, is a directory of the importer."""
    return not words(posixpath.dirname(importer)).isdisjoint(keys)


def _under_a_function(scope: str, kinds: Mapping[str, SymbolKind]) -> bool:
    """Whether ``scope`` or a scope around it is a symbol other than a class."""
    while scope:
        kind = kinds.get(scope)
        if kind is not None and kind is not SymbolKind.CLASS:
            return True
        scope = scope.rsplit(".", 1)[0] if "." in scope else ""
    return False


def _exported(symbols: Iterable[Symbol]) -> set[str]:
    """The names a module can be imported from by (``from m import X``) or a class reached
    by (Java/C# imports): top-level symbols and every class's last name."""
    out: set[str] = set()
    for s in symbols:
        if s.parent is None or s.kind is SymbolKind.CLASS:
            out.update(words(s.qname.rsplit(".", 1)[-1]))
    return out


def _file_keys(
    path: str, language: str | None, modules: Collection[str], symbols: Iterable[Symbol]
) -> set[str] | None:
    """The words an import of file ``path`` must mention (unless relative), or None when
    any import may reach it (a file whose names have no word)."""
    base = posixpath.basename(path)
    directory = posixpath.dirname(path)
    stem = base.split(".", 1)[0]
    keys = set(words(stem))
    if stem in _DIRECTORY_STEMS or language in ("go", "rust"):
        if not directory:
            return None
        keys |= words(posixpath.basename(directory))
    dotted = [*modules, module_name(path, "python")] if language == "python" else modules
    for module in dotted:
        last = module.rsplit(".", 1)[-1]
        if not words(last):
            return None
        keys |= words(last)
    if language == "rust":
        keys |= words(rust_module(path).rsplit("::", 1)[-1])
    if language in ("java", "csharp"):
        package = module_name(path, language).rsplit(".", 1)[0]
        keys |= words(package.rsplit(".", 1)[-1])
    if not keys:
        return None
    return keys
