"""Labelled training data for fine-tuning: BEIR qrels and DPR training JSON, with BM25 hard negatives.

BEIR (``--beir DIR --split train``): ``queries.jsonl`` (``_id``, ``text``), ``qrels/<split>.tsv``
(``query-id``, ``corpus-id``, ``score``; a header line; rows with score > 0 are relevant)
and the passages, from ``corpus.jsonl`` (``_id``, ``title``, ``text``) or from a corpus
store (``--corpus``) built from it. One training example per relevant (query, passage)
row, as BEIR's own training scripts do.

DPR (``--dpr FILE``): DPR's training JSON (a list of ``question``, ``answers``,
``positive_ctxs``, ``negative_ctxs``, ``hard_negative_ctxs``; contexts have ``title``,
``text`` and ``passage_id`` or ``psg_id``), which ``pretriever pairs export --format dpr``
also writes. One example per question, with its first positive context, as in DPR.

Hard negatives (``--hard-negatives``): ``bm25`` searches each query with BM25 and takes
the best-ranked passage among the top ``bm25_depth`` that is not one of the query's
positives (for DPR also: does not contain an answer string, DPR's rule); the index is
the index stage's ``BM25Index`` (bm25s, Lucene variant, English stop words and stemmer)
over the corpus store, or over the BEIR corpus / the DPR file's contexts. A query without
such a passage gets a passage drawn with the seed instead (counted in ``train.json``).
``file`` takes DPR's own ``hard_negative_ctxs`` (else ``negative_ctxs``); ``none`` trains
with in-batch negatives only.

Few-shot (``--limit m``): m queries (BEIR: with all their relevant rows) drawn with the seed.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pretriever.data import (CorpusStore, PassageLookup, PassageSource, load_corpus, load_qrels, load_queries,
                             passage_text, qrels_path, relevant)
from pretriever.index.bm25 import BM25Index
from pretriever.io import read_json
from pretriever.train.errors import TrainError
from pretriever.train.pair_sampling import named_rng, negative_columns


@dataclass
class Example:
    """One labelled training query: its positive passage, its hard negatives once mined, and what a negative must avoid
    (its positives' ids, DPR's answers).
    """

    qid: str
    query: str
    positive_id: str | None
    positive: str
    negatives: list[str] = field(default_factory=list)  # hard negatives: one (BM25, DPR file) or many (an index)
    exclude: set[str] = field(default_factory=set)  # passage ids that must not be this query's negative
    answers: list[str] = field(default_factory=list)  # DPR: a negative must not contain these

    @property
    def negative(self) -> str | None:
        """The first hard negative (None before mining)."""
        return self.negatives[0] if self.negatives else None


@dataclass
class LabelledData:
    """The labelled examples of one source (a BEIR split or a DPR file) and the counts reported in train.json."""
    name: str  # the source's key in train.json counts ("beir:train", "dpr")
    examples: list[Example]
    queries: int  # distinct queries kept
    notes: dict[str, Any] = field(default_factory=dict)

    def records(self, with_negatives: bool) -> dict[str, list[str]]:
        """The training columns: anchor, positive and, with negatives, one column per hard negative
        (``negative``, or ``negative_1`` ... ``negative_n`` when there are several: MNRL takes them all)."""
        out = {"anchor": [e.query for e in self.examples], "positive": [e.positive for e in self.examples]}
        if with_negatives:
            count = max((len(e.negatives) for e in self.examples), default=0)
            for j, name in enumerate(negative_columns(count)):
                out[name] = [e.negatives[j] if j < len(e.negatives) else "" for e in self.examples]
        return out


def sample_queries(qids: Sequence[str], limit: int | None, seed: int) -> list[str]:
    """``limit`` of the query ids (in their original order), drawn with the seed; all when None."""
    if limit is None or limit >= len(qids):
        return list(qids)
    picked = set(named_rng(seed, "few-shot").choice(len(qids), limit, replace=False).tolist())
    return [q for i, q in enumerate(qids) if i in picked]


# ---------------------------------------------------------------- passages and BM25

class Passages:
    """Passage texts by id, from an in-memory dict (a BEIR corpus, a DPR file's contexts) or a corpus store."""

    def __init__(self, texts: dict[str, tuple[str, str]] | None = None, store: CorpusStore | None = None,
                 prepend_title: bool = True):
        self.mem = texts
        self.store = store
        self.prepend_title = prepend_title
        self._all: tuple[list[str], list[str]] | None = None

    def get(self, ids: Sequence[str]) -> dict[str, str]:
        if self.mem is not None:
            return {i: passage_text(*self.mem[i], self.prepend_title) for i in ids if i in self.mem}
        lookup = PassageLookup(self.store)
        try:
            return lookup.passage_texts(ids, self.prepend_title)
        finally:
            lookup.close()

    def sample(self, n: int, seed: int) -> list[tuple[str, str]]:
        """``n`` passages (id, text) drawn with the seed (from a store without reading it all into memory)."""
        if self.mem is not None or self._all is not None:
            ids, texts = self.all()
            picks = named_rng(seed, "random-negative").choice(len(ids), min(n, len(ids)), replace=False)
            return [(ids[j], texts[j]) for j in picks.tolist()]
        lookup = PassageLookup(self.store)
        try:
            return lookup.sample(n, seed, self.prepend_title)
        finally:
            lookup.close()

    def all(self) -> tuple[list[str], list[str]]:
        """Every passage (ids, texts), for a BM25 index built here."""
        if self._all is None:
            if self.mem is not None:
                ids = list(self.mem)
                self._all = (ids, [passage_text(*self.mem[i], self.prepend_title) for i in ids])
            else:
                source = PassageSource(self.store)
                try:
                    ids, texts = [], []
                    for part_ids, part_texts in source.iter_parts(self.prepend_title):
                        ids.extend(part_ids)
                        texts.extend(part_texts)
                finally:
                    source.close()
                self._all = (ids, texts)
        return self._all


def bm25_retriever(passages: Passages) -> tuple[BM25Index, str]:
    """The index stage's BM25 (bm25s, Lucene, stop words, Snowball) over ``passages`` and what it is."""
    if passages.store is not None:
        return BM25Index.build(passages.store), "pretriever.index.BM25Index over the corpus store"
    ids, texts = passages.all()
    if not ids:
        raise TrainError("the corpus for BM25 hard negatives is empty")
    return BM25Index.build_from_texts(ids, texts), f"pretriever.index.BM25Index over {len(ids):,} passages"


_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text.lower()).strip()


def mine_bm25_negatives(examples: list[Example], retriever, passages: Passages, depth: int, seed: int,
                        batch: int = 256, on_batch: Callable[[int], None] | None = None) -> dict[str, int]:
    """Give each example the best BM25 hit that is not excluded; a seeded random passage when none is."""
    stats = {"bm25": 0}
    by_query: dict[str, list[Example]] = {}
    for e in examples:
        by_query.setdefault(e.query, []).append(e)
    queries = list(by_query)
    for start in range(0, len(queries), batch):
        chunk = queries[start:start + batch]
        hits = retriever.search(chunk, depth)
        wanted = {h.passage_id for row in hits for h in row}
        texts = passages.get(sorted(wanted))
        for query, row in zip(chunk, hits):
            for e in by_query[query]:
                for h in row:
                    text = texts.get(h.passage_id)
                    if not text or h.passage_id in e.exclude or text == e.positive:
                        continue
                    if e.answers and any(a and _norm(a) in _norm(text) for a in e.answers):
                        continue
                    e.negatives = [text]
                    stats["bm25"] += 1
                    break
        if on_batch:
            on_batch(len(chunk))
    stats["random_fallback"] = fill_random_negatives(examples, passages, seed)
    return stats


def fill_random_negatives(examples: list[Example], passages: Passages, seed: int, count: int = 1) -> int:
    """Passages drawn with the seed for every example with fewer than ``count`` negatives (never one of its
    positives or a negative it already has); returns how many were added."""
    lacking = [e for e in examples if len(e.negatives) < count]
    if not lacking:
        return 0
    needed = sum(count - len(e.negatives) for e in lacking)
    pool = passages.sample(4 * needed + 64, seed)
    if not pool:
        raise TrainError("no passages to draw negatives from; train with --hard-negatives none")
    filled, j = 0, 0
    for e in lacking:
        for _ in range(len(pool)):
            if len(e.negatives) >= count:
                break
            pid, text = pool[j % len(pool)]
            j += 1
            if pid not in e.exclude and text and text != e.positive and text not in e.negatives:
                e.negatives.append(text)
                filled += 1
    if any(len(e.negatives) < count for e in examples):
        raise TrainError(f"could not find {count} negative passage(s) for every query (the corpus is too small?); "
                         "train with --hard-negatives none")
    return filled


# ---------------------------------------------------------------- loaders

def load_beir(folder: Path, split: str, limit: int | None, seed: int, prepend_title: bool,
              store=None) -> tuple[LabelledData, Passages]:
    """A BEIR split's judged (query, relevant passage) examples, ``limit`` queries sampled with ``seed``, and the
    passages (from ``store``, else the dataset's corpus.jsonl) their negatives are mined from.
    """
    folder = Path(folder)
    queries = load_queries(folder)
    qrels = relevant(load_qrels(qrels_path(folder, split)))
    missing = [q for q in qrels if q not in queries]
    qids = [q for q in qrels if q in queries]
    if not qids:
        raise TrainError(f"{folder}: none of the {len(qrels)} queries in qrels/{split}.tsv is in queries.jsonl")
    passages = Passages(store=store, prepend_title=prepend_title) if store is not None else \
        Passages(load_corpus(folder), prepend_title=prepend_title)
    kept = sample_queries(qids, limit, seed)
    texts = passages.get([d for q in kept for d in qrels[q]])
    examples, no_passage = [], 0
    for q in kept:
        for d in qrels[q]:
            if d not in texts or not texts[d]:
                no_passage += 1
                continue
            examples.append(Example(qid=q, query=queries[q], positive_id=d, positive=texts[d], exclude=set(qrels[q])))
    if not examples:
        raise TrainError(f"{folder}: no relevant passage of qrels/{split}.tsv was found in the corpus")
    notes = {"qrels_queries": len(qrels), "qrels_rows": sum(len(v) for v in qrels.values()),
             "queries_missing": len(missing), "positives_missing": no_passage}
    return LabelledData(name=f"beir:{split}", examples=examples, queries=len({e.qid for e in examples}),
                        notes=notes), passages


def _ctx_id(ctx: dict[str, Any]) -> str:
    for key in ("passage_id", "psg_id", "id"):
        if ctx.get(key) not in (None, ""):
            return str(ctx[key])
    return "t:" + format(zlib.crc32(f"{ctx.get('title', '')}\n{ctx.get('text', '')}".encode("utf-8")), "08x")


def read_dpr(path: Path) -> list[dict[str, Any]]:
    """A DPR training file's records, checked to be a JSON list of objects with question and positive_ctxs (a
    :class:`TrainError` names the file and record).
    """
    path = Path(path)
    data = read_json(path, TrainError, "a DPR training file is one JSON list")
    if not isinstance(data, list) or (data and not isinstance(data[0], dict)):
        raise TrainError(f"{path}: a DPR training file is a JSON list of objects")
    for i, rec in enumerate(data[:1000]):
        if "question" not in rec or "positive_ctxs" not in rec:
            raise TrainError(f"{path}: record {i} lacks question or positive_ctxs (keys: {', '.join(rec)}); "
                             "is this a DPR training file?")
    return data


def load_dpr(path: Path, limit: int | None, seed: int, prepend_title: bool, hard_negatives: str,
             store=None) -> tuple[LabelledData, Passages]:
    """A DPR training file's examples (the first positive context each; the file's own hard negatives with
    ``hard_negatives="file"``), ``limit`` records sampled with ``seed``, and the passages (from ``store``, else the
    file's contexts) negatives come from."""
    records = read_dpr(path)
    usable = [i for i, r in enumerate(records) if r.get("positive_ctxs")]
    if not usable:
        raise TrainError(f"{path}: no record has a positive context")
    kept = [int(i) for i in sample_queries([str(i) for i in usable], limit, seed)]
    examples = []
    from_file = 0
    for i in kept:
        rec = records[i]
        pos = rec["positive_ctxs"][0]
        e = Example(qid=str(i), query=str(rec["question"]), positive_id=_ctx_id(pos),
                    positive=passage_text(pos.get("title"), pos.get("text"), prepend_title),
                    exclude={_ctx_id(c) for c in rec["positive_ctxs"]},
                    answers=[str(a) for a in rec.get("answers") or []])
        if hard_negatives == "file":
            ctxs = rec.get("hard_negative_ctxs") or rec.get("negative_ctxs") or []
            if ctxs:
                e.negatives = [passage_text(ctxs[0].get("title"), ctxs[0].get("text"), prepend_title)]
                from_file += 1
        examples.append(e)
    if store is not None:
        passages = Passages(store=store, prepend_title=prepend_title)
    else:  # the file's own contexts are the corpus for BM25
        corpus: dict[str, tuple[str, str]] = {}
        for rec in records:
            for key in ("positive_ctxs", "negative_ctxs", "hard_negative_ctxs"):
                for c in rec.get(key) or []:
                    corpus.setdefault(_ctx_id(c), (str(c.get("title") or ""), str(c.get("text") or "")))
        passages = Passages(corpus, prepend_title=prepend_title)
    notes = {"records": len(records), "records_without_positive": len(records) - len(usable)}
    if hard_negatives == "file":
        notes["negatives_from_file"] = from_file
    return LabelledData(name="dpr", examples=examples, queries=len(examples), notes=notes), passages
