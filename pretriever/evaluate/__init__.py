"""Stage 5: evaluate retrievers against judgments, QA answers or multi-hop gold sets.

Every system is a :class:`pretriever.retrieval.Retriever` (BM25, dense indexes, refined
indexes) and is scored the same way by :func:`evaluate_retrievers` on a task (:mod:`pretriever.evaluate.tasks`);
:func:`pretriever.evaluate.pipeline.run` opens the systems, calls it, reads behind them with a reader when asked
and writes ``EVAL_DIR/results.json``; ``pretriever evaluate`` calls that and prints the tables.

Three kinds of evaluation
-------------------------
* ``qrels`` (BEIR/TREC judgments): nDCG@10, MRR@10, Recall@20, Recall@100, Recall@1000 and
  MAP (over the top 1000), all computed by pytrec_eval. Judged ids are documents: when a store
  splits documents into passages, a document scores its best passage (MaxP); when passages are
  whole documents (BEIR stores) passage ids are document ids. Only the queries in the qrels
  are searched; a document whose id is the query's own id is dropped from its results
  (``ignore_identical_ids``, BEIR's default).
* ``answers`` (open-domain QA, DPR style): the share of questions with an answer-bearing
  passage in the top k, k = 1, 5, 20, 100, using DPR's answer matching
  (:mod:`pretriever.data.qa`; ``regex`` mode for CuratedTREC).
* ``multihop`` (HotpotQA style): the share of questions whose gold passages (ids) or gold
  titles are *all* in the top k, k = 2, 10, 20, 100 (:mod:`pretriever.data.beir`).

Q-P overlap (HLP, Zhou et al. 2022, section 6.2): each question's overlap is the share of its
word tokens (DPR simple tokenizer, lower-cased, punctuation left out) that occur in its
reference passage: the gold passage when the input gives one (DPR JSON ``positive_ctxs``,
multi-hop gold passages, the judged relevant documents), else the best-ranked answer-bearing
passage among all evaluated systems. Questions are bucketed 0-0.2, 0.2-0.4, 0.4-0.6, 0.6-0.8,
0.8-1.0 (as in the paper's Figure 4) and each bucket reports every system's Acc@20 (nDCG@10
for judgments); questions with no reference go to a ``no reference`` row.

Results file
------------
``EVAL_DIR/results.json`` (written atomically)::

    {
      "systems":   {SYSTEM: {METRIC: mean value, ..., "queries": n}},
                    # qrels:    nDCG@10, MRR@10, Recall@20, Recall@100, Recall@1000, MAP
                    # answers / multihop: Acc@1, Acc@5, ... (one per k)
      "per_query": {SYSTEM: {QUERY_ID: {...}}},
                    # qrels:    every metric of that query
                    # answers:  {"answer_rank": rank of the first answer-bearing passage, or null}
                    # multihop: {"all_gold_rank": rank by which all gold were found, or null}
                    # (answers/multihop QUERY_IDs are the 0-based question numbers of the file,
                    #  or its "id" field)
      "config":    the settings used (ks, depth, match, ... and the command's options),
      "dataset":   {"kind", "name", "queries", "depth", input paths, "match" or "metrics", ...},
      "overlap":   {"reference", "metric", "edges", "mean",
                    "buckets": {"0.0-0.2": {"n", "share", "systems": {SYSTEM: value}}, ...},
                    "top1": {SYSTEM: {"mean", "share": {bucket: share}}},  # overlap of each
                                                                           # system's top-1 passage
                    "per_query": {QUERY_ID: overlap}} or null,
      "curves":    {SYSTEM: {"k": [...], "value": [...], "metric"}},  # Acc@k for k = 1..depth, or
                                                                      # Recall@k at fixed cut-offs
      "plots":     {"curve": "accuracy_at_k.png" | "recall_at_k.png", "overlap": "overlap.png"},
      "runs":      {SYSTEM: "runs/SYSTEM.trec"},  # only with --save-runs (passage-level rankings)
      "reader":    {"reader", "k", "match", "normalisation",   # only with --reader (answers): the reader's
                    "systems": {SYSTEM: {"EM", "F1", "top-k accuracy", "questions", ...}}}  # end-to-end scores
    }

SYSTEM is a dense index's name (its model's name) or ``bm25``.
"""

from __future__ import annotations

from pretriever.evaluate.config import EvaluateConfig
from pretriever.evaluate.core import EvaluationError, EvaluationOptions, EvaluationResult, evaluate_retrievers
from pretriever.evaluate.tasks import AnswersTask, MultiHopTask, QrelsTask

__all__ = ["AnswersTask", "EvaluateConfig", "EvaluationError", "EvaluationOptions", "EvaluationResult",
           "MultiHopTask", "QrelsTask", "evaluate_retrievers"]
