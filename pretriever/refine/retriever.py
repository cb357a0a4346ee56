"""A refined index as a :class:`pretriever.retrieval.Retriever`, with its query side (and
:class:`pretriever.retrieval.VectorSearch`: its query vectors, then a search over the refined passages).

A refined index folder is a normal dense index: ``DenseIndex.load`` opens it and searches the
refined passage vectors with plainly encoded queries. :class:`RefinedIndex` adds the query side
that ``aopt-query`` and ``hybrid`` record in ``index.json``:

* a query that was a feedback query (same text) is searched with its refined vector
  (``refine/query_vectors.parquet``);
* any other query, when the refinement says so (``refine.query_side.test_time``), is refined at
  search time with label-free ``topk`` feedback: retrieve its top k, call the top k_pos relevant
  and the rest irrelevant, run AOpt-query on it (all queries of a batch at once), repeat for the
  recorded number of rounds, then search with the refined vector.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from pretriever.data.qa import word_tokens
from pretriever.index import IndexFolder, register_retriever
from pretriever.refine.labels import TopkJudge
from pretriever.refine.pipeline import QueryRounds, refine_queries
from pretriever.refine.search import PatchedSearcher
from pretriever.retrieval import Hit


def topk_refine(dense, vectors: np.ndarray, settings: dict[str, Any], device: str | None = None,
                threads: int | None = None) -> np.ndarray:
    """Label-free AOpt-query on ``vectors`` against ``dense``'s passages (``settings``: k, k_pos, rounds, AOpt).

    Args:
        dense: the refined folder's passage vectors (a :class:`~pretriever.index.DenseIndex`).
        vectors: the queries' plain vectors, one row each.
        settings: the test-time settings index.json records.
        device: torch device for AOpt (None: the CPU).
        threads: torch intra-op threads (None: torch's default).

    Returns:
        The refined query vectors.
    """
    params = {key: settings[key] for key in ("lr", "max_epochs", "patience", "min_delta", "restore_best")
              if key in settings}
    rounds = QueryRounds(settings["k"], settings.get("rounds", 1), params, device, settings.get("normalize", False),
                         threads)
    refined, _, _ = refine_queries(PatchedSearcher.of(dense), vectors, TopkJudge(settings["k_pos"]), rounds)
    return refined


class RefinedIndex:
    """A refined index folder opened for search: the passage vectors as ``pretriever refine run`` left them,
    queries encoded (or refined at test time) as the refinement says; implements
    :class:`pretriever.retrieval.Retriever` and :class:`pretriever.retrieval.VectorSearch`.

    A refinement's feedback queries are never evaluation questions under the honest protocol;
    :meth:`feedback_overlap` says how many given questions were feedback queries (``pretriever evaluate``
    refuses a labelled overlap). ``stored_queries`` searches a feedback query with its refined vector
    (only under the oracle protocol by default).

    Requirements:
        A folder written by ``pretriever refine run`` (a dense index folder with a ``refine`` record).

    Example::

        from pretriever.refine.retriever import RefinedIndex

        # pretriever refine run scifact-index/ -q scifact/queries.jsonl -f qrels
        #     --qrels scifact/qrels/train.tsv --out sf-aopt/
        refined = RefinedIndex.load("sf-aopt/")
        print(refined.protocol, refined.name)
        hits = refined.search(["vitamin D deficiency increases the risk of fractures"], k=3)[0]

    References:
        The AOpt paper ("Auto Text Representation Optimization", PRF refinement of stored vectors;
        ../shared/papers/README.md), eq. 9 and eqs 10-14.

    Relations:
        One of the searchers behind :class:`pretriever.retrieval.Retriever`, beside
        :class:`~pretriever.index.DenseIndex` (whose vectors it searches), :class:`~pretriever.index.BM25Index` and
        :class:`~pretriever.index.HybridRetriever`; :func:`open_refined` opens it for
        :class:`~pretriever.index.IndexFolder`.

    Args:
        dense: the folder's passage vectors.
        query_vectors: stored refined query vectors by query text.
        test_time: the topk settings that refine other queries at search time (None: off).
        name: the name in tables (None: the index's).
        device: torch device for test-time refinement.
        threads: torch intra-op threads for it.
    """

    def __init__(self, dense, query_vectors: dict[str, np.ndarray] | None = None,
                 test_time: dict[str, Any] | None = None, name: str | None = None, device: str | None = None,
                 threads: int | None = None):
        self.dense = dense
        self.meta = dense.meta
        self.encoder = dense.encoder
        self.path = dense.path
        self.name = name or dense.name
        self.query_vectors = query_vectors or {}
        self.test_time = test_time
        self.device = device
        self.threads = threads
        self.last_stats: dict[str, int] = {}

    @property
    def protocol(self) -> str:
        """``honest`` (feedback labels never belong to evaluation queries) or ``oracle`` (the paper's setting)."""
        return ((self.meta.refine or {}).get("protocol") or {}).get("name", "honest")

    def feedback_overlap(self, ids: list[str], texts: list[str]) -> dict[str, Any]:
        """How many of the given (evaluation) questions were feedback queries of this refinement, by id and by
        normalised text, and what that means: evaluate refuses a labelled overlap under the honest protocol.

        Args:
            ids: the evaluation questions' ids.
            texts: their texts.

        Returns:
            The protocol, the counts, each repeated question's feedback query, and ``transductive``/``leak`` flags.
        """
        refine = self.meta.refine or {}
        kind = (refine.get("feedback") or {}).get("kind")
        table = pq.read_table(self.path / refine["queries"]["file"], columns=["query_id", "query"])
        fb_ids = set(table.column("query_id").to_pylist())
        fb_texts = dict(zip(map(_norm, table.column("query").to_pylist()), table.column("query_id").to_pylist()))
        repeats = {qid: qid if qid in fb_ids else fb_texts[_norm(text)] for qid, text in zip(ids, texts)
                   if qid in fb_ids or _norm(text) in fb_texts}  # evaluation id -> the feedback query it repeats
        same = list(repeats)
        return {"protocol": self.protocol, "feedback": kind, "feedback_queries": len(fb_ids),
                "evaluation_queries_in_feedback": len(same), "repeats": repeats,
                "transductive": bool(same) and kind == "topk",  # label-free feedback on the test queries
                "leak": bool(same) and kind != "topk"}

    @classmethod
    def load(cls, path: IndexFolder | Path | str, model=None, device: str | None = None, test_time: bool | dict | None = None,
             stored_queries: bool | None = None, name: str | None = None, threads: int | None = None) -> RefinedIndex:
        """Open a refined index folder. ``test_time``: None = as index.json says, False = off,
        a dict = these topk settings instead; ``stored_queries``: search a feedback query with its refined
        vector (None: only under the oracle protocol; honestly, a searched query is never a labelled one).

        Args:
            path: the refined index folder (or it, opened).
            model: an encoder already loaded, shared.
            device: where queries are encoded and refined.
            test_time: see above.
            stored_queries: see above.
            name: the name in tables (None: the index's).
            threads: torch intra-op threads for test-time refinement.

        Returns:
            The index.
        """
        folder = path if isinstance(path, IndexFolder) else IndexFolder(path)
        dense = folder.dense(model=model, device=device)
        refine = dense.meta.refine or {}
        side = refine.get("query_side") or {}
        if stored_queries is None:
            stored_queries = (refine.get("protocol") or {}).get("name") == "oracle"
        vectors: dict[str, np.ndarray] = {}
        stored = side.get("refined_vectors")
        if stored_queries and stored and (folder.path / stored).exists():
            table = pq.read_table(folder.path / stored, columns=["query", "vector"])
            for text, vec in zip(table.column("query").to_pylist(), table.column("vector").to_pylist()):
                vectors[text] = np.asarray(vec, dtype=np.float32)
        settings = side.get("test_time") if test_time is None else (test_time or None)
        return cls(dense, vectors, settings, name=name, device=device, threads=threads)

    def __len__(self) -> int:
        return len(self.dense)

    @property
    def passage_ids(self) -> np.ndarray:
        return self.dense.passage_ids

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        """The vectors ``search`` uses for ``queries``: stored refined ones, refined now (test time), or plain.

        Args:
            queries: the query texts.

        Returns:
            One row per query.
        """
        queries = list(queries)
        known = [q in self.query_vectors for q in queries]
        out = np.zeros((len(queries), self.dense.dim), dtype=np.float32)
        fresh = [i for i, k in enumerate(known) if not k]
        for i, k in enumerate(known):
            if k:
                out[i] = self.query_vectors[queries[i]]
        if fresh:
            encoded = self.dense.encode_queries([queries[i] for i in fresh])
            if self.test_time:
                encoded = topk_refine(self.dense, encoded, self.test_time, self.device, self.threads)
            out[fresh] = encoded
        self.last_stats = {"stored": int(sum(known)), "test_time_refined": len(fresh) if self.test_time else 0,
                           "plain": 0 if self.test_time else len(fresh)}
        return out

    def search_vectors(self, vectors: np.ndarray, k: int) -> list[list[Hit]]:
        """The top ``k`` refined passages for each query vector.

        Args:
            vectors: one row per query.
            k: hits per query.

        Returns:
            One list of hits per query, best first.
        """
        return self.dense.search_vectors(vectors, k)

    def vectors_of(self, passage_ids: Sequence[str]) -> np.ndarray:
        """The refined vectors of these passages.

        Args:
            passage_ids: the passages.

        Returns:
            One row per id, in the order given.
        """
        return self.dense.vectors_of(passage_ids)

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Each query's top ``k`` (:class:`~pretriever.retrieval.Retriever`'s ``search``), its vector refined as
        :meth:`encode_queries` says.

        Args:
            queries: the query texts.
            k: hits per query.

        Returns:
            One list of hits per query, best first.
        """
        if not queries:
            return []
        return self.search_vectors(self.encode_queries(queries), k)


def _norm(text: str) -> str:
    return " ".join(word_tokens(text))


@register_retriever("refined")
def open_refined(folder: IndexFolder, *, device: str | None = None, model=None) -> RefinedIndex:
    """The opener of the ``refined`` index kind, registered when this module is imported (``pretriever.cli``
    imports it; a library caller gets it through the ``pretriever.retrievers`` entry point that names it):
    :meth:`pretriever.index.IndexFolder.open` calls it for folders written by ``pretriever refine``.

    Args:
        folder: the index folder.
        device: where queries are encoded.
        model: an encoder already loaded, shared.

    Returns:
        The refined index.
    """
    return RefinedIndex.load(folder, model=model, device=device)
