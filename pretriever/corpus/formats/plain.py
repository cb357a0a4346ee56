"""Plain document collections: BEIR ``corpus.jsonl``, generic JSON lines, DPR ``psgs_w100.tsv``.

Titles of these collections are kept as given, only stripped of surrounding
whitespace: they are document titles, not wiki page names, so MediaWiki's title
rules (:func:`pretriever.corpus.titles.normalise_title`) do not apply.

Every reader streams its input (``.gz`` and ``.bz2`` work, by content) and hands
raw lines to the workers with their file name and 1-based line number, so that a
malformed line becomes a :class:`PageError` saying where it is and what was
expected. Blank lines are skipped; a document with empty text is passed on (the
segmenter drops and counts blank documents).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pretriever.corpus.formats.base import (
    FormatOptions,
    InputFormat,
    input_files,
    open_binary,
    register,
    resolve_input,
)
from pretriever.corpus.model import CleanDocument, GivenPassage, InputError, PageError, ParsedPage, Section

_BOM = b"\xef\xbb\xbf"

# A raw line item: (file name for messages, 1-based line number, the line's bytes).
LineItem = tuple[str, int, bytes]


def _display_name(root: Path, file: Path) -> str:
    """How messages name ``file``: its path inside a folder input, else its file name."""
    return file.relative_to(root).as_posix() if root.is_dir() else file.name


def _first_line(head: bytes) -> bytes:
    """The first non-blank line of ``head`` (possibly cut short), without a UTF-8 BOM."""
    if head.startswith(_BOM):
        head = head[len(_BOM):]
    for line in head.splitlines():
        if line.strip():
            return line.strip()
    return b""


_JSON_KEY = re.compile(r'[{,]\s*"((?:[^"\\]|\\.)*)"\s*:')


def _json_keys(line: bytes) -> set[str] | None:
    """Top-level keys of a JSON-object line; a line cut short is read by its visible keys."""
    text = line.decode("utf-8", "replace").strip()
    if not text.startswith("{"):
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return set(_JSON_KEY.findall(text))
    return set(obj) if isinstance(obj, dict) else None


def _looks_like_wikiextractor(keys: set[str], line: bytes) -> bool:
    """WikiExtractor ``--json`` lines: ``revid``/``url`` keys, or its escaped ``<a href=...>`` anchors."""
    if "_id" in keys or "id" not in keys:
        return False
    escaped_anchor = b'&lt;a href=\\"' in line
    raw_anchor = b'<a href=\\"' in line
    return (
        "revid" in keys
        or escaped_anchor
        or ("url" in keys and (b"curid=" in line or raw_anchor))
    )


def _where(item: LineItem) -> str:
    return f"{item[0]} line {item[1]}"


def decode_json_line(item: LineItem, expected: str) -> dict[str, Any]:
    """Decode one JSON-object line in a worker; :class:`PageError` names the line on failure."""
    where = _where(item)
    try:
        text = item[2].decode("utf-8")
    except UnicodeDecodeError as err:
        raise PageError(where, f"invalid UTF-8 at byte {err.start + 1} of the line ({err.reason})") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        raise PageError(where, f"invalid JSON ({err}); expected one object with {expected}") from None
    if not isinstance(obj, dict):
        raise PageError(where, f"expected a JSON object with {expected}, found a JSON {type(obj).__name__}")
    return obj


def get_id(obj: dict[str, Any], key: str, where: str, expected: str) -> str:
    """A document id field: a non-empty string or an integer, returned as a string."""
    if key not in obj:
        raise PageError(where, f'missing field "{key}" (expected {expected})')
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise PageError(where, f'field "{key}" must be a string or an integer, found {json.dumps(value)[:60]}')
    value = str(value)
    if not value.strip():
        raise PageError(where, f'field "{key}" is empty (expected {expected})')
    return value


def get_text(obj: dict[str, Any], key: str, where: str, expected: str, required: bool) -> str:
    """A string field; ``null`` reads as ``""``, a missing optional field too."""
    if key not in obj:
        if required:
            raise PageError(where, f'missing field "{key}" (expected {expected})')
        return ""
    value = obj[key]
    if value is None:
        return ""
    if not isinstance(value, str):
        raise PageError(where, f'field "{key}" must be a string, found {type(value).__name__}')
    return value


def identify_json_line(item: Any, id_key: str) -> tuple[str, str]:
    """(doc_id, title) of a raw JSON line, as far as it can be told (for failure records)."""
    try:
        text = item[2].decode("utf-8", "replace")
    except (TypeError, IndexError, AttributeError):
        return "", ""
    try:
        obj = json.loads(text)
        if isinstance(obj, dict):
            title = obj.get("title")
            return str(obj.get(id_key, "")), title if isinstance(title, str) else ""
    except ValueError:
        pass
    found = {}
    for key in (id_key, "title"):
        match = re.search(r'"%s"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)' % re.escape(key), text)
        if match:
            try:
                found[key] = str(json.loads(match.group(1)))
            except ValueError:
                found[key] = match.group(1)
    return found.get(id_key, ""), found.get("title", "")


class LineFormat(InputFormat):
    """A format with one item per non-blank line; a folder input is read as all its files in order."""

    def __init__(self, path: Path, options: FormatOptions | None = None):
        super().__init__(resolve_input(path), options)

    def iter_lines(self) -> Iterator[LineItem]:
        """(file name, line number, line bytes) of every non-blank line, streaming."""
        for file in input_files(self.path):
            name = _display_name(self.path, file)
            line_no = 0
            try:
                with open_binary(file) as stream:
                    for line_no, raw in enumerate(stream, 1):
                        if line_no == 1 and raw.startswith(_BOM):
                            raw = raw[len(_BOM):]
                        if raw.strip():
                            yield name, line_no, raw
            except (OSError, EOFError) as err:
                raise InputError(f"{file}: unreadable after line {line_no:,} ({err})") from err

    def iter_items(self) -> Iterator[LineItem]:
        return self.iter_lines()


def _plain_page(doc_id: str, title: str, text: str) -> ParsedPage:
    return ParsedPage(
        doc_id=doc_id,
        title=title.strip(),
        document=CleanDocument(text=text, sections=[Section(0, "")]),
    )


class JsonDocumentFormat(LineFormat):
    """JSON lines of documents with an id key, an optional title and a text."""

    ID_KEY = "id"
    EXPECTED = '"id", "title" (optional), "text"'

    @classmethod
    def parse_item(cls, item: LineItem, context: Any) -> ParsedPage:
        obj = decode_json_line(item, cls.EXPECTED)
        where = _where(item)
        doc_id = get_id(obj, cls.ID_KEY, where, cls.EXPECTED)
        title = get_text(obj, "title", where, cls.EXPECTED, required=False)
        text = get_text(obj, "text", where, cls.EXPECTED, required=True)
        return _plain_page(doc_id, title, text)

    @classmethod
    def identify(cls, item: Any) -> tuple[str, str]:
        return identify_json_line(item, cls.ID_KEY)


@register
class BeirFormat(JsonDocumentFormat):
    """BEIR ``corpus.jsonl``: ``{"_id", "title", "text", "metadata"}`` per line.

    The input may be the file (optionally compressed) or the BEIR dataset folder that
    holds it. Documents are kept whole (BEIR judges whole documents); ``title`` may
    be missing or null (read as ""), ``metadata`` is ignored. The title is kept as
    given, stripped; it is not normalised like a wiki title.
    """

    name = "beir"
    description = "BEIR corpus.jsonl (or a BEIR dataset folder): _id, title, text"
    default_words = 0
    ID_KEY = "_id"
    EXPECTED = '"_id", "title", "text"'

    @classmethod
    def sniff(cls, path: Path, head: bytes) -> bool:
        keys = _json_keys(_first_line(head))
        return keys is not None and "_id" in keys


@register
class JsonlFormat(JsonDocumentFormat):
    """Generic JSON lines: ``{"id", "title", "text"}`` per line (``title`` may be missing).

    Other keys are ignored. The title is kept as given, stripped.
    """

    name = "jsonl"
    description = "JSON lines with id, title (optional) and text"
    default_words = 100

    @classmethod
    def sniff(cls, path: Path, head: bytes) -> bool:
        line = _first_line(head)
        keys = _json_keys(line)
        return (
            keys is not None
            and "id" in keys
            and "text" in keys
            and "_id" not in keys
            and not _looks_like_wikiextractor(keys, line)
        )


DPR_HEADER = ["id", "text", "title"]

# A DPR row item: (file name, 1-based line number where the row starts, its fields).
RowItem = tuple[str, int, list[str]]


def _has_bad_bytes(value: str) -> bool:
    """True when ``value`` holds bytes that were not valid UTF-8 (decoded with surrogateescape)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


@register
class DprTsvFormat(InputFormat):
    """DPR's ``psgs_w100.tsv``: a header ``id<TAB>text<TAB>title``, then one passage a row.

    Read with :mod:`csv` (``delimiter="\\t"``, default double-quote quoting) exactly as
    DPR's own reader does, so quoted text (``"Aaron Aaron ( or ; ...)"``, with ``""``
    for a quote) comes out unquoted. Consecutive rows with the same non-empty title form
    one document (a row without a title is a document of its own: a passages-only TSV
    has no way to say which rows belong together): its id is the first passage's id,
    its text the passages joined by ``"\\n"``, and ``given_passages`` keeps each passage's id and span, so the
    segmenter reproduces DPR's passages instead of cutting its own. An item is such a
    group of rows, so chunk boundaries never split a document. The title is kept as
    given, stripped.
    """

    name = "dpr-tsv"
    description = ("DPR passages TSV (psgs_w100.tsv): id, text, title; rows of one title form a document, "
                   "an untitled row is one")
    default_words = 0

    def __init__(self, path: Path, options: FormatOptions | None = None):
        super().__init__(resolve_input(path), options)

    @classmethod
    def sniff(cls, path: Path, head: bytes) -> bool:
        if head.startswith(_BOM):
            head = head[len(_BOM):]
        first = head.split(b"\n", 1)[0].rstrip(b"\r")
        return first == b"\t".join(field.encode() for field in DPR_HEADER)

    def _rows(self, file: Path) -> Iterator[tuple[int, list[str]]]:
        """(line number where the row starts, fields) of every non-blank row of ``file``."""

        def lines(stream: Any) -> Iterator[str]:
            for n, raw in enumerate(stream):
                if n == 0 and raw.startswith(_BOM):
                    raw = raw[len(_BOM):]
                # bytes that are not UTF-8 survive as surrogates; the worker reports them
                yield raw.decode("utf-8", "surrogateescape")

        consumed = 0
        try:
            with open_binary(file) as stream:
                reader = csv.reader(lines(stream), delimiter="\t")
                for row in reader:
                    start, consumed = consumed + 1, reader.line_num
                    if not row or (len(row) == 1 and not row[0].strip()):
                        continue
                    yield start, row
        except csv.Error as err:
            raise InputError(f"{file} line {consumed + 1:,}: unreadable TSV ({err})") from err
        except (OSError, EOFError) as err:
            raise InputError(f"{file}: unreadable after line {consumed:,} ({err})") from err

    def iter_items(self) -> Iterator[list[RowItem]]:
        """Groups of consecutive rows with the same non-empty title (a malformed or untitled row is a group of
        its own)."""
        for file in input_files(self.path):
            name = _display_name(self.path, file)
            group: list[RowItem] = []
            first = True
            for line_no, row in self._rows(file):
                if first:
                    first = False
                    if row == DPR_HEADER:
                        continue
                if group and (len(row) != 3 or len(group[-1][2]) != 3 or row[2] != group[-1][2][2]
                              or not row[2].strip()):
                    yield group
                    group = []
                group.append((name, line_no, row))
            if group:
                yield group

    @staticmethod
    def parse_item(item: list[RowItem], context: Any) -> ParsedPage:
        pieces: list[str] = []
        passages: list[GivenPassage] = []
        offset = 0
        for name, line_no, row in item:
            where = f"{name} line {line_no}"
            if len(row) != 3:
                raise PageError(where, f"expected 3 tab-separated fields (id, text, title), found {len(row)}")
            if any(_has_bad_bytes(value) for value in row):
                raise PageError(where, "invalid UTF-8 in the row")
            passage_id, text, _title = row
            if not passage_id.strip():
                raise PageError(where, 'empty "id" (expected id, text, title)')
            if pieces:
                offset += 1  # the "\n" joining passages
            passages.append(GivenPassage(passage_id=passage_id, start=offset, end=offset + len(text)))
            pieces.append(text)
            offset += len(text)
        first_row = item[0][2]
        document = CleanDocument(text="\n".join(pieces), sections=[Section(0, "")], given_passages=passages)
        return ParsedPage(doc_id=first_row[0], title=first_row[2].strip(), document=document)

    @staticmethod
    def identify(item: Any) -> tuple[str, str]:
        try:
            row = item[0][2]
        except (TypeError, IndexError):
            return "", ""
        return (row[0] if row else ""), (row[2] if len(row) > 2 else "")
