"""Text saved as UTF-16 or UTF-32 with a byte order mark (Windows editors write it).

Such a file is full of NUL bytes, so the binary sniff would refuse it; :func:`wide_text_as_utf8`
gives its text as UTF-8 instead, which is what the index stores and every reader decodes. A
file without one of these marks is left alone (UTF-8, with or without its own mark, is never
touched), and one that does not decode, or decodes to text with NUL characters, stays binary.
"""

from __future__ import annotations

import codecs

#: marks and their encodings, UTF-32 first (its little-endian mark begins with UTF-16's)
_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def wide_text_as_utf8(data: bytes) -> bytes | None:
    """``data``'s text as UTF-8 (without the mark) when it begins with a UTF-16 or UTF-32 byte
    order mark and decodes to text without NUL characters; None otherwise."""
    for mark, encoding in _MARKS:
        if data.startswith(mark):
            try:
                text = data[len(mark) :].decode(encoding)
            except UnicodeDecodeError:
                return None
            return None if "\x00" in text else text.encode("utf-8")
    return None


__all__ = ["wide_text_as_utf8"]
