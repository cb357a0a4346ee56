"""Quick in-memory scoring of (scores, rows) search results, for the grid and for choosing
settings on a validation split: the same metrics as ``pretriever evaluate`` (pytrec_eval for
judgments, MaxP when the store splits documents, BEIR's ``ignore_identical_ids``; DPR top-k
accuracy for answers) without going through text queries again."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pretriever.metrics import qrels_metrics
from pretriever.refine.errors import RefineError
from pretriever.refine.labels import FeedbackSet, Judge

QRELS_GRID_METRICS = ("nDCG@10", "MRR@10", "Recall@20", "Recall@100")
ANSWER_KS = (1, 5, 20, 100)


def default_metric(kind: str) -> str:
    """The metric a grid sweep picks by for feedback ``kind``: nDCG@10 with judgments, else Acc@20."""
    return "nDCG@10" if kind == "qrels" else "Acc@20"


def metric_names(kind: str) -> list[str]:
    """The metrics a grid sweep records for feedback ``kind``."""
    return list(QRELS_GRID_METRICS) if kind == "qrels" else [f"Acc@{k}" for k in ANSWER_KS]


class Scorer:
    """Scores result rows of the queries of ``feedback`` (qrels or answers feedback)."""

    def __init__(self, feedback: FeedbackSet, passage_ids: np.ndarray, judge: Judge | None = None,
                 doc_ids=None, ignore_identical_ids: bool = True):
        if feedback.kind not in ("qrels", "answers"):
            raise RefineError("scoring needs labels: qrels or answers feedback")
        self.feedback = feedback
        self.passage_ids = passage_ids
        self.judge = judge
        self.doc_ids = doc_ids  # callable: passage ids -> {pid: doc id}; None: passages are documents
        self.ignore_identical_ids = ignore_identical_ids
        self._doc: dict[int, str] = {}
        self.depth = 100

    @property
    def fetch(self) -> int:
        return self.depth * (3 if self.doc_ids is not None and self.feedback.kind == "qrels" else 1)

    def _docs(self, rows: np.ndarray) -> list[str]:
        todo = [int(r) for r in np.unique(rows) if r >= 0 and int(r) not in self._doc]
        if todo:
            pids = [self.passage_ids[r] for r in todo]
            found = dict(zip(pids, pids)) if self.doc_ids is None else self.doc_ids(pids)
            for r, p in zip(todo, pids):
                self._doc[r] = found.get(p) or p
        return [self._doc.get(int(r)) for r in rows]

    def score(self, scores: np.ndarray, rows: np.ndarray, metrics: Sequence[str] | None = None) -> dict[str, float]:
        metrics = list(metrics or metric_names(self.feedback.kind))
        if self.feedback.kind == "qrels":
            run: dict[str, dict[str, float]] = {}
            for qid, srow, rrow in zip(self.feedback.ids, scores, rows):
                docs: dict[str, float] = {}
                for s, d in zip(srow, self._docs(rrow)):
                    if d is None or (self.ignore_identical_ids and d == qid):
                        continue
                    if d not in docs or s > docs[d]:
                        docs[d] = float(s)
                run[qid] = dict(sorted(docs.items(), key=lambda kv: -kv[1])[:self.depth])
            qrels = {q: self.feedback.qrels[q] for q in self.feedback.ids}
            means, _ = qrels_metrics(qrels, run, [m for m in metrics if not m.startswith("Acc@")])
            return means
        n, k = rows.shape
        q = np.repeat(np.arange(n), k)
        hit = self.judge(q, rows.ravel(), np.tile(np.arange(k), n)).reshape(n, k) & (rows >= 0)
        first = np.where(hit.any(1), hit.argmax(1) + 1, k + 1)
        return {f"Acc@{c}": float((first <= c).mean()) for c in ANSWER_KS if f"Acc@{c}" in metrics}
