"""PDF outlines (bookmarks) with page spans and page text, through ``pypdf`` (the optional
``pdf`` extra: ``pip install 'treeseek[pdf]'``).

A section spans from its bookmark's page to the page before the next bookmark (at any level)
starts, or to that same page when the next bookmark is on it; its own text is the text of those
pages. A PDF without an outline is refused with a message saying so (no headings are guessed
from font sizes). Encrypted PDFs open when their user password is empty, otherwise they are
refused; a broken file, or one with more than ``max_pages`` pages, is refused too.
"""

from __future__ import annotations

from typing import Any

from treeseek.errors import BuildError
from treeseek.trees.documents.model import PAGE, Document, Section

#: PDFs longer than this are refused unless the caller raises the limit (text extraction of
#: every page takes about 10 ms a page)
DEFAULT_MAX_PAGES = 1500


def parse_pdf(data: bytes, name: str, *, max_pages: int = DEFAULT_MAX_PAGES) -> Document:
    try:
        import pypdf
        from pypdf.errors import PdfReadError
    except ImportError as exc:
        raise BuildError(
            f"{name}: reading PDF needs the pdf extra: pip install 'treeseek[pdf]'"
        ) from exc
    import io
    import logging

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                ok = reader.decrypt("")
            except Exception as exc:  # unsupported encryption algorithms raise here
                raise BuildError(f"{name}: encrypted PDF that cannot be opened ({exc})") from exc
            if not ok:
                raise BuildError(
                    f"{name}: the PDF is encrypted with a password; decrypt it first"
                    " (e.g. qpdf --decrypt) and index the copy"
                )
        pages = len(reader.pages)
        outline = reader.outline
    except BuildError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise BuildError(f"{name}: broken PDF ({exc}); it cannot be read") from exc
    except Exception as exc:  # pypdf raises a variety of errors on damaged files
        raise BuildError(f"{name}: broken PDF ({type(exc).__name__}: {exc})") from exc
    if pages > max_pages:
        raise BuildError(
            f"{name}: {pages} pages, more than the limit of {max_pages}; split it into parts"
            f" of at most {max_pages} pages and index those"
        )
    flat: list[tuple[int, str, int]] = []  # (level, title, 1-based page)

    def walk(items: Any, level: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            try:
                number = reader.get_destination_page_number(item)
            except Exception:
                continue
            if number is None or number < 0:
                continue
            page = number + 1
            flat.append((level, str(getattr(item, "title", "") or "").strip() or "untitled", page))

    try:
        walk(outline, 1)
    except Exception as exc:
        raise BuildError(f"{name}: broken PDF outline ({exc})") from exc
    if not flat:
        raise BuildError(
            f"{name}: the PDF has no outline (bookmarks), so it has no sections to index;"
            " add bookmarks, or convert it to text or Markdown first"
        )
    texts: dict[int, str] = {}

    def page_text(p: int) -> str:
        if p not in texts:
            try:
                texts[p] = (reader.pages[p - 1].extract_text() or "").strip()
            except Exception:
                texts[p] = ""
        return texts[p]

    doc = Document(title=_title(reader) or name, format="pdf", unit=PAGE)
    sections: list[Section] = []
    stack: list[Section] = []
    for i, (level, title, page) in enumerate(flat):
        nxt = flat[i + 1][2] if i + 1 < len(flat) else pages + 1
        own_end = max(page, nxt - 1) if i + 1 < len(flat) else pages
        text = "\n\n".join(t for t in (page_text(p) for p in range(page, own_end + 1)) if t)
        s = Section(title, level, page, own_end, f"{title}\n\n{text}".strip(), own_end)
        while stack and stack[-1].level >= level:
            stack.pop()
        s.level = len(stack) + 1
        (stack[-1].children if stack else sections).append(s)
        stack.append(s)

    def close(s: Section) -> int:
        end = s.own_end or s.start or 1
        for c in s.children:
            end = max(end, close(c))
        s.end = end
        return end

    for s in sections:
        close(s)
    if flat[0][2] > 1:
        pre = "\n\n".join(t for t in (page_text(p) for p in range(1, flat[0][2])) if t)
        if pre:
            doc.preamble = Section(doc.title, 1, 1, flat[0][2] - 1, pre, flat[0][2] - 1)
    doc.sections = sections
    return doc


def _title(reader: Any) -> str | None:
    try:
        meta = reader.metadata
        title = meta.title if meta is not None else None
    except Exception:
        return None
    return str(title).strip() or None if title else None
