"""PageIndex JSON, imported as is: ``{doc_name, doc_description?, structure: [node]}`` where a
node is ``{node_id, title, summary?, start_index, end_index, text?, nodes: [...]}`` (page
spans). The generic form is accepted too: a tree of objects with ``children`` or ``nodes``
lists, leaves carrying ``content`` or ``text``, a ``title``/``name``/``heading`` each (a JSON
list at the top is the list of top-level nodes).

Bad input is reported, not guessed at: JSON that does not parse, or has no node list, raises
:class:`~treeseek.errors.BuildError`; a node whose ``start_index`` is after its ``end_index``,
or whose pages lie outside its parent's, keeps its text and title but loses its span, with a
warning naming the node.
"""

from __future__ import annotations

import json
from typing import Any

from treeseek.errors import BuildError
from treeseek.trees.documents.model import PAGE, Document, Section

#: nesting deeper than this is refused (a cycle in generated JSON, or not an outline at all)
MAX_NESTING = 64


def parse_pageindex(data: bytes, name: str) -> Document:
    try:
        raw = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BuildError(
            f"{name}: not valid JSON ({exc}); fix the file or index it as text"
        ) from exc
    except RecursionError as exc:  # json's decoder recurses: thousands of nested lists
        raise BuildError(
            f"{name}: JSON nested too deeply to read (an outline is at most {MAX_NESTING}"
            " levels); fix the file or index it as text"
        ) from exc
    if isinstance(raw, list):
        top: Any = raw
        meta: dict[str, Any] = {}
    elif isinstance(raw, dict):
        meta = raw
        top = next((raw[k] for k in ("structure", "nodes", "children") if k in raw), None)
        if top is None and any(k in raw for k in ("content", "text", "title")):
            top = [raw]
    else:
        top = None
    if not isinstance(top, list):
        raise BuildError(
            f"{name}: JSON with no outline: expected PageIndex's {{doc_name, structure: [...]}}"
            " or nodes under 'children'/'nodes'"
        )
    doc = Document(
        title=str(meta.get("doc_name") or meta.get("title") or name),
        format="pageindex",
        unit=PAGE,
        description=_text(meta.get("doc_description") or meta.get("description")),
    )
    any_pages = False
    counter = [0]

    def convert(node: Any, level: int, where: str, parent: Section | None) -> Section | None:
        nonlocal any_pages
        if level > MAX_NESTING:
            raise BuildError(f"{name}: outline nested deeper than {MAX_NESTING} levels at {where}")
        if not isinstance(node, dict):
            if isinstance(node, str) and node.strip():
                counter[0] += 1
                return Section(f"text {counter[0]}", level, None, None, text=node)
            doc.warnings.append(f"{name}: {where}: not an object; skipped")
            return None
        counter[0] += 1
        title = _text(node.get("title") or node.get("name") or node.get("heading"))
        source_id = node.get("node_id", node.get("id"))
        start, end = _page(node.get("start_index")), _page(node.get("end_index"))
        if start is None and end is None:
            start, end = _page(node.get("start_page")), _page(node.get("end_page"))
        label = title or (f"node {source_id}" if source_id is not None else where)
        if start is not None and end is not None and start > end:
            doc.warnings.append(
                f"{name}: {label!r}: start_index {start} is after end_index {end}; span dropped"
            )
            start = end = None
        elif start is not None and end is None:
            end = start
        if (
            start is not None
            and end is not None
            and parent is not None
            and parent.start is not None
            and parent.end is not None
            and (start < parent.start or end > parent.end)
        ):
            doc.warnings.append(
                f"{name}: {label!r}: pages {start}-{end} lie outside its parent's"
                f" {parent.start}-{parent.end}; span dropped"
            )
            start = end = None
        any_pages = any_pages or start is not None
        text = _text(node.get("text") if "text" in node else node.get("content")) or ""
        section = Section(
            title=title or f"section {counter[0]}",
            level=level,
            start=start,
            end=end,
            text=text,
            own_end=end,
            summary=_text(node.get("summary") or node.get("prefix_summary")),
            source_id=str(source_id) if source_id is not None else None,
        )
        kids = node.get("nodes", node.get("children")) or []
        if not isinstance(kids, list):
            doc.warnings.append(f"{name}: {label!r}: children are not a list; skipped")
            kids = []
        for j, kid in enumerate(kids):
            child = convert(kid, level + 1, f"{where}/{j}", section)
            if child is not None:
                section.children.append(child)
        return section

    for j, node in enumerate(top):
        s = convert(node, 1, f"structure/{j}", None)
        if s is not None:
            doc.sections.append(s)
    if not any_pages:
        doc.unit = "none"
    return doc


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, list):
        return "\n".join(str(v) for v in value if v is not None).strip() or None
    return str(value)


def _page(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None
