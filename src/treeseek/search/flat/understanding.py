"""Query understanding without an LLM: what a question names exactly, and where that lives.

Two steps. :func:`extract_mentions` reads the query text alone and finds repo paths, dotted
module names, stack-trace frames (``File "x.py", line N, in f``), identifiers (CamelCase,
snake_case, ``dotted.attr``, ```backticked```, ``call()``) and exception names. Then
:class:`MentionResolver` matches them EXACTLY against one tree: its paths and its symbol
catalog (a :class:`SymbolLookup`: the flat retriever's per-tree catalog, or a code store).
There is no guessing: a bare
basename (``query.py``) or a one-part module counts only when it is unique in the tree; a
path is matched whole or by its longest suffix that exists, never by similarity.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from treeseek.store.code_base import SymbolHit
from treeseek.text.tokens import QUERY_STOPWORDS, code_tokens

# -- extraction ------------------------------------------------------------------------------

_FRAME = re.compile(r'File "([^"\n]+)", line (\d+)(?:, in ([\w<>.]+))?')
_PATH = re.compile(
    r"(?<![\w.])((?:[\w.-]+/)*[\w-]+(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{0,5})(?![\w/])"
)
_SLASHED = re.compile(r"(?<![\w.])((?:[\w.-]+/)+[\w.-]+)")
_URL = re.compile(r"[a-z][a-z0-9+.-]*://\S+")
_BLOB = re.compile(r"/(?:blob|tree|edit|raw)/[^/\s]+/([^\s#?)\]>'\"]+)")
_BACKTICK = re.compile(r"`+([^`\n]{1,200})`+")
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)")
_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\(")
_WORD = re.compile(r"(?<![\w.])([A-Za-z_]\w*)")
_CAMEL = re.compile(r"^_*[A-Za-z][a-z0-9]*[A-Z]\w*$|^_*[A-Z]{2,}[a-z]\w*$")
_EXCEPTION = re.compile(r"\b([A-Z]\w*(?:Error|Exception|Warning))\b")

#: file extensions that make a dotted word a path (``query.py``), not a module (``a.b``)
SOURCE_EXTENSIONS = frozenset(
    [
        "py",
        "pyi",
        "pyx",
        "pxd",
        "c",
        "h",
        "cc",
        "cpp",
        "hpp",
        "cxx",
        "js",
        "jsx",
        "ts",
        "tsx",
        "mjs",
        "cjs",
        "go",
        "rs",
        "java",
        "kt",
        "rb",
        "cs",
        "php",
        "swift",
        "scala",
        "sh",
        "toml",
        "cfg",
        "ini",
        "yml",
        "yaml",
        "json",
        "rst",
        "md",
        "txt",
        "html",
        "css",
        "scss",
        "xml",
        "sql",
    ]
)


class Strength:
    """How much an extracted identifier is worth as evidence (multiplies match weights)."""

    CODE = 1.0  # backticked, called, dotted, snake_case or CamelCase: surely code
    WORD = 0.35  # a capitalized plain word ("Quantity"): code only if the catalog says so


@dataclass(frozen=True, slots=True)
class StackFrame:
    path: str
    line: int
    function: str | None


@dataclass(frozen=True, slots=True)
class QueryMentions:
    """What the query names, before matching. Identifiers map to their strength."""

    paths: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    frames: tuple[StackFrame, ...] = ()
    identifiers: Mapping[str, float] = field(default_factory=dict)
    exceptions: tuple[str, ...] = ()
    #: identifiers that appear in the first line (an issue's title): they weigh double
    title_identifiers: frozenset[str] = frozenset()


def _clean_path(raw: str) -> str:
    span = raw.replace("\\", "/").strip(".,:;'\"()[]{}<>")
    while span.startswith("./"):
        span = span[2:]
    return span.strip("/")


def _is_path_like(span: str) -> bool:
    ext = span.rpartition(".")[2].lower() if "." in span.rpartition("/")[2] else ""
    return ext in SOURCE_EXTENSIONS


def _add(table: dict[str, float], name: str, strength: float) -> None:
    if len(name) >= 3 and table.get(name, 0.0) < strength:
        table[name] = strength


def extract_mentions(query: str) -> QueryMentions:
    """Find paths, modules, stack frames, identifiers and exception names in ``query``."""
    frames = tuple(
        StackFrame(_clean_path(m.group(1)), int(m.group(2)), m.group(3))
        for m in _FRAME.finditer(query)
    )
    paths: dict[str, None] = {}
    for f in frames:
        paths.setdefault(f.path, None)
    for url in _URL.findall(query):
        blob = _BLOB.search(url)  # a repository file link: .../blob/<ref>/<repo path>
        if blob:
            paths.setdefault(_clean_path(blob.group(1)), None)
    text = _URL.sub(" ", query)
    for m in _PATH.finditer(text):
        span = _clean_path(m.group(1))
        if _is_path_like(span):
            paths.setdefault(span, None)
    for m in _SLASHED.finditer(text):
        span = _clean_path(m.group(1))
        if "/" in span:
            paths.setdefault(span, None)

    identifiers: dict[str, float] = {}
    modules: dict[str, None] = {}
    for m in _BACKTICK.finditer(query):
        for word in _DOTTED.findall(m.group(1)) + _WORD.findall(m.group(1)):
            _add(identifiers, word, Strength.CODE)
    for m in _CALL.finditer(query):
        _add(identifiers, m.group(1), Strength.CODE)
    for m in _DOTTED.finditer(text):
        dotted = m.group(1)
        if _is_path_like(dotted):
            continue
        modules.setdefault(dotted, None)
        _add(identifiers, dotted, Strength.CODE)
    for m in _WORD.finditer(query):
        word = m.group(1)
        if "_" in word.strip("_") or _CAMEL.match(word):
            _add(identifiers, word, Strength.CODE)
        elif word[0].isupper() and len(word) >= 4:
            _add(identifiers, word, Strength.WORD)
    for f in frames:
        if f.function and not f.function.startswith("<"):
            _add(identifiers, f.function, Strength.CODE)
    exceptions = tuple(dict.fromkeys(_EXCEPTION.findall(query)))
    # an exception's name says what went wrong, rarely where: its defining module is seldom
    # the file to change, so it counts as weak evidence only
    for ident in identifiers:
        if _EXCEPTION.fullmatch(ident.rpartition(".")[2]):
            identifiers[ident] = min(identifiers[ident], Strength.WORD)
    title = query.strip().split("\n", 1)[0]
    title_ids = frozenset(i for i in identifiers if i in title)
    return QueryMentions(
        paths=tuple(paths),
        modules=tuple(modules),
        frames=frames,
        identifiers=identifiers,
        exceptions=exceptions,
        title_identifiers=title_ids,
    )


# -- matching --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """A question parsed once per query: every signal reads its tokens, title and mentions
    from here instead of tokenizing the text again."""

    text: str
    #: code tokens of the whole question without stopwords, in order, with repeats
    tokens: tuple[str, ...]
    #: the first line, and whether more lines follow (an issue's title and body)
    first_line: str
    has_body: bool
    #: code tokens of the first line without stopwords, with repeats
    title_tokens: tuple[str, ...]
    mentions: QueryMentions

    @classmethod
    def parse(cls, text: str) -> ParsedQuery:
        first, _, body = text.strip().partition("\n")
        return cls(
            text=text,
            tokens=tuple(t for t in code_tokens(text) if t not in QUERY_STOPWORDS),
            first_line=first,
            has_body=bool(body.strip()),
            title_tokens=tuple(t for t in code_tokens(first) if t not in QUERY_STOPWORDS),
            mentions=extract_mentions(text),
        )


@dataclass(frozen=True, slots=True)
class MentionMatch:
    """One piece of exact evidence for one file of the tree."""

    path: str
    kind: str  # "path" | "frame" | "module" | "symbol" | "qname"
    text: str  # what the query said
    weight: float
    symbol: str | None = None  # the matched symbol's qualified name
    line: int | None = None  # a line the evidence points at (frame line, symbol start)


def _module_keys(path: str) -> list[str]:
    """Dotted suffixes a Python file can be named by: a/b/c.py -> c, b.c, a.b.c."""
    stem, _, ext = path.rpartition(".")
    if ext not in ("py", "pyi", "pyx") or not stem:
        return []
    parts = stem.split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return [".".join(parts[i:]) for i in range(len(parts)) if parts[i:]]


#: how many suffix lookups a tree's names keep (more are asked than a tree has files only
#: when questions mention paths the tree does not have)
_SUFFIX_CACHE = 1 << 18


@dataclass(slots=True)
class TreeNames:
    """Exact-lookup tables of one tree's file paths (build once per tree version)."""

    paths: frozenset[str]
    by_name: dict[str, list[str]]  # "query.py" -> the paths named so, in the tree's order
    by_module: dict[str, list[str]]  # "models.query", "query" -> python files named so
    #: suffixes looked up so far (import resolution asks the same ones query after query)
    _suffixes: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def build(cls, paths: Sequence[str]) -> TreeNames:
        by_name: dict[str, list[str]] = defaultdict(list)
        by_module: dict[str, list[str]] = defaultdict(list)
        for p in paths:
            by_name[p.rpartition("/")[2]].append(p)
            for key in _module_keys(p):
                by_module[key].append(p)
        return cls(frozenset(paths), dict(by_name), dict(by_module))

    def by_suffix(self, suffix: str) -> list[str]:
        """The paths ending in ``suffix`` at a ``/`` (``models/query.py`` or ``query.py``),
        in the tree's order. Looked up through the basename, not a table of every suffix of
        every path (a 50,000-file tree has ~300,000 of them)."""
        found = self._suffixes.get(suffix)
        if found is None:
            named = self.by_name.get(suffix.rpartition("/")[2], ())
            tail = "/" + suffix
            found = [p for p in named if p == suffix or p.endswith(tail)]
            if len(self._suffixes) >= _SUFFIX_CACHE:  # questions' mentions are unbounded
                self._suffixes.clear()
            self._suffixes[suffix] = found
        return found

    def resolve_path(self, span: str) -> list[str]:
        """Files a path mention names: exact, else the longest existing suffix that is either
        multi-part and unique-ish (<= 2 files) or a unique bare basename."""
        if span in self.paths:
            return [span]
        parts = span.split("/")
        for i in range(len(parts)):
            suffix = "/".join(parts[i:])
            found = self.by_suffix(suffix)
            if not found:
                continue
            multi = len(parts) - i > 1
            if (multi and len(found) <= 2) or len(found) == 1:
                return found
            return []
        return []

    def resolve_module(self, dotted: str) -> tuple[list[str], str]:
        """Files a dotted name names, and the rest of the name (attributes) after the module.

        The longest prefix that is a module suffix of the tree wins; a one-part module counts
        only when unique.
        """
        parts = dotted.split(".")
        for k in range(len(parts), 0, -1):
            key = ".".join(parts[:k])
            found = self.by_module.get(key)
            if not found:
                continue
            if (k > 1 and len(found) <= 2) or len(found) == 1:
                return found, ".".join(parts[k:])
        return [], dotted


#: evidence weights by kind (before identifier strength and title doubling)
PATH_WEIGHT = 3.0
FRAME_WEIGHT = 2.0
MODULE_WEIGHT = 2.0
SYMBOL_WEIGHT = 1.5
QNAME_WEIGHT = 2.5
TITLE_FACTOR = 2.0


class SymbolLookup(Protocol):
    """Exact symbol lookups by name or qualified name (a code store, or one tree's catalog)."""

    def symbols_named(self, names: Sequence[str], hashes: Collection[str]) -> list[SymbolHit]: ...


class MentionResolver:
    """Matches :class:`QueryMentions` against one tree's paths and symbol catalog."""

    def __init__(self, names: TreeNames, hash_by_path: Mapping[str, str], code: SymbolLookup):
        self._names = names
        self._hash_by_path = hash_by_path
        paths_by_hash: dict[str, list[str]] = defaultdict(list)
        for p, h in hash_by_path.items():
            paths_by_hash[h].append(p)
        self._paths_by_hash = dict(paths_by_hash)
        self._hashes = frozenset(paths_by_hash)
        self._code = code

    def resolve(self, mentions: QueryMentions) -> list[MentionMatch]:
        out: list[MentionMatch] = []
        frame_paths = {f.path for f in mentions.frames}
        for span in mentions.paths:
            if span in frame_paths:
                continue
            for p in self._names.resolve_path(span):
                out.append(MentionMatch(p, "path", span, PATH_WEIGHT))
        for f in mentions.frames:
            for p in self._names.resolve_path(f.path):
                out.append(MentionMatch(p, "frame", f.path, FRAME_WEIGHT, f.function, f.line))
        for dotted in mentions.modules:
            found, _rest = self._names.resolve_module(dotted)
            weight = MODULE_WEIGHT * mentions.identifiers.get(dotted, Strength.CODE)
            for p in found:
                out.append(MentionMatch(p, "module", dotted, weight))
        out.extend(self._symbol_matches(mentions))
        return out

    def _symbol_matches(self, mentions: QueryMentions) -> list[MentionMatch]:
        """Identifiers that name a symbol defined in the tree. A name defined in many files is
        weak evidence for each (weight / number of defining files)."""
        wanted: dict[str, float] = {}
        for ident, strength in mentions.identifiers.items():
            factor = TITLE_FACTOR if ident in mentions.title_identifiers else 1.0
            parts = ident.split(".")
            # "QuerySet.bulk_create" -> qname lookup of the last two parts, and each name
            if len(parts) >= 2:
                key = ".".join(parts[-2:])
                wanted[key] = max(wanted.get(key, 0.0), strength * factor)
            for part in parts[-2:] if len(parts) >= 2 else parts:
                if len(part) >= 3:
                    wanted[part] = max(
                        wanted.get(part, 0.0),
                        strength * factor * 0.8 if len(parts) >= 2 else strength * factor,
                    )
        if not wanted:
            return []
        hits = self._code.symbols_named(list(wanted), self._hashes)
        by_key: dict[str, list[tuple[str, str, int]]] = defaultdict(list)
        for h in hits:
            for p in self._paths_by_hash.get(h.content_hash, ()):
                if h.qname in wanted:
                    by_key[h.qname].append((p, h.qname, h.start_line))
                if h.name in wanted and h.name != h.qname:
                    by_key[h.name].append((p, h.qname, h.start_line))
        out: list[MentionMatch] = []
        for key, found in by_key.items():
            files = {p for p, _, _ in found}
            kind = "qname" if "." in key else "symbol"
            base = QNAME_WEIGHT if kind == "qname" else SYMBOL_WEIGHT
            weight = base * wanted[key] / len(files)
            seen: set[str] = set()
            for p, qname, line in found:
                if p not in seen:
                    seen.add(p)
                    out.append(MentionMatch(p, kind, key, weight, qname, line))
        return out


def files_by_evidence(matches: Collection[MentionMatch]) -> dict[str, float]:
    """Sum of match weights per file."""
    scores: dict[str, float] = defaultdict(float)
    for m in matches:
        scores[m.path] += m.weight
    return dict(scores)
