"""How a parsed document becomes nodes of a stored tree, and how its outline is read back.

A document at repo-relative ``guide.md`` is a file node whose children are its top sections
(the text before the first heading, when there is some, comes first as ``0-preamble``); every
section is a file node with its own text as content and its subsections as children. Section
paths are the document path plus ``<ordinal>-<slug of the title>`` per level (PageIndex
sections keep their ``node_id`` as the ordinal), e.g. ``guide.md/1-introduction/2-setup``, so
node ids (derived from paths) are stable while the outline keeps its shape.

The document node's content is its *outline*: JSON with the format, title, description, span
unit, warnings, and per section (by path relative to the document) the title, level, span
(first/last line or page, subsections included), own-text end, summary and labels. Retrievers
read titles, levels and spans from it; the store needs no other columns.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from treeseek.trees.documents.model import Document, Section

OUTLINE_FORMAT = "treeseek-outline/1"
PREAMBLE = "0-preamble"
SLUG_CHARS = 40


@dataclass(frozen=True, slots=True)
class SectionInfo:
    """One section as the outline records it."""

    path: str  # repo-relative path of the section node
    document: str  # repo-relative path of the document node
    title: str
    level: int  # 1 = top section; 0 = the preamble
    start: int | None
    end: int | None
    own_end: int | None
    unit: str
    summary: str | None = None
    source_id: str | None = None
    labels: tuple[str, ...] = ()

    @property
    def has_span(self) -> bool:
        return self.start is not None


@dataclass(frozen=True, slots=True)
class Outline:
    document: str
    format: str
    title: str
    unit: str
    description: str | None
    warnings: tuple[str, ...]
    sections: dict[str, SectionInfo]  # section path -> info (document order)

    def title_path(self, path: str) -> list[str]:
        """Titles from the document's down to ``path``'s."""
        titles = [self.title]
        rel = path[len(self.document) + 1 :] if path != self.document else ""
        parts = rel.split("/") if rel else []
        cur = self.document
        for part in parts:
            cur = f"{cur}/{part}"
            info = self.sections.get(cur)
            titles.append(info.title if info is not None else part)
        return titles


def slug(title: str) -> str:
    norm = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    words = re.findall(r"[a-z0-9]+", norm.lower())
    out = "-".join(words)[:SLUG_CHARS].strip("-")
    return out or "section"


def _part(ordinal: str, title: str, taken: set[str]) -> str:
    base = f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', ordinal).strip('-.') or 'x'}-{slug(title)}"
    name, n = base, 2
    while name in taken:
        name = f"{base}-{n}"
        n += 1
    taken.add(name)
    return name


def section_paths(doc_path: str, doc: Document) -> list[tuple[str, Section, str | None]]:
    """(path, section, parent path) for every section, in document order."""
    out: list[tuple[str, Section, str | None]] = []
    top_taken: set[str] = set()
    if doc.preamble is not None:
        top_taken.add(PREAMBLE)
        out.append((f"{doc_path}/{PREAMBLE}", doc.preamble, doc_path))

    def add(sections: list[Section], parent: str, taken: set[str]) -> None:
        for i, s in enumerate(sections, 1):
            ordinal = s.source_id if s.source_id is not None else str(i)
            path = f"{parent}/{_part(ordinal, s.title, taken)}"
            out.append((path, s, parent))
            add(s.children, path, set())

    add(doc.sections, doc_path, top_taken)
    return out


def outline_json(doc_path: str, doc: Document) -> bytes:
    sections: dict[str, Any] = {}
    for path, s, _ in section_paths(doc_path, doc):
        rel = path[len(doc_path) + 1 :]
        entry: dict[str, Any] = {
            "title": s.title,
            "level": 0 if s is doc.preamble else s.level,
            "start": s.start,
            "end": s.end,
            "own_end": s.own_end,
        }
        if s.summary:
            entry["summary"] = s.summary
        if s.source_id is not None:
            entry["source_id"] = s.source_id
        if s.labels:
            entry["labels"] = list(s.labels)
        sections[rel] = entry
    body = {
        "outline": OUTLINE_FORMAT,
        "format": doc.format,
        "title": doc.title,
        "unit": doc.unit,
        "description": doc.description,
        "warnings": list(doc.warnings),
        "sections": sections,
    }
    return json.dumps(body, ensure_ascii=False, indent=1).encode("utf-8")


def read_outline(doc_path: str, data: bytes) -> Outline | None:
    """The outline stored as a document node's content (None: not an outline)."""
    try:
        body = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(body, dict) or body.get("outline") != OUTLINE_FORMAT:
        return None
    unit = str(body.get("unit") or "line")
    sections = {
        f"{doc_path}/{rel}": SectionInfo(
            path=f"{doc_path}/{rel}",
            document=doc_path,
            title=str(e.get("title") or rel),
            level=int(e.get("level") or 0),
            start=e.get("start"),
            end=e.get("end"),
            own_end=e.get("own_end"),
            unit=unit,
            summary=e.get("summary"),
            source_id=e.get("source_id"),
            labels=tuple(e.get("labels") or ()),
        )
        for rel, e in (body.get("sections") or {}).items()
    }
    return Outline(
        document=doc_path,
        format=str(body.get("format")),
        title=str(body.get("title") or doc_path),
        unit=unit,
        description=body.get("description"),
        warnings=tuple(body.get("warnings") or ()),
        sections=sections,
    )
