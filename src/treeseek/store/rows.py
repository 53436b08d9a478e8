"""Rows to models, shared by the SQLite and PostgreSQL stores: the column lists their reads
select and the mapping of each row to its model.

Both stores select the same columns in the same order (their layouts mirror each other), so
one function maps a row of either; what differs (a path stored as ``bytea`` on PostgreSQL) is
decoded by the store and passed in.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from treeseek.code.model import Chunk, ChunkType, Edge, EdgeType, Entrypoint, Symbol, SymbolKind
from treeseek.store.code_base import CodeFileInfo
from treeseek.trees.model import ContentStatus, Node, NodeType, TreeInfo, TreeSource

NODE_COLUMNS = (
    "node_id, path, type, parent_id, depth, ord, child_count, size, content_hash, content_status"
)
TREE_COLUMNS = (
    "name, source, root, node_count, file_count, dir_count, max_depth, built_at, updated_at"
)
CODE_FILE_COLUMNS = (
    "content_hash, language, parse_error, chunk_count, symbol_count, parser_revision"
)
CHUNK_COLUMNS = "idx, type, start_line, end_line, symbol"
SYMBOL_COLUMNS = (
    "qname, name, kind, start_line, end_line, signature, decorators, docstring, parent,"
    " is_entry, lang_payload"
)
EDGE_COLUMNS = "type, src, dst_ref, line, lang_payload"
ENTRYPOINT_COLUMNS = "entry_type, framework, route_or_command, handler, line, lang_payload"

_TYPES = {t.value: t for t in NodeType}
_STATUSES = {s.value: s for s in ContentStatus}


def node_from_row(row: Sequence[Any], path: str) -> Node:
    """A node from a row of :data:`NODE_COLUMNS`; ``path``: its path column, decoded."""
    return Node(
        id=row[0],
        path=path,
        type=_TYPES[row[2]],
        parent_id=row[3],
        depth=row[4],
        order=row[5],
        child_count=row[6],
        size=row[7],
        content_hash=row[8],
        content_status=_STATUSES[row[9]],
    )


def tree_info_from_row(row: Sequence[Any], root: str) -> TreeInfo:
    """A tree's info from a row of :data:`TREE_COLUMNS`; ``root``: its root column, decoded."""
    return TreeInfo(
        name=row[0],
        source=TreeSource(row[1]),
        root=root,
        node_count=row[3],
        file_count=row[4],
        dir_count=row[5],
        max_depth=row[6],
        built_at=datetime.fromisoformat(row[7]),
        updated_at=datetime.fromisoformat(row[8]),
    )


def code_file_from_row(row: Sequence[Any]) -> CodeFileInfo:
    """A row of :data:`CODE_FILE_COLUMNS`."""
    return CodeFileInfo(row[0], row[1], row[2], row[3], row[4], row[5])


def chunks_from_rows(rows: Sequence[Sequence[Any]], data: bytes) -> list[Chunk]:
    """Chunks from rows of :data:`CHUNK_COLUMNS`, their text cut from the content ``data``."""
    lines = data.decode("utf-8", "replace").splitlines()
    return [
        Chunk(
            index=r[0],
            type=ChunkType(r[1]),
            start_line=r[2],
            end_line=r[3],
            text="\n".join(lines[r[2] - 1 : r[3]]),
            symbol=r[4],
        )
        for r in rows
    ]


#: JSON text -> its value, shared by the rows of one batched read (a large tree's 1.4 million
#: edges carry a few thousand distinct payloads; decoding each row's was most of reading them).
#: The values are shared: a payload read from the store is never modified.
Decoded = dict[str, Any]

_KINDS = {k.value: k for k in SymbolKind}
_EDGE_TYPES = {t.value: t for t in EdgeType}


def _json(text: str, memo: Decoded | None) -> Any:
    if memo is None:
        return json.loads(text)
    found = memo.get(text)
    if found is None:
        found = memo[text] = json.loads(text)
    return found


def symbol_from_row(row: Sequence[Any], at: int = 0, memo: Decoded | None = None) -> Symbol:
    """A symbol from the :data:`SYMBOL_COLUMNS` of ``row`` starting at column ``at``
    (``memo``: the decoded JSON columns of the other rows of the same read)."""
    return Symbol(
        qname=row[at],
        name=row[at + 1],
        kind=_KINDS[row[at + 2]],
        start_line=row[at + 3],
        end_line=row[at + 4],
        signature=row[at + 5],
        decorators=tuple(_json(row[at + 6], memo)),
        docstring=row[at + 7],
        parent=row[at + 8],
        is_entry_candidate=bool(row[at + 9]),
        lang_payload=_json(row[at + 10], memo),
    )


def edge_from_row(row: Sequence[Any], at: int = 0, memo: Decoded | None = None) -> Edge:
    """An edge from the :data:`EDGE_COLUMNS` of ``row`` starting at column ``at``."""
    return Edge(
        type=_EDGE_TYPES[row[at]],
        src=row[at + 1],
        dst_ref=row[at + 2],
        line=row[at + 3],
        lang_payload=_json(row[at + 4], memo),
    )


def entrypoint_from_row(row: Sequence[Any]) -> Entrypoint:
    """A row of :data:`ENTRYPOINT_COLUMNS`."""
    return Entrypoint(
        entry_type=row[0],
        framework=row[1],
        route_or_command=row[2],
        handler=row[3],
        line=row[4],
        lang_payload=json.loads(row[5]),
    )
