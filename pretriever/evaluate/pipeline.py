"""``pretriever evaluate`` without the command line: open the systems, load the questions,
evaluate, read behind the systems with ``cfg.reader``, write EVAL_DIR. :func:`run` is what the CLI calls,
and all it calls: the command only parses options and prints.

The reader (:mod:`pretriever.reader`) sits one layer below this stage, so :func:`run` reads with it directly:
each index is opened once, read behind while it is open, and results.json is written once, with the reader's
scores in it. The reader needs nothing from evaluate (it scores any ``Searcher``), whereas evaluate needs the
reader to do what its config asks; a hook that the command line passed in would leave a library caller who
sets ``cfg.reader`` without reader scores, the break this layout removes."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pretriever.data import (PassageLookup, StoreError, load_multihop, load_qa_file, load_qrels, load_queries,
                             queries_in_qrels)
from pretriever.data.qa import guess_match_mode
from pretriever.evaluate.config import EvaluateConfig
from pretriever.evaluate.core import EvaluationError, EvaluationOptions, EvaluationResult, evaluate_retrievers
from pretriever.evaluate.manifest import EvaluationManifest
from pretriever.evaluate.tasks import AnswersTask, EvaluationTask, MultiHopTask, QrelsTask
from pretriever.evaluate.report import eval_folder, write_results
from pretriever.index import HybridOptions, HybridRetriever, IndexFolder, System, bm25_system, choose_alpha
from pretriever.index.meta import BM25_DIR
from pretriever.metrics import normalisation_name
from pretriever.progress import QUIET, Reporter
from pretriever.reader.config import ReadOptions
from pretriever.reader.evaluate import read_behind
from pretriever.reader.predict import Reader
from pretriever.stage import StageResult


@runtime_checkable
class Refined(Protocol):
    """A system refined with labelled feedback queries (``pretriever refine``): it can say which of the
    evaluation questions were among them."""

    def feedback_overlap(self, ids: list[str], texts: list[str]) -> dict[str, Any]:
        ...


@dataclass
class Systems:
    """The systems an evaluation opened, in table order, with where each came from and the refined indexes
    among them (whose feedback queries are checked against the evaluation's); close them when done.
    """

    retrievers: list = field(default_factory=list)  # Searchers (System), in table order
    described: dict[str, dict[str, Any]] = field(default_factory=dict)  # system name -> where it came from
    refined: dict[str, Refined] = field(default_factory=dict)  # system name -> the refined index it searches

    def close(self) -> None:
        for system in self.retrievers:
            system.close()


def open_systems(cfg: EvaluateConfig, report: Reporter = QUIET) -> Systems:
    """The indexes of ``cfg.index`` (any kind :class:`IndexFolder` opens) and, with ``cfg.bm25``,
    BM25 over the same store; close them when done."""
    say = report.message
    systems = Systems()

    def add(system: System, described: dict[str, Any], refined: Refined | None = None) -> System:
        if system.name in systems.described:
            where = Path(described["index"]).name if "index" in described else "corpus"
            system = system.renamed(f"{system.name}@{where}")
        systems.retrievers.append(system)
        systems.described[system.name] = described
        if refined is not None:
            systems.refined[system.name] = refined
        return system

    indexes: list[tuple[System, Refined | None]] = []
    for index_dir in cfg.index:
        say(f"opening {index_dir}")
        folder = IndexFolder(index_dir, cfg.corpus)
        system = folder.open(device=cfg.device, require_store=True)  # a refined index brings its query side along
        store = system.lookup.store
        n_store = store.counts.get("passages")
        if n_store is not None and n_store != len(system):
            raise EvaluationError(f"{index_dir} holds {len(system):,} passages but the store {store.path} has "
                                  f"{n_store:,}: the index was not built from this store")
        refined = system.retriever if isinstance(system.retriever, Refined) else None
        meta = folder.meta
        described = {"type": folder.kind, "index": str(index_dir), "store": str(store.path),
                     "model": meta.encoder.model if meta.encoder is not None else None, "index_type": meta.index_type}
        indexes.append((add(system, described, refined), refined))
        tuned = folder.tuned(system, report) if cfg.tuned else None
        if tuned is not None:
            add(tuned, {**described, "type": "tuned", "tuned": meta.tuned.to_json()}, refined)
    if cfg.bm25 or cfg.hybrid:
        lookup = indexes[0][0].lookup if indexes else PassageLookup(cfg.corpus)
        candidates = [p for p in (cfg.bm25_dir, *(Path(d) / BM25_DIR for d in cfg.index)) if p is not None]
        bm25, source = bm25_system(lookup, candidates, cfg.bm25_dir, report)
        if cfg.bm25:
            add(bm25, {"type": "bm25", "store": str(lookup.path), "source": source,
                       "options": bm25.meta.options})
        if cfg.hybrid:
            for dense, refined in indexes:
                options, chosen = _fusion(dense, bm25, cfg, report)
                add(dense.fused(bm25, options), {"type": "hybrid", "of": [dense.name, bm25.name],
                                                 "fusion": asdict(options), **chosen}, refined)
    return systems


def _fusion(dense: System, bm25: System, cfg: EvaluateConfig,
            report: Reporter) -> tuple[HybridOptions, dict[str, Any]]:
    """How ``dense`` is fused with BM25: ``cfg.fusion``, with ``alpha_from`` the convex weight chosen on those
    judgments (and what was chosen)."""
    if cfg.alpha_from is None:
        return cfg.fusion, {}
    report.message(f"choosing alpha for {dense.name} on {cfg.alpha_from}")
    alpha, scores = choose_alpha(HybridRetriever(dense, bm25, cfg.fusion), load_queries(cfg.queries),
                                 load_qrels(cfg.alpha_from), lookup=dense.lookup)
    return replace(cfg.fusion, alpha=alpha), {
        "alpha_chosen_on": str(cfg.alpha_from), "alpha_scores": {f"{a:g}": round(v, 4) for a, v in scores.items()}}


def load_dataset(cfg: EvaluateConfig) -> dict[str, Any]:
    """The questions of ``cfg`` (the inputs of its task, :func:`make_task`), plus a description."""
    if cfg.kind == "qrels":
        queries = load_queries(cfg.queries)
        qrels = load_qrels(cfg.qrels)
        grades = qrels.described()
        queries = queries_in_qrels(queries, qrels, cfg.queries, cfg.qrels)
        if cfg.limit:
            qrels = dict(list(qrels.items())[:cfg.limit])
        folder = cfg.queries if cfg.queries.is_dir() else cfg.queries.parent
        split = cfg.qrels.stem if cfg.qrels.is_file() else "test"
        return {"queries": queries, "qrels": qrels,
                "dataset": {"name": f"{folder.name}/{split}", "queries_file": str(cfg.queries),
                            "qrels_file": str(cfg.qrels), **grades}}
    if cfg.kind == "answers":
        examples = load_qa_file(cfg.answers)[:cfg.limit or None]
        match = guess_match_mode(cfg.answers) if cfg.match == "auto" else cfg.match
        return {"answers": examples, "match": match,
                "dataset": {"name": cfg.answers.stem, "answers_file": str(cfg.answers), "match_chosen_by":
                            "auto (file name)" if cfg.match == "auto" else "--match"}}
    examples, by = load_multihop(cfg.multihop)
    return {"multihop": examples[:cfg.limit or None], "gold_by": by,
            "dataset": {"name": cfg.multihop.stem, "multihop_file": str(cfg.multihop)}}


def make_task(cfg: EvaluateConfig, data: dict[str, Any]) -> EvaluationTask:
    """The task of ``cfg``'s kind over the questions of ``data`` (:func:`load_dataset`, after
    :func:`check_protocols` has left out any)."""
    if cfg.kind == "qrels":
        return QrelsTask(data["queries"], data["qrels"], cfg.depth, cfg.maxp_factor, cfg.ignore_identical_ids)
    if cfg.kind == "answers":
        return AnswersTask(data["answers"], data["match"], cfg.ks, cfg.depth, cfg.overlap_k)
    return MultiHopTask(data["multihop"], data["gold_by"], cfg.ks, cfg.depth, cfg.overlap_k)


def _questions(data: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(ids, texts) of the questions about to be evaluated."""
    if "qrels" in data:
        return list(data["qrels"]), [data["queries"][q] for q in data["qrels"]]
    examples = data.get("answers") or data.get("multihop") or []
    return [e.qid for e in examples], [e.question for e in examples]


def check_protocols(systems: Systems, data: dict[str, Any]) -> list[str]:
    """Refuse to score a refined index on questions whose labels refined it (unless it was refined with
    --oracle), by id and by normalised text, whatever the files are called; record what was found and
    return the notes a reader of the results must see.

    When only some questions repeat feedback queries (SciFact's test claims 1292 and 870 are its training
    claims 1291 and 871, word for word), those are left out for every system, so the figures stay comparable,
    and every row is named with what it was scored on (:func:`leave_out`). When all of them do, it refuses."""
    ids, texts = _questions(data)
    notes = []
    leaked: dict[str, dict[str, str]] = {}  # system -> {evaluation id: the feedback query id it repeats}
    for retriever in systems.retrievers:
        refined = systems.refined.get(retriever.name) or (retriever if isinstance(retriever, Refined) else None)
        if refined is None:
            continue
        found = refined.feedback_overlap(ids, texts)
        systems.described[retriever.name]["refine_protocol"] = found
        if found["leak"] and found["protocol"] != "oracle":
            leaked[retriever.name] = found["repeats"]
        if found["protocol"] == "oracle":
            notes.append(f"{retriever.name}: ORACLE protocol: refined with the labels of the questions it is "
                         "scored on; not a held-out result")
        elif found["transductive"]:
            notes.append(f"{retriever.name}: transductive: refined with label-free feedback on "
                         f"{found['evaluation_queries_in_feedback']:,} of these very questions")
    return leave_out(systems, data, leaked) + notes if leaked else notes


def leave_out(systems: Systems, data: dict[str, Any], leaked: dict[str, dict[str, str]]) -> list[str]:
    """Drop the questions that repeat a refined system's (labelled) feedback queries from ``data``, for every
    system, rename every system ``NAME [298/300 scored: 2 repeat feedback queries]`` and record the ids left
    out in the results' dataset (``left_out``); refuse when no question would be left."""
    ids, _ = _questions(data)
    repeats = {q: {name: found[q] for name, found in leaked.items() if q in found}
               for q in ids if any(q in found for found in leaked.values())}
    if len(repeats) == len(ids):
        name = max(leaked, key=lambda n: len(leaked[n]))
        raise EvaluationError(
            f"{name}: {len(leaked[name]):,} of the {len(ids):,} evaluation questions were feedback queries of its "
            f"refinement ({systems.described[name]['refine_protocol']['feedback']} labels): scoring it on them "
            "leaks their labels. Evaluate on other questions, or refine with --oracle to reproduce the paper's "
            "protocol (reported as ORACLE).")
    if "qrels" in data:
        data["qrels"] = {q: judged for q, judged in data["qrels"].items() if q not in repeats}
    else:
        key = "answers" if "answers" in data else "multihop"
        data[key] = [e for e in data[key] if e.qid not in repeats]
    scored = len(ids) - len(repeats)
    suffix = f" [{scored:,}/{len(ids):,} scored: {len(repeats):,} repeat feedback queries]"
    renamed = {r.name: f"{r.name}{suffix}" for r in systems.retrievers}
    for i, retriever in enumerate(systems.retrievers):
        if hasattr(retriever, "renamed"):
            systems.retrievers[i] = retriever.renamed(renamed[retriever.name])
        else:  # a bare retriever (no store): renamed in place
            retriever.name = renamed[retriever.name]
    systems.described = {renamed.get(n, n): d for n, d in systems.described.items()}
    systems.refined = {renamed.get(n, n): r for n, r in systems.refined.items()}
    repeated = {q: "/".join(sorted(set(by.values()))) for q, by in repeats.items()}  # the feedback id(s) repeated
    which = ", ".join(f"{q} (repeats {f})" for q, f in repeated.items())
    data.setdefault("dataset", {})["left_out"] = {
        "scored": scored, "of": len(ids), "ids": list(repeats), "repeats": repeated,
        "feedback_of": [renamed[n] for n in leaked],
        "reason": "these evaluation questions repeat labelled feedback queries of a refined system (by id or "
                  "normalised text); they are left out for every system so the figures stay comparable",
        "applies_to": list(renamed.values())}
    return [f"{len(repeats):,} of the {len(ids):,} questions repeat labelled feedback queries of "
            f"{', '.join(leaked)}: left out for every system, so all are scored on the same {scored:,}: {which}"]


def _read(cfg: EvaluateConfig, systems: Systems, answers: list, match: str, report: Reporter) -> dict[str, Any]:
    """``cfg.reader`` behind every system, on the questions they were scored on (after :func:`leave_out`): what
    results.json keeps under ``"reader"``."""
    reader = Reader.load(cfg.reader, ReadOptions(device=cfg.device))
    report.message(f"reading with {cfg.reader}")
    scores = read_behind(systems.retrievers, answers, reader, cfg.reader_k, match, cfg.lenient_match, report)
    return {"reader": str(cfg.reader), "k": cfg.reader_k, "match": match,
            "normalisation": normalisation_name(cfg.lenient_match), "systems": scores}


@dataclass(kw_only=True)
class EvaluateResult(StageResult):
    """EVAL_DIR (``out``), its results.json (``manifest``), the evaluation in memory (with the rankings) and
    the files written (``results``, ``curve``, ``overlap``, ``runs``)."""

    manifest: EvaluationManifest | None = None
    evaluation: EvaluationResult
    written: dict[str, Path] = field(default_factory=dict)


def run(cfg: EvaluateConfig, report: Reporter = QUIET) -> EvaluateResult:
    """Evaluate every system of ``cfg`` and, with ``cfg.reader``, read behind each (``result.evaluation.reader``,
    results.json's ``"reader"``), then write ``cfg.out``; ``report`` hears which system opens and how many
    queries each has searched (task ``searching: SYSTEM``) or read (``reading``)."""
    started = time.perf_counter()
    eval_folder(cfg.out).check()  # someone else's folder is refused before the work, not after
    data = load_dataset(cfg)  # input errors first, before models load
    try:
        systems = open_systems(cfg, report)
    except StoreError as err:
        raise EvaluationError(str(err)) from err
    try:
        protocol_notes = check_protocols(systems, data)
        dataset = {**data.pop("dataset"), "systems": systems.described}
        options = EvaluationOptions(overlap=cfg.overlap, batch_size=cfg.batch_size, dataset=dataset)
        result = evaluate_retrievers(systems.retrievers, make_task(cfg, data), options, report)
        if cfg.reader is not None:
            result.reader = _read(cfg, systems, data["answers"], data["match"], report)
    finally:
        systems.close()
    result.config = {**cfg.to_json(), **{k: v for k, v in result.config.items() if v is not None}}
    result.dataset["seconds"] = round(time.perf_counter() - started, 2)
    if protocol_notes:
        result.dataset["notes"] = result.dataset.get("notes", []) + protocol_notes
    written = write_results(result, cfg.out, plots=cfg.plots, save_runs=cfg.save_runs)
    return EvaluateResult(out=cfg.out, manifest=EvaluationManifest.read(cfg.out), evaluation=result,
                          written=written)
