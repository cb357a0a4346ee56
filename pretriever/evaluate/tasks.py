"""The three kinds of evaluation, one small class each (as sentence-transformers' evaluators).

A task knows its questions, how deep each system must search, how to score one system's
hits, which text is each question's reference for the Q-P overlap analysis, and what it
reports about the dataset. :func:`pretriever.evaluate.core.evaluate_retrievers` runs any of
them the same way, so a new kind of evaluation is one more class here.

* :class:`QrelsTask` - judgments (BEIR/TREC): nDCG@10, MRR@10, Recall@20/100/1000, MAP via
  pytrec_eval; passages aggregated to documents by their best score (MaxP).
* :class:`AnswersTask` - open-domain QA: top-k accuracy with DPR's answer matching.
* :class:`MultiHopTask` - multi-hop: top-k accuracy when every gold passage or title is retrieved.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pretriever.data import AnswerMatcher, MultiHopExample, PassageLookup, QAExample
from pretriever.data.qa import invalid_patterns
from pretriever.errors import PretrieverError
from pretriever.evaluate.config import DEFAULT_MULTIHOP_KS, DEFAULT_OVERLAP_K, DEFAULT_QA_KS, DEFAULT_QRELS_DEPTH
from pretriever.metrics import CURVE_CUTOFFS, QRELS_METRICS, accuracy_at, qrels_metrics, recall_curve, trec_order
from pretriever.retrieval import Hit


class EvaluationError(PretrieverError, ValueError):
    """The inputs cannot be evaluated as given (no store for answer matching, duplicate names, ...)."""


@dataclass
class SystemScore:
    """One system's figures on a task."""

    means: dict[str, float]  # metric -> mean over the questions
    per_query: dict[str, dict[str, Any]]  # question id -> values
    curve: dict[str, list]  # {"k": [...], "value": [...], "metric": ...}
    overlap_values: list[float]  # per question, the metric the overlap buckets report
    success_ranks: list[int | None] = field(default_factory=list)  # answers / multi-hop: rank of success
    notes: list[str] = field(default_factory=list)


class EvaluationTask:
    """One kind of evaluation: what it fetches, how it scores one system's hits, what it reports.

    :func:`pretriever.evaluate.core.evaluate_retrievers` searches ``texts`` with every system to
    ``fetch_depth(lookup)``, hands each system's hits to ``score``, and builds the Q-P overlap analysis
    from ``references`` and each question's ``overlap_metric`` value; nothing there knows the kind.

    Requirements (of a subclass):
        ``kind`` (the name in results.json), ``qids`` and ``texts`` (the questions, in order),
        ``depth`` and ``ks`` (the cut-offs reported), and ``score``, ``references`` and
        ``overlap_metric``. ``check_lookup`` refuses a system whose store the task needs but lacks.

    Example::

        from pretriever.evaluate.tasks import QrelsTask
        from pretriever.retrieval import Hit

        task = QrelsTask({"q1": "vitamin D and fractures"}, {"q1": {"doc-7": 1}}, depth=10)
        hits = [[Hit("doc-3", 2.0), Hit("doc-7", 1.5)]]  # one system's ranking for each of task.texts
        score = task.score("my-system", hits, lookup=None)  # no store: ids are documents
        assert score.means["MRR@10"] == 0.5 and score.per_query["q1"]["nDCG@10"] < 1

    The kinds follow sentence-transformers' evaluators (one class per kind of judgment): see
    :class:`QrelsTask`, :class:`AnswersTask` and :class:`MultiHopTask`.

    Relations:
        :class:`QrelsTask` (judgments), :class:`AnswersTask` (QA answers) and :class:`MultiHopTask` (gold sets)
        subclass it, the last two through the shared top-k accuracy base;
        :func:`pretriever.evaluate.core.make_task` picks one from the inputs.
    """

    kind: ClassVar[str]
    qids: list[str]
    texts: list[str]
    depth: int
    ks: list[int]
    dropped_ks: list[int] = []  # cut-offs deeper than the depth (set by _cut_ks)
    match: str | None = None  # answers: how answers are matched
    gold_by: str | None = None  # multi-hop: passage or title
    maxp_factor: int | None = None  # judgments: passages fetched per document kept
    ignore_identical_ids: bool | None = None  # judgments: a document with the query's id left out
    overlap_k: int | None = None  # accuracy tasks: the cut-off reported per overlap bucket

    def _cut_ks(self, ks: Sequence[int] | None, default: Sequence[int], depth: int | None) -> None:
        wanted = sorted(set(ks or default))
        self.depth = depth or wanted[-1]
        self.dropped_ks = [k for k in wanted if k > self.depth]
        self.ks = [k for k in wanted if k <= self.depth] or [self.depth]

    def notes(self) -> list[str]:
        """What the reader of the results must know about the inputs."""
        if self.dropped_ks:
            return [f"cut-offs {', '.join(map(str, self.dropped_ks))} exceed the depth {self.depth} and are not "
                    "reported"]
        return []

    def check_lookup(self, name: str, lookup: PassageLookup | None) -> None:
        """Refuse a system whose store is missing when the task needs one.

        Args:
            name: the system's name, for the error.
            lookup: the corpus store the system is read with (None: it has none).

        Raises:
            EvaluationError: the task needs a store and ``lookup`` is None.
        """

    def check_gold(self, lookup: PassageLookup, source: str) -> list[str]:
        """Refuse questions whose gold (judged documents, gold passages) is nowhere in the store searched, and
        return a warning with counts when only some of it is missing (those questions can only score 0).

        Args:
            lookup: the corpus store searched (checked once per store).
            source: the input file the gold comes from, named in the messages.

        Returns:
            The warnings for the results' notes; empty when every gold id is in the store.

        Raises:
            EvaluationError: none of the gold is in the store (the file belongs to another corpus).
        """
        return []

    def fetch_depth(self, lookup: PassageLookup | None) -> int:
        """How many hits to ask a system for per question, so that ``depth`` of them can be scored.

        Args:
            lookup: the system's corpus store (None: it has none).

        Returns:
            ``depth``, or more when passages must first be merged into documents.
        """
        return self.depth

    def score(self, name: str, hits: list[list[Hit]], lookup: PassageLookup | None) -> SystemScore:
        """One system's figures on the task's questions.

        Args:
            name: the system's name, for its notes.
            hits: the system's hits for each of ``texts``, best first, ``fetch_depth(lookup)`` deep.
            lookup: the system's corpus store (None: hit ids are taken as they are).

        Returns:
            A :class:`SystemScore`: the means, per-question values, curve, overlap values and notes.
        """
        raise NotImplementedError

    def references(self, scores: dict[str, SystemScore], runs: dict[str, list[list[Hit]]],
                   lookups: dict[str, PassageLookup | None]) -> tuple[list[str | None], str]:
        """Each question's reference text for the overlap analysis, and what it is.

        Args:
            scores: each system's :meth:`score`, by name.
            runs: each system's hits for each question, cut to ``depth``, by name.
            lookups: each system's corpus store (None: it has none), by name; at least one is a store.

        Returns:
            The reference text of each question (None: it has none), and what the references are, in words.
        """
        raise NotImplementedError

    @property
    def overlap_metric(self) -> str:
        raise NotImplementedError

    def info(self, lookups: dict[str, PassageLookup | None]) -> dict[str, Any]:
        """What the results file says about the dataset, beyond kind, size and depth.

        Args:
            lookups: each system's corpus store (None: it has none), by name.

        Returns:
            The entries added to the results' ``dataset`` (the cut-offs, the matching, ...).
        """
        return {"ks": self.ks}



class QrelsTask(EvaluationTask):
    """Judged queries, as BEIR and TREC give them: nDCG@10, MRR@10, Recall@20/100/1000 and MAP by
    pytrec_eval, plus a Recall@k curve.

    Only judged queries are searched. Judged ids are documents: when the store cuts documents into
    passages, ``maxp_factor x depth`` passages are fetched and a document scores its best passage
    (MaxP). A document whose id is the query's own id is left out with ``ignore_identical_ids``
    (BEIR's default, for corpora whose queries are also documents).

    Requirements:
        1. Query texts for every judged query id (an :class:`EvaluationError` otherwise).
        2. A store only when passages are not whole documents (for passage -> document).

    Inputs:
        +-------------------------------+--------------------------------+
        | Queries                       | Judgments                      |
        +===============================+================================+
        | ``{qid: text}``               | ``{qid: {doc_id: grade}}``     |
        +-------------------------------+--------------------------------+

    Args:
        queries: each query's text, by query id (queries without judgments are not searched).
        qrels: each judged query's documents and their grades (>= 1: relevant), by query id.
        depth: documents kept per query (None: 1000, for Recall@1000 and MAP).
        maxp_factor: passages fetched per document kept, when the store cuts documents into passages.
        ignore_identical_ids: leave out a document whose id is the query's own id.

    Example::

        from pretriever.evaluate.tasks import QrelsTask
        from pretriever.retrieval import Hit

        task = QrelsTask({"q1": "vitamin D and fractures", "q2": "aspirin"},
                         {"q1": {"doc-7": 1}, "q2": {"doc-1": 2, "doc-2": 1}}, depth=100)
        score = task.score("bm25", [[Hit("doc-7", 3.0)], [Hit("doc-2", 2.0), Hit("doc-1", 1.0)]], lookup=None)
        assert score.means["MRR@10"] == 1.0 and score.means["Recall@100"] == 1.0
        assert score.means["nDCG@10"] < 1.0  # q2 ranks its grade-1 document above the grade-2 one

    From the command line: ``pretriever evaluate --index scifact-index/ --bm25 --queries scifact/``.

    References:
        Thakur et al., "BEIR: A Heterogeneous Benchmark for Zero-shot Evaluation of Information
        Retrieval Models", NeurIPS 2021 Datasets and Benchmarks (the metrics and
        ``ignore_identical_ids``); HLP (Zhou et al., 2022) section 6.2 for the Q-P overlap analysis.
    """

    kind = "qrels"

    def __init__(self, queries: Mapping[str, str], qrels: Mapping[str, Mapping[str, int]], depth: int | None = None,
                 maxp_factor: int = 3, ignore_identical_ids: bool = True):
        missing = [q for q in qrels if q not in queries]
        if missing:
            raise EvaluationError(f"{len(missing)} judged query id(s) have no text (e.g. {', '.join(missing[:5])})")
        self.qrels = {q: dict(d) for q, d in qrels.items()}
        self.qids = list(self.qrels)
        self.texts = [queries[q] for q in self.qids]
        self.depth = depth or DEFAULT_QRELS_DEPTH
        self.ks = [self.depth]
        self.maxp_factor = maxp_factor
        self.ignore_identical_ids = ignore_identical_ids

    def check_gold(self, lookup, source):
        relevant = {q: {d for d, g in docs.items() if g >= 1} for q, docs in self.qrels.items()}
        if not any(relevant.values()):  # only non-relevant grades: the judged documents are what can be checked
            relevant = {q: set(docs) for q, docs in self.qrels.items()}
        return gold_missing("judged relevant documents", relevant, lookup.known_documents, lookup, source)

    def fetch_depth(self, lookup: PassageLookup | None) -> int:
        whole = lookup is None or lookup.documents_whole
        return self.depth if whole else self.depth * self.maxp_factor

    def score(self, name: str, hits: list[list[Hit]], lookup: PassageLookup | None) -> SystemScore:
        run, unknown = doc_run(self.qids, hits, lookup, self.depth, self.ignore_identical_ids)
        means, per_query = qrels_metrics(self.qrels, run)
        curve = recall_curve(self.qrels, run, [c for c in CURVE_CUTOFFS if c <= self.depth])
        notes = [f"{name}: {unknown} retrieved passage(s) are not in the store; kept under their own ids"] \
            if unknown else []
        return SystemScore({**means, "queries": len(self.qids)}, per_query,
                           {"k": list(curve), "value": list(curve.values()), "metric": "Recall@k"},
                           [per_query[q]["nDCG@10"] for q in self.qids], notes=notes)

    @property
    def overlap_metric(self) -> str:
        return "nDCG@10"

    def references(self, scores, runs, lookups):
        lookup = next(lk for lk in lookups.values() if lk is not None)
        relevant = {q: [d for d, g in docs.items() if g >= 1] for q, docs in self.qrels.items()}
        doc_texts = lookup.document_texts({d for ds in relevant.values() for d in ds})
        refs = []
        for q in self.qrels:
            found = [doc_texts[d] for d in relevant[q] if d in doc_texts]
            refs.append(" ".join(found) if found else None)
        return refs, "the judged relevant documents (the union of their words)"

    def info(self, lookups):
        return {"metrics": list(QRELS_METRICS), "judgments": sum(len(d) for d in self.qrels.values()),
                "ignore_identical_ids": self.ignore_identical_ids,
                "aggregation": {n: ("identity (documents kept whole)" if lk is None or lk.documents_whole
                                    else f"MaxP over the top {self.depth * self.maxp_factor} passages")
                                for n, lk in lookups.items()}}



class _AccuracyTask(EvaluationTask):
    """Top-k accuracy tasks: a question succeeds at k when its success rank is <= k."""

    rank_key: ClassVar[str]
    curve_metric: ClassVar[str]

    def __init__(self, overlap_k: int):
        self.overlap_k = overlap_k

    def success_ranks(self, hits: list[list[Hit]], lookup: PassageLookup | None) -> list[int | None]:
        """The rank at which each question succeeds in one system's hits.

        Args:
            hits: the system's hits for each of ``texts``, best first.
            lookup: the system's corpus store (None: it has none).

        Returns:
            Per question, the 1-based rank of success, or None when it does not succeed within the hits.
        """
        raise NotImplementedError

    def score(self, name, hits, lookup):
        ranks = self.success_ranks(hits, lookup)
        acc = accuracy_at(ranks, self.ks)
        curve = accuracy_at(ranks, range(1, self.depth + 1))
        return SystemScore({**{f"Acc@{k}": v for k, v in acc.items()}, "queries": len(self.qids)},
                           {q: {self.rank_key: r} for q, r in zip(self.qids, ranks)},
                           {"k": list(curve), "value": list(curve.values()), "metric": self.curve_metric},
                           [1.0 if r is not None and r <= self.overlap_k else 0.0 for r in ranks], ranks)

    @property
    def overlap_metric(self) -> str:
        return f"Acc@{self.overlap_k}"


class AnswersTask(_AccuracyTask):
    """Open-domain QA: top-k retrieval accuracy, the share of questions with an answer-bearing passage
    among the first k (Acc@k), and the rank of the first such passage.

    A passage bears an answer as in DPR: ``match="string"`` looks for the answer's tokens in the
    passage's tokens (DPR's simple tokenizer on Unicode NFD text, lower-cased); ``match="regex"``
    treats answers as patterns (CuratedTREC). For the Q-P overlap analysis, each question's reference is its
    gold passage when the file gives one (DPR JSON ``positive_ctxs``), else the best-ranked answer-bearing passage.

    Requirements:
        1. The corpus store (passage texts): :meth:`check_lookup` refuses a system without one.
        2. Question ids unique (numbered by position when the file has none).

    Inputs:
        +----------------------------------------------------------------+--------------------+
        | Questions                                                      | Match              |
        +================================================================+====================+
        | :class:`~pretriever.data.QAExample` s or (question, [answers]) | string or regex    |
        +----------------------------------------------------------------+--------------------+

    Args:
        examples: the questions with their answers (an answer alone may be a string).
        match: ``string`` (DPR's token matching) or ``regex`` (answers are patterns).
        ks: the cut-offs of Acc@k (None: 1, 5, 20, 100); those deeper than ``depth`` are dropped, with a note.
        depth: hits fetched per question (None: the largest k).
        overlap_k: the Acc@k reported per bucket of the Q-P overlap analysis.

    Example::

        from pretriever.data import PassageLookup
        from pretriever.evaluate.tasks import AnswersTask
        from pretriever.retrieval import Hit

        lookup = PassageLookup("scifact-store/")  # pretriever corpus build scifact/ --out scifact-store/
        [(pid, text)] = lookup.sample(1, seed=0, prepend_title=False)
        answer = text.split()[3]  # a word of that passage
        task = AnswersTask([("a question", [answer])], match="string", ks=[1, 5], depth=5, overlap_k=5)
        score = task.score("dense", [[Hit("not-in-the-store", 2.0), Hit(pid, 1.0)]], lookup)
        assert score.success_ranks == [2] and score.means["Acc@1"] == 0.0 and score.means["Acc@5"] == 1.0
        lookup.close()

    From the command line: ``pretriever evaluate --index enwiki-index/ --answers nq-open-dev.jsonl``.

    References:
        Karpukhin et al., "Dense Passage Retrieval for Open-Domain Question Answering", EMNLP 2020
        (top-k accuracy and its answer matching); HLP (Zhou et al., 2022), Tables 1 and 2.
    """

    kind = "answers"
    rank_key = "answer_rank"
    curve_metric = "answer in top k"

    def __init__(self, examples: Sequence[QAExample] | Sequence[tuple[str, Sequence[str]]], match: str = "string",
                 ks: Sequence[int] | None = None, depth: int | None = None, overlap_k: int = DEFAULT_OVERLAP_K):
        super().__init__(overlap_k)
        self.examples = as_qa(examples)
        self.qids, self.texts = [e.qid for e in self.examples], [e.question for e in self.examples]
        self.match = match
        self.matcher = AnswerMatcher(match)
        self._cut_ks(ks, DEFAULT_QA_KS, depth)

    def notes(self):
        notes = super().notes()
        if self.match == "regex":
            bad = sorted({a for ex in self.examples for a in invalid_patterns(ex.answers)})
            if bad:
                notes.append(f"{len(bad)} answer pattern(s) are not valid regular expressions and never match "
                             f"(e.g. {bad[0]!r})")
        return notes

    def check_lookup(self, name, lookup):
        if lookup is None:
            raise EvaluationError(f"{name}: answer matching needs passage texts: give the corpus store")

    def check_gold(self, lookup, source):
        """Gold passages (DPR JSON positive_ctxs with a passage_id) only warn: answers are matched by text, so a
        file whose gold ids belong to another split of Wikipedia is still scored; the counts say so.

        Args:
            lookup: the corpus store searched.
            source: the answers file, named in the warning.

        Returns:
            A warning with the counts when some gold passage ids are not in the store; else empty.
        """
        gold = {e.qid: {str(g["passage_id"]) for g in e.gold if g.get("passage_id") not in (None, "")}
                for e in self.examples}
        return gold_missing("gold passages (positive_ctxs)", gold, lookup.known_passages, lookup, source,
                            refuse=False, consequence="answers are matched by text, so these questions are still "
                                                      "scored; the overlap analysis uses the file's gold text")

    def success_ranks(self, hits, lookup):
        texts = lookup.texts({h.passage_id for row in hits for h in row})
        ranks: list[int | None] = []
        for ex, row in zip(self.examples, hits):
            ranks.append(next((r for r, h in enumerate(row, 1)
                               if self.matcher.has_answer(ex.answers, texts.get(h.passage_id))), None))
        return ranks

    def references(self, scores, runs, lookups):
        """The gold passage when the file gives one (DPR JSON positive_ctxs), else the best-ranked
        answer-bearing passage over all systems (ties: the system listed first).

        Args:
            scores: each system's :meth:`score` (its success ranks), by name.
            runs: each system's hits for each question, by name.
            lookups: each system's corpus store, by name (the texts of the passages chosen).

        Returns:
            Each question's reference text (None: no gold and no system found an answer), and which one it is.
        """
        refs: list[str | None] = [None] * len(self.examples)
        wanted: dict[str, list[tuple[int, str]]] = {}
        used_gold = used_retrieved = 0
        for i, ex in enumerate(self.examples):
            if ex.gold and isinstance(ex.gold[0].get("text"), str):
                refs[i] = ex.gold[0]["text"]
                used_gold += 1
                continue
            best = None
            for name, score in scores.items():
                r = score.success_ranks[i]
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
            return refs, "the gold passage (the first positive context of the file)"
        if used_gold:
            return refs, "the gold passage where the file gives one, else the best-ranked answer-bearing passage"
        return refs, "the best-ranked answer-bearing passage among all systems' results"

    def info(self, lookups):
        return {"ks": self.ks, "match": self.match}



class MultiHopTask(_AccuracyTask):
    """Multi-hop questions: top-k accuracy when all gold evidence is among the first k, and the rank
    by which every gold passage id (``gold_by="passage"``) or a passage of every gold title
    (``gold_by="title"``) has been retrieved.

    Requirements:
        1. Gold passage ids, or gold document titles with ``gold_by="title"``.
        2. With ``gold_by="title"``, the corpus store (passage -> title); passage ids need none.

    Inputs:
        +----------------------------------------------------------------------+----------------+
        | Questions                                                            | Gold by        |
        +======================================================================+================+
        | :class:`~pretriever.data.MultiHopExample` s or (question, [gold ...])| passage, title |
        +----------------------------------------------------------------------+----------------+

    Args:
        examples: the questions with their gold passage ids or titles, all of which must be retrieved.
        gold_by: ``passage`` (gold ids are passage ids) or ``title`` (gold are document titles); else an
            :class:`EvaluationError`.
        ks: the cut-offs of Acc@k (None: 2, 10, 20, 100); those deeper than ``depth`` are dropped, with a note.
        depth: hits fetched per question (None: the largest k).
        overlap_k: the Acc@k reported per bucket of the Q-P overlap analysis.

    Example::

        from pretriever.evaluate.tasks import MultiHopTask
        from pretriever.retrieval import Hit

        task = MultiHopTask([("who directed the film based on the novel", ["p-novel", "p-film"])],
                            gold_by="passage", ks=[2, 5], depth=5, overlap_k=5)
        hits = [[Hit("p-film", 3.0), Hit("p-other", 2.0), Hit("p-novel", 1.0)]]
        score = task.score("dense", hits, lookup=None)
        assert score.success_ranks == [3] and score.means["Acc@2"] == 0.0 and score.means["Acc@5"] == 1.0

    From the command line: ``pretriever evaluate --index enwiki-index/ --multihop hotpot.jsonl``.

    References:
        HLP (Zhou et al., 2022), section 5.4 and Table 5 (HotpotQA: the share of questions whose top k
        retrieved passages include both gold passages).
    """

    kind = "multihop"
    rank_key = "all_gold_rank"
    curve_metric = "all gold in top k"

    def __init__(self, examples: Sequence[MultiHopExample] | Sequence[tuple[str, Sequence[str]]],
                 gold_by: str = "passage", ks: Sequence[int] | None = None, depth: int | None = None,
                 overlap_k: int = DEFAULT_OVERLAP_K):
        super().__init__(overlap_k)
        if gold_by not in ("passage", "title"):
            raise EvaluationError(f"gold_by must be 'passage' or 'title', got {gold_by!r}")
        self.examples = as_multihop(examples)
        self.qids, self.texts = [e.qid for e in self.examples], [e.question for e in self.examples]
        self.gold_by = gold_by
        self._cut_ks(ks, DEFAULT_MULTIHOP_KS, depth)

    def check_lookup(self, name, lookup):
        if self.gold_by == "title" and lookup is None:
            raise EvaluationError(f"{name}: gold titles need the corpus store (passage -> title)")

    def check_gold(self, lookup, source):
        gold = {e.qid: set(e.gold) for e in self.examples}
        if self.gold_by == "title":
            return gold_missing("gold titles", gold, lambda titles: set(lookup.title_documents(titles)), lookup,
                                source)
        return gold_missing("gold passages", gold, lookup.known_passages, lookup, source)

    def success_ranks(self, hits, lookup):
        titles: dict[str, str | None] = {}
        if self.gold_by == "title":
            titles = lookup.titles({h.passage_id for row in hits for h in row})
        ranks: list[int | None] = []
        for ex, row in zip(self.examples, hits):
            first: dict[str, int] = {}
            for r, h in enumerate(row, 1):
                key = titles.get(h.passage_id) if self.gold_by == "title" else h.passage_id
                if key is not None and key not in first:
                    first[key] = r
            found = [first.get(g) for g in ex.gold]
            ranks.append(None if any(f is None for f in found) else max(found))
        return ranks

    def references(self, scores, runs, lookups):
        lookup = next(lk for lk in lookups.values() if lk is not None)
        if self.gold_by == "passage":
            texts = lookup.texts({g for ex in self.examples for g in ex.gold})
            parts = [[texts.get(g) for g in ex.gold] for ex in self.examples]
            reference = "the gold passages (the union of their words)"
        else:
            doc_of = lookup.title_documents({g for ex in self.examples for g in ex.gold})
            doc_texts = lookup.document_texts(set(doc_of.values()))
            parts = [[doc_texts.get(doc_of.get(g)) for g in ex.gold] for ex in self.examples]
            reference = "the gold titles' documents (the union of their words)"
        return [" ".join(p for p in ps if p) or None for ps in parts], reference

    def info(self, lookups):
        return {"ks": self.ks, "gold_by": self.gold_by}



def gold_missing(what: str, gold: Mapping[str, set[str]], known_of, lookup: PassageLookup, source: str,
                 refuse: bool = True, consequence: str = "questions judged only on them score 0") -> list[str]:
    """Check each question's gold ids against the store (``known_of(ids)``: the ids it holds): refuse
    (``refuse``) when none is there, else a note with the counts of missing ids and affected questions."""
    wanted = {g for ids in gold.values() for g in ids}
    if not wanted:
        return []
    known = known_of(wanted)
    missing = wanted - known
    if not missing:
        return []
    if not known and refuse:
        raise EvaluationError(f"{source}: none of its {len(wanted):,} {what} is in the corpus store {lookup.path}, "
                              "so every score would be 0: the file belongs to another corpus (or the store was "
                              "built from another one)")
    blind = sum(1 for ids in gold.values() if ids and not ids & known)
    return [f"{source}: {len(missing):,} of its {len(wanted):,} {what} are not in the corpus store {lookup.path} "
            f"(e.g. {', '.join(sorted(missing)[:3])}); {blind:,} of {len(gold):,} questions have none of theirs "
            f"there; {consequence}"]


def as_qa(answers) -> list[QAExample]:
    """QAExamples (numbered by position when they have no id) from QAExamples or (question, answers)."""
    out = []
    for i, ex in enumerate(answers):
        if isinstance(ex, QAExample):
            out.append(ex if ex.qid else QAExample(ex.question, ex.answers, str(i), ex.gold))
        else:
            question, ans = ex
            out.append(QAExample(question, [ans] if isinstance(ans, str) else list(ans), str(i)))
    return out


def as_multihop(examples) -> list[MultiHopExample]:
    """MultiHopExamples (numbered by position when they have no id) from examples or (question, gold)."""
    out = []
    for i, ex in enumerate(examples):
        if isinstance(ex, MultiHopExample):
            out.append(ex if ex.qid else MultiHopExample(ex.question, ex.gold, str(i)))
        else:
            question, gold = ex
            out.append(MultiHopExample(question, list(gold), str(i)))
    return out


def doc_run(qids: list[str], hits: list[list[Hit]], lookup: PassageLookup | None, depth: int,
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
