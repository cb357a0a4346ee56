"""Pseudo-queries made from the corpus alone, each with the passage text its positive is scored on.

A generator turns sampled passages into (query, positive) pairs that do not hand BM25 the query's words for
free: the positive never contains the text the query was cut from.

* ``masked-ict`` (inverse cloze, Lee et al. 2019, with the sentence always removed): a sentence of passage p is
  the query; p *without that sentence* is the positive.
* ``titles``: the document title is the query; the passage is scored without its title.
* ``linked`` (HLP, Zhou et al. 2022): dual-link and co-mention pairs of a pairs folder (`pretriever mine
  --method dl,cm`); the query is a sentence of one document, the positive another document.

Each pseudo-query's id is unique; a masked passage is re-encoded and re-indexed (see
:mod:`pretriever.tune.overlay`) from the ``masked`` texts a generator returns. Constants (shortest query, number
of sentences) were chosen on SciFact's *training* claims; see bench/README.md.

Example::

    from pretriever.data import PassageLookup
    from pretriever.tune.generators import GENERATORS
    pseudo = GENERATORS["masked-ict"]().make(PassageLookup("scifact/"), n=1000, seed=0)
    pseudo.queries["ict:4983"], pseudo.masked["4983"].body   # a sentence, and its passage without it
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from pretriever.corpus.sentences import split_sentences
from pretriever.data import PassageLookup
from pretriever.data.qa import word_tokens
from pretriever.errors import PretrieverError
from pretriever.metrics import overlap_ratio

MIN_QUERY_WORDS = 5  # shorter sentences ("Methods.", "Results:") carry no topic
MIN_TITLE_WORDS = 3  # a one- or two-word title names a page more than it asks for one
SAMPLE_FACTOR = 3  # passages drawn per wanted query: some have one sentence, no title, ...


class TuneError(PretrieverError):
    """Pseudo-queries cannot be made or scored as asked (no sentences, no titles, no pairs folder)."""


@dataclass
class Masked:
    """A passage as its pseudo-query's positive is scored: ``title`` (None: left out) and the ``body`` left."""

    title: str | None
    body: str


@dataclass
class PseudoQueries:
    """One generator's queries: ``queries`` {qid: text}, ``qrels`` {qid: {doc_id: 1}}, the passages to score
    masked ({passage_id: Masked}) and the share of each query's words found in its positive (``overlap``)."""

    generator: str
    queries: dict[str, str] = field(default_factory=dict)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    masked: dict[str, Masked] = field(default_factory=dict)
    overlap: dict[str, float] = field(default_factory=dict)
    skipped: int = 0  # sampled passages that gave no query

    def add(self, qid: str, query: str, doc_id: str, positive_text: str) -> None:
        self.queries[qid] = query
        self.qrels[qid] = {doc_id: 1}
        ratio = overlap_ratio(word_tokens(query), set(word_tokens(positive_text)))
        if ratio is not None:
            self.overlap[qid] = ratio

    @property
    def mean_overlap(self) -> float | None:
        return sum(self.overlap.values()) / len(self.overlap) if self.overlap else None


class Generator:
    """A registered way to make pseudo-queries: ``make(lookup, n, seed)``."""

    name: str = ""
    summary: str = ""

    def make(self, lookup: PassageLookup, n: int, seed: int) -> PseudoQueries:
        raise NotImplementedError


GENERATORS: dict[str, type[Generator]] = {}


def register(cls: type[Generator]) -> type[Generator]:
    if cls.name in GENERATORS:
        raise ValueError(f"generator {cls.name!r} registered twice")
    GENERATORS[cls.name] = cls
    return cls


def _sampled(lookup: PassageLookup, n: int, seed: int) -> list:
    """``n * SAMPLE_FACTOR`` passages (id, title, text, document) drawn by a hash of the seed."""
    ids = [pid for pid, _ in lookup.sample(n * SAMPLE_FACTOR, seed, prepend_title=False)]
    return list(lookup.passages(ids).values())


@register
class MaskedICT(Generator):
    """A sentence of a passage is the query; the passage without that sentence is the positive.

    Requirements: passages of at least two sentences, one of them with ``MIN_QUERY_WORDS`` words. The sentence
    is drawn at random (seeded per passage); the title stays with the positive when the index prepends it.
    Both the dense vector and the BM25 entry of the passage are computed on the masked text
    (:mod:`pretriever.tune.overlay`), so the query's words are not copied from its positive.
    """

    name = "masked-ict"
    summary = "a sentence is the query; its passage without it is the positive"

    def make(self, lookup: PassageLookup, n: int, seed: int) -> PseudoQueries:
        out = PseudoQueries(self.name)
        for passage in _sampled(lookup, n, seed):
            if len(out.queries) >= n:
                break
            text = passage.text or ""
            spans = [(a, b) for a, b in split_sentences(text) if len(text[a:b].split()) >= MIN_QUERY_WORDS]
            if len(split_sentences(text)) < 2 or not spans:
                out.skipped += 1
                continue
            a, b = random.Random(f"{seed}:{passage.passage_id}").choice(spans)
            body = (text[:a].rstrip() + " " + text[b:].lstrip()).strip()
            out.masked[passage.passage_id] = Masked(passage.title, body)
            out.add(f"ict:{passage.passage_id}", text[a:b].strip(), passage.doc_id, body)
        return out


@register
class Titles(Generator):
    """The document's title is the query; the passage, scored without its title, is the positive.

    Requirements: titles of at least ``MIN_TITLE_WORDS`` words, each used once (a title shared by two documents
    has no single positive).
    """

    name = "titles"
    summary = "the title is the query; the passage without its title is the positive"

    def make(self, lookup: PassageLookup, n: int, seed: int) -> PseudoQueries:
        out = PseudoQueries(self.name)
        seen: set[str] = set()
        for passage in _sampled(lookup, n, seed):
            if len(out.queries) >= n:
                break
            title = (passage.title or "").strip()
            key = " ".join(word_tokens(title))
            if len(title.split()) < MIN_TITLE_WORDS or key in seen or not (passage.text or "").strip():
                out.skipped += 1
                continue
            seen.add(key)
            out.masked[passage.passage_id] = Masked(None, passage.text)
            out.add(f"title:{passage.passage_id}", title, passage.doc_id, passage.text)
        return out


@register
class Linked(Generator):
    """HLP's dual-link and co-mention pairs: a sentence of document Q is the query, document P the positive.

    Requirements: a pairs folder from ``pretriever mine --method dl,cm`` over the same store (``pairs``). One
    pair per query document; the query's id is its document's id, so that document (which holds the sentence
    verbatim) is left out of its ranking, as BEIR leaves out a query's own document. Nothing is masked: the
    positive is another document.
    """

    name = "linked"
    summary = "HLP dual-link / co-mention: a linking sentence is the query, the linked document the positive"
    methods = ("dl", "cm")

    def __init__(self, pairs: Path | None = None):
        self.pairs = pairs

    def make(self, lookup: PassageLookup, n: int, seed: int) -> PseudoQueries:
        if self.pairs is None:
            raise TuneError("the linked generator needs a pairs folder: give --pairs PAIRS_DIR "
                            "(`pretriever mine STORE --method dl,cm --out PAIRS_DIR`)")
        files = [self.pairs / f"{m}.parquet" for m in self.methods if (self.pairs / f"{m}.parquet").exists()]
        if not files:
            raise TuneError(f"{self.pairs}: no dl.parquet or cm.parquet; mine them with "
                            f"`pretriever mine STORE --method dl,cm --out {self.pairs}`")
        rows = []
        for file in files:
            table = pq.read_table(file, columns=["query", "query_doc_id", "positive_doc_id", "positive_text"])
            rows.extend(zip(*(table.column(c).to_pylist() for c in table.column_names)))
        random.Random(seed).shuffle(rows)
        out = PseudoQueries(self.name)
        for query, q_doc, p_doc, p_text in rows:
            if len(out.queries) >= n:
                break
            if q_doc in out.queries or q_doc == p_doc or len((query or "").split()) < MIN_QUERY_WORDS:
                out.skipped += 1
                continue
            out.add(q_doc, query, p_doc, p_text or "")
        return out


def make_generator(name: str, pairs: Path | None = None) -> Generator:
    """The registered generator ``name`` (``linked`` reads ``pairs``)."""
    if name not in GENERATORS:
        raise TuneError(f"unknown pseudo-query generator {name!r}; known: {', '.join(GENERATORS)}")
    build: Callable[[], Generator] = (lambda: Linked(pairs)) if name == Linked.name else GENERATORS[name]
    return build()
