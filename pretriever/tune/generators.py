"""Pseudo-queries made from the corpus alone, each with the passage text its positive is scored on.

A generator turns sampled passages into (query, positive) pairs that do not hand BM25 the query's words for
free: the positive never contains the text the query was cut from.

* ``masked-ict`` (inverse cloze, Lee et al. 2019, with the sentence always removed): a sentence of passage p is
  the query; p *without that sentence* is the positive.
* ``titles``: the document title is the query; its document is scored without the title (every passage of it,
  so the title is not handed over by the document's other passages either).
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
from collections import Counter
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
    masked ({passage_id: Masked}), the share of each query's words found in its positive (``overlap``) and why
    the items looked at gave no query (``skips``: {reason: count}), which says why a generator does not fit a
    corpus."""

    generator: str
    queries: dict[str, str] = field(default_factory=dict)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    masked: dict[str, Masked] = field(default_factory=dict)
    overlap: dict[str, float] = field(default_factory=dict)
    skips: Counter[str] = field(default_factory=Counter)
    looked_at: str = "passages"  # what an item is: a sampled passage, or a mined pair

    def skip(self, reason: str) -> None:
        """Count an item that gave no query.

        Args:
            reason: why (a short key shown in the report).
        """
        self.skips[reason] += 1

    @property
    def skipped(self) -> int:
        """Items looked at that gave no query."""
        return sum(self.skips.values())

    def why_none(self) -> str:
        """Why no item gave a query, e.g. "3,000 sampled passages looked at: 3,000 without a title"."""
        if not self.skips:
            return f"no {self.looked_at} to look at"
        reasons = ", ".join(f"{count:,} {reason}" for reason, count in self.skips.most_common())
        return f"{self.skipped:,} {self.looked_at} looked at: {reasons}"

    def add(self, qid: str, query: str, doc_id: str, positive_text: str) -> None:
        """Add a pseudo-query, its positive document and its word overlap with the positive.

        Args:
            qid: the query's id.
            query: its text.
            doc_id: the positive's document.
            positive_text: the positive's text (masked or not), for the overlap.
        """
        self.queries[qid] = query
        self.qrels[qid] = {doc_id: 1}
        ratio = overlap_ratio(word_tokens(query), set(word_tokens(positive_text)))
        if ratio is not None:
            self.overlap[qid] = ratio

    @property
    def mean_overlap(self) -> float | None:
        return sum(self.overlap.values()) / len(self.overlap) if self.overlap else None


class Generator:
    """A registered way to make pseudo-queries: ``make(lookup, n, seed)``.

    Relations:
        :class:`MaskedICT`, :class:`Titles` and :class:`Linked` subclass it (:func:`make_generator` builds one).
    """

    name: str = ""
    summary: str = ""
    needs: str = ""  # what a corpus must have for it, as the error that no generator fits says

    def missing(self) -> str | None:
        """What this generator needs and was not given, said as the reason it cannot run (None: it can run).

        The default set asks every registered generator this before it makes anything, and names the ones that
        cannot run with this reason (:func:`pretriever.tune.run.pseudo_queries`).
        """
        return None

    def make(self, lookup: PassageLookup, n: int, seed: int) -> PseudoQueries:
        raise NotImplementedError


GENERATORS: dict[str, type[Generator]] = {}


def register(cls: type[Generator]) -> type[Generator]:
    """Class decorator: add a generator to :data:`GENERATORS` under its ``name`` (twice is a ValueError)."""
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
    needs = f"passages of two sentences or more, one of {MIN_QUERY_WORDS} words or more"

    def make(self, lookup: PassageLookup, n: int, seed: int) -> PseudoQueries:
        out = PseudoQueries(self.name, looked_at="sampled passages")
        for passage in _sampled(lookup, n, seed):
            if len(out.queries) >= n:
                break
            text = passage.text or ""
            sentences = split_sentences(text)
            spans = [(a, b) for a, b in sentences if len(text[a:b].split()) >= MIN_QUERY_WORDS]
            if len(sentences) < 2 or not spans:
                out.skip("of one sentence" if len(sentences) < 2 else
                         f"without a sentence of {MIN_QUERY_WORDS} words or more")
                continue
            a, b = random.Random(f"{seed}:{passage.passage_id}").choice(spans)
            body = (text[:a].rstrip() + " " + text[b:].lstrip()).strip()
            out.masked[passage.passage_id] = Masked(passage.title, body)
            out.add(f"ict:{passage.passage_id}", text[a:b].strip(), passage.doc_id, body)
        return out


@register
class Titles(Generator):
    """The document's title is the query; the document, scored without its title, is the positive.

    Requirements: titles of at least ``MIN_TITLE_WORDS`` words that name one document of the store (a title
    shared by two documents has no single positive), one query per title. Every passage of the query's document
    is masked (encoded and indexed again without the title), since an index that prepends titles gives each of
    them the query's words; so the generator stops at ``n`` queries or ``n`` masked passages, whichever comes
    first, and costs no more than masked ICT.
    """

    name = "titles"
    summary = "the title is the query; its document without the title is the positive"
    needs = f"titles of {MIN_TITLE_WORDS} words or more that name one document each"

    def make(self, lookup: PassageLookup, n: int, seed: int) -> PseudoQueries:
        out = PseudoQueries(self.name, looked_at="sampled passages")
        sampled = _sampled(lookup, n, seed)
        long_enough = {p.title for p in sampled if len((p.title or "").split()) >= MIN_TITLE_WORDS}
        documents = lookup.title_counts(long_enough)  # how many documents carry each title
        usable = [p.doc_id for p in sampled if p.title in long_enough and documents.get(p.title, 0) <= 1]
        passages = ({p.doc_id: [p] for p in sampled} if lookup.documents_whole
                    else lookup.document_passages(usable))
        seen: set[str] = set()
        for passage in sampled:
            if len(out.queries) >= n or len(out.masked) >= n:
                break
            title = (passage.title or "").strip()
            key = " ".join(word_tokens(title))
            if not title:
                out.skip("without a title")
            elif passage.title not in long_enough:
                out.skip(f"with a title under {MIN_TITLE_WORDS} words")
            elif documents.get(passage.title, 0) > 1:
                out.skip("whose title names more than one document")
            elif key in seen:
                out.skip("whose title (or document) already gave a query")
            elif not (passage.text or "").strip():
                out.skip("without text")
            else:
                seen.add(key)
                document = passages[passage.doc_id]
                for part in document:
                    out.masked[part.passage_id] = Masked(None, part.text or "")
                out.add(f"title:{passage.passage_id}", title, passage.doc_id,
                        " ".join(part.text or "" for part in document))
        return out


@register
class Linked(Generator):
    """HLP's dual-link and co-mention pairs: a sentence of document Q is the query, document P the positive.

    Requirements: a pairs folder from ``pretriever mine --method dl,cm`` over the same store (``pairs``; without
    one, :meth:`missing` says so and the default set leaves linked out). One pair per query document; the query's
    id is its document's id, so that document (which holds the sentence verbatim) is left out of its ranking, as
    BEIR leaves out a query's own document. Nothing is masked: the positive is another document.
    """

    name = "linked"
    summary = "HLP dual-link / co-mention: a linking sentence is the query, the linked document the positive"
    needs = "dl/cm pairs of the store (--pairs; `pretriever mine STORE --method dl,cm`)"
    methods = ("dl", "cm")

    def __init__(self, pairs: Path | None = None):
        self.pairs = pairs

    def missing(self) -> str | None:
        if self.pairs is None:
            return ("it needs a pairs folder: give --pairs PAIRS_DIR "
                    "(`pretriever mine STORE --method dl,cm --out PAIRS_DIR`)")
        return None

    def make(self, lookup: PassageLookup, n: int, seed: int) -> PseudoQueries:
        if self.pairs is None:
            raise TuneError(f"the linked generator cannot run: {self.missing()}")
        files = [self.pairs / f"{m}.parquet" for m in self.methods if (self.pairs / f"{m}.parquet").exists()]
        if not files:
            raise TuneError(f"{self.pairs}: no dl.parquet or cm.parquet; mine them with "
                            f"`pretriever mine STORE --method dl,cm --out {self.pairs}`")
        rows = []
        for file in files:
            table = pq.read_table(file, columns=["query", "query_doc_id", "positive_doc_id", "positive_text"])
            rows.extend(zip(*(table.column(c).to_pylist() for c in table.column_names)))
        random.Random(seed).shuffle(rows)
        out = PseudoQueries(self.name, looked_at=f"dl/cm pairs of {self.pairs}")
        for query, q_doc, p_doc, p_text in rows:
            if len(out.queries) >= n:
                break
            if q_doc in out.queries:
                out.skip("whose query document already gave a query")
            elif q_doc == p_doc:
                out.skip("linking a document to itself")
            elif len((query or "").split()) < MIN_QUERY_WORDS:
                out.skip(f"with a query under {MIN_QUERY_WORDS} words")
            else:
                out.add(q_doc, query, p_doc, p_text or "")
        return out


def make_generator(name: str, pairs: Path | None = None) -> Generator:
    """The registered generator ``name`` (``linked`` reads ``pairs``).

    Args:
        name: a registered generator's name.
        pairs: a pairs folder (``linked`` only).

    Returns:
        The generator.

    Raises:
        TuneError: an unknown name.
    """
    if name not in GENERATORS:
        raise TuneError(f"unknown pseudo-query generator {name!r}; known: {', '.join(GENERATORS)}")
    build: Callable[[], Generator] = (lambda: Linked(pairs)) if name == Linked.name else GENERATORS[name]
    return build()
