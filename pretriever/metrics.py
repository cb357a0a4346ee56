"""Metric plumbing: TREC-style metrics through pytrec_eval, top-k accuracy, Q-P overlap buckets, and
the reader's exact match and F1 (SQuAD v1.1 normalisation; regex answers for CuratedTREC).

Judgment metrics are never computed here by hand: runs and qrels go to pytrec_eval (the
trec_eval code BEIR uses) and only its per-query numbers are averaged. Two conventions, both
BEIR's/trec_eval's:

* pytrec_eval ranks a run by score, ties broken by document id in *descending* order; MRR@10
  is trec_eval's ``recip_rank`` on the run cut to its top 10 in that same order;
* a judged query with no retrieved document scores 0 on every metric (pytrec_eval leaves it
  out; averaging over the judged queries keeps it in, as ``trec_eval -c`` does).

Grades must lie in 0..:data:`MAX_GRADE`: pytrec_eval's trec_eval uses -1 and -2 as its own markers
(a negative grade crashes the process with a segmentation fault) and allocates memory by the
largest grade (3,000,000,000 exhausts it). :func:`pretriever.data.load_qrels` reads negative
grades as 0 (not relevant, as trec_eval counts them) and refuses larger ones.
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
MAX_GRADE = 1000  # the largest relevance grade handed to pytrec_eval (see the module docstring)
CURVE_CUTOFFS = (1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000)
OVERLAP_EDGES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)  # HLP section 6.2: five bins; the last includes 1.0
NO_REFERENCE = "no reference"


def trec_order(run: dict[str, float]) -> list[tuple[str, float]]:
    """A query's run in the order trec_eval ranks it: score descending, then document id descending."""
    return sorted(run.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)


def top(run: dict[str, dict[str, float]], n: int) -> dict[str, dict[str, float]]:
    """Each query's ``n`` best documents of ``run`` in TREC's order, so cut-offs match pytrec_eval's."""
    return {q: dict(trec_order(docs)[:n]) for q, docs in run.items()}


def _evaluate(qrels, run, measures: set[str]) -> dict[str, dict[str, float]]:
    for qid, docs in qrels.items():  # a ValueError here, not a crash inside pytrec_eval
        for doc, grade in docs.items():
            if not isinstance(grade, int) or not 0 <= grade <= MAX_GRADE:
                raise ValueError(f"query {qid!r}, document {doc!r}: grade {grade!r} is not an integer in "
                                 f"0..{MAX_GRADE} (read judgments with pretriever.data.load_qrels, which "
                                 "counts negative grades as 0)")
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
    """The Q-P overlap buckets' names (``0.0-0.2``, ...) for the bucket ``edges``."""
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
SQUAD_NORMALISATION = "SQuAD v1.1"
LENIENT_NORMALISATION = "lenient (SQuAD v1.1 + NFKC + Unicode punctuation)"
LENIENT_HELP = ("EM/F1 with our lenient normalisation: SQuAD v1.1's plus NFKC folding and every Unicode "
                "punctuation character (curly quotes, en dash, guillemets, ligatures count as equal); results name "
                "it. Default: SQuAD v1.1's normalize_answer, as DPR and every published EM.")


def normalisation_name(lenient: bool) -> str:
    """The name results carry for the answer normalisation used (so a lenient score is never read as SQuAD's)."""
    return LENIENT_NORMALISATION if lenient else SQUAD_NORMALISATION


def normalize_answer(text: str, lenient: bool = False) -> str:
    """Answer normalisation for EM/F1.

    Default: exactly SQuAD v1.1's ``normalize_answer`` (the official evaluate-v1.1.py, which DPR's
    ``qa_validation._normalize_answer`` copies): lower-case, delete the characters of ASCII
    ``string.punctuation``, replace the words a/an/the by spaces, collapse whitespace. Nothing else:
    curly quotes, en dashes, guillemets, ligatures and composed vs decomposed accents stay distinct,
    so ``"1914–1918"`` and ``"1914-1918"`` differ, as they do in every published EM.

    ``lenient`` (ours, ``--lenient-match``): NFKC-fold first and delete every Unicode punctuation
    character (category P*) as well; results name it :data:`LENIENT_NORMALISATION`.

    Example: ``normalize_answer("  The  Beatles, an English band ") == "beatles english band"``.
    """
    if lenient:
        text = unicodedata.normalize("NFKC", text)
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _ASCII_PUNCT
                   and not (lenient and unicodedata.category(ch).startswith("P")))
    return " ".join(_ARTICLES.sub(" ", text).split())


def _regex_match(prediction: str, pattern: str) -> bool:
    """CuratedTREC: the gold answer is a regular expression that must match at the start of the prediction
    (DrQA's and DPR's rule), case-insensitively; a pattern that does not compile matches nothing."""
    try:
        compiled = re.compile(pattern, flags=re.IGNORECASE | re.UNICODE | re.MULTILINE)
    except (re.error, RecursionError, OverflowError):
        return False
    return compiled.match(prediction) is not None


def exact_match(prediction: str, golds: Sequence[str], regex: bool = False, lenient: bool = False) -> float:
    """1.0 when the prediction equals any gold answer after :func:`normalize_answer` (SQuAD v1.1's unless
    ``lenient``; ``regex``: when any gold pattern matches it), else 0.0. No gold answers score 0.

    Example: ``exact_match("the Eiffel Tower.", ["Eiffel Tower"]) == 1.0``."""
    if regex:
        return float(any(_regex_match(prediction, g) for g in golds))
    pred = normalize_answer(prediction, lenient)
    return float(any(pred == normalize_answer(g, lenient) for g in golds))


def _token_f1(prediction: str, gold: str, lenient: bool) -> float:
    pred, ref = normalize_answer(prediction, lenient).split(), normalize_answer(gold, lenient).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, golds: Sequence[str], regex: bool = False, lenient: bool = False) -> float:
    """SQuAD's token F1 of the prediction against its best gold answer (bag of tokens normalised by
    :func:`normalize_answer`, SQuAD v1.1's unless ``lenient``).
    Regex answers have no tokens to overlap: F1 is their exact match."""
    if regex:
        return exact_match(prediction, golds, regex=True)
    return max((_token_f1(prediction, g, lenient) for g in golds), default=0.0)


def paired_randomisation(a: Sequence[float], b: Sequence[float], resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value of the paired randomisation (sign-flip) test that ``mean(a - b) = 0``.

    ``a[i]`` and ``b[i]`` are two systems' scores on the same item (a query, a question): under the null
    hypothesis each difference is as likely negative as positive, so the observed ``|mean(a - b)|`` is compared
    with the means of the differences under random sign flips. Exact (every one of the ``2^n`` sign patterns)
    for ``n <= 16``; otherwise ``resamples`` random patterns and ``(hits + 1) / (resamples + 1)``, which never
    reports 0. The test IR evaluations recommend for per-query scores (Smucker, Allan and Carterette, "A
    Comparison of Statistical Significance Tests for Information Retrieval Evaluation", CIKM 2007).

    Example::

        p = paired_randomisation([0.5, 0.7, 0.9], [0.4, 0.6, 0.8])  # every difference +0.1: p = 2/8
    """
    import numpy as np  # lazily, as the rest of this module imports nothing heavy at import time

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.ndim != 1 or a.shape != b.shape or len(a) == 0:
        raise ValueError(f"a and b must be equally long, non-empty lists (got shapes {a.shape} and {b.shape})")
    d = a - b
    observed = abs(d.mean()) - 1e-12  # a tie with the observed mean counts as a hit
    if len(d) <= 16:
        signs = 1 - 2 * ((np.arange(2 ** len(d))[:, None] >> np.arange(len(d))) & 1)
        return float((np.abs((signs * d).mean(axis=1)) >= observed).mean())
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, resamples, 1000):
        signs = rng.choice((-1.0, 1.0), size=(min(1000, resamples - start), len(d)))
        hits += int((np.abs((signs * d).mean(axis=1)) >= observed).sum())
    return (hits + 1) / (resamples + 1)
