"""Indexing documents: a document, or every document a builder lists, into a ``document`` tree.

Each document is parsed (:func:`treeseek.trees.documents.parse_document`) and laid out as
section nodes (:mod:`treeseek.trees.documents.layout`): the document node holds the outline,
each section node its own text. The write is one transaction through the ordinary
:class:`~treeseek.store.base.TreeWriter` protocol, touching only nodes that changed, so a
failed run leaves the stored tree as it was.

Bad input: indexing ONE document that cannot be read raises
:class:`~treeseek.errors.BuildError` before anything is written. In a directory of documents, a
document that cannot be read is skipped with a warning, and the version of it already stored
(if any) is kept as it was.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from treeseek.embed.base import Embedder
from treeseek.errors import BuildError
from treeseek.index.run import IndexReport, check_relative_path
from treeseek.index.section_vectors import SECTION_KIND, SectionToEmbed, embed_missing
from treeseek.store.base import Store
from treeseek.store.code_base import VectorKey
from treeseek.trees.documents import document_format, parse_document
from treeseek.trees.documents.layout import outline_json, section_paths
from treeseek.trees.model import (
    ROOT_PATH,
    ContentStatus,
    Node,
    NodeType,
    TreeInfo,
    TreeSource,
    node_id_for_path,
    parent_path,
)
from treeseek.trees.source import SourceEntry, SourceWarnings, TreeBuilder

#: documents larger than this are skipped (a directory) or refused (one document)
DEFAULT_MAX_DOCUMENT_BYTES = 64 * 1024 * 1024


class DocumentBuilder(TreeBuilder):
    """One document file, or the documents under a directory (git-aware, as any directory)."""

    source = TreeSource.DOCUMENT

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path).resolve()
        self.root = str(self.path)
        if not self.path.exists():
            raise BuildError(f"{path} does not exist; give a document or a directory of them")
        if self.path.is_file() and document_format(self.path.name) is None:
            raise BuildError(
                f"{path}: not a known document type (Markdown .md, reST .rst, PageIndex .json,"
                " .pdf, .txt)"
            )

    @property
    def single(self) -> bool:
        return self.path.is_file()

    def entries(self, warnings: SourceWarnings) -> Iterator[SourceEntry]:
        if self.single:
            p = self.path
            yield SourceEntry(p.name, NodeType.FILE, p.stat().st_size, None, p.read_bytes)
            return
        from treeseek.trees.filesystem import FilesystemBuilder

        for entry in FilesystemBuilder(self.path).entries(warnings):
            if entry.type is NodeType.FILE and document_format(entry.path) is not None:
                yield entry


@dataclass(slots=True)
class _Doc:
    nodes: list[Node]
    contents: dict[str, bytes]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def document_nodes(doc_path: str, data: bytes) -> tuple[_Doc, list[str]]:
    """The nodes and contents of one document (raises BuildError), and its warnings."""
    doc = parse_document(doc_path, data)
    parts = section_paths(doc_path, doc)
    children: dict[str, list[str]] = {doc_path: []}
    order: dict[str, int] = {}  # a section's place among its siblings (list.index: quadratic)
    for path, _, parent in parts:
        children.setdefault(path, [])
        siblings = children.setdefault(parent or doc_path, [])
        order[path] = len(siblings)
        siblings.append(path)
    outline = outline_json(doc_path, doc)
    contents = {_sha(outline): outline}
    doc_depth = doc_path.count("/") + 1
    nodes = [
        Node(
            id=node_id_for_path(doc_path),
            path=doc_path,
            type=NodeType.FILE,
            parent_id=None,  # set by the caller
            depth=doc_depth,
            order=0,
            child_count=len(children[doc_path]),
            size=len(outline),
            content_hash=_sha(outline),
            content_status=ContentStatus.STORED,
        )
    ]
    for path, section, parent in parts:
        text = section.text.encode("utf-8")
        digest = _sha(text)
        contents[digest] = text
        nodes.append(
            Node(
                id=node_id_for_path(path),
                path=path,
                type=NodeType.FILE,
                parent_id=node_id_for_path(parent or doc_path),
                depth=path.count("/") + 1,
                order=order[path],
                child_count=len(children[path]),
                size=len(text),
                content_hash=digest,
                content_status=ContentStatus.STORED,
            )
        )
    return _Doc(nodes, contents), doc.warnings


def index_documents(
    store: Store,
    name: str,
    builder: TreeBuilder,
    *,
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
    progress: Callable[[int, int], None] | None = None,
    embedder: Embedder | None = None,
) -> IndexReport:
    """Build or update document tree ``name`` from the documents ``builder`` lists; with an
    ``embedder``, every section of the tree that has no vector of its model gets one
    (:mod:`treeseek.index.section_vectors`), embedded before the write and stored with it."""
    started = time.perf_counter()
    if not name or name != name.strip():
        raise BuildError(f"invalid tree name {name!r}: use a non-empty name without outer spaces")
    warnings = SourceWarnings()
    entries = [e for e in builder.entries(warnings) if e.type is NodeType.FILE]
    single = len(entries) == 1 and getattr(builder, "single", False)
    exists = store.has_tree(name)
    if exists and store.tree(name).source is not TreeSource.DOCUMENT:
        raise BuildError(
            f"tree {name!r} exists and is not a document tree; pick another --name (or"
            f" `treeseek rm {name}` first to replace it)"
        )
    old_nodes: dict[str, Node] = {n.path: n for n in store.subtree(name)} if exists else {}
    docs: dict[str, _Doc] = {}
    failed: list[str] = []
    for i, entry in enumerate(entries, 1):
        check_relative_path(entry.path)
        try:
            if entry.problem is not None or entry.read is None:
                raise BuildError(f"{entry.path}: {entry.problem or 'no content'}")
            if entry.size is not None and entry.size > max_document_bytes:
                raise BuildError(
                    f"{entry.path}: {entry.size} bytes, over the {max_document_bytes}-byte limit"
                )
            try:
                data = entry.read()
            except OSError as exc:
                raise BuildError(f"{entry.path}: cannot read ({exc.strerror or exc})") from exc
            built, doc_warnings = document_nodes(entry.path, data)
        except BuildError as exc:
            if single:
                raise
            warnings.add(
                f"{exc}; skipped" + (" (stored version kept)" if entry.path in old_nodes else "")
            )
            failed.append(entry.path)
            continue
        warnings.messages.extend(doc_warnings)
        docs[entry.path] = built
        if progress is not None:
            progress(i, len(entries))
    if not docs and not failed and not entries:
        raise BuildError(f"{builder.root}: no documents found (.md, .rst, .json, .pdf, .txt)")

    # directories above the documents, the root included, in sibling order
    dir_children: dict[str, list[tuple[int, str]]] = {ROOT_PATH: []}
    kept_failed = [p for p in failed if p in old_nodes]
    for doc_path in [*docs, *kept_failed]:
        path = doc_path
        kind = 1
        while True:
            parent = parent_path(path)
            siblings = dir_children.setdefault(parent, [])
            if (kind, path) not in siblings:
                siblings.append((kind, path))
            if parent == ROOT_PATH:
                break
            path, kind = parent, 0
    new_nodes: dict[str, Node] = {}
    for d, kids in dir_children.items():
        kids.sort(key=lambda kp: (kp[0], kp[1].rpartition("/")[2].casefold(), kp[1]))
        order = {p: i for i, (_, p) in enumerate(kids)}
        new_nodes[d] = Node(
            id=node_id_for_path(d),
            path=d,
            type=NodeType.DIRECTORY,
            parent_id=node_id_for_path(parent_path(d)) if d else None,
            depth=d.count("/") + 1 if d else 0,
            order=0,
            child_count=len(kids),
        )
        for kind, p in kids:
            if kind == 0:
                continue
            if p in docs:
                top = docs[p].nodes[0]
                docs[p].nodes[0] = Node(
                    id=top.id,
                    path=top.path,
                    type=top.type,
                    parent_id=node_id_for_path(d),
                    depth=top.depth,
                    order=order[p],
                    child_count=top.child_count,
                    size=top.size,
                    content_hash=top.content_hash,
                    content_status=top.content_status,
                )
    for d in list(new_nodes):
        if d:
            parent = parent_path(d)
            pos = [p for _, p in dir_children[parent]].index(d)
            n = new_nodes[d]
            new_nodes[d] = Node(n.id, n.path, n.type, n.parent_id, n.depth, pos, n.child_count)
    contents: dict[str, bytes] = {}
    for built in docs.values():
        for node in built.nodes:
            new_nodes[node.path] = node
        contents.update(built.contents)
    for p in kept_failed:  # the stored version of a document that failed this time stays
        prefix = p + "/"
        for path, node in old_nodes.items():
            if path == p or path.startswith(prefix):
                new_nodes[path] = node
    to_write = [n for path, n in new_nodes.items() if old_nodes.get(path) != n]
    removed = [n for path, n in old_nodes.items() if path not in new_nodes]
    old_hashes = {n.content_hash for n in old_nodes.values()}
    files = [n for n in new_nodes.values() if n.is_file]
    now = datetime.now(UTC)
    old_info = store.tree(name) if exists else None
    info = TreeInfo(
        name=name,
        source=TreeSource.DOCUMENT,
        root=builder.root,
        node_count=len(new_nodes),
        file_count=len(files),
        dir_count=len(new_nodes) - len(files),
        max_depth=max((n.depth for n in new_nodes.values()), default=0),
        built_at=old_info.built_at if old_info is not None else now,
        updated_at=now,
    )
    embedded = (
        embed_missing(store.code(), embedder, _sections(store, docs, kept_failed, old_nodes))
        if embedder is not None
        else None
    )
    with store.write_tree(name) as writer:
        writer.put_contents((h, b) for h, b in contents.items() if h not in old_hashes)
        writer.delete_nodes(n.id for n in removed)
        writer.upsert_nodes(to_write, {})
        writer.set_info(info)
        if embedder is not None and embedded:
            writer.code().put_vectors(embedder.name, SECTION_KIND, embedded)
    old_docs = {
        p
        for p, n in old_nodes.items()
        if n.is_file and n.parent_id is not None and old_nodes.get(parent_path(p), n).is_dir
    }
    added = sum(1 for p in docs if p not in old_docs)
    written = {n.id for n in to_write}
    changed = sum(1 for p in docs if p in old_docs and any(n.id in written for n in docs[p].nodes))
    return IndexReport(
        tree=store.tree(name),
        added=added,
        changed=changed,
        removed=sum(1 for p in old_docs if p not in docs and p not in kept_failed),
        unchanged=len(docs) - added - changed,
        binary=0,
        too_large=0,
        unreadable=len(failed),
        warnings=list(warnings.messages),
        seconds=time.perf_counter() - started,
    )


def _sections(
    store: Store, docs: dict[str, _Doc], kept_failed: list[str], old_nodes: dict[str, Node]
) -> list[SectionToEmbed]:
    """Every section node of the new version: the parsed documents' and the stored sections
    of documents that failed this time (their text read back)."""
    out = [
        SectionToEmbed(
            VectorKey(n.content_hash, n.path),
            doc_path,
            built.contents[n.content_hash].decode("utf-8", "replace"),
        )
        for doc_path, built in docs.items()
        for n in built.nodes[1:]
        if n.content_hash is not None
    ]
    kept = [
        (p, n)
        for p in kept_failed
        for path, n in old_nodes.items()
        if path.startswith(p + "/") and n.content_hash is not None
    ]
    texts = store.contents(sorted({n.content_hash for _, n in kept if n.content_hash}))
    for doc_path, n in kept:
        assert n.content_hash is not None
        data = texts.get(n.content_hash, b"")
        out.append(
            SectionToEmbed(
                VectorKey(n.content_hash, n.path), doc_path, data.decode("utf-8", "replace")
            )
        )
    return out
