"""WikiExtractor ``--json --links`` output: one JSON object per line.

Each line is ``{"id", "revid", "url", "title", "text"}``; the input may be one file
or a WikiExtractor output folder (``AA/wiki_00``, ``AA/wiki_01``, ``AB/...``, also
compressed with ``-c``), read file by file in sorted order.

What WikiExtractor 3.1 writes, checked on the enwiki sample in ``shared/data``:

* ``text`` is HTML-escaped (``--html-safe``, the default): links are
  ``&lt;a href="political%20philosophy"&gt;political philosophy&lt;/a&gt;``, the
  href being the URL-quoted link target as written (first letter not upper-cased,
  ``#section`` kept as ``%23``), and ``&amp;``/``&lt;``/``&gt;`` stand for the
  characters. External links come out the same way (``http%3A//...``). With
  ``--html-safe False`` the anchors are raw ``<a href="...">`` and the text is not
  escaped; both are read.
* In ``--json`` mode the text does NOT start with the title (only the ``<doc>``
  output adds a title line); a first line equal to the title is dropped anyway, in
  case another version writes one.
* Section headings are kept as ordinary lines with a ``.`` appended
  (``Etymology and terminology.``), indistinguishable from one-line paragraphs
  (there is no CLI switch for ``## `` heading marks), so they stay in the text and
  ``sections`` is the lead only, ``[Section(0, "")]``. Lists are dropped by
  WikiExtractor.

Clean text is the text with the anchors replaced by their anchor text and entities
unescaped; each link whose target :meth:`Namespaces.classify` calls an article
becomes a :class:`Link` over its anchor text. Other links (namespace, interlanguage,
interwiki such as ``wikt:``, same-page sections, external URLs, empty anchors) are
counted in ``dropped_links`` by kind. Titles are normalised with
:func:`normalise_title`.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from pretriever.corpus.formats.base import register
from pretriever.corpus.formats.plain import (
    LineFormat,
    LineItem,
    _first_line,
    _json_keys,
    _looks_like_wikiextractor,
    _where,
    decode_json_line,
    get_id,
    get_text,
    identify_json_line,
)
from pretriever.corpus.model import CleanDocument, Link, ParsedPage, Section
from pretriever.corpus.titles import Namespaces, normalise_title

_ESCAPED_ANCHOR = re.compile(r'&lt;a href="([^"]*)"&gt;(.*?)&lt;/a&gt;', re.S)
_RAW_ANCHOR = re.compile(r'<a href="([^"]*)">(.*?)</a>', re.S)
_URL = re.compile(r"^(?:[a-z][a-z0-9+.\-]*:)?//", re.I)


def _strip_title_line(text: str, title: str, escaped: bool) -> str:
    """``text`` without a first line that repeats the title (and the blank lines after it)."""
    first, sep, rest = text.partition("\n")
    shown = html.unescape(first) if escaped else first
    if sep and title and shown.strip() == title.strip():
        return rest.lstrip("\n")
    return text


def clean_wikiextractor_text(raw: str, title: str, namespaces: Namespaces) -> CleanDocument:
    """Clean text, links and dropped-link counts from one WikiExtractor ``text`` field."""
    escaped = "&lt;a href=" in raw or "<a href=" not in raw
    unescape = html.unescape if escaped else (lambda s: s)
    anchor = _ESCAPED_ANCHOR if escaped else _RAW_ANCHOR
    raw = _strip_title_line(raw, title, escaped)

    pieces: list[str] = []
    links: list[Link] = []
    dropped: Counter[str] = Counter()
    length = cur = 0
    for match in anchor.finditer(raw):
        before = unescape(raw[cur:match.start()])
        pieces.append(before)
        length += len(before)
        label = unescape(match.group(2))
        pieces.append(label)
        start, end = length, length + len(label)
        length = end
        cur = match.end()

        # the span covers the anchor text without surrounding whitespace
        start += len(label) - len(label.lstrip())
        end -= len(label) - len(label.rstrip())
        href = unquote(html.unescape(match.group(1)))
        if _URL.match(href):
            dropped["external"] += 1
            continue
        kind, target = namespaces.classify(href)
        if kind != "article":
            dropped[kind] += 1
        elif start >= end:
            dropped["empty anchor"] += 1
        else:
            links.append(Link(start, end, target))
    pieces.append(unescape(raw[cur:]))
    return CleanDocument(text="".join(pieces), links=links, sections=[Section(0, "")], dropped_links=dropped)


def _namespace_of(title: str, namespaces: Namespaces) -> int:
    prefix, colon, _rest = title.partition(":")
    if not colon:
        return 0
    return namespaces.by_name.get(re.sub(r"[\s_]+", " ", prefix).strip().lower(), 0)


@register
class WikiExtractorFormat(LineFormat):
    """WikiExtractor ``--json --links`` output (a file or an output folder); see the module docstring."""

    name = "wikiextractor"
    description = "WikiExtractor --json --links output (file or AA/wiki_00 folder): id, revid, url, title, text"
    default_words = 100
    has_links = True
    EXPECTED = '"id", "title", "text" (and "revid", "url")'

    @classmethod
    def sniff(cls, path: Path, head: bytes) -> bool:
        line = _first_line(head)
        keys = _json_keys(line)
        return keys is not None and _looks_like_wikiextractor(keys, line)

    def context(self) -> Namespaces:
        return Namespaces()

    @staticmethod
    def parse_item(item: LineItem, context: Any) -> ParsedPage:
        namespaces = context if isinstance(context, Namespaces) else Namespaces()
        expected = WikiExtractorFormat.EXPECTED
        obj = decode_json_line(item, expected)
        where = _where(item)
        doc_id = get_id(obj, "id", where, expected)
        raw_title = get_text(obj, "title", where, expected, required=True)
        text = get_text(obj, "text", where, expected, required=True)
        title = normalise_title(raw_title)
        namespace = _namespace_of(title, namespaces)
        document = clean_wikiextractor_text(text, raw_title, namespaces) if namespace == 0 else None
        return ParsedPage(doc_id=doc_id, title=title, namespace=namespace, document=document)

    @staticmethod
    def identify(item: Any) -> tuple[str, str]:
        return identify_json_line(item, "id")
