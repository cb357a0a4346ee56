"""Metric plumbing: TREC-style metrics through pytrec_eval, top-k accuracy, Q-P overlap buckets, and
the reader's exact match and F1 (SQuAD v1.1 normalisation; regex answers for CuratedTREC).

Judgment metrics are never computed here by hand: runs and qrels go to pytrec_eval (the
trec_eval code BEIR uses) and only its per-query numbers are averaged. Two conventions, both
BEIR's/trec_eval's:

* pytrec_eval ranks a run by score, ties broken by document id in *descending* order; MRR@10
  is trec_eval's ``recip_rank`` on the run cut to its top 10 in that same order;
* a judged query with no retrieved document scores 0 on every metric (pytrec_eval leaves it
  out; averaging over the judged queries keeps it in, as ``trec_eval -c`` does).
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence

import pytrec_eval

# our name -> (pytrec_eval measure asked for, key in its answer, run cut to the top N or None)
QRELS_METRICS: dict[str, tuple[str, str, int | None]] = {
    "nDCG@10": ("ndcg_cut.10", "ndcg_cut_10", None),
    "MRR@10": ("recip_rank", "recip_rank", 10),
    "Recall@20": ("recall.20", "recall_20", None),
    "Recall@100": ("recall.100", "recall_100", None),
    "Recall@1000": ("recall.1000", "recall_1000", None),
    "MAP": ("map", "map", None),
}
CURVE_CUTOFFS = (1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000)
OVERLAP_EDGES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)  # HLP section 6.2: five bins; the last includes 1.0
NO_REFERENCE = "no reference"


def trec_order(run: dict[str, float]) -> list[tuple[str, float]]:
    """A query's run in the order trec_eval ranks it: score descending, then document id descending."""
    return sorted(run.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)


def top(run: dict[str, dict[str, float]], n: int) -> dict[str, dict[str, float]]:
    return {q: dict(trec_order(docs)[:n]) for q, docs in run.items()}


def _evaluate(qrels, run, measures: set[str]) -> dict[str, dict[str, float]]:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures)
    return evaluator.evaluate({q: docs for q, docs in run.items() if q in qrels})


def qrels_metrics(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]],
                  metrics: Sequence[str] = tuple(QRELS_METRICS)) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Mean and per-query metrics of a run (``{qid: {doc_id: score}}``) over every judged query."""
    per_query: dict[str, dict[str, float]] = {q: {m: 0.0 for m in metrics} for q in qrels}
    by_cut: dict[int | None, list[str]] = {}
    for name in metrics:
        by_cut.setdefault(QRELS_METRICS[name][2], []).append(name)
    for cut, names in by_cut.items():
        cut_run = run if cut is None else top(run, cut)
        answer = _evaluate(qrels, cut_run, {QRELS_METRICS[n][0] for n in names})
        for qid, values in answer.items():
            for name in names:
                per_query[qid][name] = float(values[QRELS_METRICS[name][1]])
    n = len(per_query)
    means = {m: (sum(v[m] for v in per_query.values()) / n if n else 0.0) for m in metrics}
    return means, per_query


def recall_curve(qrels, run, cutoffs: Sequence[int] = CURVE_CUTOFFS) -> dict[int, float]:
    """Mean Recall@k at each cutoff (pytrec_eval), judged queries without results counting 0."""
    measure = "recall." + ",".join(str(k) for k in cutoffs)
    answer = _evaluate(qrels, run, {measure})
    n = len(qrels)
    return {k: (sum(v[f"recall_{k}"] for v in answer.values()) / n if n else 0.0) for k in cutoffs}


def accuracy_at(ranks: Sequence[int | None], ks: Sequence[int]) -> dict[int, float]:
    """Share of questions whose first success rank (1-based, None: never) is at most k, for each k."""
    n = len(ranks)
    return {k: (sum(1 for r in ranks if r is not None and r <= k) / n if n else 0.0) for k in ks}


def overlap_ratio(question_words: Sequence[str], passage_words: set[str]) -> float | None:
    """Share of the question's word tokens (with repeats) that occur in the passage; None without words."""
    if not question_words:
        return None
    return sum(1 for w in question_words if w in passage_words) / len(question_words)


def bucket_labels(edges: Sequence[float] = OVERLAP_EDGES) -> list[str]:
    return [f"{lo:.1f}-{hi:.1f}" for lo, hi in zip(edges[:-1], edges[1:])]


def bucket_of(ratio: float | None, edges: Sequence[float] = OVERLAP_EDGES) -> str:
    """The bucket label of an overlap ratio: [lo, hi) except the last, which includes hi."""
    labels = bucket_labels(edges)
    if ratio is None:
        return NO_REFERENCE
    for i, hi in enumerate(edges[1:]):
        if ratio < hi:
            return labels[i]
    return labels[-1]


# ---------------------------------------------------------------- reader answers: EM and F1 (SQuAD v1.1)

_ARTICLES = re.compile(r"\b(a|an|the)\b", flags=re.UNICODE)
_ASCII_PUNCT = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD v1.1's answer normalisation: lower-case, drop punctuation and the articles a/an/the,
    collapse whitespace (punctuation is removed, not spaced: ``U.S.`` is ``us``). Unicode is NFKC-folded first and every Unicode punctuation character
    (category P*) counts, as well as ASCII's ``string.punctuation``; so ``“The  Beatles!”`` and
    ``beatles`` are equal."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(ch for ch in text if ch not in _ASCII_PUNCT and not unicodedata.category(ch).startswith("P"))
    return " ".join(_ARTICLES.sub(" ", text).split())


def _regex_match(prediction: str, pattern: str) -> bool:
    """CuratedTREC: the gold answer is a regular expression that must match at the start of the prediction
    (DrQA's and DPR's rule), case-insensitively; a pattern that does not compile matches nothing."""
    try:
        compiled = re.compile(pattern, flags=re.IGNORECASE | re.UNICODE | re.MULTILINE)
    except (re.error, RecursionError, OverflowError):
        return False
    return compiled.match(prediction) is not None


def exact_match(prediction: str, golds: Sequence[str], regex: bool = False) -> float:
    """1.0 when the prediction equals any gold answer after :func:`normalize_answer` (``regex``: when
    any gold pattern matches it), else 0.0. No gold answers score 0.

    Example: ``exact_match("the Eiffel Tower.", ["Eiffel Tower"]) == 1.0``."""
    if regex:
        return float(any(_regex_match(prediction, g) for g in golds))
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in golds))


def _token_f1(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, golds: Sequence[str], regex: bool = False) -> float:
    """SQuAD's token F1 of the prediction against its best gold answer (bag of normalised tokens).
    Regex answers have no tokens to overlap: F1 is their exact match."""
    if regex:
        return exact_match(prediction, golds, regex=True)
    return max((_token_f1(prediction, g) for g in golds), default=0.0)
