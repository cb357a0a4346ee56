"""``pretriever refine`` without the command line: the Figure 5 loop and the refined index folder.

Passage side (``linear``, ``aopt-passage``, ``hybrid``), for each round::

    retrieve the top k of every feedback query over the current passage vectors
    -> pseudo-labels (answers / qrels / topk) -> move every labelled passage vector
       (eq. 9, or AOpt eqs. 10-14 with per-vector early stopping) -> "re-index"

Query side (``aopt-query``, ``hybrid``; for ``hybrid`` after the passage side, against the
refined passages): the same loop with the feedback queries as centres. The refined vectors of
those queries are saved (``refine/query_vectors.parquet``) and used when one of those very
queries is searched; any other query gets label-free ``topk`` refinement at search time
(:class:`pretriever.refine.retriever.RefinedIndex`), because its labels are unknown.

Re-indexing inside the loop patches the original FAISS index (:class:`PatchedSearcher`)
instead of rebuilding it; the output is built once, as a normal index folder that
``DenseIndex.load`` opens and ``pretriever evaluate`` scores, with ``index.json`` recording the
refinement under ``refine``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from pretriever.data import DatasetError, QAFileError, load_qa_file, load_qrels, load_queries
from pretriever.index import IndexFolder, IndexMeta, save_dense_index
from pretriever.index.meta import EMBEDDINGS_FILE, FAISS_FILE, IDS_FILE, INDEX_JSON
from pretriever.index.tuned import TUNE_JSON
from pretriever.io import write_parquet
from pretriever.progress import QUIET, Reporter
from pretriever.refine.config import RefineConfig
from pretriever.refine.errors import RefineError
from pretriever.refine.fusion import LexicalRanking
from pretriever.refine.labels import FeedbackSet, Judge, Labels, build_labels, load_feedback
from pretriever.refine.ops import aopt, linear_update
from pretriever.refine.search import PatchedSearcher
from pretriever.stage import OutputFolder, StageResult

REFINE_DIR = "refine"
PASSAGE_LABELS = "labels_passages.parquet"
QUERY_LABELS = "labels_queries.parquet"
QUERY_VECTORS = "query_vectors.parquet"
FEEDBACK_QUERIES = "feedback_queries.parquet"
ORACLE_WARNING = ("ORACLE PROTOCOL: the feedback labels belong to the evaluation queries themselves (the paper's "
                  "setting). Scores of this index on those queries are NOT held-out results; every table and "
                  "JSON labels them 'oracle'.")


# --- feedback and protocol -------------------------------------------------------------------

def _holdout_keys(path: Path) -> tuple[set[str], set[str]]:
    """(ids, texts) of the evaluation queries in ``path``: BEIR qrels, BEIR queries or a QA file
    (matched by question text, since QA files number their questions by line)."""
    path = Path(path)
    for reader in (load_qrels, load_queries):
        try:
            return set(reader(path)), set()
        except (DatasetError, UnicodeDecodeError):
            continue
    try:
        return set(), {e.question.strip().lower() for e in load_qa_file(path)}
    except QAFileError as err:
        raise RefineError(f"--holdout {path}: not BEIR qrels, BEIR queries or a QA file ({err})") from err


def _label_file(cfg: RefineConfig) -> Path | None:
    return {"qrels": cfg.qrels, "answers": cfg.answers}.get(cfg.feedback)


def open_feedback(cfg: RefineConfig, report: Reporter = QUIET) -> tuple[FeedbackSet, dict[str, Any]]:
    """The feedback queries of ``cfg`` after the protocol checks, and what the checks did."""
    feedback = load_feedback(cfg.feedback, cfg.queries, cfg.qrels, cfg.answers)
    protocol: dict[str, Any] = {"name": "oracle" if cfg.oracle else "honest"}
    labels_file = _label_file(cfg)
    if not cfg.oracle and labels_file is not None and "test" in labels_file.name.lower():
        raise RefineError(f"{labels_file} looks like the test split's labels: refining with them and then "
                          "evaluating on the same queries leaks the labels. Refine with training labels "
                          "(e.g. qrels/train.tsv) and evaluate on the test queries, or pass --oracle to "
                          "reproduce the paper's (leaky) protocol.")
    if cfg.holdout is not None:
        ids, texts = _holdout_keys(cfg.holdout)
        clash = [i for i, (q, t) in enumerate(zip(feedback.ids, feedback.texts))
                 if (ids and q in ids) or (texts and t.strip().lower() in texts)]
        protocol["holdout"] = str(cfg.holdout)
        protocol["holdout_queries"] = len(ids or texts)
        protocol["feedback_queries_in_holdout"] = len(clash)
        if clash and not cfg.oracle:
            keep = sorted(set(range(len(feedback))) - set(clash))
            feedback = feedback.subset(keep)
            protocol["dropped_from_feedback"] = len(clash)
            report.message(f"dropped {len(clash)} feedback queries that are evaluation queries (--holdout)")
        elif not clash and cfg.oracle:
            protocol["note"] = "--oracle given but no feedback query is in --holdout"
    if cfg.limit:
        feedback = feedback.subset(range(min(cfg.limit, len(feedback))))
    if not len(feedback):
        raise RefineError("no feedback queries left")
    if cfg.oracle:
        protocol["warning"] = ORACLE_WARNING
    return feedback, protocol


def _normalized(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


# --- the loops -------------------------------------------------------------------------------

def refine_passages(searcher: PatchedSearcher, queries: np.ndarray, judge: Judge, cfg: RefineConfig,
                    on_round: Callable[[int, Labels], None] | None = None,
                    lexical: LexicalRanking | None = None) -> list[dict[str, Any]]:
    """The passage-side rounds; the searcher ends holding the refined passage vectors. ``lexical``: label the
    dense ranking fused with these BM25 rankings of the same queries (``--fuse-bm25``)."""
    log = []
    for r in range(cfg.rounds):
        t0 = time.perf_counter()
        labels = build_labels(queries, searcher, cfg.k, judge, lexical=lexical)
        t1 = time.perf_counter()
        centres = labels.passages()
        local = np.searchsorted(centres, labels.row)
        current = searcher.current(centres)
        if cfg.method == "linear":
            new = linear_update(current, queries, local, labels.query, labels.positive, cfg.beta, cfg.gamma)
            moved = np.bincount(local[labels.positive], minlength=len(centres)) > 0
            moved |= np.bincount(local[~labels.positive], minlength=len(centres)) > 0
            moved &= (cfg.beta != 0) | (cfg.gamma != 0)
            opt = {"centres": int(len(centres)), "moved": int(moved.sum())}
        else:
            res = aopt(current, queries, local, labels.query, labels.positive, device=cfg.device, threads=cfg.threads,
                       **cfg.aopt_params())
            new, moved = res.vectors, res.trainable
            opt = res.summary()
        if cfg.normalize:
            new = _normalized(new)
        t2 = time.perf_counter()
        searcher.set_rows(centres[moved], new[moved])
        t3 = time.perf_counter()
        if on_round is not None:
            on_round(r, labels)
        log.append({"side": "passage", "round": r + 1, "labels": labels.stats(), "optimise": opt,
                    "seconds": {"retrieve_label": round(t1 - t0, 4), "optimise": round(t2 - t1, 4),
                                "reindex": round(t3 - t2, 4), "total": round(t3 - t0, 4)}})
    return log


@dataclass(frozen=True)
class QueryRounds:
    """How AOpt-query runs, the same for a refinement's feedback queries and for test-time refinement.

    Args:
        k: the depth of the search that labels each round.
        rounds: labelling rounds, each followed by AOpt.
        params: AOpt's schedule, as :func:`~pretriever.refine.ops.aopt` takes it and index.json records it
            (:meth:`~pretriever.refine.config.RefineConfig.aopt_params`).
        device: torch device for AOpt (None: the CPU).
        normalize: normalise the refined vectors.
        threads: torch intra-op threads for AOpt (None: torch's default).
    """

    k: int
    rounds: int
    params: dict[str, Any]
    device: str | None = None
    normalize: bool = False
    threads: int | None = None


def refine_queries(searcher: PatchedSearcher, queries: np.ndarray, judge: Judge, settings: QueryRounds,
                   on_round: Callable[[int, Labels], None] | None = None,
                   lexical: LexicalRanking | None = None) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]:
    """The query-side rounds (AOpt-query) against the searcher's current passages: the refined
    vectors, which of them moved (a query needs a positive and a negative), and the round log.
    ``lexical`` as in :func:`refine_passages`."""
    log = []
    current = np.array(queries, dtype=np.float32, copy=True)
    changed = np.zeros(len(current), dtype=bool)
    for r in range(settings.rounds):
        t0 = time.perf_counter()
        labels = build_labels(current, searcher, settings.k, judge, lexical=lexical)
        t1 = time.perf_counter()
        rows = labels.passages()
        other = np.searchsorted(rows, labels.row)
        res = aopt(current, searcher.current(rows), labels.query, other, labels.positive, device=settings.device,
                   threads=settings.threads, **settings.params)
        new = _normalized(res.vectors) if settings.normalize else res.vectors
        current[res.trainable] = new[res.trainable]
        changed |= res.trainable
        t2 = time.perf_counter()
        if on_round is not None:
            on_round(r, labels)
        log.append({"side": "query", "round": r + 1, "labels": labels.stats(), "optimise": res.summary(),
                    "seconds": {"retrieve_label": round(t1 - t0, 4), "optimise": round(t2 - t1, 4),
                                "total": round(t2 - t0, 4)}})
    return current, changed, log


def test_time_settings(cfg: RefineConfig) -> dict[str, Any] | None:
    """How queries that were not feedback queries are refined at search time (None: not at all)."""
    if not (cfg.refines_queries and cfg.test_time_queries):
        return None
    return {"feedback": "topk", "k": cfg.k, "k_pos": cfg.k_pos, "rounds": cfg.query_rounds,
            "normalize": cfg.normalize, **cfg.aopt_params()}


# --- index.json["refine"] ------------------------------------------------------------------

def refine_params(cfg: RefineConfig) -> dict[str, Any]:
    """The settings that shaped the vectors: depth and rounds, then eq. 9's weights or AOpt's."""
    params: dict[str, Any] = {"k": cfg.k, "rounds": cfg.rounds if cfg.rewrites_passages else 0,
                              "query_rounds": cfg.query_rounds if cfg.refines_queries else 0,
                              "normalize": cfg.normalize}
    if cfg.feedback == "topk":
        params["k_pos"] = cfg.k_pos
    params["label_search"] = ({"retrieval": "dense+bm25", "fusion": asdict(cfg.fusion)} if cfg.fuse_bm25
                              else {"retrieval": "dense"})
    if cfg.method == "linear":
        params.update(alpha=1.0, beta=cfg.beta, gamma=cfg.gamma)
    else:
        params.update(cfg.aopt_params(), loss="multi-positive softmax: -log(sum_pos exp(s) / sum_all exp(s))")
    return params


def query_side(cfg: RefineConfig, query_vectors: bool) -> dict[str, Any]:
    """What happens to queries at search time: stored refined vectors, test-time topk, or nothing."""
    test_time = test_time_settings(cfg)
    if cfg.refines_queries:
        note = ("refined query vectors exist only for the feedback queries; other queries are "
                + ("refined at search time with label-free topk feedback (test_time)" if test_time
                   else "encoded as usual"))
    else:
        note = "query vectors are not refined (encoded as usual)"
    return {"refined_vectors": f"{REFINE_DIR}/{QUERY_VECTORS}" if query_vectors else None,
            "note": note, "test_time": test_time}


def system_label(cfg: RefineConfig) -> str:
    """How a refined index is named in every table: the method, and for the query side under the honest
    protocol what it really is at search time, label-free PRF (``aopt-query[prf k'=5]``), and whether the
    labelled passages came from dense retrieval fused with BM25 (``aopt-passage[labels dense+bm25 rrf k=60]``)."""
    label = cfg.method
    if cfg.fuse_bm25:
        label += f"[labels dense+bm25 {cfg.fusion.label}]"
    if cfg.refines_queries and cfg.test_time_queries and not cfg.oracle:
        label += f"[prf k'={cfg.k_pos}]"
    return label + ("+oracle" if cfg.oracle else "")


def build_refine_meta(cfg: RefineConfig, feedback: FeedbackSet, protocol: dict[str, Any],
                      log: list[dict[str, Any]], *, passages_changed: int, base_name: str, query_vectors: bool,
                      passage_labels: bool, query_labels: bool) -> dict[str, Any]:
    """``index.json["refine"]`` (without ``seconds``): method, params, feedback, protocol, rounds, files."""
    return {
        "method": cfg.method,
        "order": "passages first (all rounds), then queries" if cfg.method == "hybrid" else None,
        "params": refine_params(cfg),
        "feedback": {"kind": cfg.feedback, **feedback.sources,
                     **({"match": cfg.match} if cfg.feedback == "answers" else {})},
        "protocol": protocol,
        "queries": {"count": len(feedback), "file": f"{REFINE_DIR}/{FEEDBACK_QUERIES}"},
        "query_side": query_side(cfg, query_vectors),
        "passages_changed": int(passages_changed),
        "rounds": log,
        "labels": {"passage_centric": f"{REFINE_DIR}/{PASSAGE_LABELS}" if passage_labels else None,
                   "query_centric": f"{REFINE_DIR}/{QUERY_LABELS}" if query_labels else None},
        "base_index": str(Path(cfg.index).resolve()),
        "base_name": base_name,
        "config": cfg.to_json(),
    }


# --- the stage -------------------------------------------------------------------------------

@dataclass(kw_only=True)
class RefineResult(StageResult):
    """The refined index folder (``out``) and its metadata (``manifest``, index.json; the refinement under
    ``refine``)."""

    manifest: IndexMeta


def run(cfg: RefineConfig, report: Reporter = QUIET, *, query_vectors: np.ndarray | None = None,
        model=None) -> RefineResult:
    """Refine ``cfg.index`` into ``cfg.out``; ``report`` hears each step and every round's labels.

    ``query_vectors``: the feedback queries' vectors, when already encoded (in feedback order
    after the protocol checks); else they are encoded with the index's model (``model`` shares
    one already loaded).
    """
    say = report.message
    started = time.perf_counter()
    out = Path(cfg.out)
    if out.resolve() == Path(cfg.index).resolve():
        raise RefineError("--out must be a new folder, not the index being refined")
    folder = OutputFolder(out, stage="refine", holds="a refined index", error=RefineError, report=report,
                          owns=(REFINE_DIR, INDEX_JSON, IDS_FILE, EMBEDDINGS_FILE, FAISS_FILE, TUNE_JSON))
    folder.prepare(overwrite=cfg.overwrite)
    feedback, protocol = open_feedback(cfg, report)
    if cfg.oracle:
        say(ORACLE_WARNING)
    index = IndexFolder(cfg.index)
    dense = index.dense(model=model, device=cfg.device)
    lookup = index.store()
    try:
        passage_ids = dense.passage_ids
        judge = feedback.judge(passage_ids, lookup, cfg.k_pos, cfg.match)
        if query_vectors is None:
            say(f"encoding {len(feedback):,} feedback queries")
            query_vectors = dense.encode_queries(feedback.texts, batch_size=cfg.batch_size)
        query_vectors = np.ascontiguousarray(query_vectors, dtype=np.float32)
        if len(query_vectors) != len(feedback):
            raise RefineError(f"{len(query_vectors)} query vectors for {len(feedback)} feedback queries")
        searcher = PatchedSearcher.of(dense)
        lexical = None
        if cfg.fuse_bm25:
            bm25, source = index.bm25(lookup, report)
            say(f"labels: the dense ranking fused with BM25 ({cfg.fusion.label}; BM25 {source})")
            lexical = LexicalRanking.of(bm25, feedback.texts, passage_ids, cfg.fusion, cfg.k)
        passage_tables: list[pa.Table] = []
        query_tables: list[pa.Table] = []

        def keep_views(side: str):
            def on_round(r: int, labels: Labels) -> None:
                texts = None
                if cfg.label_texts and lookup is not None:
                    ids = [passage_ids[i] for i in labels.passages()]
                    titles, bodies = lookup.titles(ids), lookup.texts(ids)
                    texts = {p: (titles.get(p), bodies.get(p)) for p in ids}
                pv = labels.passage_view(feedback, passage_ids, r + 1, texts)
                qv = labels.query_view(feedback, passage_ids, r + 1)
                passage_tables.append(pv.add_column(0, "side", pa.array([side] * len(pv), pa.string())))
                query_tables.append(qv.add_column(0, "side", pa.array([side] * len(qv), pa.string())))
                say(f"{side} round {r + 1}: {labels.stats()}")
            return on_round

        log: list[dict[str, Any]] = []
        if cfg.rewrites_passages:
            say(f"{cfg.method}: refining passages with {len(feedback):,} {cfg.feedback} feedback queries")
            log += refine_passages(searcher, query_vectors, judge, cfg, keep_views("passage"), lexical)
        refined_queries = None
        if cfg.refines_queries:
            say(f"{cfg.method}: refining the {len(feedback):,} feedback query vectors")
            rounds = QueryRounds(cfg.k, cfg.query_rounds, cfg.aopt_params(), cfg.device, cfg.normalize, cfg.threads)
            refined_queries, query_moved, qlog = refine_queries(searcher, query_vectors, judge, rounds,
                                                                keep_views("query"), lexical)
            log += qlog

        say(f"writing the refined index to {out}")
        rdir = out / REFINE_DIR
        rdir.mkdir(parents=True, exist_ok=True)
        if passage_tables:
            write_parquet(pa.concat_tables(passage_tables, promote_options="default"), rdir / PASSAGE_LABELS)
        if query_tables:
            write_parquet(pa.concat_tables(query_tables, promote_options="default"), rdir / QUERY_LABELS)
        write_parquet(pa.table({"query_id": pa.array(feedback.ids, pa.string()),
                                "query": pa.array(feedback.texts, pa.string())}), rdir / FEEDBACK_QUERIES)
        if refined_queries is not None:
            write_parquet(pa.table({
                "query_id": pa.array(feedback.ids, pa.string()),
                "query": pa.array(feedback.texts, pa.string()),
                "refined": pa.array(query_moved, pa.bool_()),
                "vector": pa.array(list(refined_queries), pa.list_(pa.float32())),
            }), rdir / QUERY_VECTORS)

        base_name = dense.meta.name or dense.encoder.model_label
        name = f"{base_name}+{system_label(cfg)}"
        refine_meta = build_refine_meta(cfg, feedback, protocol, log, passages_changed=len(searcher.rows),
                                        base_name=base_name, query_vectors=refined_queries is not None,
                                        passage_labels=bool(passage_tables), query_labels=bool(query_tables))
        vectors = searcher.patched() if len(searcher.rows) else dense.embeddings
        meta = save_dense_index(out, pa.array(passage_ids.tolist(), pa.string()), vectors, dense.encoder,
                                dense.params, dense.meta.dtype or "float32", name=name, retriever="refined",
                                refine=refine_meta, store=dense.meta.store, n_passages=dense.meta.n_passages)
        meta.refine["seconds"] = round(time.perf_counter() - started, 3)
        meta.write(out)
        folder.seal()
        return RefineResult(out=out, manifest=meta)
    finally:
        if lookup is not None:
            lookup.close()
