"""The Python API: :func:`treeseek.open` returns a :class:`Database`.

A database holds several named trees. Index a directory (git-aware), a path list, or any
:class:`~treeseek.trees.source.TreeBuilder`; read nodes, children and contents back; query.

    import treeseek
    with treeseek.open("repo.db") as db:
        report = db.index("path/to/checkout", name="myrepo")
        for child in db.children("myrepo", ""):
            print(child.path, child.type)
        print(db.text("myrepo", "README.md"))
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, overload

from treeseek._closing import Closing
from treeseek.config import resolve_db_path
from treeseek.errors import BuildError, ConfigError, NodeNotFound, PathError, StoreError
from treeseek.index.freshness import Freshness, check_freshness
from treeseek.index.origin import check_origin
from treeseek.index.run import (
    DEFAULT_MAX_FILE_BYTES,
    IndexHook,
    IndexReport,
    ProgressCallback,
    default_hooks,
    index_tree,
)
from treeseek.search.caches import TreeCaches
from treeseek.store import Store, open_store
from treeseek.trees.model import ROOT_PATH, Node, TreeInfo
from treeseek.trees.source import TreeBuilder

if TYPE_CHECKING:
    from treeseek.code.model import ResolvedEntrypoint
    from treeseek.context import Context, Level, Outline, ResolvedSymbol, Span
    from treeseek.embed.base import Embedder
    from treeseek.llm.base import Navigator
    from treeseek.search.base import FileHit, Result
    from treeseek.search.graph.call_sites import CallSite
    from treeseek.search.graph.tree_graph import TreeCodeGraph

NodeRef = str | Node
#: the shape of :func:`~treeseek.trees.model.node_id_for_path` ids
_LOOKS_LIKE_ID = re.compile(r"[a-z2-7]{10}")


def check_tree_name(name: object) -> str:
    """A tree name as the API takes it: a string of valid Unicode (ConfigError otherwise)."""
    if not isinstance(name, str):
        raise ConfigError(f"a tree name is a string, got {type(name).__name__} {name!r:.80}")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(
            f"tree name {name!r:.80} is not valid Unicode (it has a lone surrogate)"
        ) from None
    return name


#: the longest name a new tree may get (names are shown in listings and sent in URLs)
MAX_TREE_NAME = 200
#: characters a new tree's name may not contain: "/" (HTTP addresses a tree by one path
#: segment, so such a tree could not be reached), control characters and bidi overrides
_BAD_NAME_CHARS = re.compile(r"[/\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def check_new_tree_name(name: str) -> str:
    """A name for a tree that does not exist yet (ConfigError naming the rule otherwise).
    Trees that already have such a name (made before this check) stay usable."""
    check_tree_name(name)
    if not name.strip():
        raise ConfigError("a tree name cannot be empty or blank")
    if len(name) > MAX_TREE_NAME:
        raise ConfigError(f"a tree name has at most {MAX_TREE_NAME} characters, got {len(name)}")
    if name in (".", ".."):  # HTTP clients remove dot segments: /v1/trees/./query -> /trees/query
        raise ConfigError(
            f"tree name {name!r} is a URL dot segment (an HTTP address could not reach the"
            " tree): give another with --name"
        )
    bad = _BAD_NAME_CHARS.search(name)
    if bad:
        what = "'/'" if bad.group() == "/" else f"U+{ord(bad.group()):04X}"
        raise ConfigError(
            f"tree name {name!r:.80} contains {what}: give another with --name "
            "(no '/', control characters or bidi overrides)"
        )
    return name


def check_path_text(path: object, what: str = "path") -> str:
    """A path as the API takes it: a string that is a file name's text (the bytes of a
    non-UTF-8 name as ``os.fsdecode`` gives them are fine; other lone surrogates, NULs and
    non-strings are a PathError)."""
    if not isinstance(path, str):
        raise PathError(f"a {what} is a string, got {type(path).__name__} {path!r:.80}")
    try:
        path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise PathError(
            f"{what} {path!r:.80} has a lone surrogate no file name can have; pass names as "
            "os.fsdecode() gives them"
        ) from None
    if "\0" in path:
        raise PathError(f"{what} {path!r:.80} contains a NUL character")
    return path


def normalize_query_path(path: str) -> str:
    """A user-typed repo-relative path in stored form (``./a//b/`` -> ``a/b``; ``.`` -> root)."""
    check_path_text(path)
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if path.startswith("/") or ".." in parts:
        raise PathError(f"path {path!r} is not inside the tree; give a repo-relative path")
    return "/".join(parts)


def check_name_text(name: object, what: str) -> str:
    """A symbol name or item as the API takes it: a string (ConfigError otherwise)."""
    if not isinstance(name, str):
        raise ConfigError(f"a {what} is a string, got {type(name).__name__} {name!r:.80}")
    return name


def check_line_number(value: object, what: str) -> int | None:
    """A 1-based line number as the API takes it: an int or None (ConfigError otherwise)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(
            f"{what} is a line number (int), got {type(value).__name__} {value!r:.80}"
        )
    return value


P = ParamSpec("P")
R = TypeVar("R")


def reads(
    method: Callable[Concatenate[Database, P], R],
) -> Callable[Concatenate[Database, P], R]:
    """A read of several rows that must see one version: the method runs inside one
    :meth:`Database.snapshot` (a writer committing meanwhile is seen before or after, whole)."""

    @functools.wraps(method)
    def wrapper(self: Database, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.store.snapshot():
            return method(self, *args, **kwargs)

    return wrapper


@dataclass(frozen=True, slots=True)
class Listing:
    """A tree view read in one snapshot: the tree, the start node and the children of every
    node shown (``depth`` levels below ``start``), by parent id in stored sibling order."""

    info: TreeInfo
    start: Node
    depth: int
    children: dict[str, list[Node]]


class Database(Closing):
    """A treeseek database: named trees, their nodes and contents.

    ``caches`` holds what retrievers derive from its trees (file tables, BM25 indexes, code
    graphs) across queries; it is this database's alone and is emptied by :meth:`close`.
    """

    def __init__(self, store: Store, *, hooks: Sequence[IndexHook] | None = None) -> None:
        self.store = store
        self.hooks: list[IndexHook] = default_hooks() if hooks is None else list(hooks)
        self.caches = TreeCaches()

    # -- lifecycle -----------------------------------------------------------------------
    def close(self) -> None:
        self.caches.clear()
        self.store.close()

    # -- indexing ------------------------------------------------------------------------
    def index(
        self,
        source: str | Path | TreeBuilder | None = None,
        *,
        name: str | None = None,
        paths_from: str | Path | None = None,
        base: str | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        progress: ProgressCallback | None = None,
        rev: str | None = None,
        documents: bool = False,
        replace: bool = False,
    ) -> IndexReport:
        """Build or incrementally update a tree; atomic (all or nothing).

        ``source`` is a directory (git-aware when it is a checkout), a bare git repository (its
        ``rev``, default ``HEAD``, is indexed), or a builder. ``paths_from`` reads a path list
        (a file, or ``-`` for stdin) instead; the tree then has no contents. ``name`` defaults
        to the directory's name (a bare ``repo.git``: ``repo``). ``base``: a new tree starts
        from a copy of tree ``base`` and applies only the differences. The report is returned
        only after the new version is committed.

        A document file (``.md``, ``.rst``, PageIndex ``.json``, ``.pdf``) builds a
        ``document`` tree of its sections; so does a directory with ``documents=True`` (every
        document under it). When the database's code index hook embeds (``--vectors``), the
        sections get vectors of the same model.

        An existing tree is re-indexed only from where it was built (its directory, git
        repository or documents; :mod:`treeseek.index.origin`): another origin is a
        BuildError unless ``replace=True``, which makes the tree that origin's.
        """
        if source is not None and not isinstance(source, str | Path | TreeBuilder):
            raise ConfigError(
                "source is a directory or git repository path (str or Path) or a TreeBuilder,"
                f" got {type(source).__name__} {source!r:.80}"
            )
        if isinstance(max_file_bytes, bool) or not isinstance(max_file_bytes, int):
            raise ConfigError(
                f"max_file_bytes is an int, got {type(max_file_bytes).__name__}"
                f" {max_file_bytes!r:.80}"
            )
        if rev is not None and not isinstance(rev, str):
            raise ConfigError(f"rev is a string, got {type(rev).__name__} {rev!r:.80}")
        for where in (source, paths_from):
            if isinstance(where, str | Path):
                check_path_text(str(where), "source path")
        if base is not None:
            check_tree_name(base)
        if (
            isinstance(source, str | Path)
            and paths_from is None
            and _is_document(source, documents)
        ):
            from treeseek.index.documents import DocumentBuilder, index_documents

            doc_builder = DocumentBuilder(source)
            doc_tree = self._target_name(name or _default_name(source, None))
            if not replace:
                check_origin(self.store, doc_tree, doc_builder.source, doc_builder.root)
            doc_report = index_documents(
                self.store, doc_tree, doc_builder, embedder=self._index_embedder()
            )
            self.caches.drop(doc_tree)  # a new version is committed: derived tables go
            return doc_report
        if documents:
            raise BuildError(_not_documents(source))
        builder = self._builder(source, paths_from, rev)
        try:
            self._skip_own_files(builder)
            tree_name = self._target_name(name or _default_name(source, paths_from))
            if not replace:
                check_origin(self.store, tree_name, builder.source, builder.root)
            report = index_tree(
                self.store,
                tree_name,
                builder,
                base=base,
                max_file_bytes=max_file_bytes,
                hooks=self.hooks,
                progress=progress,
            )
            # a new version is committed: what was derived from the old one goes (not before:
            # queries during the run keep the old version's tables warm)
            self.caches.drop(tree_name)
            return report
        finally:
            if builder is not source and isinstance(builder, Closing):
                builder.close()

    def _target_name(self, name: str) -> str:
        """The tree an index run writes: an existing tree's name as it is, a new one checked."""
        check_tree_name(name)
        return name if self.store.has_tree(name) else check_new_tree_name(name)

    def _index_embedder(self) -> Embedder | None:
        """The embedder of this database's code index hook (``--vectors``), if any."""
        from treeseek.index.code_hook import CodeIndexHook

        for hook in self.hooks:
            if isinstance(hook, CodeIndexHook) and hook.embedder is not None:
                return hook.embedder
        return None

    @staticmethod
    def _builder(
        source: str | Path | TreeBuilder | None,
        paths_from: str | Path | None,
        rev: str | None = None,
    ) -> TreeBuilder:
        from treeseek.trees.pathlist import PathListBuilder

        if paths_from is not None:
            if source is not None:
                raise BuildError("give either a source directory or paths_from, not both")
            if rev is not None:
                raise BuildError("rev= applies to a git repository, not to a path list")
            return PathListBuilder.from_file(paths_from)
        if source is None:
            raise BuildError("nothing to index: give a directory, a path list or a builder")
        if isinstance(source, TreeBuilder):
            return source
        path = Path(source)
        if path.is_dir():
            if rev is not None or is_bare_git_repository(path):
                from treeseek.trees.git import GitTreeBuilder

                return GitTreeBuilder(path, rev or "HEAD")
            from treeseek.trees.filesystem import FilesystemBuilder

            return FilesystemBuilder(path)
        if path.is_file():
            raise BuildError(
                f"{path} is a file, not a directory; index the directory that holds it, or read"
                f" a list of paths with --paths-from {path} (paths_from=)"
            )
        raise BuildError(f"{path} does not exist; give a directory or a git repository")

    def _skip_own_files(self, builder: TreeBuilder) -> None:
        """Indexing a directory that holds this database must not index the database."""
        from treeseek.trees.filesystem import FilesystemBuilder

        if isinstance(builder, FilesystemBuilder):
            builder.skip_files(self.store.local_files())

    def delete(self, name: str) -> None:
        """Remove a tree and the contents no other tree uses."""
        self.caches.drop(check_tree_name(name))
        self.store.delete_tree(name)

    # -- reading -------------------------------------------------------------------------
    def snapshot(self) -> AbstractContextManager[None]:
        """A block whose reads all see one committed version of the database (reentrant):
        ``with db.snapshot(): ...`` around reads that must agree while a writer re-indexes.
        :meth:`query`, :meth:`listing`, :meth:`outline`, the content and graph reads take
        one themselves."""
        return self.store.snapshot()

    def trees(self) -> list[TreeInfo]:
        return self.store.trees()

    def tree(self, name: str) -> TreeInfo:
        return self.store.tree(check_tree_name(name))

    @reads
    def freshness(self, name: str) -> Freshness:
        """What tree ``name`` was built from and whether its source changed since
        (:mod:`treeseek.index.freshness`: a stat of each stored file, no reads)."""
        return check_freshness(self.store, self.store.tree(check_tree_name(name)))

    def root(self, tree: str) -> Node:
        return self.store.root(check_tree_name(tree))

    def node(self, tree: str, ref: NodeRef) -> Node:
        """A node by id or by repo-relative path (ids are tried first)."""
        check_tree_name(tree)
        if isinstance(ref, Node):
            return ref
        check_path_text(ref, "node path or id")
        if _LOOKS_LIKE_ID.fullmatch(ref):
            try:
                return self.store.node(tree, ref)
            except NodeNotFound:
                pass
        found = self.store.node_by_path(tree, normalize_query_path(ref))
        if found is None:
            raise NodeNotFound(
                f"no node {ref!r} in tree {tree!r}; use `treeseek show {tree}` to see its paths"
            )
        return found

    @reads
    def children(self, tree: str, ref: NodeRef = ROOT_PATH) -> list[Node]:
        """Direct children of a node (id, path or Node) in stored sibling order."""
        if isinstance(ref, Node):
            return self.store.children(check_tree_name(tree), ref.id)
        return self.store.children(tree, self.node(tree, ref).id)

    def subtree(self, tree: str, ref: NodeRef = ROOT_PATH) -> Iterator[Node]:
        """Every node under ``ref`` (inclusive), in path order."""
        return self.store.subtree(tree, self.node(tree, ref).path)

    def walk(self, tree: str, ref: NodeRef = ROOT_PATH) -> Iterator[Node]:
        """Depth-first, in stored sibling order (the order a tree view shows)."""
        with self.store.snapshot():
            start = self.node(tree, ref)
            nodes = list(self.store.subtree(tree, start.path))
        by_parent: dict[str | None, list[Node]] = {}
        for node in nodes:
            by_parent.setdefault(node.parent_id, []).append(node)
        for group in by_parent.values():
            group.sort(key=lambda n: n.order)
        stack = [start]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(by_parent.get(node.id, [])))

    @reads
    def listing(self, tree: str, ref: NodeRef = ROOT_PATH, depth: int = 1) -> Listing:
        """A tree view of ``depth`` levels under ``ref`` (``treeseek show``), read in one
        snapshot: one batched read per level, every level of the same version."""
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 0:
            raise ConfigError(f"depth is an integer >= 0, got {depth!r:.80}")
        info = self.tree(tree)
        start = self.node(tree, ref)
        children: dict[str, list[Node]] = {}
        frontier = [start] if start.has_children else []
        for _ in range(depth):
            if not frontier:
                break
            found = self.store.children_many(tree, [n.id for n in frontier])
            children.update(found)
            frontier = [c for n in frontier for c in found[n.id] if c.has_children]
        return Listing(info=info, start=start, depth=depth, children=children)

    @reads
    def code_graph(self, tree: str) -> TreeCodeGraph:
        """The code graph of tree ``tree`` (files, symbols, edges, entrypoints), built from
        one version and cached per version."""
        from treeseek.search.graph.tree_graph import cached_tree_graph

        return cached_tree_graph(self.caches, self.store, self.tree(tree))

    @reads
    def call_sites(self, tree: str, relation: str, name: str) -> tuple[str, list[CallSite]]:
        """``(node, sites)``: the node ``name`` names in tree ``tree`` (short forms included,
        :meth:`~treeseek.code.graph.NodeNames.find`) and its ``relation`` (``callers`` or
        ``callees``) call sites, read in one version without building the tree's graph
        (:mod:`treeseek.search.graph.lookup`: the same answer, from the few files it needs)."""
        from treeseek.search.graph.lookup import TreeLookup

        if relation not in ("callers", "callees"):
            raise ConfigError(f"call sites are callers or callees, not {relation!r}")
        check_name_text(name, "symbol name")
        self.tree(tree)  # TreeNotFound for an unknown tree
        lookup = TreeLookup(self.store, tree)
        node = lookup.find(name)
        return node, lookup.callers(node) if relation == "callers" else lookup.callees(node)

    @reads
    def code_entrypoints(self, tree: str) -> list[ResolvedEntrypoint]:
        """The routes and commands of tree ``tree`` with their handlers resolved, in path
        order: the tree graph's ``resolved.entrypoints``, read without building the graph (only
        the files that declare some are resolved, :meth:`TreeLookup.entrypoints
        <treeseek.search.graph.lookup.TreeLookup.entrypoints>`), or from the graph when this
        process has already built this version's."""
        from treeseek.search.graph.lookup import TreeLookup
        from treeseek.search.graph.tree_graph import TREE_GRAPH

        info = self.tree(tree)  # TreeNotFound for an unknown tree
        built = self.caches.peek(TREE_GRAPH, info)
        if built is not None:
            return list(built.resolved.entrypoints)
        return TreeLookup(self.store, tree).entrypoints()

    @reads
    def code_relation(
        self, tree: str, relation: str, name: str, *, transitive: bool = False
    ) -> tuple[str, list[str]]:
        """``(node, related)``: the node ``name`` names and its ``imports``, ``superclasses``,
        ``members``, ``importers`` or ``subclasses``, as the tree's graph gives them, without
        building the graph: from the node's own file (and what resolving its edges needs), and
        for the reverse relations from the files whose import or base-class rows can name it
        (:mod:`treeseek.search.graph.reverse`)."""
        from treeseek.code.graph import CodeGraph
        from treeseek.search.graph.lookup import TreeLookup
        from treeseek.search.graph.tree_graph import TREE_GRAPH

        check_name_text(name, "symbol name")
        info = self.tree(tree)  # TreeNotFound for an unknown tree
        # a process that built this version's whole graph (a server answering `neighbours` or
        # `walk`) answers from it: the same answer, without resolving any rows again
        built = self.caches.peek(TREE_GRAPH, info)
        lookup: CodeGraph | TreeLookup = (
            built.graph if built is not None else TreeLookup(self.store, tree)
        )
        node = lookup.find(name)
        if relation == "imports":
            return node, lookup.imports(node)
        if relation == "superclasses":
            return node, lookup.superclasses(node, transitive=transitive)
        if relation == "members":
            return node, lookup.members(node)
        if relation == "importers":
            return node, lookup.importers(node)
        if relation == "subclasses":
            return node, lookup.subclasses(node, transitive=transitive)
        raise ConfigError(
            "read without the whole graph: imports, superclasses, members, importers,"
            f" subclasses; not {relation!r}"
        )

    @reads
    def content(self, tree: str, ref: NodeRef) -> bytes | None:
        """The stored bytes of a file, or None (directory, binary, too large, path-only...)."""
        return self.store.content(tree, self.node(tree, ref).id)

    def text(self, tree: str, ref: NodeRef) -> str | None:
        """The stored content as text (UTF-8, undecodable bytes replaced), or None; a document
        node reads as its document's text (:meth:`document_text`)."""
        document = self.document_text(tree, ref)
        if document is not None:
            return document
        data = self.content(tree, ref)
        return None if data is None else data.decode("utf-8", "replace")

    @reads
    def document_text(self, tree: str, ref: NodeRef) -> str | None:
        """The text of a document node of a document tree, whose stored content is its outline
        record: its sections' own texts at their lines, in the document's line numbers; None
        for any other node. A document that counts pages (PDF, PageIndex) keeps its text in
        its sections: NodeNotFound says so."""
        node = self.node(tree, ref)
        source = self._source(tree)
        outline = source.document_outline(node.path) if node.is_file else None
        if outline is None or outline.document != node.path:
            return None
        if outline.unit != "line":
            raise NodeNotFound(
                f"{node.path} counts {outline.unit}s: its text is in its sections; "
                f"`treeseek outline {tree} {node.path}` lists them"
            )
        return "\n".join(source.lines(node.path) or ()) + "\n"

    # -- querying ------------------------------------------------------------------------
    @overload
    def query(
        self,
        tree: str,
        question: str,
        *,
        navigator: Navigator | None = None,
        budget: None = None,
        disclose: None = None,
        **options: Any,
    ) -> Result: ...

    @overload
    def query(
        self,
        tree: str,
        question: str,
        *,
        navigator: Navigator | None = None,
        budget: int,
        disclose: str | Level | None = None,
        **options: Any,
    ) -> Context: ...

    @overload
    def query(
        self,
        tree: str,
        question: str,
        *,
        navigator: Navigator | None = None,
        budget: int | None = None,
        disclose: str | Level,
        **options: Any,
    ) -> Context: ...

    def query(
        self,
        tree: str,
        question: str,
        *,
        navigator: Navigator | str | None = None,
        budget: int | None = None,
        disclose: str | Level | None = None,
        **options: Any,
    ) -> Result | Context:
        """Answer ``question`` from tree ``tree``: the files that answer it, best first.

        ``options`` are the fields of :class:`treeseek.search.base.QueryOptions` (``strategy``,
        ``k``, ...); ``navigator`` (a Navigator, or a spec string as ``--llm`` takes it:
        ``"lexical"``, ``"anthropic:MODEL"``, ...) defaults to the configured one (no LLM:
        lexical). With no
        ``strategy`` (or ``None``): ``flat`` without an LLM, ``auto`` with one. The CLI's
        ``treeseek query`` calls this method.

        With ``budget`` (tokens) or ``disclose`` (``paths | outline | spans | full``; default
        ``spans``) the answer is a :class:`~treeseek.context.Context` instead: the ranked
        files' evidence turned into line spans (or outlines, paths, whole files) that never
        exceed the budget (default :data:`~treeseek.context.DEFAULT_BUDGET`).
        """
        from treeseek.llm.base import Navigator
        from treeseek.llm.select import navigator_from_spec
        from treeseek.search.base import QueryOptions
        from treeseek.search.strategy import default_strategy, run_query

        known = set(QueryOptions.__dataclass_fields__)
        unknown = sorted(set(options) - known)
        if unknown:
            raise ConfigError(
                f"unknown query option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        check_tree_name(tree)
        if navigator is None or isinstance(navigator, str):
            navigator = navigator_from_spec(navigator)  # a spec string, as ``--llm`` takes it
        elif not isinstance(navigator, Navigator):
            raise ConfigError(
                "navigator is a Navigator or an LLM spec string ('lexical', 'anthropic', ...),"
                f" got {type(navigator).__name__} {navigator!r:.80}"
            )
        # no strategy (or None): flat with no LLM, LLM tree search (auto) with one
        if options.get("strategy") is None:
            options["strategy"] = default_strategy(navigator)
        budgeted = budget is not None or disclose is not None
        if budgeted:
            options.setdefault("include_content", False)  # spans read the lines themselves
        with self.store.snapshot():  # ranking, contents and spans: one version
            result = run_query(
                self.store,
                self.tree(tree),
                question,
                QueryOptions(**options),
                navigator,
                caches=self.caches,
            )
            if not budgeted:
                return result
            return self.disclose(tree, result, disclose or "spans", budget=budget, query=question)

    def warm(self, tree: str) -> bool:
        """Build what a query of ``tree``'s current version reads (its files, BM25 indexes,
        symbol catalog) and keep it in :attr:`caches`, so the next query is as fast as a warm
        one. The tables are per tree version, so a re-index makes the next query pay for
        them; a server calls this in the background when a tree it answers for changes
        (:class:`treeseek.service.prewarm.Prewarmer`). False for a document tree (nothing to
        build)."""
        from treeseek.search.strategy import warm_tree

        check_tree_name(tree)
        with self.store.snapshot():
            return warm_tree(self.store, self.tree(tree), self.caches)

    # -- context -------------------------------------------------------------------------
    def _source(self, tree: str) -> Any:
        from treeseek.context import TreeSource

        self.tree(tree)  # TreeNotFound early
        return TreeSource(self.store, tree)

    @reads
    def disclose(
        self,
        tree: str,
        hits: Result | Sequence[FileHit],
        level: str | Level = "spans",
        *,
        budget: int | None = None,
        query: str = "",
    ) -> Context:
        """Ranked files (a query's :class:`Result` or its ``files``) at a disclosure level:
        ``paths`` (scores and why), ``outline`` (each file's symbols), ``spans`` (selected
        line ranges with their text) or ``full`` (whole files), within ``budget`` tokens."""
        from treeseek.context import DEFAULT_BUDGET
        from treeseek.context import disclose as _disclose
        from treeseek.search.base import FileHit, Result

        result: Result | None = None
        if isinstance(hits, Result):
            result, files = hits, list(hits.files)
        elif isinstance(hits, list | tuple):
            files = list(hits)
        else:
            raise ConfigError(
                "hits is a query's Result or a list of its FileHit, got"
                f" {type(hits).__name__} {hits!r:.80}"
            )
        for hit in files:
            if not isinstance(hit, FileHit):
                raise ConfigError(
                    "hits is a query's Result or a list of its FileHit, got a"
                    f" {type(hit).__name__} {hit!r:.80} among them"
                )
        ctx = _disclose(
            self._source(tree),
            files,
            query=query,
            level=level,
            budget=DEFAULT_BUDGET if budget is None else budget,
            terms=result.trace.params.get("terms") if result is not None else None,
        )
        if result is not None:
            from dataclasses import asdict

            ctx.strategy = result.strategy
            ctx.navigator = result.navigator
            ctx.usage = asdict(result.usage)
            ctx.cost_usd = result.cost_usd
        return ctx

    def select(
        self, tree: str, hits: Result | Sequence[FileHit], budget: int, *, query: str = ""
    ) -> Context:
        """The line spans of ranked files that answer ``query`` within ``budget`` tokens
        (:func:`treeseek.context.select.select`): ``disclose(..., "spans")``."""
        return self.disclose(tree, hits, "spans", budget=budget, query=query)

    @reads
    def outline(self, tree: str, path: str = "", *, max_tokens: int | None = None) -> Outline:
        """The symbols of a file, or of every file under a directory, with signatures, line
        spans and first docstring lines. ``max_tokens``: a directory's outline over this many
        tokens stops there and raises ConfigError (``OutlineTooLarge``) instead of reading
        every file."""
        from treeseek.context import outline as _outline

        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0
        ):
            raise ConfigError(f"max_tokens is a count of tokens >= 0, got {max_tokens!r:.80}")
        return _outline(self._source(tree), normalize_query_path(path), max_tokens=max_tokens)

    @reads
    def expand(
        self, tree: str, item: str, *, margin: int = 0, budget: int | None = None
    ) -> Context:
        """One item without searching again: a symbol (``path::Qual.name`` or a unique short
        name), a line range (``path:A-B``) or a file, ``margin`` lines more each side, cut to
        ``budget`` tokens when given."""
        from treeseek.context import expand as _expand

        check_name_text(item, "item (path::Qual.name, path:A-B or path)")
        return _expand(self._source(tree), item, margin=margin, budget=budget)

    @reads
    def lines(self, tree: str, path: str, start: int | None = None, end: int | None = None) -> Span:
        """Lines ``start..end`` (1-based, inclusive; ``end=None``: to the end of the file) of a
        file as a span; a range outside the file raises PathError."""
        from treeseek.context import line_span

        check_line_number(start, "start")
        check_line_number(end, "end")
        source = self._source(tree)
        node = self.node(tree, path)
        if node.is_dir:
            raise NodeNotFound(f"{node.path or '.'} is a directory, not a file")
        if start is None and end is not None:
            start = 1
        return line_span(source, node.path, start, end)

    @reads
    def resolve_symbol(self, tree: str, name: str) -> ResolvedSymbol:
        """The one symbol a name path (or a unique short name) names; raises
        :class:`~treeseek.errors.AmbiguousSymbol` with the candidates when several match."""
        from treeseek.context import resolve_symbol as _resolve

        check_name_text(name, "symbol name")
        return _resolve(self._source(tree), name)


def _default_name(source: str | Path | TreeBuilder | None, paths_from: str | Path | None) -> str:
    if isinstance(source, TreeBuilder):
        raise BuildError("give a name= for a tree built from a TreeBuilder")
    origin = paths_from if paths_from is not None else source
    if origin is None or str(origin) == "-":
        raise BuildError("give a tree name (--name) when reading paths from stdin")
    resolved = Path(origin).resolve()
    name = resolved.stem if resolved.is_file() else resolved.name
    if resolved.is_dir() and name.endswith(".git") and len(name) > 4:
        name = name[:-4]  # a bare "django.git" is tree "django"
    if not name:
        raise BuildError(f"cannot derive a tree name from {origin}; give one with --name")
    return name


def is_bare_git_repository(path: Path) -> bool:
    """A bare git repository (``HEAD``, ``objects/``, ``refs/``, no work tree): indexing its
    directory would index pack files, so its HEAD commit is indexed instead. A directory this
    process may not search is not one (reading it then says why, naming the directory)."""
    try:
        return (
            (path / "HEAD").is_file()
            and (path / "objects").is_dir()
            and (path / "refs").is_dir()
            and not (path / ".git").exists()
        )
    except OSError:
        return False


def open(
    path: str | Path | None = None,
    *,
    hooks: Sequence[IndexHook] | None = None,
    create: bool = True,
) -> Database:
    """Open (creating if needed) a treeseek database.

    ``path``: the SQLite file or a ``postgresql://`` URL; defaults to ``$TREESEEK_DB`` or the
    per-user default (:func:`treeseek.config.resolve_db_path`). ``hooks``: index hooks for
    derived layers (default: the registered ones,
    :data:`treeseek.index.run.DEFAULT_HOOK_FACTORIES`). ``create=False``: a missing file is a
    StoreError, and nothing (no directory, no file) is created; what read-only commands use (a
    server database is always opened: its schema is created or migrated on first use).
    """
    if path is not None and not isinstance(path, str | Path):
        raise ConfigError(f"a database path is a string or a Path, got {type(path).__name__}")
    if isinstance(path, str):
        check_path_text(path, "database path")
    db_path = resolve_db_path(path)
    if not create and isinstance(db_path, Path) and not db_path.exists():
        raise StoreError(
            f"no treeseek database at {db_path}; index a tree into it first "
            "(`treeseek index DIR --db FILE`), or point --db / TREESEEK_DB at an existing one"
        )
    return Database(open_store(db_path), hooks=hooks)


def _not_documents(source: str | Path | TreeBuilder | None) -> str:
    """Why ``source`` cannot be indexed as documents (``--documents``), and what to give."""
    from treeseek.trees.documents import FORMATS

    what = f"give a document file ({', '.join(FORMATS)}) or a directory of documents"
    if not isinstance(source, str | Path):
        return f"documents are read from a path: {what}"
    path = Path(source)
    if not path.exists():
        return f"{path} does not exist; {what}"
    if path.is_file():
        return f"{path} is not a document format; {what}, or index it without --documents"
    return f"{path} is not a file or a directory; {what}"


def _is_document(source: str | Path, documents: bool) -> bool:
    """Whether ``source`` is indexed as documents: a directory when asked, or a file whose
    suffix is a document format (a ``.txt`` or ``.json`` file is a path list unless asked)."""
    from treeseek.trees.documents import document_format

    path = Path(source)
    if path.is_dir():
        return documents
    if not path.is_file():
        return False
    fmt = document_format(path.name)
    if fmt is None:
        return False
    return (
        documents
        or fmt in ("markdown", "rst", "pdf")
        or (fmt == "pageindex" and _looks_like_outline(path))
    )


def _looks_like_outline(path: Path) -> bool:
    """A ``.json`` file is a path list when it is a JSON list of strings; anything else is
    read as a document outline (PageIndex, or the generic children/nodes form)."""
    try:
        head = path.read_bytes()[:4096].lstrip()
    except OSError:
        return False
    if not head.startswith(b"["):
        return True
    return not head[1:].lstrip().startswith(b'"')
