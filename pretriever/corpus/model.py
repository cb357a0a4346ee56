"""The in-memory shapes that pass from an input format to the segmenter.

A format reader turns its input into :class:`ParsedPage` objects (one per page or
document); :mod:`pretriever.corpus.segment` turns each into table rows. Keeping
this contract small is what lets a new input format plug in without touching the
rest of the pipeline.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pretriever.errors import PretrieverError


@dataclass(slots=True)
class Link:
    """A hyperlink in the clean text: ``text[start:end]`` is the anchor."""

    start: int
    end: int
    target: str  # normalised title, section anchor dropped, redirects not yet followed


@dataclass(slots=True)
class Citation:
    """A reference (``<ref>``) attached to the clean text at ``position``.

    The statement it supports is the sentence that ends at or contains ``position``.
    """

    position: int
    template: str  # e.g. "cite web", "cite book", "bare url", "sfn", "text"
    url: str | None = None
    title: str | None = None
    archive_url: str | None = None
    name: str | None = None  # the ref's name= attribute, when it has one
    raw: str = ""  # the citation's wikitext, capped in length


@dataclass(slots=True)
class Section:
    """A section starting at ``start`` in the clean text; the lead has index 0 and title ''."""

    start: int
    title: str


@dataclass(slots=True)
class GivenPassage:
    """A passage boundary fixed by the input itself (DPR ``psgs_w100.tsv``)."""

    passage_id: str
    start: int
    end: int


@dataclass(slots=True)
class CleanDocument:
    """Clean text (paragraphs joined by newlines) with everything anchored in it."""

    text: str
    links: list[Link] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    is_disambiguation: bool = False
    # links that were recognised but not kept, by reason (e.g. "namespace", "interlanguage")
    dropped_links: Counter[str] = field(default_factory=Counter)
    given_passages: list[GivenPassage] | None = None
    # (start, end) of each list or indented line: out of passages unless the build keeps lists
    list_lines: list[tuple[int, int]] = field(default_factory=list)
    # what the page says it is about, for kinds of articles (person, place, ...: mine's qac): its infobox
    # templates (lower-cased names, "infobox officeholder") and categories ("1809 births"), in page order
    infoboxes: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ParsedPage:
    """One input page or document after format-specific parsing."""

    doc_id: str
    title: str  # normalised
    namespace: int = 0
    redirect_to: str | None = None  # normalised target title when the page is a redirect
    document: CleanDocument | None = None  # None for redirects and non-article pages


class PageError(Exception):
    """A single page could not be parsed; the build records it and carries on.

    Internal on purpose, hence a plain Exception and not a PretrieverError: every one is caught
    per page in the worker (``formats/base.py``), listed under "errors" in manifest.json and
    counted; it never reaches the command line, which reports the count with exit status 3.
    """

    def __init__(self, where: str, reason: str):
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason


class InputError(PretrieverError):
    """The input as a whole is unreadable past some point (truncated, corrupt, wrong format)."""

    exit_code = 4  # what was parsed is kept: fix the input and run again with --resume
