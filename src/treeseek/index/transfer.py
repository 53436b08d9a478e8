"""Copy trees between stores of any backends (``treeseek db copy``: SQLite to PostgreSQL and
back), through the Store protocols only.

Per tree, one write transaction of the target: its nodes (with their change-detection
signatures and metadata), the contents they hold (deduplicated by hash against what the target
already has), the code layers of those contents and the vectors of its files. The code layers
are written as the code index writes them (:func:`treeseek.index.code_hook.prepare_code`'s
shape): the stored chunk documents are taken as they are, the symbol documents and every term
count are derived from the stored rows by the same functions the index uses, so the target's
term counts (in its own vocabulary) equal the source's and both give the same results.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from treeseek.code.model import FileCodeIndex
from treeseek.errors import TreeNotFound
from treeseek.index.code_hook import document_term_counts, symbol_document, term_counts
from treeseek.store.base import Store
from treeseek.store.code_base import PreparedCode, VectorKey

#: contents read and written per batch
BATCH = 1000


@dataclass(frozen=True, slots=True)
class CopiedTree:
    name: str
    nodes: int
    contents: int
    new_contents: int
    code_files: int
    vectors: int


def copy_trees(
    source: Store, target: Store, names: Sequence[str] | None = None
) -> list[CopiedTree]:
    """Copy trees ``names`` (default: all) from ``source`` to ``target``, replacing trees of
    the same names there; returns what each copy wrote."""
    wanted = [t.name for t in source.trees()] if names is None else list(names)
    for name in wanted:
        if not source.has_tree(name):
            raise TreeNotFound(name)
    return [_copy_tree(source, target, name) for name in wanted]


def _copy_tree(source: Store, target: Store, name: str) -> CopiedTree:
    info = source.tree(name)
    nodes = list(source.subtree(name))
    signatures = {s.node_id: s.signature for s in source.file_states(name).values() if s.signature}
    hashes = sorted({n.content_hash for n in nodes if n.content_hash is not None})
    paths: dict[str, list[str]] = defaultdict(list)  # the paths holding each content
    for n in nodes:
        if n.content_hash is not None:
            paths[n.content_hash].append(n.path)
    src_code = source.code()
    kinds = src_code.vector_kinds()
    parsed = vectors = new_contents = 0
    with target.write_tree(name) as writer:
        keep = {n.id for n in nodes}
        writer.delete_nodes(n.id for n in target.subtree(name) if n.id not in keep)
        code = writer.code()
        for start in range(0, len(hashes), BATCH):
            batch = hashes[start : start + BATCH]
            missing = set(batch) - set(target.contents(batch))
            new_contents += len(missing)
            data = source.contents(sorted(missing))
            writer.put_contents(data.items())
            todo = code.missing_code(batch)
            # a content the target already parsed keeps its rows; a vector is copied with it
            # only when the source's parse is the same (language and parser revision): the
            # source's vector embeds the source's symbols
            held = code.code_files(set(batch) - todo)
            theirs = src_code.code_files(held)
            same = set(todo) | {
                d
                for d, mine in held.items()
                if (other := theirs.get(d)) is not None
                and (other.language, other.parser_revision) == (mine.language, mine.parser_revision)
            }
            infos = src_code.code_files(todo)
            symbols = src_code.symbols_of(infos)
            documents = src_code.chunk_documents(infos)
            for digest, file_info in infos.items():
                index = FileCodeIndex(
                    language=file_info.language,
                    module="",
                    chunks=tuple(src_code.chunks(digest)),
                    symbols=tuple(symbols.get(digest, ())),
                    edges=tuple(src_code.edges(digest)),
                    entrypoints=tuple(src_code.entrypoints(digest)),
                    parse_error=file_info.parse_error,
                )
                bodies = tuple(documents.get(digest, ()))
                symbol_bodies = tuple(symbol_document(s) for s in index.symbols)
                code.put_prepared(
                    digest,
                    PreparedCode(
                        index=index,
                        chunk_bodies=bodies,
                        symbol_bodies=symbol_bodies,
                        chunk_terms=tuple(term_counts(b) for b in bodies),
                        symbol_terms=tuple(term_counts(b) for b in symbol_bodies),
                        term_counts=document_term_counts(bodies),
                        parser_revision=file_info.parser_revision,
                    ),
                )
                parsed += 1
            keys = [VectorKey(h, path) for h in batch if h in same for path in paths[h]]
            for model, kind in kinds:
                need = code.missing_vectors(model, kind, keys)
                found = src_code.vectors(model, kind, need)
                code.put_vectors(model, kind, sorted(found.items()))
                vectors += len(found)
        writer.upsert_nodes(nodes, signatures)
        writer.set_info(info)
    return CopiedTree(name, len(nodes), len(hashes), new_contents, parsed, vectors)
