"""``evaluate_retrievers``: run every system over the same questions and score them alike.

Systems are anything with the :class:`pretriever.retrieval.Retriever` interface; nothing here
knows how a system searches. The corpus store (see :mod:`pretriever.data.lookup`) supplies
what the hits alone do not: passage -> document for judgments, passage text for answers and
overlap, titles for multi-hop gold titles.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pretriever.data.store import CorpusStore
from pretriever.errors import PretrieverError
from pretriever.data.qa import AnswerMatcher, QAExample, invalid_patterns, word_tokens
from pretriever.evaluate.config import DEFAULT_MULTIHOP_KS, DEFAULT_QA_KS, DEFAULT_QRELS_DEPTH
from pretriever.data.multihop import MultiHopExample
from pretriever.data.lookup import PassageLookup
from pretriever.metrics import (CURVE_CUTOFFS, NO_REFERENCE, OVERLAP_EDGES, QRELS_METRICS, accuracy_at,
                                         bucket_labels, bucket_of, overlap_ratio, qrels_metrics, recall_curve,
                                         trec_order)
from pretriever.retrieval import Hit, Retriever

StoreLike = CorpusStore | PassageLookup | Path | str
Progress = Callable[[str, int, int], None]  # (system, queries done, queries in all)


class EvaluationError(PretrieverError, ValueError):
    """The inputs cannot be evaluated as given (no store for answer matching, duplicate names, ...)."""


@dataclass
class EvaluationResult:
    kind: str  # qrels | answers | multihop
    systems: dict[str, dict[str, float]]  # system -> metric -> mean value
    per_query: dict[str, dict[str, dict[str, Any]]]  # system -> query id -> values
    dataset: dict[str, Any]
    config: dict[str, Any] = field(default_factory=dict)
    overlap: dict[str, Any] | None = None
    curves: dict[str, dict[str, list]] = field(default_factory=dict)  # system -> {"k": [...], "value": [...]}
    query_ids: list[str] = field(default_factory=list)
    runs: dict[str, list[list[Hit]]] = field(default_factory=dict)  # the raw rankings, in query order (not saved)

    def to_json(self) -> dict[str, Any]:
        return {"systems": self.systems, "per_query": self.per_query, "config": self.config,
                "dataset": self.dataset, "overlap": self.overlap, "curves": self.curves}


def _search_all(retriever: Retriever, texts: list[str], k: int, batch_size: int,
                progress: Progress | None) -> list[list[Hit]]:
    hits: list[list[Hit]] = []
    if progress is not None:
        progress(retriever.name, 0, len(texts))
    for start in range(0, len(texts), batch_size):
        batch = texts[start:start + batch_size]
        found = retriever.search(batch, k)
        if len(found) != len(batch):
            raise EvaluationError(f"{retriever.name}: search returned {len(found)} result lists for "
                                  f"{len(batch)} queries")
        hits.extend([Hit(str(h[0]), float(h[1])) for h in row[:k]] for row in found)
        if progress is not None:
            progress(retriever.name, len(hits), len(texts))
    return hits


class _Stores:
    """The lookup of each system: an explicit store (one for all, or by system name), else the
    retriever's own ``store``/``corpus`` attribute, else the store its ``meta["corpus"]["store"]``
    names (pretriever's dense and BM25 indexes); one lookup per store folder."""

    def __init__(self, store: StoreLike | Mapping[str, StoreLike] | None):
        self.given = store
        self._open: dict[Path, PassageLookup] = {}

    def _lookup(self, value) -> PassageLookup | None:
        if value is None:
            return None
        if isinstance(value, PassageLookup):
            self._open.setdefault(value.path.resolve(), value)
            return value
        path = (value.path if isinstance(value, CorpusStore) else Path(value)).resolve()
        if path not in self._open:
            self._open[path] = PassageLookup(value if isinstance(value, CorpusStore) else path)
        return self._open[path]

    def for_system(self, retriever: Retriever) -> PassageLookup | None:
        if isinstance(self.given, Mapping):
            value = self.given.get(retriever.name)
        else:
            value = self.given
        if value is None:
            value = getattr(retriever, "store", None) or getattr(retriever, "corpus", None)
        if value is None:  # pretriever's indexes name their store in index.json / bm25.json
            meta = getattr(retriever, "meta", None)
            named = ((meta or {}).get("corpus") or {}).get("store") if isinstance(meta, dict) else None
            if named and Path(named, "manifest.json").exists():
                value = named
        return self._lookup(value)

    def close(self) -> None:
        for lookup in self._open.values():
            lookup.close()


def _as_qa(answers) -> list[QAExample]:
    out = []
    for i, ex in enumerate(answers):
        if isinstance(ex, QAExample):
            out.append(ex if ex.qid else QAExample(ex.question, ex.answers, str(i), ex.gold))
        else:
            question, ans = ex
            out.append(QAExample(question, [ans] if isinstance(ans, str) else list(ans), str(i)))
    return out


def _as_multihop(examples) -> list[MultiHopExample]:
    out = []
    for i, ex in enumerate(examples):
        if isinstance(ex, MultiHopExample):
            out.append(ex if ex.qid else MultiHopExample(ex.question, ex.gold, str(i)))
        else:
            question, gold = ex
            out.append(MultiHopExample(question, list(gold), str(i)))
    return out


def _doc_run(qids: list[str], hits: list[list[Hit]], lookup: PassageLookup | None, depth: int,
             ignore_identical_ids: bool) -> tuple[dict[str, dict[str, float]], int]:
    """Passage hits -> document run (MaxP: a document scores its best passage), cut to ``depth``."""
    doc_of: dict[str, str | None] = {}
    if lookup is not None and not lookup.documents_whole:
        doc_of = lookup.doc_ids({h.passage_id for row in hits for h in row})
    unknown = 0
    run: dict[str, dict[str, float]] = {}
    for qid, row in zip(qids, hits):
        docs: dict[str, float] = {}
        for h in row:
            if math.isnan(h.score):
                continue
            doc = doc_of.get(h.passage_id, h.passage_id) if doc_of else h.passage_id
            if doc is None:  # a passage the store does not know: keep it under its own id
                unknown += 1
                doc = h.passage_id
            if ignore_identical_ids and doc == qid:
                continue
            if doc not in docs or h.score > docs[doc]:
                docs[doc] = h.score
        run[qid] = dict(trec_order(docs)[:depth])
    return run, unknown


def _first_answer_ranks(examples: list[QAExample], hits: list[list[Hit]], lookup: PassageLookup,
                        matcher: AnswerMatcher) -> list[int | None]:
    """Rank of the first answer-bearing passage of each question (None: none in its list)."""
    texts = lookup.texts({h.passage_id for row in hits for h in row})
    ranks: list[int | None] = []
    for ex, row in zip(examples, hits):
        rank = None
        for r, h in enumerate(row, 1):
            if matcher.has_answer(ex.answers, texts.get(h.passage_id)):
                rank = r
                break
        ranks.append(rank)
    return ranks


def _all_gold_ranks(examples: list[MultiHopExample], hits: list[list[Hit]], lookup: PassageLookup | None,
                    by: str) -> list[int | None]:
    """The rank at which the last gold item appears (every gold passage/title in the top k iff <= k)."""
    titles: dict[str, str | None] = {}
    if by == "title":
        titles = lookup.titles({h.passage_id for row in hits for h in row})
    ranks: list[int | None] = []
    for ex, row in zip(examples, hits):
        first: dict[str, int] = {}
        for r, h in enumerate(row, 1):
            key = titles.get(h.passage_id) if by == "title" else h.passage_id
            if key is not None and key not in first:
                first[key] = r
        found = [first.get(g) for g in ex.gold]
        ranks.append(None if any(f is None for f in found) else max(found))
    return ranks


def evaluate_retrievers(
    retrievers: Sequence[Retriever],
    queries: Mapping[str, str] | None = None,
    qrels: Mapping[str, Mapping[str, int]] | None = None,
    *,
    answers: Sequence[QAExample] | Sequence[tuple[str, Sequence[str]]] | None = None,
    multihop: Sequence[MultiHopExample] | Sequence[tuple[str, Sequence[str]]] | None = None,
    gold_by: str = "passage",
    store: StoreLike | Mapping[str, StoreLike] | None = None,
    match: str = "string",
    ks: Sequence[int] | None = None,
    depth: int | None = None,
    maxp_factor: int = 3,
    ignore_identical_ids: bool = True,
    overlap: bool = True,
    overlap_k: int = 20,
    batch_size: int = 256,
    progress: Progress | None = None,
    dataset: Mapping[str, Any] | None = None,
) -> EvaluationResult:
    """Evaluate each retriever on one set of questions and return every system's metrics.

    Give exactly one of: ``queries`` + ``qrels`` (``{qid: text}``, ``{qid: {doc_id: grade}}``;
    only judged queries are searched; nDCG@10, MRR@10, Recall@20/100/1000 and MAP via
    pytrec_eval, passages aggregated to documents by their best score when the store splits
    documents), ``answers`` (:class:`QAExample`\\ s or ``(question, [answers])``; DPR top-k
    accuracy, ``match`` = ``string`` or ``regex``), or ``multihop`` (:class:`MultiHopExample`\\ s
    or ``(question, [gold])``; top-k accuracy when all gold passage ids, or with
    ``gold_by="title"`` all gold titles, are retrieved).

    ``store``: the corpus store searched (a :class:`CorpusStore`, its folder, or a mapping
    from system name to store); by default a retriever's own ``store`` attribute, or the store
    its index.json names (:class:`DenseIndex`, :class:`BM25Index`). Answers and
    gold titles need it; judgments need it only when passages are not whole documents.
    ``ignore_identical_ids`` drops a document whose id is the query's id from that query's
    results (BEIR's default, for corpora where queries are also documents).
    """
    given = [n for n, v in (("qrels", qrels), ("answers", answers), ("multihop", multihop)) if v is not None]
    if len(given) != 1:
        raise EvaluationError(f"give exactly one of qrels, answers or multihop, got {given or 'none'}")
    kind = given[0]
    names = [r.name for r in retrievers]
    if not retrievers:
        raise EvaluationError("no retrievers to evaluate")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise EvaluationError(f"two systems share the name {duplicates[0]!r}; results are keyed by name")
    if gold_by not in ("passage", "title"):
        raise EvaluationError(f"gold_by must be 'passage' or 'title', got {gold_by!r}")

    if kind == "qrels":
        if queries is None:
            raise EvaluationError("qrels need the queries they judge")
        missing = [q for q in qrels if q not in queries]
        if missing:
            raise EvaluationError(f"{len(missing)} judged query id(s) have no text (e.g. {', '.join(missing[:5])})")
        qrels = {q: dict(d) for q, d in qrels.items()}
        qids = list(qrels)
        texts = [queries[q] for q in qids]
        depth = depth or DEFAULT_QRELS_DEPTH
        ks_used: list[int] = []
    elif kind == "answers":
        examples = _as_qa(answers)
        qids, texts = [e.qid for e in examples], [e.question for e in examples]
        ks_used = sorted(set(ks or DEFAULT_QA_KS))
        depth = depth or ks_used[-1]
        matcher = AnswerMatcher(match)
    else:
        mh = _as_multihop(multihop)
        qids, texts = [e.qid for e in mh], [e.question for e in mh]
        ks_used = sorted(set(ks or DEFAULT_MULTIHOP_KS))
        depth = depth or ks_used[-1]
    dropped = [k for k in ks_used if k > depth]
    ks_used = [k for k in ks_used if k <= depth] or [depth]
    if len(set(qids)) != len(qids):
        raise EvaluationError("question ids are not unique")

    stores = _Stores(store)
    systems: dict[str, dict[str, float]] = {}
    per_query: dict[str, dict[str, dict[str, Any]]] = {}
    curves: dict[str, dict[str, list]] = {}
    runs: dict[str, list[list[Hit]]] = {}
    success_ranks: dict[str, list[int | None]] = {}
    lookups: dict[str, PassageLookup | None] = {}
    notes: list[str] = []
    if dropped:
        notes.append(f"cut-offs {', '.join(map(str, dropped))} exceed the depth {depth} and are not reported")
    if kind == "answers" and match == "regex":
        bad = sorted({a for ex in examples for a in invalid_patterns(ex.answers)})
        if bad:
            notes.append(f"{len(bad)} answer pattern(s) are not valid regular expressions and never match "
                         f"(e.g. {bad[0]!r})")
    try:
        for retriever in retrievers:
            name = retriever.name
            lookup = lookups[name] = stores.for_system(retriever)
            if kind == "answers" and lookup is None:
                raise EvaluationError(f"{name}: answer matching needs passage texts: give the corpus store")
            if kind == "multihop" and gold_by == "title" and lookup is None:
                raise EvaluationError(f"{name}: gold titles need the corpus store (passage -> title)")
            fetch = depth
            if kind == "qrels" and lookup is not None and not lookup.documents_whole:
                fetch = depth * maxp_factor
            hits = _search_all(retriever, texts, fetch, batch_size, progress)
            runs[name] = hits if fetch == depth else [row[:depth] for row in hits]

            if kind == "qrels":
                run, unknown = _doc_run(qids, hits, lookup, depth, ignore_identical_ids)
                if unknown:
                    notes.append(f"{name}: {unknown} retrieved passage(s) are not in the store; kept under "
                                 "their own ids")
                means, pq = qrels_metrics(qrels, run)
                systems[name] = {**means, "queries": len(qids)}
                per_query[name] = pq
                curve = recall_curve(qrels, run, [c for c in CURVE_CUTOFFS if c <= depth])
                curves[name] = {"k": list(curve), "value": list(curve.values()), "metric": "Recall@k"}
                continue
            if kind == "answers":
                ranks = _first_answer_ranks(examples, hits, lookup, matcher)
                key = "answer_rank"
            else:
                ranks = _all_gold_ranks(mh, hits, lookup, gold_by)
                key = "all_gold_rank"
            success_ranks[name] = ranks
            acc = accuracy_at(ranks, ks_used)
            systems[name] = {**{f"Acc@{k}": v for k, v in acc.items()}, "queries": len(qids)}
            per_query[name] = {q: {key: r} for q, r in zip(qids, ranks)}
            curve = accuracy_at(ranks, range(1, depth + 1))
            curves[name] = {"k": list(curve), "value": list(curve.values()),
                            "metric": "answer in top k" if kind == "answers" else "all gold in top k"}

        info: dict[str, Any] = {"kind": kind, "queries": len(qids), "depth": depth, **(dataset or {})}
        if kind == "qrels":
            info.update(metrics=list(QRELS_METRICS), judgments=sum(len(d) for d in qrels.values()),
                        ignore_identical_ids=ignore_identical_ids,
                        aggregation={n: ("identity (documents kept whole)" if lk is None or lk.documents_whole
                                         else f"MaxP over the top {depth * maxp_factor} passages")
                                     for n, lk in lookups.items()})
        else:
            info.update(ks=ks_used)
            if kind == "answers":
                info["match"] = match
            else:
                info["gold_by"] = gold_by
        if notes:
            info["notes"] = notes

        overlap_result = None
        any_lookup = next((lk for lk in lookups.values() if lk is not None), None)
        if overlap and any_lookup is not None:
            if kind == "qrels":
                refs = _qrels_references(qrels, any_lookup)
                reference = "the judged relevant documents (the union of their words)"
                metric_name = "nDCG@10"
                values = {n: [per_query[n][q]["nDCG@10"] for q in qids] for n in systems}
            elif kind == "answers":
                refs, reference = _answer_references(examples, success_ranks, runs, lookups)
                metric_name = f"Acc@{overlap_k}"
                values = {n: [1.0 if r is not None and r <= overlap_k else 0.0 for r in success_ranks[n]]
                          for n in systems}
            else:
                refs = _multihop_references(mh, gold_by, any_lookup)
                reference = "the gold passages (the union of their words)" if gold_by == "passage" else \
                    "the gold titles' documents (the union of their words)"
                metric_name = f"Acc@{overlap_k}"
                values = {n: [1.0 if r is not None and r <= overlap_k else 0.0 for r in success_ranks[n]]
                          for n in systems}
            overlap_result = _overlap_analysis(qids, texts, refs, values, metric_name, reference, runs, lookups)
        config = {"ks": ks_used, "depth": depth, "match": match if kind == "answers" else None,
                  "maxp_factor": maxp_factor, "ignore_identical_ids": ignore_identical_ids,
                  "overlap_k": overlap_k, "gold_by": gold_by if kind == "multihop" else None}
        return EvaluationResult(kind=kind, systems=systems, per_query=per_query, dataset=info, config=config,
                                overlap=overlap_result, curves=curves, query_ids=qids, runs=runs)
    finally:
        stores.close()


# --- Q-P overlap (HLP section 6.2) ---------------------------------------------------------

def _qrels_references(qrels, lookup: PassageLookup) -> list[str | None]:
    relevant = {q: [d for d, g in docs.items() if g >= 1] for q, docs in qrels.items()}
    doc_texts = lookup.document_texts({d for ds in relevant.values() for d in ds})
    refs = []
    for q in qrels:
        found = [doc_texts[d] for d in relevant[q] if d in doc_texts]
        refs.append(" ".join(found) if found else None)
    return refs


def _answer_references(examples: list[QAExample], ranks: dict[str, list[int | None]],
                       runs: dict[str, list[list[Hit]]], lookups) -> tuple[list[str | None], str]:
    """Each question's reference passage: its gold passage when the file gives one (DPR JSON
    positive_ctxs), else the best-ranked answer-bearing passage over all systems (ties: the
    system listed first)."""
    refs: list[str | None] = [None] * len(examples)
    wanted: dict[str, list[tuple[int, str]]] = {}
    used_gold = used_retrieved = 0
    for i, ex in enumerate(examples):
        if ex.gold and isinstance(ex.gold[0].get("text"), str):
            refs[i] = ex.gold[0]["text"]
            used_gold += 1
            continue
        best = None
        for name, r in ((n, rk[i]) for n, rk in ranks.items()):
            if r is not None and (best is None or r < best[1]):
                best = (name, r)
        if best is not None:
            wanted.setdefault(best[0], []).append((i, runs[best[0]][i][best[1] - 1].passage_id))
            used_retrieved += 1
    for name, items in wanted.items():
        texts = lookups[name].texts(pid for _, pid in items)
        for i, pid in items:
            refs[i] = texts.get(pid)
    if used_gold and not used_retrieved:
        reference = "the gold passage (the first positive context of the file)"
    elif used_gold:
        reference = "the gold passage where the file gives one, else the best-ranked answer-bearing passage"
    else:
        reference = "the best-ranked answer-bearing passage among all systems' results"
    return refs, reference


def _multihop_references(examples: list[MultiHopExample], by: str, lookup: PassageLookup) -> list[str | None]:
    if by == "passage":
        texts = lookup.texts({g for ex in examples for g in ex.gold})
        parts = [[texts.get(g) for g in ex.gold] for ex in examples]
    else:
        doc_of = lookup.title_documents({g for ex in examples for g in ex.gold})
        doc_texts = lookup.document_texts(set(doc_of.values()))
        parts = [[doc_texts.get(doc_of.get(g)) for g in ex.gold] for ex in examples]
    return [" ".join(p for p in ps if p) or None for ps in parts]


def _overlap_analysis(qids: list[str], questions: list[str], refs: list[str | None], values: dict[str, list[float]],
                      metric: str, reference: str, runs: dict[str, list[list[Hit]]], lookups) -> dict[str, Any]:
    labels = bucket_labels() + [NO_REFERENCE]
    q_words = [word_tokens(q) for q in questions]
    ratios = [overlap_ratio(w, set(word_tokens(ref))) if ref is not None else None
              for w, ref in zip(q_words, refs)]
    buckets = [bucket_of(r) for r in ratios]
    n = len(questions)
    table: dict[str, dict[str, Any]] = {}
    for label in labels:
        members = [i for i, b in enumerate(buckets) if b == label]
        if label == NO_REFERENCE and not members:
            continue
        table[label] = {"n": len(members), "share": len(members) / n if n else 0.0,
                        "systems": {s: (sum(v[i] for i in members) / len(members) if members else None)
                                    for s, v in values.items()}}
    known = [r for r in ratios if r is not None]
    top1: dict[str, dict[str, Any]] = {}
    for name, hits in runs.items():
        lookup = lookups.get(name)
        if lookup is None:
            continue
        firsts = [row[0].passage_id if row else None for row in hits]
        texts = lookup.texts({p for p in firsts if p is not None})
        r1 = [overlap_ratio(w, set(word_tokens(texts[p]))) if p is not None and texts.get(p) is not None else None
              for w, p in zip(q_words, firsts)]
        got = [r for r in r1 if r is not None]
        dist = {label: 0 for label in bucket_labels()}
        for r in got:
            dist[bucket_of(r)] += 1
        top1[name] = {"mean": sum(got) / len(got) if got else None,
                      "share": {k: (v / len(got) if got else 0.0) for k, v in dist.items()}}
    return {"reference": reference, "metric": metric, "edges": list(OVERLAP_EDGES),
            "tokenizer": "DPR simple tokenizer, word tokens, lower-cased",
            "mean": sum(known) / len(known) if known else None, "buckets": table, "top1": top1,
            "per_query": {q: (round(r, 4) if r is not None else None) for q, r in zip(qids, ratios)}}
