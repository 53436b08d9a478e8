"""Small real PDFs for the tests, written with pypdf: text pages, an outline, encryption."""

from __future__ import annotations

import io

from pypdf import PdfWriter
from pypdf.generic import (
    DecodedStreamObject,
    DictionaryObject,
    NameObject,
)


def _text_page(writer: PdfWriter, text: str) -> None:
    page = writer.add_blank_page(width=612, height=792)
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})}
    )
    safe = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    stream = DecodedStreamObject()
    stream.set_data(f"BT /F1 12 Tf 72 720 Td ({safe}) Tj ET".encode("latin-1"))
    page[NameObject("/Contents")] = writer._add_object(stream)


def make_pdf(
    pages: list[str],
    outline: list[tuple[str, int, list[tuple[str, int]]]] = (),  # type: ignore[assignment]
    *,
    password: str | None = None,
) -> bytes:
    writer = PdfWriter()
    for text in pages:
        _text_page(writer, text)
    for title, page, children in outline:
        parent = writer.add_outline_item(title=title, page_number=page - 1)
        for child_title, child_page in children:
            writer.add_outline_item(title=child_title, page_number=child_page - 1, parent=parent)
    if password is not None:
        writer.encrypt(password, algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
