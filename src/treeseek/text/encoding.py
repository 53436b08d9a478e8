"""Text that is not UTF-8: stored (and so searched and shown) as UTF-8.

Two cases, everything else is left alone (UTF-8, with or without its own mark, is never
touched, so its bytes and hashes are the same as ever):

* UTF-16 or UTF-32 with a byte order mark (Windows editors write it). Such a file is full of
  NUL bytes, so the binary sniff would refuse it; :func:`wide_text_as_utf8` gives its text as
  UTF-8 instead. One that does not decode, or decodes to text with NUL characters, stays binary.
* Windows-1252 (a superset of Latin-1's printable characters; older C, Java, docs), only when
  the bytes are not valid UTF-8, more of their non-ASCII bytes are invalid UTF-8 than valid
  multi-byte characters (a UTF-8 file with one stray byte keeps its characters), most
  non-ASCII bytes stand alone or in pairs among ASCII ones (Cyrillic or CJK legacy encodings
  have whole words of them, and are left as they were), every byte is defined in
  Windows-1252, and the text has no NUL and few control characters (it looks like text).
  Without this "café" was stored as "caf\\xe9" and shown as "caf�": unsearchable.
"""

from __future__ import annotations

import codecs
import re

#: marks and their encodings, UTF-32 first (its little-endian mark begins with UTF-16's)
_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

#: control characters that are not in text (tab, line feed, vertical tab, form feed, carriage
#: return and escape are)
_CONTROLS = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")
_VALID_NON_ASCII = re.compile("[^\x00-\x7f\ufffd]")
#: runs of three or more non-ASCII bytes: whole words of Cyrillic (cp1251, KOI8-R) or CJK (GBK,
#: Big5, EUC-KR) text, which decode as Windows-1252 too, to nonsense; a Latin language's
#: accented letters stand among ASCII ones
_NON_ASCII_RUNS = re.compile(b"[\x80-\xff]{3,}")
_ASCII = bytes(range(128))


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


def cp1252_text_as_utf8(data: bytes) -> bytes | None:
    """``data``'s text as UTF-8 when it is Windows-1252 (or Latin-1) text, not UTF-8 (see the
    module's rules); None otherwise, valid UTF-8 always."""
    if data.isascii():
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        return None
    lenient = data.decode("utf-8", "replace")
    invalid = lenient.count("\ufffd") - data.count(b"\xef\xbf\xbd")
    if len(_VALID_NON_ASCII.findall(lenient)) >= invalid:
        return None  # mostly UTF-8, with a few bad bytes: its characters stay
    non_ascii = len(data.translate(None, _ASCII))
    if 2 * sum(len(run) for run in _NON_ASCII_RUNS.findall(data)) > non_ascii:
        return None  # mostly runs of non-ASCII bytes: another script's legacy encoding
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return None  # a byte Windows-1252 leaves undefined: not such text
    if "\x00" in text or len(_CONTROLS.findall(text)) * 100 > len(text):
        return None
    return text.encode("utf-8")


def text_as_utf8(data: bytes) -> bytes | None:
    """``data`` as UTF-8 when it is UTF-16/32 text with its mark or Windows-1252 text; None
    when it is to be kept as it is (UTF-8, binary, or not recognisably text)."""
    return wide_text_as_utf8(data) or cp1252_text_as_utf8(data)


__all__ = ["cp1252_text_as_utf8", "text_as_utf8", "wide_text_as_utf8"]
