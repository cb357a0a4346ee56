"""Hard negatives mined with a trained retriever: retriever 2 of two-stage fine-tuning.

Query-as-context (Wu et al. 2023, section 3.2 and Figure 3), following coCondenser and
CoT-MAE: retriever 1 is trained with BM25 negatives; the corpus is indexed with it; then
retriever 2 is trained with negatives that retriever 1 ranks high. Section 4.2: "the negative
depth is set to 200 and the number of negative passages for one query ... is 15".

For each judged query (a BEIR qrels split), :func:`mine_index_negatives`:

1. searches the query in the index to ``depth`` hits;
2. drops every hit that is a judged positive of the query (qrels score > 0, compared by
   *document* id, so with a store cut into passages every passage of a relevant document is
   dropped), or whose text equals one of its positives (a duplicate document);
3. draws ``count`` of the remaining hits without replacement, with a generator seeded by
   ``(seed, query id)``, so the draw of a query does not depend on the others or on batching,
   and keeps them in rank order.

This is the rule of Tevatron's ``build_train_hn.py`` for coCondenser on MS MARCO (the ranked
passages that are not judged relevant, cut to the depth, shuffled, the first n kept), seeded
here. Every example of a query (one per judged positive) gets the same negatives. A query with
fewer than ``count`` candidates is topped up with random passages drawn with the seed (never a
positive), and counted. Unjudged relevant passages near the top can still come back as
negatives (false negatives); the paper does not filter them, and neither does this.

Example::

    from pretriever.index import IndexFolder
    with IndexFolder("stage1-index/").open() as system:  # the index with the store its passages come from
        stats = mine_index_negatives(data.examples, system, system.lookup, passages, depth=200, count=15, seed=0)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pretriever.data import PassageLookup
from pretriever.retrieval import Retriever
from pretriever.train.labelled import Example, Passages, fill_random_negatives
from pretriever.train.pair_sampling import named_rng


def _hit_facts(ids: list[str], lookup: PassageLookup | None, passages: Passages,
               prepend_title: bool) -> tuple[dict[str, str], dict[str, str]]:
    """(passage id -> document id, passage id -> text) of the hits, from the index's store when known."""
    if lookup is None:  # an index that names no store: its ids are the training corpus's document ids
        texts = passages.get(ids)
        return {i: i for i in ids}, texts
    docs = lookup.doc_ids(ids)
    return {i: d if d is not None else i for i, d in docs.items()}, lookup.passage_texts(ids, prepend_title)


def mine_index_negatives(examples: list[Example], retriever: Retriever, lookup: PassageLookup | None,
                         passages: Passages, depth: int, count: int, seed: int, prepend_title: bool = True,
                         batch: int = 64, on_batch: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Give each example ``count`` negatives drawn from the top ``depth`` hits of ``retriever`` that are not
    judged positives of its query (``Example.exclude``, document ids); returns the counts for train.json, per
    query: ``index`` negatives drawn from the hits, ``random_fallback`` drawn at random for ``queries_short``
    queries, ``judged_positives_skipped`` hits left out as judged positives.

    ``lookup`` reads the ids and texts of the hits from the store the index was built on; ``passages``
    (the training corpus) gives the random top-ups.
    """
    by_qid: dict[str, list[Example]] = {}
    for e in examples:
        by_qid.setdefault(e.qid, []).append(e)
    qids = list(by_qid)
    stats = {"queries": len(qids), "judged_positives_skipped": 0, "queries_short": 0}
    for start in range(0, len(qids), batch):
        chunk = qids[start:start + batch]
        hits = retriever.search([by_qid[q][0].query for q in chunk], depth)
        ids = list(dict.fromkeys(h.passage_id for row in hits for h in row))
        doc_of, texts = _hit_facts(ids, lookup, passages, prepend_title)
        for qid, row in zip(chunk, hits):
            group = by_qid[qid]
            judged = set().union(*(e.exclude for e in group))
            positives = {e.positive for e in group}
            candidates: list[str] = []
            for h in row[:depth]:
                if h.passage_id in judged or doc_of.get(h.passage_id, h.passage_id) in judged:
                    stats["judged_positives_skipped"] += 1
                    continue
                text = texts.get(h.passage_id)
                if text and text not in positives and text not in candidates:
                    candidates.append(text)
            take = min(count, len(candidates))
            picked = sorted(named_rng(seed, f"index-negatives:{qid}").choice(len(candidates), take, replace=False))
            stats["queries_short"] += take < count
            group[0].negatives = [candidates[j] for j in picked]
        if on_batch:
            on_batch(len(chunk))
    first = [by_qid[q][0] for q in qids]  # one example per query carries the query's negatives
    stats["index"] = sum(len(e.negatives) for e in first)
    stats["random_fallback"] = fill_random_negatives(first, passages, seed, count)
    for q in qids:
        for e in by_qid[q][1:]:
            e.negatives = list(by_qid[q][0].negatives)
    return stats


def mine_bm25_sample(examples: list[Example], retriever: Retriever, passages: Passages, depth: int, count: int,
                     seed: int, prepend_title: bool = True) -> dict[str, Any]:
    """Retriever 1's negatives (section 4.2; caskcsg's ``eval_msmarco.sh`` trains it on Tevatron's BM25 negatives
    with ``--train_n_passages 16``): ``count`` drawn as :func:`mine_index_negatives` draws them, from the top
    ``depth`` hits of the BM25 ``retriever`` over ``passages`` (counted as ``bm25``)."""
    lookup = PassageLookup(passages.store) if passages.store is not None else None
    try:
        stats = mine_index_negatives(examples, retriever, lookup, passages, depth, count, seed, prepend_title)
    finally:
        if lookup is not None:
            lookup.close()
    stats["bm25"] = stats.pop("index")
    return stats
