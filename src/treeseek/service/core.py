"""The operations both doors offer, with limits, safe paths and plain-JSON answers.

    service = Service(treeseek.open("repo.db"))
    service.query("repo", "where are retries computed", k=5)      # {"files": [...], ...}
    service.read("repo", "src/app.py", 10, 40)                    # numbered lines 10-40
    service.references("repo", "app.py::Client.get", "callers")

Errors are :class:`~treeseek.errors.TreeseekError` subclasses with one-line messages;
:func:`error_kind` names their category for an HTTP status or an MCP tool error.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from treeseek.code.conventions import code_content
from treeseek.database import Database, normalize_query_path
from treeseek.errors import (
    BuildError,
    ConfigError,
    DeadlineExceeded,
    LLMError,
    NodeNotFound,
    PathError,
    RetrievalError,
    StoreError,
    TreeNotFound,
    TreeseekError,
)
from treeseek.index.freshness import Freshness, TreeLayout
from treeseek.search.caches import Slot
from treeseek.trees.model import Node, TreeInfo, TreeSource

if TYPE_CHECKING:
    from treeseek.llm.base import Navigator
    from treeseek.search.graph.call_sites import CallSite
    from treeseek.search.graph.tree_graph import TreeCodeGraph
    from treeseek.service.prewarm import Prewarmer

#: relations of :meth:`Service.graph` (``treeseek graph``'s, without ``walk``)
GRAPH_RELATIONS = (
    "callers",
    "callees",
    "importers",
    "imports",
    "subclasses",
    "superclasses",
    "members",
    "neighbours",
    "entrypoints",
)
#: how long a freshness check is reused (a query answer carries one)
FRESHNESS_TTL_S = 2.0
#: a tree version's stored files and directories, which every freshness check compares with
#: the disk (kept per version: reading them is most of a check on a large tree)
LAYOUT: Slot[TreeLayout] = Slot("service.freshness_layout")


P = ParamSpec("P")
R = TypeVar("R")


def reading(method: Callable[P, R]) -> Callable[P, R]:
    """Run a read operation inside one snapshot of the database: a query that reads many
    rows sees the version before an index job's commit or the one after, never a mix."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        service = args[0]
        assert isinstance(service, Service)
        with service.snapshot():
            return method(*args, **kwargs)

    return wrapper


class LimitExceeded(ConfigError):
    """A request asks for more than the server's limits allow."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-request limits of a server (the CLI has none)."""

    max_question_chars: int = 20_000
    max_k: int = 100
    max_budget: int = 100_000
    max_seconds: float = 60.0  # wall time of one request
    max_lines: int = 5_000  # lines of one read
    max_read_chars: int = 100_000  # characters of one read (a minified or data file's lines)
    max_symbols: int = 5_000  # symbols of one file's list (a generated file has 50,000)
    max_items: int = 200  # code-retrieval items, graph answers
    max_depth: int = 8  # tree view depth
    max_nodes: int = 10_000  # nodes of one tree view


#: the longest error message the doors send: one echoing a 100 KB argument stays bounded
MAX_ERROR_CHARS = 1_000


def _cut_to_chars(
    lines: list[str], first: int, last: int, offset: int, limit: int, path: str
) -> tuple[str, int, str | None]:
    """The text of ``lines[first..last]`` (1-based) in at most ``limit`` characters: whole
    lines while they fit, else the first line's first ``limit`` characters. Returns the text,
    the last line (partly) given and a note of what was cut and how to read on (None when
    nothing was)."""
    size = 0
    end = first - 1
    while end < last and size + len(lines[end]) + (end >= first) <= limit:
        size += len(lines[end]) + (end >= first)
        end += 1
    if end == last:
        return "\n".join(lines[first - 1 : last]), last, None
    if end >= first:
        return (
            "\n".join(lines[first - 1 : end]),
            end,
            f"cut at line {end + offset}: a read gives at most {limit:,} characters;"
            f" read on with start={end + 1 + offset}",
        )
    line = lines[first - 1]
    return (
        line[:limit],
        first,
        f"line {first + offset} of {path} is {len(line):,} characters: only its first"
        f" {limit:,} are given (a read's limit); search finds the rest",
    )


def error_message(exc: BaseException) -> str:
    """``str(exc)``, cut to :data:`MAX_ERROR_CHARS` with a note of how much was left out."""
    text = str(exc)
    if len(text) <= MAX_ERROR_CHARS:
        return text
    return f"{text[:MAX_ERROR_CHARS]}... ({len(text) - MAX_ERROR_CHARS:,} more characters)"


def error_kind(exc: BaseException) -> str:
    """The category of an error: ``not_found``, ``ambiguous``, ``bad_request``, ``limit``,
    ``unavailable``, ``upstream``, ``timeout`` (a query past its deadline) or ``internal``."""
    if type(exc).__name__ == "AmbiguousSymbol":
        return "ambiguous"
    if isinstance(exc, TreeNotFound | NodeNotFound):
        return "not_found"
    if isinstance(exc, LimitExceeded):
        return "limit"
    if isinstance(exc, PathError | ConfigError | BuildError | RetrievalError):
        return "bad_request"
    if isinstance(exc, LLMError):
        return "upstream"
    if isinstance(exc, DeadlineExceeded):  # waiting for the LLM, not a bad request
        return "timeout"
    if isinstance(exc, StoreError):
        return "unavailable"
    if isinstance(exc, TreeseekError):
        return "bad_request"
    return "internal"


def check_path(path: str) -> str:
    """A repo-relative path in stored form, or PathError: no NUL byte, no absolute path
    (``/x``, ``C:/x``, ``\\\\host``), no ``..`` part. (Contents come from the database, never
    from the disk, and the builders never follow a symlink out of a tree's root, so a stored
    path cannot lead outside the tree.)"""
    if "\x00" in path:
        raise PathError("path contains a NUL byte")
    text = path.replace("\\", "/")
    if text.startswith("/") or (len(text) > 1 and text[1] == ":" and text[0].isalpha()):
        raise PathError(f"path {path!r} is absolute; give a path relative to the tree's root")
    return normalize_query_path(text)


def _limit(name: str, value: int | float | None, maximum: int | float, minimum: int = 1) -> None:
    if value is None:
        return
    if value < minimum:  # a bad value (400), not a request over the server's limits (413)
        raise ConfigError(f"{name} must be >= {minimum}, got {value}")
    if value > maximum:
        raise LimitExceeded(f"{name} is {value}, over this server's limit of {maximum}")


def tree_dict(info: TreeInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "source": info.source.value,
        "root": info.root,
        "files": info.file_count,
        "dirs": info.dir_count,
        "nodes": info.node_count,
        "depth": info.max_depth,
        "built_at": info.built_at.isoformat(timespec="seconds"),
        "updated_at": info.updated_at.isoformat(timespec="seconds"),
    }


def node_dict(node: Node) -> dict[str, Any]:
    return {
        "id": node.id,
        "path": node.path,
        "type": node.type.value,
        "parent_id": node.parent_id,
        "depth": node.depth,
        "size": node.size,
        "child_count": node.child_count,
        "content_status": node.content_status.value,
    }


def number_lines(text: str, start: int) -> str:
    """``text`` with right-aligned line numbers from ``start``, ripgrep-style (``  12:code``,
    as ``treeseek cat TREE PATH:A-B`` prints spans)."""
    lines = text.split("\n")
    width = len(str(start + len(lines) - 1))
    return "\n".join(f"{n:>{width}}:{line}" for n, line in enumerate(lines, start))


class Service:
    """The doors' operations over one database (thread-safe; see the package doc)."""

    def __init__(
        self,
        db: Database,
        *,
        limits: Limits | None = None,
        navigator: Navigator | None = None,
        index_roots: Sequence[str | Path] | None = None,
        freshness_ttl: float = FRESHNESS_TTL_S,
        prewarm: bool = False,
        prewarm_interval: float | None = None,
    ) -> None:
        self.db = db
        self.freshness_ttl = freshness_ttl
        self.limits = limits or Limits()
        self._navigator = navigator
        #: directories under which new trees may be indexed (None: anywhere)
        self.index_roots = None if index_roots is None else [Path(r).resolve() for r in index_roots]
        self._fresh: dict[tuple[str, str], tuple[float, Freshness]] = {}
        self._lock = threading.Lock()
        #: with ``prewarm`` (servers): a thread that rebuilds what a query reads of the trees
        #: queries asked for, when they change (:mod:`treeseek.service.prewarm`)
        self.prewarmer: Prewarmer | None = None
        if prewarm:
            from treeseek.service.prewarm import POLL_INTERVAL_S, Prewarmer

            self.prewarmer = Prewarmer(
                db, warm=self.warm, interval=prewarm_interval or POLL_INTERVAL_S
            )
            self.prewarmer.start()

    def close(self) -> None:
        """Stop the prewarmer's thread (the database stays open: its owner closes it)."""
        if self.prewarmer is not None:
            self.prewarmer.stop()

    @reading
    def warm(self, tree: str) -> None:
        """Build what a query of ``tree``'s current version reads: the retrievers' tables
        (:meth:`Database.warm`) and the stored layout its freshness check compares."""
        self.db.warm(tree)
        self._layout(self.db.tree(tree))

    def _layout(self, info: TreeInfo) -> TreeLayout | None:
        """The stored layout a freshness check of ``info``'s version compares with the disk,
        kept per version; None for a tree that is not a directory (a git tree is a commit, a
        path list has no disk to compare)."""
        from treeseek.index.freshness import tree_layout

        if info.source is not TreeSource.FILESYSTEM:
            return None
        return self.db.caches.get(LAYOUT, info, lambda: tree_layout(self.db.store, info))

    def snapshot(self) -> AbstractContextManager[None]:
        """One read snapshot of the database (:meth:`Database.snapshot`, every store has one)."""
        return self.db.snapshot()

    @property
    def navigator(self) -> Navigator:
        if self._navigator is None:
            from treeseek.llm.select import navigator_from_spec

            self._navigator = navigator_from_spec(None)
        return self._navigator

    # -- trees ---------------------------------------------------------------------------
    @reading
    def freshness(self, tree: str, *, info: TreeInfo | None = None) -> Freshness:
        """The tree's freshness, reused for ``freshness_ttl`` seconds per tree version."""
        info = info or self.db.tree(tree)
        key = (tree, info.updated_at.isoformat())
        now = time.monotonic()
        with self._lock:
            cached = self._fresh.get(key)
        if cached is not None and now - cached[0] < self.freshness_ttl:
            return cached[1]
        from treeseek.index.freshness import check_freshness

        fresh = check_freshness(self.db.store, info, self._layout(info))
        with self._lock:
            self._fresh = {k: v for k, v in self._fresh.items() if k[0] != tree}
            self._fresh[key] = (now, fresh)
        return fresh

    @reading
    def trees(self, *, freshness: bool = True) -> list[dict[str, Any]]:
        out = []
        for info in self.db.trees():
            row = tree_dict(info)
            if freshness:
                row["freshness"] = self.freshness(info.name, info=info).to_dict()
            out.append(row)
        return out

    @reading
    def tree(self, name: str) -> dict[str, Any]:
        info = self.db.tree(name)
        return {**tree_dict(info), "freshness": self.freshness(name, info=info).to_dict()}

    @reading
    def node(self, tree: str, path: str) -> Node:
        """The node at ``path`` (NodeNotFound / PathError when the tree has none there)."""
        return self.db.node(tree, check_path(path))

    @reading
    def show(self, tree: str, path: str = "", depth: int = 1) -> dict[str, Any]:
        """A directory's nodes ``depth`` levels down (stored sibling order per level)."""
        _limit("depth", depth, self.limits.max_depth)
        start = self.db.node(tree, check_path(path))
        nodes = [start]
        frontier = [start] if start.is_dir else []
        for _ in range(depth):
            if not frontier:
                break
            found = self.db.store.children_many(tree, [n.id for n in frontier])
            level = [c for n in frontier for c in found[n.id]]
            nodes.extend(level)
            if len(nodes) > self.limits.max_nodes:
                raise LimitExceeded(
                    f"the view has over {self.limits.max_nodes} nodes; ask for less depth"
                    " or a deeper directory"
                )
            frontier = [c for c in level if c.is_dir]
        return {"tree": tree, "path": start.path, "depth": depth, "nodes": nodes}

    def delete(self, tree: str) -> None:
        self.db.delete(tree)

    def check_index_source(self, source: str) -> Path:
        """The directory a new index may read, or PathError when it lies outside the
        server's index roots."""
        if "\x00" in source:
            raise PathError("path contains a NUL byte")
        path = Path(source).expanduser()
        if not path.is_absolute():
            raise PathError(f"give an absolute directory to index, not {source!r}")
        resolved = path.resolve()
        if self.index_roots is not None and not any(
            resolved == root or root in resolved.parents for root in self.index_roots
        ):
            if not self.index_roots:
                raise PathError(
                    "this server indexes no new directories (start it with --index-root DIR);"
                    " re-index an existing tree by name instead"
                )
            roots = ", ".join(str(r) for r in self.index_roots)
            raise PathError(f"{source} is outside the directories this server indexes: {roots}")
        if not resolved.is_dir():
            raise BuildError(f"{source} is not a directory")
        return resolved

    # -- questions -----------------------------------------------------------------------
    def check_question(self, question: str) -> str:
        if not question.strip():
            raise ConfigError("the question is empty")
        if len(question) > self.limits.max_question_chars:
            raise LimitExceeded(
                f"the question has {len(question)} characters, over this server's limit of "
                f"{self.limits.max_question_chars}"
            )
        return question

    @reading
    def query(
        self,
        tree: str,
        question: str,
        *,
        k: int = 10,
        budget: int | None = None,
        content: bool = False,
        shown: Callable[[dict[str, Any]], int] | None = None,
        scope: Callable[[list[str]], list[str]] | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """The files that answer ``question`` (``options``: QueryOptions fields such as
        ``strategy``, ``ranker``, ``hints``), with the tree's freshness and ``notes``: what
        the answer could not do as asked (what the CLI says on stderr). ``shown``: with a
        budget, the tokens of the answer as a door shows it (a budgeted answer's dict ->
        tokens): the spans are selected so that this, not only their text, fits the budget.
        ``scope``: with a budget, the ranked paths -> those whose spans the answer may hold."""
        self.check_question(question)
        _limit("k", k, self.limits.max_k)
        _limit("budget", budget, self.limits.max_budget)
        info = self.db.tree(tree)
        options = {key: value for key, value in options.items() if value is not None}
        answer: dict[str, Any] = {"tree": tree, "query": question}
        if budget is not None or options.get("disclose") is not None:
            measure: Callable[[dict[str, Any]], int] | None = None
            if shown is not None:  # the whole answer as shown: its header too
                fresh = self.freshness(tree, info=info).to_dict()
                measure = lambda data: shown({**answer, **data, "freshness": fresh})  # noqa: E731
            data, notes = self._budgeted(tree, question, k, budget, options, measure, scope)
        else:
            result = self.db.query(
                tree, question, navigator=self.navigator, k=k, include_content=content, **options
            )
            data = result.to_dict()
            data.pop("trace", None)
            notes = result.trace.params.get("notes") or []
        answer.update(data)
        answer["notes"] = [str(note) for note in notes]
        answer["freshness"] = self.freshness(tree, info=info).to_dict()
        if self.prewarmer is not None:
            self.prewarmer.note(tree)
        return answer

    def _budgeted(
        self,
        tree: str,
        question: str,
        k: int,
        budget: int | None,
        options: dict[str, Any],
        shown: Callable[[dict[str, Any]], int] | None = None,
        scope: Callable[[list[str]], list[str]] | None = None,
    ) -> tuple[dict[str, Any], list[Any]]:
        """The budgeted context and the notes of the query under it (one snapshot, as
        ``db.query(budget=)`` does); with ``shown``, selected again under a smaller budget
        while the answer as shown is over ``budget`` (line numbers and headers add a quarter
        to a third to the spans' text)."""
        disclose = options.pop("disclose", None) or "spans"
        with self.db.snapshot():
            result = self.db.query(
                tree, question, navigator=self.navigator, k=k, include_content=False, **options
            )
            if scope is not None:
                kept = scope([hit.path for hit in result.files])
                by_path = {hit.path: hit for hit in result.files}
                result = replace(result, files=[by_path[p] for p in kept if p in by_path])
            ctx = self.db.disclose(tree, result, disclose, budget=budget, query=question)
            data: dict[str, Any] = ctx.to_dict()
            if shown is not None and budget is not None:
                said = [str(note) for note in result.trace.params.get("notes") or []]

                def select(limit: int) -> tuple[dict[str, Any], int]:
                    ctx = self.db.disclose(tree, result, disclose, budget=limit, query=question)
                    out: dict[str, Any] = ctx.to_dict()
                    return out, shown({**out, "notes": said})

                limit, over, tries = budget, budget, 0
                used = shown({**data, "notes": said})
                while used > budget and limit > 1 and tries < 8:
                    tries += 1  # proportional first, then by the excess (at least 1 less)
                    over = limit
                    cut = limit * budget // used if tries <= 3 else limit - (used - budget)
                    limit = max(1, min(cut, limit - 1))
                    data, used = select(limit)
                for _ in range(2 if over > limit and used < budget * 0.9 else 0):
                    middle = (limit + over) // 2  # a big span left out: try between
                    if middle in (limit, over):
                        break
                    tried, tried_used = select(middle)
                    if tried_used <= budget:
                        limit, data, used = middle, tried, tried_used
                    else:
                        over = middle
                data["budget"]["limit"] = budget
        return data, list(result.trace.params.get("notes") or [])

    # -- files ---------------------------------------------------------------------------
    @reading
    def read(
        self, tree: str, path: str, start: int | None = None, end: int | None = None
    ) -> dict[str, Any]:
        """Lines ``start..end`` (1-based, inclusive) of a stored file; the whole file (up to
        the line limit) when no range is given."""
        node = self.db.node(tree, check_path(path))
        if node.is_dir:
            raise NodeNotFound(f"{node.path or '.'} is a directory, not a file; list it instead")
        text = self.db.text(tree, node)
        if text is None:
            reason = node.content_status.missing_because
            raise NodeNotFound(f"{node.path} has no stored content: {reason}")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        total = len(lines)
        # a document's section is numbered by its document's lines, as search answers show it
        # (``guide.md/1-guide/2-setup:9-11`` are lines 9-11 of guide.md)
        offset = 0
        if self.db.tree(tree).source is TreeSource.DOCUMENT:
            offset = self.db.lines(tree, node.path).start_line - 1
        first = 1 + offset if start is None else start
        last = total + offset if end is None else end
        if first < 1 or (end is not None and end < first):
            raise PathError(f"bad line range {first}-{last}: give 1 <= start <= end")
        if first <= offset:
            raise PathError(
                f"line {first} is before {node.path}, which has lines {offset + 1}-"
                f"{offset + total} of its document"
            )
        if first > offset + max(total, 1):
            where = f"lines {offset + 1}-{offset + total}" if offset else f"{total} lines"
            raise PathError(f"line {first} is past the end of {node.path} ({where})")
        first, last = first - offset, min(last - offset, total)
        if last - first + 1 > self.limits.max_lines:
            if start is None and end is None:
                last = first + self.limits.max_lines - 1
            else:
                raise LimitExceeded(
                    f"{last - first + 1} lines asked, over this server's limit of "
                    f"{self.limits.max_lines}; read a smaller range"
                )
        text, cut_last, note = _cut_to_chars(
            lines, first, last, offset, self.limits.max_read_chars, node.path
        )
        return {
            "tree": tree,
            "path": node.path,
            "start_line": first + offset,
            "end_line": cut_last + offset,
            "first_line": 1 + offset,  # the file's (the section's) first line number
            "total_lines": total,
            "truncated": note is not None or (last < total and end is None),
            "note": note,
            "text": text,
        }

    @reading
    def on_disk(self, tree: str, path: str) -> str | None:
        """Whether the stored file ``path`` of a directory tree changed on disk since the
        tree was indexed: ``"changed"``, ``"gone"``, or None (unchanged, or nothing to
        compare: a git tree, a document, a directory)."""
        from treeseek.index.freshness import file_on_disk

        info = self.db.tree(tree)
        layout = self._layout(info)
        return None if layout is None else file_on_disk(info, layout, path)

    @reading
    def languages(self, tree: str, paths: Sequence[str]) -> dict[str, str | None]:
        """The language each of ``paths`` (files of ``tree``) is parsed as: what the code
        index stored (a C++ header named ``.h`` is cpp), else its extension's (None: none)."""
        from treeseek.code.languages import language_for_path

        digests: dict[str, str] = {}
        for path in paths:
            node = self.db.node(tree, check_path(path))
            digest = code_content(node.path, node.content_hash)
            if digest is not None:
                digests[path] = digest
        infos = self.db.store.code().code_files(set(digests.values())) if digests else {}
        out: dict[str, str | None] = {}
        for path in paths:
            info = infos.get(digests.get(path, ""))
            out[path] = info.language if info is not None else language_for_path(path)
        return out

    # -- code structure ------------------------------------------------------------------
    def _graph(self, tree: str) -> TreeCodeGraph:
        return self.db.code_graph(tree)

    @reading
    def symbols(self, tree: str, path: str) -> dict[str, Any]:
        """The C1 symbols of one file with their name paths and line spans: the first
        ``max_symbols`` (``truncated`` says when there were more, ``total_symbols`` how many)."""
        node = self.db.node(tree, check_path(path))
        if node.is_dir:
            raise NodeNotFound(f"{node.path or '.'} is a directory; give a file")
        digest = code_content(node.path, node.content_hash)
        symbols = [] if digest is None else self.db.store.code().symbols(digest)
        shown = symbols[: self.limits.max_symbols]
        return {
            "tree": tree,
            "path": node.path,
            "total_symbols": len(symbols),
            "truncated": len(shown) < len(symbols),
            "symbols": [
                {
                    "name_path": f"{node.path}::{s.qname}",
                    "qname": s.qname,
                    "kind": str(s.kind),
                    "signature": s.signature,
                    "start_line": s.start_line,
                    "end_line": s.end_line,
                    "parent": s.parent,
                    "doc": (s.docstring or "").strip().split("\n")[0] or None,
                }
                for s in shown
            ],
        }

    @reading
    def outline(self, tree: str, path: str = "", *, whole: bool = True) -> dict[str, Any]:
        """The symbols of a file, or of every code file under a directory; an outline of
        more tokens than the server's budget limit (a whole large tree's: MBs) is refused
        with what to ask for instead; unless ``whole`` is False (a door that shows only the
        part that fits a budget of its own): then it stops at that limit too, and ``unread``
        lists the files under ``path`` in a parsed language that it did not read."""
        from treeseek.context.model import Outline
        from treeseek.context.outline import OutlineTooLarge

        limit = self.limits.max_budget
        try:  # stops at the file that takes it over the limit (not a whole tree's read)
            outline = self.db.outline(tree, check_path(path), max_tokens=limit)
        except OutlineTooLarge as exc:
            if not whole:
                data = Outline(tree, exc.path, exc.outlined).to_dict()
                data["unread"] = list(exc.unread)
                return data
            where = f"{exc.path!r}" if exc.path else "the whole tree"
            raise LimitExceeded(
                f"the outline of {where} is over this server's limit of {limit:,} tokens"
                f" ({exc.tokens:,} in its first {exc.files:,} files); outline a"
                " subdirectory or a file (search finds where to look)"
            ) from None
        data = outline.to_dict()
        if not whole:
            data["unread"] = []
        return data

    @reading
    def find_symbol(self, tree: str, name: str) -> dict[str, Any]:
        """The one symbol a name path (``path::Qual.name``) or a unique short name names,
        with its code; AmbiguousSymbol (with the candidates) when several match."""
        if "\x00" in name:
            raise PathError("name contains a NUL byte")
        found = self.db.resolve_symbol(tree, name)
        symbol = found.symbol
        # a symbol longer than a read's limits is cut (no range was asked, so none is refused)
        last = min(symbol.end_line, symbol.start_line + self.limits.max_lines - 1)
        span = self.read(tree, found.path, symbol.start_line, last)
        note = span["note"]
        if note is None and span["end_line"] < symbol.end_line:
            note = (
                f"cut at line {span['end_line']}: a read gives at most"
                f" {self.limits.max_lines:,} lines; read on with start={span['end_line'] + 1}"
            )
        return {
            "tree": tree,
            "name_path": found.name_path,
            "path": found.path,
            "kind": str(symbol.kind),
            "signature": symbol.signature,
            "start_line": span["start_line"],
            "end_line": span["end_line"],
            "symbol_end_line": symbol.end_line,
            "truncated": note is not None,
            "note": note,
            "text": span["text"],
        }

    @reading
    def graph(
        self,
        tree: str,
        relation: str,
        name: str | None = None,
        *,
        hops: int = 1,
        kinds: Sequence[str] | None = None,
        transitive: bool = False,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """One relation of the code graph (``treeseek graph``): callers, callees, importers,
        imports, subclasses, superclasses, members, neighbours, or entrypoints."""
        from treeseek.code.graph import EDGE_KINDS

        if relation not in GRAPH_RELATIONS:
            raise ConfigError(
                f"unknown relation {relation!r}; use one of: {', '.join(GRAPH_RELATIONS)}"
            )
        limit = self.limits.max_items if limit is None else limit
        _limit("limit", limit, self.limits.max_items)
        _limit("hops", hops, 3)
        if relation in ("callers", "callees") and name:
            # the name first, then only the files its call sites can be in (not the graph)
            node, sites = self.db.call_sites(tree, relation, name)
            return self._call_sites(tree, relation, node, sites, limit)
        if relation in ("imports", "superclasses", "members", "importers", "subclasses") and name:
            # from the node's own file (what resolving its edges needs), or for the reverse
            # relations the files whose rows can name it, not the graph
            node, related = self.db.code_relation(tree, relation, name, transitive=transitive)
            return {
                "tree": tree,
                "relation": relation,
                "node": node,
                "results": [{"id": item} for item in related[:limit]],
                "total": len(related),
            }
        if relation == "entrypoints":
            rows = [
                {
                    "path": e.path,
                    "entry_type": e.entrypoint.entry_type,
                    "framework": e.entrypoint.framework,
                    "route_or_command": e.entrypoint.route_or_command,
                    "handler": e.entrypoint.handler,
                    "handler_symbol_id": (
                        f"{e.handler_path}::{e.handler_symbol}"
                        if e.handler_path and e.handler_symbol
                        else e.handler_path
                    ),
                    "line": e.entrypoint.line,
                }
                # the files that declare some, resolved: not the graph
                for e in self.db.code_entrypoints(tree)
            ]
            return {
                "tree": tree,
                "relation": relation,
                "node": None,
                "results": rows[:limit],
                "total": len(rows),
            }
        loaded = self._graph(tree)
        if not name:
            raise ConfigError(
                f"{relation} needs a name: a path, a name path (path::Qual.name),"
                " a dotted module or module.qname"
            )
        graph = loaded.graph
        node = graph.find(name)
        wanted = tuple(kinds) if kinds else tuple(EDGE_KINDS)
        unknown = [x for x in wanted if x not in EDGE_KINDS]
        if unknown:
            raise ConfigError(
                f"unknown edge kind(s) {', '.join(unknown)}; use {', '.join(EDGE_KINDS)}"
            )
        distances = graph.neighbours(node, hops=hops, kinds=wanted)
        found = sorted(distances, key=lambda n: (distances[n], n))
        rows = [{"id": item, "distance": distances[item]} for item in found]
        return {
            "tree": tree,
            "relation": relation,
            "node": node,
            "results": rows[:limit],
            "total": len(rows),
        }

    def _call_sites(
        self, tree: str, relation: str, node: str, sites: list[CallSite], limit: int
    ) -> dict[str, Any]:
        """Callers/callees as call-site rows: ``id`` (the caller; for callees the target, or
        the callee as written when ``status`` is ``unresolved``), ``status``, ``via``,
        ``callee``, ``path``, ``line``, ``count``."""
        from treeseek.search.graph import call_sites

        rows = []
        for row, site in zip(call_sites.site_rows(sites), sites, strict=True):
            ident = site.caller if relation == "callers" else (site.target or site.callee)
            rows.append({"id": ident, **row})
        return {
            "tree": tree,
            "relation": relation,
            "node": node,
            "results": rows[:limit],
            "total": len(rows),
        }

    @reading
    def code_items(
        self,
        tree: str,
        query: str,
        *,
        layers: Sequence[str] | None = None,
        limit: int = 8,
    ) -> dict[str, Any]:
        """The code-retrieval endpoint of ``code-retrieval-layers.json``: ``{items}``, C0-C3
        items with their metadata (:func:`treeseek.search.graph.items.retrieve_items`); when
        there are none (always on a document tree), the best documentation sections as
        ``DOCS`` items and ``fallback: "docs"``
        (:func:`treeseek.search.document.items.retrieve_with_docs`)."""
        from treeseek.search.base import SearchContext
        from treeseek.search.document.items import retrieve_with_docs
        from treeseek.search.graph.items import LAYERS

        self.check_question(query)
        _limit("limit", limit, self.limits.max_items)
        info = self.db.tree(tree)
        ctx = SearchContext(
            store=self.db.store, tree=info, navigator=self.navigator, caches=self.db.caches
        )
        wanted = tuple(layers) if layers is not None else LAYERS
        found = retrieve_with_docs(ctx, query, layers=wanted, limit=limit)
        out: dict[str, Any] = {"items": [asdict(item) for item in found.items]}
        if found.fallback is not None:
            out["fallback"] = found.fallback
        return out
