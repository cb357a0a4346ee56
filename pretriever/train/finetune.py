"""Two-stage fine-tuning (query-as-context, Wu et al. 2023, section 3.2 and Figure 3), as existing stages.

Retriever 1 is trained on the judged queries with BM25 negatives (:func:`pretriever.train.run.run`;
``--bm25-negatives`` of BM25's top ``--bm25-depth``, 15 of 200 by default, as retriever 2);
the corpus is indexed with it (:func:`pretriever.index.encode.run`); retriever 2 is trained
from the same starting model with negatives that retriever 1 ranks high
(``TrainConfig.negatives_from``, see :mod:`pretriever.train.index_negatives`). This module only
orders those calls, names their folders and skips what is done::

    FINETUNE_DIR/
      store/          the corpus store built from the BEIR folder (only when no --corpus is given)
      stage1/         retriever 1 (a sentence-transformers model; train.json)
      stage1-index/   the corpus encoded with retriever 1
      stage2/         retriever 2
      finetune.json   each stage: its folder, whether it ran now or earlier, its seconds

Resuming: a stage whose output is complete (``train.json``, ``index.json``, ``manifest.json``) is
skipped when its settings are the ones asked for now (else an error asks for --overwrite); an
interrupted stage continues from its checkpoints (training) or finished chunks (index, store);
a stage after one that ran now runs again, so the index always belongs to the retriever 1 on disk.

Example::

    from pretriever.train.config import FinetuneConfig
    from pretriever.train.finetune import run
    result = run(FinetuneConfig(out="sf-ft/", beir="scifact/", two_stage=True, max_steps=50))
    print(result.stages[-1].path)   # sf-ft/stage2: retriever 2
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pretriever.corpus.build import CHECKPOINT as STORE_CHECKPOINT
from pretriever.corpus.build import WORK as STORE_WORK
from pretriever.corpus import build as corpus_build
from pretriever.corpus.config import CorpusConfig
from pretriever.data.store import CorpusStore
from pretriever.index import IndexConfig, IndexMeta, encode
from pretriever.index.meta import INDEX_JSON
from pretriever.index.encode import WORK as INDEX_WORK
from pretriever.progress import QUIET, Reporter
from pretriever.stage import OutputFolder, StageResult, differences
from pretriever.train.config import FinetuneConfig, TrainConfig
from pretriever.train import run as training
from pretriever.train.errors import TrainError
from pretriever.train.manifest import FinetuneManifest, TrainManifest

STORE, STAGE1, INDEX, STAGE2 = "store", "stage1", "stage1-index", "stage2"
PLAN = FinetuneManifest.FILE
RunTrain = Callable[[TrainConfig, Reporter], Any]  # trains one stage: pretriever.train.run.run, or a caller's


@dataclass
class StageRun:
    """One step of a two-stage fine-tuning (store, retriever 1, its index, retriever 2): its folder, and whether it ran
    now or was kept from an earlier run.
    """

    name: str  # "corpus store", "retriever 1", "index of retriever 1", "retriever 2"
    path: Path
    ran: bool  # False: its output was complete before this run and was kept
    seconds: float  # of this run (0 when kept)
    note: str = ""


@dataclass(kw_only=True)
class FinetuneResult(StageResult):
    """FINETUNE_DIR (``out``), its finetune.json (``manifest``) and each stage's folder and whether it ran."""

    manifest: FinetuneManifest | None = None  # set when the run finishes
    config: FinetuneConfig
    stages: list[StageRun] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"config": self.config.to_json(),
                "stages": [{**dataclasses.asdict(s), "path": str(s.path)} for s in self.stages]}


def changed_settings(before: dict[str, Any], cfg: TrainConfig) -> str:
    """The run settings (:meth:`TrainConfig.run_settings`) that differ from ``before``, as "key: old -> new"
    (a setting ``before`` does not name is not a change)."""
    now = cfg.run_settings()
    return "; ".join(differences({k: before[k] for k in now if k in before}, {k: now[k] for k in now if k in before}))


def stage_config(cfg: FinetuneConfig, out: Path, **changes: Any) -> TrainConfig:
    """The ``train`` settings of one stage: the finetune settings, another folder, and ``changes``."""
    values = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(TrainConfig)}
    values.update(out=out, resume=False, overwrite=False, **changes)
    return TrainConfig(**values)


class _Within(Reporter):
    """``report`` with a stage's name before each task, so that each stage has its own progress bars."""

    def __init__(self, report: Reporter, name: str):
        self.report, self.name = report, name

    def message(self, text: str) -> None:
        self.report.message(text)

    def progress(self, task: str, done: int, total: int | None = None, unit: str = "items", **fields: object) -> None:
        self.report.progress(f"{self.name}: {task}", done, total, unit, **fields)


def _train_stage(name: str, scfg: TrainConfig, redo: bool, run_train: RunTrain, report: Reporter) -> StageRun:
    """Skip a finished training whose settings match, continue an interrupted one, else train."""
    if (scfg.out / TrainManifest.FILE).exists() and not redo:
        earlier = TrainManifest.read(scfg.out)
        detail = changed_settings(earlier.config, scfg)
        if detail:
            raise TrainError(f"{scfg.out} holds {name} trained with other settings ({detail}); delete that folder "
                             "to train it (and what follows) again, pass --overwrite to run every stage again, or "
                             "use another FINETUNE_DIR")
        took = earlier.seconds.get("total")
        return StageRun(name, scfg.out, False, 0.0, f"finished earlier ({took:.0f} s)" if took else "finished earlier")
    if training.output_folder(scfg.out).last_checkpoint() is not None and not redo:
        scfg, note = dataclasses.replace(scfg, resume=True), "resumed from its checkpoint"
    else:
        scfg, note = dataclasses.replace(scfg, overwrite=scfg.out.exists()), "trained"
    started = time.perf_counter()
    run_train(scfg, _Within(report, name))
    return StageRun(name, scfg.out, True, round(time.perf_counter() - started, 3), note)


def _store_stage(cfg: FinetuneConfig) -> StageRun:
    """The corpus store the index encodes: --corpus, else one built from the BEIR folder."""
    if cfg.corpus is not None:
        return StageRun("corpus store", cfg.corpus, False, 0.0, "given (--corpus)")
    out = cfg.out / STORE
    if (out / "manifest.json").exists():
        CorpusStore(out)  # a clear error when it is damaged
        return StageRun("corpus store", out, False, 0.0, "built earlier")
    interrupted = (out / STORE_WORK / STORE_CHECKPOINT).exists()
    started = time.perf_counter()
    corpus_build.run(CorpusConfig(input=cfg.beir, out=out, resume=interrupted, overwrite=not interrupted))
    return StageRun("corpus store", out, True, round(time.perf_counter() - started, 3),
                    "resumed" if interrupted else f"built from {cfg.beir}")


def _index_stage(cfg: FinetuneConfig, store: Path, model: Path, redo: bool, report: Reporter) -> StageRun:
    """The corpus encoded with retriever 1 (kept when complete and retriever 1 did not change)."""
    out = cfg.out / INDEX
    name = "index of retriever 1"
    if (out / INDEX_JSON).exists() and not redo:
        meta = IndexMeta.read(out, dense=True)
        built_with = meta.encoder.model if meta.encoder is not None else None
        built_on = meta.store
        if built_with != str(model.resolve()) or built_on != str(store.resolve()):
            raise TrainError(f"{out} is an index of {built_with} over {built_on}, not of {model} over {store}; "
                             "pass --overwrite to run every stage again")
        return StageRun(name, out, False, 0.0, "built earlier")
    resume = (out / INDEX_WORK).exists() and not redo
    started = time.perf_counter()
    index_cfg = IndexConfig(corpus=store, out=out, model=str(model), batch_size=cfg.index_batch_size,
                            prepend_title=cfg.prepend_title, resume=resume, overwrite=not resume)
    encode.run(index_cfg, _Within(report, name))
    return StageRun(name, out, True, round(time.perf_counter() - started, 3),
                    "resumed" if resume else "encoded with retriever 1")


def _prepare(cfg: FinetuneConfig, report: Reporter) -> OutputFolder:
    """FINETUNE_DIR: kept as it is (finished stages are skipped), or emptied of its stages with --overwrite."""
    folder = OutputFolder(cfg.out, stage="finetune", holds="a fine-tuning run", owns=(PLAN, STAGE1, STAGE2, INDEX, STORE),
                          error=TrainError, report=report)
    folder.prepare(resume=not cfg.overwrite, overwrite=cfg.overwrite, need_checkpoint=False)
    return folder


def run(cfg: FinetuneConfig, report: Reporter = QUIET, *, run_train: RunTrain = training.run) -> FinetuneResult:
    """Run retriever 1 and, with ``cfg.two_stage``, the index and retriever 2; skip what is done.

    ``report`` hears which stage starts and each stage's progress (tasks named after the stage);
    ``run_train(stage_config, report)`` trains a stage (the command line passes its own, which also
    prints the summary).
    """
    folder = _prepare(cfg, report)
    result = FinetuneResult(out=cfg.out, config=cfg)
    stage1 = stage_config(cfg, cfg.out / STAGE1)
    report.message(f"retriever 1: BM25 negatives -> {stage1.out}")
    result.stages.append(_train_stage("retriever 1", stage1, False, run_train, report))
    if cfg.two_stage:
        store = _store_stage(cfg)
        result.stages.append(store)
        report.message(f"index of retriever 1 -> {cfg.out / INDEX}")
        index = _index_stage(cfg, store.path, stage1.out, result.stages[0].ran, report)
        result.stages.append(index)
        stage2 = stage_config(cfg, cfg.out / STAGE2, negatives_from=index.path)
        report.message(f"retriever 2: negatives mined with retriever 1 -> {stage2.out}")
        result.stages.append(_train_stage("retriever 2", stage2, index.ran, run_train, report))
    result.manifest = FinetuneManifest.from_json(result.to_json())
    result.manifest.write(cfg.out)
    folder.seal()
    return result
