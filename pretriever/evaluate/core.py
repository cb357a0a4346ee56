"""``evaluate_retrievers``: run every system over the same questions and score them alike.

Systems are anything with the :class:`pretriever.retrieval.Retriever` interface; nothing here
knows how a system searches. The corpus store (see :mod:`pretriever.data.lookup`) supplies
what the hits alone do not: passage -> document for judgments, passage text for answers and
overlap, titles for multi-hop gold titles. A :class:`pretriever.retrieval.Searcher` (what
:meth:`pretriever.index.IndexFolder.open` returns) brings its own; any other system uses the one given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pretriever.data import CorpusStore, PassageLookup
from pretriever.data.qa import word_tokens
from pretriever.evaluate.tasks import EvaluationError, EvaluationTask, SystemScore
from pretriever.metrics import NO_REFERENCE, OVERLAP_EDGES, bucket_labels, bucket_of, overlap_ratio
from pretriever.progress import QUIET, Reporter
from pretriever.retrieval import Hit, Retriever, Searcher

StoreLike = CorpusStore | PassageLookup | Path | str


@dataclass
class EvaluationResult:
    """Every system's scores on one set of questions: what ``results.json`` holds (:meth:`to_json`; its layout is in
    the package docstring), plus the raw rankings for ``--save-runs``.
    """

    kind: str  # qrels | answers | multihop
    systems: dict[str, dict[str, float]]  # system -> metric -> mean value
    per_query: dict[str, dict[str, dict[str, Any]]]  # system -> query id -> values
    dataset: dict[str, Any]
    config: dict[str, Any] = field(default_factory=dict)
    overlap: dict[str, Any] | None = None
    curves: dict[str, dict[str, list]] = field(default_factory=dict)  # system -> {"k": [...], "value": [...]}
    query_ids: list[str] = field(default_factory=list)
    runs: dict[str, list[list[Hit]]] = field(default_factory=dict)  # the raw rankings, in query order (not saved)
    reader: dict[str, Any] | None = None  # with a reader: its end-to-end scores behind each system

    def to_json(self) -> dict[str, Any]:
        data = {"systems": self.systems, "per_query": self.per_query, "config": self.config,
                "dataset": self.dataset, "overlap": self.overlap, "curves": self.curves}
        return data if self.reader is None else {**data, "reader": self.reader}


def _search_all(retriever: Retriever, texts: list[str], k: int, batch_size: int,
                report: Reporter) -> list[list[Hit]]:
    hits: list[list[Hit]] = []
    task = f"searching: {retriever.name}"
    report.progress(task, 0, len(texts), unit="queries")
    for start in range(0, len(texts), batch_size):
        batch = texts[start:start + batch_size]
        found = retriever.search(batch, k)
        if len(found) != len(batch):
            raise EvaluationError(f"{retriever.name}: search returned {len(found)} result lists for "
                                  f"{len(batch)} queries")
        hits.extend([Hit(str(h[0]), float(h[1])) for h in row[:k]] for row in found)
        report.progress(task, len(hits), len(texts), unit="queries")
    return hits


@dataclass
class EvaluationOptions:
    """How :func:`evaluate_retrievers` runs a task, whatever its kind (what is asked lives in the task)."""

    store: StoreLike | None = None  # the corpus store for every system (else a Searcher's own, else none)
    overlap: bool = True  # the Q-P overlap analysis (needs a store)
    batch_size: int = 256  # questions per search call
    dataset: Mapping[str, Any] | None = None  # the caller's description of its inputs (name, files, "notes")


def evaluate_retrievers(retrievers: Sequence[Retriever], task: EvaluationTask,
                        options: EvaluationOptions | None = None, report: Reporter = QUIET) -> EvaluationResult:
    """Evaluate each retriever on ``task``'s questions and return every system's metrics.

    ``task`` is one of :mod:`pretriever.evaluate.tasks`: :class:`QrelsTask` (judgments: nDCG@10, MRR@10,
    Recall@20/100/1000 and MAP via pytrec_eval, passages aggregated to documents by their best score when the
    store splits documents), :class:`AnswersTask` (DPR top-k accuracy) or :class:`MultiHopTask` (top-k accuracy
    when all gold passages or titles are retrieved); it holds the questions and what is reported (cut-offs,
    depth, matching). ``options`` (:class:`EvaluationOptions`) says how to run it.

    ``options.store``: the corpus store searched (a :class:`CorpusStore`, its folder, or an open
    :class:`PassageLookup`), for every system; without it, a :class:`Searcher` reads its own
    store (``lookup``; :meth:`pretriever.index.IndexFolder.open` opens the store its index names) and
    any other system has none. Answers and gold titles need a store; judgments need one only
    when passages are not whole documents. ``report`` hears each system's queries searched.

    Args:
        retrievers: the systems, each with a unique ``name``.
        task: the questions and what is reported (:mod:`pretriever.evaluate.tasks`).
        options: how to run it (None: :class:`EvaluationOptions`' defaults).
        report: hears each system's queries searched.

    Returns:
        Every system's means, per-question values, curves and the overlap analysis.

    Raises:
        EvaluationError: inputs that cannot be evaluated (duplicate names, no store for answer matching, ...).

    Example::

        from pretriever.evaluate.core import EvaluationOptions, evaluate_retrievers
        from pretriever.evaluate.tasks import QrelsTask
        from pretriever.retrieval import Hit

        class Fixed:  # any Retriever: a name and search(queries, k)
            name = "fixed"

            def search(self, queries, k):
                return [[Hit("doc-3", 2.0), Hit("doc-7", 1.0)][:k] for _ in queries]

        task = QrelsTask({"q1": "vitamin D and fractures"}, {"q1": {"doc-7": 1}}, depth=10)
        result = evaluate_retrievers([Fixed()], task, EvaluationOptions(overlap=False))
        assert result.systems["fixed"]["MRR@10"] == 0.5 and result.config["maxp_factor"] == 3
    """
    options = options or EvaluationOptions()
    store, dataset = options.store, options.dataset
    names = [r.name for r in retrievers]
    if not retrievers:
        raise EvaluationError("no retrievers to evaluate")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise EvaluationError(f"two systems share the name {duplicates[0]!r}; results are keyed by name")
    if len(set(task.qids)) != len(task.qids):
        raise EvaluationError("question ids are not unique")

    given = PassageLookup(store) if store is not None and not isinstance(store, PassageLookup) else store
    scores: dict[str, SystemScore] = {}
    runs: dict[str, list[list[Hit]]] = {}
    lookups: dict[str, PassageLookup | None] = {}
    notes = [*(dataset or {}).get("notes", []), *task.notes()]  # the caller's notes on its inputs first
    source = next((str((dataset or {})[key]) for key in ("qrels_file", "answers_file", "multihop_file")
                   if key in (dataset or {})), f"the {task.kind} questions")
    checked: set[Path] = set()
    try:
        for retriever in retrievers:  # every input check before any search
            own = retriever.lookup if isinstance(retriever, Searcher) else None
            lookup = lookups[retriever.name] = given or own
            task.check_lookup(retriever.name, lookup)
            if lookup is not None and lookup.path not in checked:  # once per store
                checked.add(lookup.path)
                notes += task.check_gold(lookup, source)
        for retriever in retrievers:
            name = retriever.name
            lookup = lookups[name]
            fetch = task.fetch_depth(lookup)
            hits = _search_all(retriever, task.texts, fetch, options.batch_size, report)
            runs[name] = hits if fetch == task.depth else [row[:task.depth] for row in hits]
            scores[name] = task.score(name, hits, lookup)
            notes += scores[name].notes

        info: dict[str, Any] = {"kind": task.kind, "queries": len(task.qids), "depth": task.depth, **(dataset or {}),
                                **task.info(lookups)}
        if notes:
            info["notes"] = notes
        overlap_result = None
        if options.overlap and any(lk is not None for lk in lookups.values()):
            refs, reference = task.references(scores, runs, lookups)
            overlap_result = _overlap_analysis(task, refs, reference, scores, runs, lookups)
        config = {"ks": task.ks, "depth": task.depth, "match": task.match,
                  "maxp_factor": task.maxp_factor, "ignore_identical_ids": task.ignore_identical_ids,
                  "overlap_k": task.overlap_k, "gold_by": task.gold_by}
        return EvaluationResult(kind=task.kind, systems={n: s.means for n, s in scores.items()},
                                per_query={n: s.per_query for n, s in scores.items()}, dataset=info, config=config,
                                overlap=overlap_result, curves={n: s.curve for n, s in scores.items()},
                                query_ids=task.qids, runs=runs)
    finally:
        if given is not store:  # opened here
            given.close()


# --- Q-P overlap (HLP section 6.2) ---------------------------------------------------------

def _overlap_analysis(task: EvaluationTask, refs: list[str | None], reference: str, scores: dict[str, SystemScore],
                      runs: dict[str, list[list[Hit]]], lookups: dict[str, PassageLookup | None]) -> dict[str, Any]:
    """Each question's overlap with its reference text (``refs``, described by ``reference``), bucketed, with every
    system's ``task.overlap_metric`` per bucket and the overlap of its own top-1 passage."""
    qids, questions, metric = task.qids, task.texts, task.overlap_metric
    values = {n: s.overlap_values for n, s in scores.items()}
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
