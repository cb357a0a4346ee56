"""``pretriever evaluate`` without the command line: open the systems, load the questions,
evaluate, write EVAL_DIR. :func:`run_evaluation` is what the CLI calls."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from pretriever.data import CorpusStore, StoreError, load_multihop, load_qa_file, load_qrels, load_queries, queries_in_qrels
from pretriever.data.qa import guess_match_mode
from pretriever.evaluate.config import EvaluateConfig
from pretriever.evaluate.core import EvaluationError, EvaluationResult, Progress, evaluate_retrievers
from pretriever.evaluate.report import write_results
from pretriever.index import HybridRetriever, bm25_beside, choose_alpha, open_retriever, retriever_kind
from pretriever.index.dense import BM25_DIR
from pretriever.retrieval import Hit

Step = Callable[[str], None]


class Renamed:
    """A retriever under another name (two indexes of the same model, say)."""

    def __init__(self, inner, name: str):
        self.inner, self.name = inner, name

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        return self.inner.search(queries, k)


@dataclass
class Systems:
    retrievers: list = field(default_factory=list)
    stores: dict[str, Path] = field(default_factory=dict)  # system name -> corpus store folder
    described: dict[str, dict[str, Any]] = field(default_factory=dict)  # system name -> where it came from


def _index_store(meta: dict[str, Any], index_dir: Path, override: Path | None) -> Path:
    named = (meta.get("corpus") or {}).get("store")
    if override is not None:
        return override
    if not named:
        raise EvaluationError(f"{index_dir}/index.json names no corpus store; give the store with --corpus")
    if not Path(named).exists():
        raise EvaluationError(f"{index_dir}/index.json names the corpus store {named}, which is not there "
                              "(moved?); give its new place with --corpus")
    return Path(named)


def open_systems(cfg: EvaluateConfig, step: Step | None = None) -> Systems:
    """The indexes of ``cfg.index`` (any kind :func:`open_retriever` knows) and, with ``cfg.bm25``,
    BM25 over the same store."""
    say = step or (lambda message: None)
    systems = Systems()
    names: set[str] = set()

    def add(retriever, store: Path, described: dict[str, Any]) -> None:
        if retriever.name in names:
            where = Path(described["index"]).name if "index" in described else "corpus"
            retriever = Renamed(retriever, f"{retriever.name}@{where}")
        names.add(retriever.name)
        systems.retrievers.append(retriever)
        systems.stores[retriever.name] = store
        systems.described[retriever.name] = described

    for index_dir in cfg.index:
        say(f"opening {index_dir}")
        index = open_retriever(index_dir, device=cfg.device)  # a refined index brings its query side along
        store = _index_store(index.meta, index_dir, cfg.corpus)
        n_store = CorpusStore(store).counts.get("passages")
        if n_store is not None and n_store != len(index):
            raise EvaluationError(f"{index_dir} holds {len(index):,} passages but the store {store} has "
                                  f"{n_store:,}: the index was not built from this store")
        add(index, store, {"type": retriever_kind(index_dir), "index": str(index_dir), "store": str(store),
                           "model": getattr(index, "encoder", {}).get("model"),
                           "index_type": index.meta.get("index", {}).get("type")})
    if cfg.bm25 or cfg.hybrid:
        store = cfg.corpus or systems.stores[systems.retrievers[0].name]
        candidates = [p for p in (cfg.bm25_dir, *(Path(d) / BM25_DIR for d in cfg.index)) if p is not None]
        bm25, source = bm25_beside(store, candidates, cfg.bm25_dir, say)
        if cfg.bm25:
            add(bm25, Path(store), {"type": "bm25", "store": str(store), "source": source,
                                    "options": bm25.meta.get("options")})
        if cfg.hybrid:
            for dense in list(systems.retrievers[:len(cfg.index)]):
                hybrid, chosen = _hybrid(dense, bm25, cfg, say)
                add(hybrid, systems.stores[dense.name], {"type": "hybrid", "of": [dense.name, bm25.name],
                                                         "fusion": asdict(hybrid.options), **chosen})
    return systems


def _hybrid(dense, bm25, cfg: EvaluateConfig, say: Step) -> tuple[HybridRetriever, dict[str, Any]]:
    """``dense`` fused with BM25; with ``alpha_from``, the convex weight chosen on those judgments."""
    hybrid = HybridRetriever(dense, bm25, cfg.fusion)
    if cfg.alpha_from is None:
        return hybrid, {}
    say(f"choosing alpha for {dense.name} on {cfg.alpha_from}")
    alpha, scores = choose_alpha(hybrid, load_queries(cfg.queries), load_qrels(cfg.alpha_from))
    options = replace(cfg.fusion, alpha=alpha)
    return HybridRetriever(dense, bm25, options), {"alpha_chosen_on": str(cfg.alpha_from),
                                                   "alpha_scores": {f"{a:g}": round(v, 4) for a, v in scores.items()}}


def load_dataset(cfg: EvaluateConfig) -> dict[str, Any]:
    """The questions of ``cfg`` as keyword arguments for :func:`evaluate_retrievers`, plus a description."""
    if cfg.kind == "qrels":
        queries = load_queries(cfg.queries)
        qrels = load_qrels(cfg.qrels)
        queries = queries_in_qrels(queries, qrels, cfg.queries, cfg.qrels)
        if cfg.limit:
            qrels = dict(list(qrels.items())[:cfg.limit])
        folder = cfg.queries if cfg.queries.is_dir() else cfg.queries.parent
        split = cfg.qrels.stem if cfg.qrels.is_file() else "test"
        return {"queries": queries, "qrels": qrels,
                "dataset": {"name": f"{folder.name}/{split}", "queries_file": str(cfg.queries),
                            "qrels_file": str(cfg.qrels)}}
    if cfg.kind == "answers":
        examples = load_qa_file(cfg.answers)[:cfg.limit or None]
        match = guess_match_mode(cfg.answers) if cfg.match == "auto" else cfg.match
        return {"answers": examples, "match": match,
                "dataset": {"name": cfg.answers.stem, "answers_file": str(cfg.answers), "match_chosen_by":
                            "auto (file name)" if cfg.match == "auto" else "--match"}}
    examples, by = load_multihop(cfg.multihop)
    return {"multihop": examples[:cfg.limit or None], "gold_by": by,
            "dataset": {"name": cfg.multihop.stem, "multihop_file": str(cfg.multihop)}}


def _questions(data: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(ids, texts) of the questions about to be evaluated."""
    if "qrels" in data:
        return list(data["qrels"]), [data["queries"][q] for q in data["qrels"]]
    examples = data.get("answers") or data.get("multihop") or []
    return [e.qid for e in examples], [e.question for e in examples]


def check_protocols(systems: Systems, data: dict[str, Any]) -> list[str]:
    """Refuse to score a refined index on questions whose labels refined it (unless it was refined with
    --oracle), by id and by normalised text, whatever the files are called; record what was found and
    return the notes a reader of the results must see."""
    ids, texts = _questions(data)
    notes = []
    for retriever in systems.retrievers:
        parts = [retriever, getattr(retriever, "inner", None), getattr(retriever, "dense", None)]
        refined = next((p for p in parts if hasattr(p, "feedback_overlap")), None)
        if refined is None:
            continue
        found = refined.feedback_overlap(ids, texts)
        systems.described[retriever.name]["refine_protocol"] = found
        if found["leak"] and found["protocol"] != "oracle":
            raise EvaluationError(
                f"{retriever.name}: {found['evaluation_queries_in_feedback']:,} of the {len(ids):,} evaluation "
                f"questions were feedback queries of its refinement ({found['feedback']} labels): scoring it on "
                "them leaks their labels. Evaluate on other questions, or refine with --oracle to reproduce the "
                "paper's protocol (reported as ORACLE).")
        if found["protocol"] == "oracle":
            notes.append(f"{retriever.name}: ORACLE protocol: refined with the labels of the questions it is "
                         "scored on; not a held-out result")
        elif found["transductive"]:
            notes.append(f"{retriever.name}: transductive: refined with label-free feedback on "
                         f"{found['evaluation_queries_in_feedback']:,} of these very questions")
    return notes


def run_evaluation(cfg: EvaluateConfig, progress: Progress | None = None,
                   step: Step | None = None) -> tuple[EvaluationResult, dict[str, Path]]:
    """Evaluate every system of ``cfg`` and write ``cfg.out``; returns the result and the files written."""
    started = time.perf_counter()
    data = load_dataset(cfg)  # input errors first, before models load
    try:
        systems = open_systems(cfg, step)
    except StoreError as err:
        raise EvaluationError(str(err)) from err
    protocol_notes = check_protocols(systems, data)
    dataset = {**data.pop("dataset"), "systems": systems.described}
    result = evaluate_retrievers(
        systems.retrievers, store=systems.stores, ks=cfg.ks, depth=cfg.depth, maxp_factor=cfg.maxp_factor,
        ignore_identical_ids=cfg.ignore_identical_ids, overlap=cfg.overlap, overlap_k=cfg.overlap_k,
        batch_size=cfg.batch_size, progress=progress, dataset=dataset, **data)
    result.config = {**cfg.to_json(), **{k: v for k, v in result.config.items() if v is not None}}
    result.dataset["seconds"] = round(time.perf_counter() - started, 2)
    if protocol_notes:
        result.dataset["notes"] = result.dataset.get("notes", []) + protocol_notes
    written = write_results(result, cfg.out, plots=cfg.plots, save_runs=cfg.save_runs)
    return result, written
