"""From a downloaded body to (title, main text): charset detection, then trafilatura (or pypdf).

The charset is taken, in the order browsers use, from a byte-order mark, the Content-Type header,
a ``<meta charset>`` / ``http-equiv`` tag near the top, and otherwise UTF-8 with a windows-1252
fallback; labels are mapped as the WHATWG Encoding standard does (latin1 and ascii are
windows-1252).
"""

from __future__ import annotations

import codecs
import io
import re

import trafilatura

from pretriever.references.config import PDF_TYPE
from pretriever.references.errors import FetchFailure

META_CHARSET = re.compile(rb"<meta[^>]*?charset\s*=\s*[\"']?\s*([a-zA-Z0-9_.:-]+)", re.IGNORECASE)
META_WINDOW = 4096
BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
WHATWG_ALIASES = {"iso-8859-1": "cp1252", "latin1": "cp1252", "latin-1": "cp1252", "us-ascii": "cp1252",
                  "ascii": "cp1252", "iso8859-1": "cp1252", "x-sjis": "shift_jis"}


def _codec(label: str | None) -> str | None:
    if not label:
        return None
    label = WHATWG_ALIASES.get(label.strip().lower(), label.strip().lower())
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def detect_charset(body: bytes, header_charset: str | None) -> str | None:
    """The declared charset of a page (BOM, then header, then meta tag), or None when none is usable."""
    for bom, name in BOMS:
        if body.startswith(bom):
            return name
    declared = _codec(header_charset)
    if declared:
        return declared
    match = META_CHARSET.search(body[:META_WINDOW])
    return _codec(match.group(1).decode("ascii")) if match else None


def decode_body(body: bytes, header_charset: str | None) -> str:
    """The body as text in its declared charset, else UTF-8, else windows-1252 (never fails)."""
    charset = detect_charset(body, header_charset)
    if charset:
        return body.decode(charset, errors="replace").lstrip("\ufeff")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body.decode("cp1252", errors="replace")


def pdf_text(body: bytes, url: str) -> str:
    """The text of a PDF body (the optional pypdf extra); a missing pypdf or a broken file is a ``decode`` failure
    naming ``url``.
    """
    try:
        import pypdf  # optional extra: pip install 'pretriever[pdf]'
    except ImportError as err:
        raise FetchFailure("decode", f"{url}: PDF text needs pypdf (pip install 'pretriever[pdf]')") from err
    try:
        reader = pypdf.PdfReader(io.BytesIO(body))
        return "\n".join(page.extract_text() or "" for page in reader.pages)
    except Exception as err:  # pypdf raises many types on broken files
        raise FetchFailure("decode", f"{url}: unreadable PDF ({type(err).__name__}: {err})") from err


def extract_text(body: bytes, content_type: str | None, charset: str | None,
                 url: str) -> tuple[str | None, str | None]:
    """(title, main text) of a page; text is None when nothing was extracted.

    HTML goes through trafilatura (main content without navigation, comments and boilerplate),
    plain text is kept whole, PDF goes through pypdf.
    """
    if content_type == PDF_TYPE:
        text = pdf_text(body, url).strip()
        return None, text or None
    decoded = decode_body(body, charset)
    if content_type == "text/plain":
        return None, decoded.strip() or None
    doc = trafilatura.bare_extraction(decoded, url=url, with_metadata=True, include_comments=False,
                                      include_tables=True)
    if doc is None:
        return None, None
    return doc.title or None, (doc.text or "").strip() or None
