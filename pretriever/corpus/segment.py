"""Turn parsed pages into rows of the store's tables.

This is format-independent: every input format ends here, so passages, sentences,
links and citations are cut the same way whatever the source. All offsets are
character offsets into the document's clean text; a passage is a slice of it
(``text[start:start+len(passage)]``), so anchors can be checked against passages.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass

import pyarrow as pa

from pretriever.corpus.formats.base import PageFailure
from pretriever.corpus.hygiene import has_hole, may_have_hole
from pretriever.corpus.model import CleanDocument, Link, ParsedPage, Section
from pretriever.corpus.schema import CHUNK_TABLES
from pretriever.corpus.sentences import split_sentences

_LINE = re.compile(r"[^\n]+")


@dataclass(frozen=True)
class SegmentOptions:
    """How documents become passages (see ``CorpusConfig`` for the user-facing names)."""

    words: int = 100  # passage length in words; 0 keeps each document as one passage
    min_title_chars: int = 3  # HLP drops documents whose title is shorter than this
    drop_blank: bool = True
    keep_lists: bool = False  # keep list and indented lines in the text (their sentences are flagged)


class ChunkBuffers:
    """Column buffers for one chunk's rows, turned into Arrow tables at the end."""

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple]] = {name: [] for name in CHUNK_TABLES}
        self.status: Counter[str] = Counter()
        self.dropped_links: Counter[str] = Counter()
        self.failures: list[dict[str, str]] = []

    def _append(self, table: str, *values) -> None:
        self.rows[table].append(values)

    def to_arrow(self) -> dict[str, pa.Table]:
        tables = {}
        for name, schema in CHUNK_TABLES.items():
            columns = list(zip(*self.rows[name])) or [()] * len(schema)
            tables[name] = pa.Table.from_arrays(
                [pa.array(col, type=f.type) for col, f in zip(columns, schema, strict=True)], schema=schema)
        return tables

    def add_failure(self, failure: PageFailure) -> None:
        self.status["error"] += 1
        self.failures.append({"doc_id": failure.doc_id, "title": failure.title,
                              "where": failure.where, "reason": failure.reason})
        self._append("pages", failure.doc_id, failure.title, None, "error", None, False,
                     0, 0, 0, 0, 0, f"{failure.where}: {failure.reason}")

    def add_page(self, page: ParsedPage, options: SegmentOptions) -> None:
        doc = page.document
        if doc is not None and doc.list_lines and not options.keep_lists:
            doc = page.document = without_lines(doc)
        status, reason = _page_status(page, options)
        self.status[status] += 1
        if doc is not None:
            self.dropped_links.update(doc.dropped_links)
        counts = (0, 0, 0, 0, 0)
        if status == "kept":
            counts = self._add_document(page.doc_id, doc, options)
        self._append("pages", page.doc_id, page.title, page.namespace, status, page.redirect_to,
                     bool(doc and doc.is_disambiguation), *counts, reason)

    def _add_document(self, doc_id: str, doc: CleanDocument, options: SegmentOptions) -> tuple[int, ...]:
        text = doc.text
        n_words = len(text.split())
        passage_starts, passage_ids = self._add_passages(doc_id, doc, n_words, options)
        if not passage_ids:  # a blank document kept with drop_blank=False
            return 0, 0, 0, 0, 0
        section_starts = [s.start for s in doc.sections] or [0]
        for idx, section in enumerate(doc.sections):
            self._append("sections", doc_id, idx, section.start, section.title)
        tags = [("infobox", name) for name in doc.infoboxes] + [("category", name) for name in doc.categories]
        for idx, (source, name) in enumerate(tags):
            self._append("page_tags", doc_id, idx, source, name)

        sentence_starts: list[int] = []
        sentence_texts: list[str] = []
        list_starts = {start for start, _end in doc.list_lines}
        rows = self.rows["sentences"]
        for line in _LINE.finditer(text):
            offset = line.start()
            paragraph = line.group()
            is_list_item = offset in list_starts
            check = may_have_hole(paragraph)
            for s, e in split_sentences(paragraph):
                start = offset + s
                sentence = paragraph[s:e]
                rows.append((doc_id, len(sentence_starts), passage_ids[_locate(passage_starts, start)],
                             _locate(section_starts, start), start, offset + e, sentence,
                             has_hole(sentence, scan=check), is_list_item))
                sentence_starts.append(start)
                sentence_texts.append(sentence)

        for idx, link in enumerate(doc.links):
            p = _locate(passage_starts, link.start)
            offset = passage_starts[p]
            self._append("links_raw", doc_id, idx, passage_ids[p], _locate(sentence_starts, link.start),
                         link.start, link.end, link.start - offset, link.end - offset,
                         text[link.start:link.end], link.target)

        for idx, ref in enumerate(doc.citations):
            # the statement is the sentence that ends at (or holds) the ref's position
            at = max(ref.position - 1, 0)
            s = _locate(sentence_starts, at)
            self._append("citations", doc_id, idx, passage_ids[_locate(passage_starts, at)], s,
                         ref.position, sentence_texts[s] if sentence_texts else "", ref.template,
                         ref.url, ref.title, ref.archive_url, ref.name, ref.raw)
        return len(passage_ids), len(sentence_starts), len(doc.links), len(doc.citations), n_words

    def _add_passages(self, doc_id: str, doc: CleanDocument, n_words: int,
                      options: SegmentOptions) -> tuple[list[int], list[str]]:
        text = doc.text
        section_starts = [s.start for s in doc.sections] or [0]
        spans: list[tuple[str, int, int, int]] = []  # passage_id, start, end, n_words
        if doc.given_passages is not None:
            for given in doc.given_passages:
                n = len(text[given.start:given.end].split())
                spans.append((given.passage_id, given.start, given.end, n))
        elif options.words <= 0:
            spans.append((doc_id, 0, len(text), n_words))
        else:
            # one regex match per passage: up to `words` whitespace-separated words
            chunks = re.finditer(r"\S+(?:\s+\S+){0,%d}" % (options.words - 1), text)
            for position, match in enumerate(chunks):
                spans.append((f"{doc_id}-{position}", match.start(), match.end(), options.words))
            if spans:  # only the last passage can be short
                last = spans[-1]
                spans[-1] = (*last[:3], n_words - options.words * (len(spans) - 1))
        for position, (pid, start, end, n) in enumerate(spans):
            self._append("passages", pid, doc_id, position, _locate(section_starts, start),
                         start, n, text[start:end])
        return [s[1] for s in spans], [s[0] for s in spans]


def without_lines(doc: CleanDocument) -> CleanDocument:
    """``doc`` without its list lines (``doc.list_lines``), as WikiExtractor and DPR leave them out.

    Each line goes with its line break; links and citations inside a removed line are
    dropped (links counted as ``dropped_links["list"]``), the others move with the text,
    and a section that started on a removed line starts where the text goes on.
    """
    text, n = doc.text, len(doc.text)
    cuts: list[tuple[int, int]] = []  # removed [start, end), merged, in order
    for a, b in doc.list_lines:
        a, b = (a, b + 1) if b < n else (max(a - 1, 0), b)
        if cuts and a <= cuts[-1][1]:
            cuts[-1] = (cuts[-1][0], max(b, cuts[-1][1]))
        else:
            cuts.append((a, b))
    starts = [a for a, _ in cuts]
    removed = [0]  # removed[i]: characters removed before cut i
    for a, b in cuts:
        removed.append(removed[-1] + b - a)

    def shift(p: int) -> tuple[int, bool]:
        """(new offset of ``p``, whether ``p`` was removed: then the offset is where the text goes on)."""
        i = bisect_right(starts, p) - 1
        if i >= 0 and p < cuts[i][1]:
            return cuts[i][0] - removed[i], True
        return p - removed[i + 1], False

    links, dropped = [], doc.dropped_links.copy()
    for link in doc.links:
        (start, gone), (last, gone_too) = shift(link.start), shift(link.end - 1)
        if gone or gone_too:
            dropped["list"] += 1
        else:
            links.append(Link(start, last + 1, link.target))
    citations = []
    for citation in doc.citations:  # a citation belongs to the character before it, or starts its line
        p = citation.position
        owner = p - 1 if p and text[p - 1] != "\n" else p
        new, gone = shift(owner)
        if not gone:
            citation.position = new + (p - owner)
            citations.append(citation)
    sections = [Section(shift(section.start)[0], section.title) for section in doc.sections]
    kept = "".join(text[b:a] for (_, b), (a, _) in zip([(0, 0), *cuts], [*cuts, (n, n)]))
    return CleanDocument(kept, links, citations, sections, doc.is_disambiguation, dropped, doc.given_passages,
                         infoboxes=doc.infoboxes, categories=doc.categories)


def _locate(starts: list[int], offset: int) -> int:
    """Index of the span (given by sorted start offsets) that holds ``offset``."""
    return max(bisect_right(starts, offset) - 1, 0)


def _page_status(page: ParsedPage, options: SegmentOptions) -> tuple[str, str | None]:
    """Why a page is or is not a document: (status, reason)."""
    if page.redirect_to is not None:
        return "redirect", None
    if page.namespace != 0 or page.document is None:
        return "non_article", f"namespace {page.namespace}"
    if len(page.title) < options.min_title_chars:
        return "dropped_short_title", f"title shorter than {options.min_title_chars} characters"
    if options.drop_blank and not page.document.text.strip():
        return "dropped_blank", "no text after cleaning"
    return "kept", None
