"""``pretriever evaluate`` without the command line: open the systems, load the questions,
evaluate, write EVAL_DIR. :func:`run_evaluation` is what the CLI calls."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pretriever.corpus.store import CorpusStore, StoreError
from pretriever.evaluate.answers import guess_match_mode, load_qa_file
from pretriever.evaluate.config import EvaluateConfig
from pretriever.evaluate.core import EvaluationError, EvaluationResult, Progress, evaluate_retrievers
from pretriever.evaluate.datasets import load_multihop, load_qrels, load_queries, queries_in_qrels
from pretriever.evaluate.report import write_results
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
    """The dense indexes of ``cfg.index`` and, with ``cfg.bm25``, BM25 over the same store."""
    from pretriever.index import BM25Index
    from pretriever.index.dense import BM25_DIR
    from pretriever.refine import open_index

    say = step or (lambda message: None)
    systems = Systems()
    names: set[str] = set()
    for index_dir in cfg.index:
        say(f"opening {index_dir}")
        index = open_index(index_dir, device=cfg.device)  # a refined index brings its query side along
        store = _index_store(index.meta, index_dir, cfg.corpus)
        n_store = CorpusStore(store).counts.get("passages")
        if n_store is not None and n_store != len(index):
            raise EvaluationError(f"{index_dir} holds {len(index):,} passages but the store {store} has "
                                  f"{n_store:,}: the index was not built from this store")
        retriever = index if index.name not in names else Renamed(index, f"{index.name}@{Path(index_dir).name}")
        names.add(retriever.name)
        systems.retrievers.append(retriever)
        systems.stores[retriever.name] = store
        systems.described[retriever.name] = {"type": "dense", "index": str(index_dir), "store": str(store),
                                             "model": index.encoder.get("model"), "index_type":
                                             index.meta.get("index", {}).get("type")}
    if cfg.bm25:
        store = cfg.corpus or systems.stores[systems.retrievers[0].name]
        bm25 = None
        candidates = [p for p in (cfg.bm25_dir, *(Path(d) / BM25_DIR for d in cfg.index)) if p is not None]
        for candidate in candidates:
            if (candidate / "bm25.json").exists():
                loaded = BM25Index.load(candidate)
                built_on = (loaded.meta.get("corpus") or {}).get("store")
                if built_on and Path(built_on).resolve() != Path(store).resolve():
                    if candidate == cfg.bm25_dir:
                        raise EvaluationError(f"{candidate} is a BM25 index of {built_on}, not of {store}")
                    continue
                say(f"loaded BM25 from {candidate}")
                bm25, source = loaded, str(candidate)
                break
        if bm25 is None:
            say(f"building BM25 over {store}")
            bm25 = BM25Index.build(store)
            source = "built for this run"
            if cfg.bm25_dir is not None:
                bm25.save(cfg.bm25_dir)
                source = f"built and saved to {cfg.bm25_dir}"
        name = "bm25" if "bm25" not in names else "bm25@corpus"
        systems.retrievers.append(bm25 if name == "bm25" else Renamed(bm25, name))
        systems.stores[name] = Path(store)
        systems.described[name] = {"type": "bm25", "store": str(store), "source": source,
                                   "options": bm25.meta.get("options")}
    return systems


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


def run_evaluation(cfg: EvaluateConfig, progress: Progress | None = None,
                   step: Step | None = None) -> tuple[EvaluationResult, dict[str, Path]]:
    """Evaluate every system of ``cfg`` and write ``cfg.out``; returns the result and the files written."""
    started = time.perf_counter()
    data = load_dataset(cfg)  # input errors first, before models load
    try:
        systems = open_systems(cfg, step)
    except StoreError as err:
        raise EvaluationError(str(err)) from err
    dataset = {**data.pop("dataset"), "systems": systems.described}
    result = evaluate_retrievers(
        systems.retrievers, store=systems.stores, ks=cfg.ks, depth=cfg.depth, maxp_factor=cfg.maxp_factor,
        ignore_identical_ids=cfg.ignore_identical_ids, overlap=cfg.overlap, overlap_k=cfg.overlap_k,
        batch_size=cfg.batch_size, progress=progress, dataset=dataset, **data)
    result.config = {**cfg.to_json(), **{k: v for k, v in result.config.items() if v is not None}}
    result.dataset["seconds"] = round(time.perf_counter() - started, 2)
    written = write_results(result, cfg.out, plots=cfg.plots, save_runs=cfg.save_runs)
    return result, written
