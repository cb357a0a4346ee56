"""MediaWiki XML dumps: ``.xml``, ``.xml.bz2``, and the multistream ``.xml.bz2`` with its index.

The main process only cuts the byte stream into ``<page>`` elements (a scan for the page
tags in blocks, wherever they fall on lines; no XML parsing); workers decode, parse and clean
each page. With a multistream
index, chunks are byte ranges of independent bz2 streams, so workers also do the
decompression and a cluster can hand each range to a different machine.
"""

from __future__ import annotations

import bz2
import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pretriever.corpus.formats.base import Chunk, InputFormat, ParseResult, register
from pretriever.corpus.model import InputError, PageError, ParsedPage
from pretriever.corpus.titles import Namespaces, normalise_title

_TITLE = re.compile(rb"<title>(.*?)</title>", re.S)
_ID = re.compile(rb"<id>(\d+)</id>")
_PAGE = re.compile(rb"<page>.*?</page>", re.S)
_REDIRECT_TEXT = re.compile(r"^\s*#\S+\s*:?\s*\[\[([^\]|]+)", re.I)
_SITEINFO = re.compile(rb"<siteinfo>.*?</siteinfo>", re.S)
_OPEN = re.compile(rb"<page[\s>]")
_CLOSE = re.compile(rb"</page\s*>(?:[ \t\r]*\n)?")  # with the rest of its line when that is blank
_BLANK = re.compile(rb"[ \t\r]*")
_BLOCK = 1 << 20  # bytes read at a time
_TAIL = 64  # a tag cut by the end of a block is found again from this many bytes back


@dataclass
class RawPage:
    """The bytes of one ``<page>`` element and where it starts in the decompressed stream."""

    data: bytes
    offset: int


def namespaces_from_siteinfo(siteinfo: bytes | None) -> Namespaces:
    """Namespace names of this wiki (local-language names included) from ``<siteinfo>``."""
    namespaces = Namespaces()
    if siteinfo:
        root = ET.fromstring(re.sub(rb'\sxmlns="[^"]*"', b"", siteinfo))
        for ns in root.iter("namespace"):
            key = int(ns.get("key", "0"))
            if key != 0 and ns.text:
                namespaces.add(ns.text, key)
    return namespaces


def parse_page_xml(raw: RawPage, namespaces: Namespaces) -> ParsedPage:
    """Decode and parse one page; errors name the page and its byte offset."""
    # Lazy on purpose (there is no cycle to hide): only the worker processes that parse pages need
    # the cleaner, so the main process (which only cuts the dump into <page> elements), the other
    # formats and every other command never compile its ~40 regular expressions.
    from pretriever.corpus.wikitext import clean_wikitext  # imported in the workers only: see above

    doc_id, title = identify_page(raw.data)
    where = f"page {title!r} (id {doc_id}) at byte {raw.offset:,}"
    try:
        text = raw.data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise PageError(where, f"invalid UTF-8 at byte {raw.offset + err.start:,}: {err.reason}") from err
    try:
        page = ET.fromstring(text)
    except ET.ParseError as err:
        raise PageError(where, f"invalid XML ({err}); expected a well-formed <page> element") from err
    title = normalise_title(page.findtext("title") or "")
    ns = int(page.findtext("ns") or 0)
    doc_id = page.findtext("id") or doc_id
    body = page.findtext("revision/text") or ""
    redirect = page.find("redirect")
    target = redirect.get("title") if redirect is not None else None
    if target is None and (match := _REDIRECT_TEXT.match(body)) and body.lstrip()[:1] == "#":
        target = match.group(1)
    if target is not None:
        return ParsedPage(doc_id, title, ns, redirect_to=normalise_title(target.split("#", 1)[0]))
    if ns != 0:
        return ParsedPage(doc_id, title, ns)
    return ParsedPage(doc_id, title, ns, document=clean_wikitext(body, namespaces))


def identify_page(data: bytes) -> tuple[str, str]:
    """(page id, title) read with a regex, good enough to name a page that fails to parse."""
    title = _TITLE.search(data)
    page_id = _ID.search(data)
    return (page_id.group(1).decode() if page_id else "",
            title.group(1).decode("utf-8", "replace") if title else "")


class _OffsetReader:
    """Block reader over a (possibly bz2) dump that tracks decompressed and raw byte offsets."""

    def __init__(self, path: Path):
        self.path = path
        self.raw = open(path, "rb")
        magic = self.raw.read(3)
        self.raw.seek(0)
        self.stream = bz2.BZ2File(self.raw) if magic == b"BZh" else self.raw
        self.offset = 0

    def _utf8_blocks(self) -> Iterator[bytes]:
        """Blocks as UTF-8 bytes; a UTF-16 dump (it has a byte-order mark) is re-encoded."""
        bom = self.stream.peek(2)[:2] if hasattr(self.stream, "peek") else b""
        if bom in (b"\xff\xfe", b"\xfe\xff"):
            text = io.TextIOWrapper(self.stream, encoding="utf-16", newline="")
            while block := text.read(_BLOCK):
                yield block.encode("utf-8")
        else:
            while block := self.stream.read(_BLOCK):
                yield block

    def blocks(self) -> Iterator[bytes]:
        """The decompressed dump in blocks; ``offset`` counts the bytes before the current block."""
        try:
            for block in self._utf8_blocks():
                yield block
                self.offset += len(block)
        except (EOFError, OSError) as err:
            raise InputError(
                f"{self.path}: the compressed data ends or is corrupt near compressed byte "
                f"{self.raw.tell():,} (decompressed byte {self.offset:,}): {err}"
            ) from err

    def close(self) -> None:
        self.raw.close()


class _PageCutter:
    """Finds the ``<page>`` elements of a byte stream fed in blocks, wherever their tags fall on lines.

    A page's bytes run from ``<page>`` to ``</page>`` and the rest of that line when it is blank
    (what a line reader gave for the usual layout, so chunks cut by size stay the same).
    """

    def __init__(self):
        self.buffer = bytearray()
        self.base = 0  # offset of buffer[0] in the stream
        self.start = -1  # where the open page starts in the buffer; -1: none is open
        self.pos = 0  # where the next tag search starts

    def feed(self, block: bytes, last: bool = False) -> Iterator[RawPage]:
        """The pages that end in what was fed so far (``last``: nothing follows)."""
        buffer = self.buffer
        buffer += block
        while True:
            if self.start < 0:
                found = _OPEN.search(buffer, self.pos)
                if found is None:
                    self.pos = max(self.pos, len(buffer) - _TAIL)
                    break
                self.start, self.pos = found.start(), found.end()
            found = _CLOSE.search(buffer, self.pos)
            if found is None:
                self.pos = max(self.pos, len(buffer) - _TAIL)
                break
            if not last and not found.group().endswith(b"\n") and _BLANK.fullmatch(buffer, found.end()):
                self.pos = found.start()  # the rest of its line comes with the next block
                break
            yield RawPage(bytes(buffer[self.start:found.end()]), self.base + self.start)
            self.start, self.pos = -1, found.end()
        cut = self.start if self.start >= 0 else self.pos
        del buffer[:cut]
        self.base, self.pos = self.base + cut, self.pos - cut
        if self.start >= 0:
            self.start -= cut

    def unfinished(self) -> RawPage | None:
        """The page still open (at the end of the stream: a truncated dump)."""
        return RawPage(bytes(self.buffer[self.start:]), self.base + self.start) if self.start >= 0 else None


@register
class MediaWikiDump(InputFormat):
    """A MediaWiki XML dump read page by page: the one input with everything HLP and C-MORE mine (links
    between articles, sections, citations with their URLs).

    Requirements:
        A pages-articles dump (``.xml``, ``.xml.bz2``, or the multistream ``.xml.bz2``; its
        ``-index.txt.bz2`` beside it, or given, lets workers decompress byte ranges in parallel).

    Example::

        from pretriever.corpus import build as corpus_build
        from pretriever.corpus.config import CorpusConfig

        result = corpus_build.run(CorpusConfig(input="enwiki.xml.bz2", out="enwiki-store/", workers=1))
        print(result.manifest.format)  # mediawiki

    From the command line: ``pretriever corpus build enwiki.xml.bz2 --out enwiki/``.
    """

    name = "mediawiki"
    description = "MediaWiki XML dump (.xml, .xml.bz2, multistream .xml.bz2 with its index)"
    has_links = True
    default_words = 100

    def __init__(self, path, options=None):
        super().__init__(path, options)
        self._siteinfo: bytes | None = None
        self._raw_position = 0
        self.index = self.options.multistream_index or _guess_index(self.path)

    @classmethod
    def sniff(cls, path: Path, head: bytes) -> bool:
        if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
            head = head.decode("utf-16", "ignore").encode("utf-8")
        return b"<mediawiki" in head[:2048] or head.lstrip().startswith(b"<page>")

    def position(self) -> int:
        """Bytes of the input file consumed so far (for progress)."""
        return self._raw_position

    def context(self) -> Namespaces | MultistreamContext:
        if self._siteinfo is None:
            self._siteinfo = self._read_siteinfo()
        namespaces = namespaces_from_siteinfo(self._siteinfo)
        return MultistreamContext(self.path.absolute(), namespaces) if self.index else namespaces

    def _read_siteinfo(self) -> bytes:
        reader = _OffsetReader(self.path)
        try:
            head = bytearray()
            for block in reader.blocks():
                head += block
                if b"</siteinfo>" in head or _OPEN.search(head) or len(head) > 16 * _BLOCK:
                    break
            match = _SITEINFO.search(head)
            return match.group() if match else b""
        finally:
            reader.close()

    def iter_items(self) -> Iterator[RawPage]:
        reader = _OffsetReader(self.path)
        cutter = _PageCutter()
        try:
            for block in reader.blocks():
                for page in cutter.feed(block):
                    yield page
                    self._raw_position = reader.raw.tell()
            yield from cutter.feed(b"", last=True)
            if (page := cutter.unfinished()) is not None:
                doc_id, title = identify_page(page.data)
                raise InputError(f"{self.path}: the input ends inside page {title!r} (id {doc_id}) "
                                 f"that starts at byte {page.offset:,}: truncated dump?")
        finally:
            reader.close()

    @staticmethod
    def item_bytes(item: RawPage) -> int:
        return len(item.data)

    def iter_chunks(self, chunk_size: int, first_chunk: int = 0, chunk_bytes: int = 0) -> Iterator[Chunk]:
        if self.index is None:
            yield from super().iter_chunks(chunk_size, first_chunk, chunk_bytes)
            return
        ranges = multistream_ranges(self.path, self.index)
        per_chunk = max(1, chunk_size // 100)  # Wikipedia writes 100 pages per stream
        for index, first in enumerate(range(0, len(ranges), per_chunk)):
            if index < first_chunk:
                continue
            group = ranges[first:first + per_chunk]
            self._raw_position = group[-1][1]
            yield Chunk(index, [(group[0][0], group[-1][1])], start=f"byte {group[0][0]:,}")

    def splittable(self) -> bool:
        return self.index is not None  # multistream: chunks are byte ranges of whole bz2 streams

    @staticmethod
    def parse_item(item: RawPage, context: Namespaces) -> ParsedPage:
        return parse_page_xml(item, context)

    @staticmethod
    def identify(item: RawPage) -> tuple[str, str]:
        return identify_page(item.data)

    @classmethod
    def parse_chunk(cls, chunk: Chunk, context: Any) -> Iterator[ParseResult]:
        if chunk.items and isinstance(chunk.items[0], tuple):  # a multistream byte range
            chunk = Chunk(chunk.index, list(_pages_in_range(context.path, *chunk.items[0])), chunk.start)
            context = context.namespaces
        yield from super().parse_chunk(chunk, context)


@dataclass
class MultistreamContext:
    """What a worker needs to read a multistream dump's byte ranges: the dump and its namespaces."""
    path: Path
    namespaces: Namespaces


def _guess_index(path: Path) -> Path | None:
    """``...-multistream.xml.bz2`` has its index beside it as ``...-multistream-index.txt.bz2``."""
    name = path.name
    if "multistream" in name and name.endswith(".xml.bz2"):
        candidate = path.with_name(name.replace(".xml.bz2", "-index.txt.bz2"))
        return candidate if candidate.exists() else None
    return None


def multistream_ranges(path: Path, index: Path) -> list[tuple[int, int]]:
    """Byte ranges ``[start, end)`` of the page-bearing bz2 streams, from the index file."""
    offsets: set[int] = set()
    opener = bz2.open if index.read_bytes()[:3] == b"BZh" else open
    with opener(index, "rt", encoding="utf-8") as lines:
        for n, line in enumerate(lines, 1):
            head = line.split(":", 1)[0]
            if not head.isdigit():
                raise InputError(f"{index} line {n}: expected 'offset:page_id:title', got {line[:80]!r}")
            offsets.add(int(head))
    starts = sorted(offsets)
    size = path.stat().st_size
    return [(start, end) for start, end in zip(starts, starts[1:] + [size])]


def _pages_in_range(path: Path, start: int, end: int) -> Iterator[RawPage]:
    with open(path, "rb") as raw:
        raw.seek(start)
        data = raw.read(end - start)
    try:
        text = bz2.decompress(data)
    except (OSError, EOFError, ValueError) as err:
        raise InputError(f"{path}: the bz2 streams at bytes {start:,}-{end:,} are corrupt: {err}") from err
    for match in _PAGE.finditer(text):
        yield RawPage(match.group(), start)
