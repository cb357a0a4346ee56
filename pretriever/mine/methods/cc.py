"""Context pairs (CC; coCondenser, Gao and Callan 2022): two passages of the same document.

Query: a passage x of document D. Positive: another passage y of D. The passages of each
document are put in a seeded random order (``hkey``) and each one is paired with the
next one round the circle, so every passage of a document with two or more passages is a
query once and a positive once, in O(passages). Used by ``pretriever pretrain``
(coCondenser's contrastive span pairs, CoT-MAE's encoder/decoder pairs; Wu et al. 2023,
eq. 1).

The passages are the store's (``corpus build --words``) unless ``cc_max_tokens`` N is set:
then, as in Wu et al. (2023), section 4.1 ("group these sentences into passages of no more
than 128 consecutive tokens"), each document's sentences (the store's sentences table), in
order, are packed greedily into passages of at most N WordPiece tokens of ``--tokenizer``
(all-MiniLM-L6-v2's by default; [CLS]/[SEP] not counted). A sentence longer than N is a
passage by itself (never cut; the encoder truncates it) and counted. Tokens are counted
exactly, in Python on the machine that runs ``mine`` (about 15,000 sentences per CPU-second
here), the packing is one streaming pass over the sentences in document order, and the
passages go to a Parquet file that the engine pairs like the store's passages.

Example::

    pretriever mine enwiki/ --method cc --cc-max-tokens 128 --out cc-pairs/
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

import ibis.expr.types as ir
import pyarrow as pa
import pyarrow.parquet as pq

from pretriever.io import PARQUET_OPTIONS
from pretriever.mine.context import MineContext
from pretriever.mine.engine import hkey
from pretriever.mine.methods.base import Method, register
from pretriever.mine.methods.wlp import numbered
from pretriever.mine.stats import load_tokenizer

SENTENCES = pa.schema([("doc_id", pa.string()), ("sentence_idx", pa.int32()), ("text", pa.string())])
PACKED = pa.schema([("passage_id", pa.string()), ("doc_id", pa.string()), ("n_words", pa.int32()),
                    ("n_tokens", pa.int32()), ("n_sentences", pa.int32()), ("text", pa.string())])


def pack_sentences(rows: Iterable[tuple[str, int, str, int]], max_tokens: int) -> Iterator[dict[str, Any]]:
    """Passages of whole consecutive sentences of one document, each at most ``max_tokens`` tokens.

    ``rows`` are (doc_id, sentence_idx, text, tokens) in document order. Greedy: a sentence
    joins the current passage while the total stays within ``max_tokens``; a sentence longer
    than that on its own is a passage alone. The passage id is ``DOC-sFIRST`` (its first
    sentence's index), and its text the sentences joined by a space.
    """
    doc: str | None = None
    first, texts, total = 0, [], 0
    for doc_id, idx, text, tokens in rows:
        if texts and (doc_id != doc or total + tokens > max_tokens):
            yield _passage(doc, first, texts, total)
            texts, total = [], 0
        if not texts:
            doc, first = doc_id, idx
        texts.append(text)
        total += tokens
    if texts:
        yield _passage(doc, first, texts, total)


def _passage(doc: str | None, first: int, texts: list[str], tokens: int) -> dict[str, Any]:
    text = " ".join(texts)
    return {"passage_id": f"{doc}-s{first}", "doc_id": doc, "n_words": len(text.split()), "n_tokens": tokens,
            "n_sentences": len(texts), "text": text}


@register
class ContextPairs(Method):
    """Context pairs (CC): two passages of the same document, for context-supervised pre-training
    (``pretriever pretrain``: coCondenser's span pairs, CoT-MAE's encoder/decoder pairs).

    Each passage of a document with two or more passages is a query once and a positive once (a seeded
    random cycle). With ``cc_max_tokens`` N the passages are made anew from the document's sentences,
    packed into at most N WordPiece tokens, as the query-as-context paper does (module docstring).

    Requirements:
        Any store whose documents have two or more passages (or sentences, with ``cc_max_tokens``).

    Pairs:
        +------------------------------------------+------------------------------------------+
        | Query                                    | Positive                                 |
        +==========================================+==========================================+
        | a passage x of D                         | another passage y of D                   |
        +------------------------------------------+------------------------------------------+

    Example::

        from pretriever.mine.config import MineConfig
        from pretriever import mine

        result = mine.run(MineConfig(corpus="enwiki/", out="cc-pairs/", methods="cc", cc_max_tokens=128))
        found = result.methods["cc"]
        print(found.pairs, "pairs", found.reason or f"in {found.file}")  # or why none

    From the command line: ``pretriever mine enwiki/ --method cc --cc-max-tokens 128 --out cc-pairs/``.

    References:
        - Gao and Callan, "Unsupervised Corpus Aware Language Model Pre-training for Dense Passage
          Retrieval", ACL 2022.
        - Wu et al., "Query-as-context Pre-training for Dense Passage Retrieval", EMNLP 2023, section 2.1
          (eq. 1) and section 4.1 (passages of whole sentences, at most 128 tokens).
    """

    name = "cc"
    title = "context pairs"
    summary = "query = a passage x of D; positive = another passage y of D (seeded random pairing)"
    cap_doc_pairs = False  # every pair is within one document
    uses_links = False

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def candidates(self, ctx: MineContext) -> ir.Table:
        n = ctx.config.cc_max_tokens
        p = ctx.positives if n is None else self._sentence_passages(ctx, n)
        p = p.select("passage_id", "doc_id", "text")
        p = p.mutate(_h=hkey(ctx.seed, "cc", p.passage_id))
        p = numbered(p, "doc_id", ["_h", "passage_id"])
        counts = p.group_by("doc_id").agg(n=p.count().cast("int64"))
        counts = counts.filter(counts.n > 1).select(c_doc=counts.doc_id, n=counts.n)
        x = p.join(counts, p.doc_id == counts.c_doc)
        x = x.mutate(_next=(x._k + 1) % x.n)
        y = p.select(y_doc=p.doc_id, y_pid=p.passage_id, y_text=p.text, y_k=p._k)
        j = x.join(y, (x.doc_id == y.y_doc) & (x._next == y.y_k))
        return ctx.candidate(
            j, key=j.passage_id + "|" + j.y_pid, query=j.text, query_doc_id=j.doc_id, query_passage_id=j.passage_id,
            positive_passage_id=j.y_pid, positive_doc_id=j.doc_id, positive_text=j.y_text)

    def _sentence_passages(self, ctx: MineContext, max_tokens: int) -> ir.Table:
        """The documents' sentences packed into passages of at most ``max_tokens`` tokens, long enough ones only."""
        engine, cfg = ctx.engine, ctx.config
        tokenizer = load_tokenizer(cfg.tokenizer)
        s = ctx.sentences
        s = s.select("doc_id", "sentence_idx", "text").order_by(["doc_id", "sentence_idx"])

        def rows() -> Iterator[tuple[str, int, str, int]]:
            for batch in engine.batches(s, SENTENCES):
                docs, idxs, texts = (batch.column(i).to_pylist() for i in range(3))
                tokens = [len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
                self.counts["sentences"] += len(texts)
                self.counts["sentences_over_max_tokens"] += sum(t > max_tokens for t in tokens)
                yield from zip(docs, idxs, texts, tokens)

        path = engine.work / "cc-passages.parquet"
        with pq.ParquetWriter(path, PACKED, **PARQUET_OPTIONS) as writer:
            chunk: list[dict[str, Any]] = []
            for passage in pack_sentences(rows(), max_tokens):
                chunk.append(passage)
                self.counts["passages"] += 1
                self.counts["short_passages"] += passage["n_words"] < cfg.min_passage_words
                if len(chunk) == 10_000:
                    writer.write_table(pa.Table.from_pylist(chunk, schema=PACKED))
                    chunk = []
            writer.write_table(pa.Table.from_pylist(chunk, schema=PACKED))
        p = engine.read(path, "cc_passages")
        return p.filter(p.n_words >= cfg.min_passage_words)

    def report(self, ctx: MineContext, candidates: int) -> dict[str, Any] | None:
        """With ``cc_max_tokens``: how the sentences were packed (kept in pairs.json and stats.json)."""
        n = ctx.config.cc_max_tokens
        if n is None:
            return None
        c = self.counts
        return {"sentence_passages": {
            "max_tokens": n, "tokenizer": str(ctx.config.tokenizer or "all-MiniLM-L6-v2"),
            "sentences": c["sentences"], "passages": c["passages"],
            "sentences_over_max_tokens": c["sentences_over_max_tokens"],
            "passages_under_min_words": c["short_passages"]},
            "note": (f"{c['passages']:,} passages of whole sentences up to {n} tokens from {c['sentences']:,} "
                     f"sentences ({c['sentences_over_max_tokens']:,} sentences longer than {n} tokens kept alone; "
                     f"{c['short_passages']:,} passages under {ctx.config.min_passage_words} words left out)")}

    def why_empty(self, ctx: MineContext) -> str:
        if ctx.config.cc_max_tokens is not None:
            return (f"no document has two passages of at least {ctx.config.min_passage_words} words once its "
                    f"sentences are packed into passages of up to {ctx.config.cc_max_tokens} tokens")
        return (f"no document has two passages of at least {ctx.config.min_passage_words} words (BEIR and DPR "
                "stores keep whole documents as one passage unless built with --words N)")
