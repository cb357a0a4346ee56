"""``pretriever train``: training data -> SentenceTransformerTrainer -> a sentence-transformers model folder.

MODEL_DIR after a run::

    MODEL_DIR/                  a sentence-transformers model (SentenceTransformer(MODEL_DIR) loads it)
      train.json                config, data counts per method, loss curve, time, pairs/s
      loss.png                  the loss curve
      checkpoints/checkpoint-N  every --save-steps steps while training (removed at the end
                                unless --keep-checkpoints); --resume continues from the newest

Resuming: the Hugging Face Trainer restores the weights, optimizer, scheduler and RNG states
of the newest checkpoint and skips the batches already seen; the data are rebuilt from the
same inputs and seed (the settings must match the interrupted run, which is checked), so
a resumed run ends with the same weights as an uninterrupted one (bit-identical on CPU).

Multi-GPU: run the same command under ``accelerate launch`` or ``torchrun`` (see the CLI
help); the Trainer shards each batch over the processes (``--batch-size`` is per device),
and ``--gather-across-devices`` makes every device's passages negatives for every query.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pretriever import __version__
from pretriever.data import CorpusStore
from pretriever.index import IndexFolder
from pretriever.io import atomic_path
from pretriever.models import resolve_device
from pretriever.train import labelled as lab
from pretriever.train.config import TrainConfig
from pretriever.train.errors import TrainError
from pretriever.train.heldout import retrieval_check, split_heldout
from pretriever.train.manifest import TrainManifest
from pretriever.train.index_negatives import mine_bm25_sample, mine_index_negatives
from pretriever.train.model import build_loss, build_model, route
from pretriever.train.pair_sampling import scan_pairs, select_rows, write_records, write_selected
from pretriever.progress import QUIET, Reporter
from pretriever.stage import OutputFolder, StageResult
from pretriever.training import (cuda_available, loss_curve, process_barrier, process_rank, progress_callback, quiet,
                                 trainer_precision, world_size)

REPORT = TrainManifest.FILE
PLOT = "loss.png"
CHECKPOINTS = "checkpoints"
WORK = ".work"
RUN_SETTINGS = "pretriever-run.json"  # inside checkpoints/: the settings a --resume must match

@dataclass
class TrainingData:
    """The training examples of a run, written once as an Arrow file the trainer memory-maps: how many, per method
    (or source), whether they carry negatives, and what identifies them for --resume (:meth:`fingerprint`).
    """

    path: Path  # Arrow stream file: anchor, positive[, negative]
    pairs: int
    counts: dict[str, int]  # pairs per method (mined) or per source (labelled)
    with_negatives: bool
    info: dict[str, Any] = field(default_factory=dict)

    def fingerprint(self) -> dict[str, Any]:
        """What identifies the data of a run: pairs per method and the input files with their sizes."""
        files = self.info.get("files") or [self.info.get("path")]
        inputs = [[Path(f).name, Path(f).stat().st_size if Path(f).is_file() else None] for f in files if f]
        return {"pairs": self.pairs, "per_method": self.counts, "negatives": self.with_negatives, "inputs": inputs}

    def dataset(self):
        from datasets import Dataset

        return Dataset.from_file(str(self.path))


@dataclass(kw_only=True)
class TrainResult(StageResult):
    """MODEL_DIR (``out``), its train.json (``manifest``) and the trained model in memory."""

    manifest: TrainManifest | None = field(default=None, kw_only=True)
    model: Any = None  # the trained SentenceTransformer


# ---------------------------------------------------------------- output folder and checkpoints

def output_folder(out: Path, report: Reporter = QUIET) -> OutputFolder:
    """MODEL_DIR: the report, the plot, checkpoints and work files are the run's; the model's own files (as many
    as the model's save writes) are listed in the marker once it is saved."""
    return OutputFolder(out, stage="train", holds="a pretriever model or run", owns=(REPORT, PLOT, CHECKPOINTS, WORK),
                        error=TrainError, report=report)


def prepare_out(cfg: TrainConfig, folder: OutputFolder) -> Path | None:
    """Check (and on --overwrite clear) MODEL_DIR; returns the checkpoint to resume from.

    A resumed run must use the settings of the interrupted one (:meth:`TrainConfig.run_settings`, saved in
    ``checkpoints/pretriever-run.json``)."""
    if cfg.resume and not cfg.overwrite:
        folder.check()
        if folder.last_checkpoint() is None:
            done = " (that run finished: train.json is there)" if (cfg.out / REPORT).exists() else ""
            raise TrainError(f"nothing to resume in {cfg.out}{done}: no checkpoint in {cfg.out / CHECKPOINTS}; "
                             "checkpoints are written every --save-steps steps")
    last = folder.prepare(resume=cfg.resume, overwrite=cfg.overwrite)
    if last is None:
        return None
    folder.check_fingerprint(cfg.out / CHECKPOINTS / RUN_SETTINGS, cfg.run_settings(),
                             "; --resume must use the settings of the interrupted run")
    return last


# ---------------------------------------------------------------- data

def build_data(cfg: TrainConfig, report: Reporter = QUIET) -> TrainingData:
    """Read, sample and write the training set (anchor, positive[, negative]) for this config."""
    path = cfg.out / WORK / f"train-pairs-rank{process_rank()}.arrow"
    if cfg.pairs is not None:
        report.message(f"reading pairs in {cfg.pairs}")
        scan = scan_pairs(cfg.pairs, cfg.use_negatives, list(cfg.mix) if cfg.mix else None)
        if scan.unlisted:
            report.message(scan.unlisted)
        rows, counts = select_rows(scan, cfg.mix, cfg.limit, cfg.seed)
        report.message(f"writing {len(rows):,} training pairs")
        n = write_selected(scan, rows, path)
        info = {"source": "pairs", "path": str(cfg.pairs), "files": [str(f.path) for f in scan.files],
                "unlisted_files": scan.unlisted,
                "methods_available": scan.total, "eligible": scan.available,
                "without_negative": {m: v for m, v in scan.without_negative.items() if v},
                "without_text": {m: v for m, v in scan.without_text.items() if v},
                "duplicate_across_methods": {m: v for m, v in scan.duplicate_across.items() if v},
                "negatives_note": scan.negatives_note, "mix": cfg.mix, "limit": cfg.limit}
        return TrainingData(path, n, counts, scan.with_negatives, info)

    store = None
    if cfg.corpus is not None:
        store = CorpusStore(cfg.corpus)
    if cfg.beir is not None:
        report.message(f"reading BEIR {cfg.beir.name} ({cfg.split})")
        data, passages = lab.load_beir(cfg.beir, cfg.split, cfg.limit, cfg.seed, cfg.prepend_title, store)
    else:
        report.message(f"reading DPR training file {cfg.dpr.name}")
        data, passages = lab.load_dpr(cfg.dpr, cfg.limit, cfg.seed, cfg.prepend_title, cfg.hard_negatives, store)
    info: dict[str, Any] = {"source": cfg.source, "path": str(cfg.beir or cfg.dpr), "queries": data.queries,
                            **data.notes, "limit": cfg.limit, "hard_negatives": cfg.hard_negatives}
    with_negatives = cfg.use_negatives and cfg.hard_negatives != "none"
    if cfg.negatives_from is not None:
        info.update(hard_negatives=f"index {cfg.negatives_from}", negatives_per_pair=cfg.negatives_per_query)
        info["negatives_found"], info["negatives_store"] = index_negatives(cfg, data, passages, report)
    elif with_negatives:
        if cfg.hard_negatives == "bm25":
            report.message("building a BM25 index for hard negatives")
            retriever, info["bm25_index"] = lab.bm25_retriever(passages)
            report.message(f"mining {cfg.bm25_negatives} BM25 hard negative(s) per query from the top "
                           f"{cfg.bm25_depth} for {data.queries:,} queries")
            if cfg.bm25_negatives > 1:
                info["negatives_found"] = mine_bm25_sample(data.examples, retriever, passages, cfg.bm25_depth,
                                                           cfg.bm25_negatives, cfg.seed, cfg.prepend_title)
            else:
                info["negatives_found"] = lab.mine_bm25_negatives(data.examples, retriever, passages,
                                                                  cfg.bm25_depth, cfg.seed)
        else:
            info["negatives_found"] = {"file": data.notes.get("negatives_from_file", 0),
                                       "random_fallback": lab.fill_random_negatives(data.examples, passages, cfg.seed)}
    n = lab_write(data, with_negatives, path)
    return TrainingData(path, n, {data.name: n}, with_negatives, info)


def index_negatives(cfg: TrainConfig, data, passages, report: Reporter) -> tuple[dict[str, Any], str | None]:
    """Mine ``cfg.negatives_per_query`` negatives per query with the index ``cfg.negatives_from``; the hits'
    ids and texts come from the store the index names (``index.json``), else from the training corpus.
    Returns the counts and that store."""
    report.message(f"mining {cfg.negatives_per_query} hard negatives per query from the top {cfg.negative_depth} "
                   f"of {cfg.negatives_from} for {data.queries:,} queries")
    with IndexFolder(cfg.negatives_from).open() as system:
        stats = mine_index_negatives(data.examples, system, system.lookup, passages, cfg.negative_depth,
                                     cfg.negatives_per_query, cfg.seed, cfg.prepend_title)
        return stats, str(system.lookup.path) if system.lookup is not None else None


def check_same_data(saved: Path, fingerprint: dict[str, Any]) -> None:
    """A resumed run must see the same training pairs (counts per method, input files and sizes)."""
    if not saved.exists():
        return
    before = json.loads(saved.read_text(encoding="utf-8")).get("data")
    if before is not None and before != json.loads(json.dumps(fingerprint)):
        raise TrainError(f"--resume: the training data differ from the interrupted run's (then: {before}; now: "
                         f"{fingerprint}); were the pairs re-mined? start again with --overwrite")


def lab_write(data, with_negatives: bool, path: Path) -> int:
    """Write labelled examples' training columns to the Arrow file at ``path``; returns the rows written."""
    return write_records(data.records(with_negatives), path)


# ---------------------------------------------------------------- trainer

def plan_steps(cfg: TrainConfig, pairs: int) -> tuple[int, int]:
    """(steps per epoch, total optimizer steps)."""
    per_epoch = max(1, math.ceil(pairs / (cfg.batch_size * world_size())))
    total = cfg.max_steps or max(1, math.ceil(cfg.epochs * per_epoch))
    return per_epoch, total


def training_args(cfg: TrainConfig, columns: Sequence[str], logging_steps: int, output_dir: Path | None = None,
                  device: str | None = None):
    """The trainer's arguments; ``columns`` are the dataset's (anchor, positive, then any negatives).

    ``use_cpu`` when the model runs on the CPU: without it, processes started by torchrun or accelerate launch on
    CPUs do not join one DDP group (gloo) but each train alone on every batch."""
    import transformers
    from sentence_transformers import SentenceTransformerTrainingArguments
    from sentence_transformers.base.sampler import BatchSamplers

    warmup = ({"warmup_steps": cfg.warmup_ratio} if int(transformers.__version__.split(".")[0]) >= 5
              else {"warmup_ratio": cfg.warmup_ratio})
    precision = trainer_precision(cfg.precision)
    return SentenceTransformerTrainingArguments(
        output_dir=str(output_dir or cfg.out / CHECKPOINTS),
        num_train_epochs=cfg.epochs,
        max_steps=cfg.max_steps or -1,
        per_device_train_batch_size=cfg.batch_size,
        per_device_eval_batch_size=cfg.batch_size,
        learning_rate=cfg.learning_rate,
        lr_scheduler_type="linear",
        weight_decay=cfg.weight_decay,
        seed=cfg.seed,
        data_seed=cfg.seed,
        batch_sampler=BatchSamplers.NO_DUPLICATES if cfg.no_duplicates else BatchSamplers.BATCH_SAMPLER,
        router_mapping={c: route(c) for c in columns},
        save_strategy="steps",
        save_steps=cfg.save_steps,
        save_total_limit=cfg.save_total_limit,
        logging_strategy="steps",
        logging_steps=logging_steps,
        logging_first_step=True,
        report_to="none",
        disable_tqdm=True,
        fp16=precision == "fp16",
        bf16=precision == "bf16",
        dataloader_num_workers=cfg.dataloader_workers,
        dataloader_pin_memory=cuda_available(),
        # the graph is the same every step, and it leaves weights out (BERT's pooler under mean pooling): a static
        # graph lets DDP learn which, and reduce every gradient. Before, with find_unused_parameters=False, the
        # bucket holding the pooler was never reduced: each process kept its own gradients for those weights
        # (all of a small model's), and the second step stopped with "Expected to have finished reduction".
        ddp_static_graph=True,
        use_cpu=resolve_device(device) == "cpu",
        **warmup,
    )


def make_trainer(model, loss, args, dataset, callbacks: Sequence = ()):
    """A sentence-transformers trainer of ``model`` with ``loss`` on ``dataset``: no printed logs or bars (progress
    goes through ``callbacks``)."""
    from sentence_transformers import SentenceTransformerTrainer

    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=dataset, loss=loss,
                                         callbacks=list(callbacks))
    return quiet(trainer)


def pairs_loss(model, cfg: TrainConfig, dataset) -> float:
    """Mean loss of ``model`` over ``dataset`` (anchor, positive[, negative]) in fixed batches, no dropout."""
    import tempfile

    from sentence_transformers import SentenceTransformerTrainer
    from sentence_transformers.base.sampler import BatchSamplers

    with tempfile.TemporaryDirectory(prefix="pretriever-eval-") as tmp:
        args = training_args(cfg, dataset.column_names, logging_steps=1, output_dir=Path(tmp))
        args.batch_sampler = BatchSamplers.BATCH_SAMPLER  # fixed batches in file order
        trainer = SentenceTransformerTrainer(model=model, args=args, eval_dataset=dataset, loss=build_loss(model, cfg))
        quiet(trainer)
        return float(trainer.evaluate()["eval_loss"])


# ---------------------------------------------------------------- the run

def plot_loss(curve: list[dict[str, Any]], path: Path, title: str) -> None:
    """Save the loss curve (loss by optimizer step) as a PNG at ``path`` (matplotlib's Agg backend: no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    if curve:
        ax.plot([c["step"] for c in curve], [c["loss"] for c in curve], marker="o" if len(curve) < 30 else None,
                linewidth=1.5)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("training loss (NLL of the positive)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)


def trained_pairs(cfg: TrainConfig, pairs: int, state, start_step: int, planned_steps: int,
                  per_epoch: int) -> tuple[int, int]:
    """(pairs trained by this run, steps per epoch), from the trainer's own step count ``state``."""
    steps_run = state.global_step - start_step
    if cfg.max_steps:
        return steps_run * min(cfg.batch_size * world_size(), pairs), per_epoch
    # a no-duplicates sampler can need more batches than pairs / batch size
    max_steps = state.max_steps or planned_steps
    return round(steps_run * pairs * cfg.epochs / max(max_steps, 1)), max(1, round(max_steps / cfg.epochs))


def training_summary(cfg: TrainConfig, state, per_epoch: int, resume_from: Path | None, start_step: int,
                     curve: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``training`` section of train.json: steps, batch, loss, where a resumed run started."""
    resumed = resume_from is not None
    return {"steps": state.global_step, "steps_per_epoch": per_epoch,
            "epochs": round(float(state.epoch or 0), 4), "batch_size": cfg.batch_size, "world_size": world_size(),
            "loss": "CachedMultipleNegativesRankingLoss" if cfg.mini_batch_size else "MultipleNegativesRankingLoss",
            "resumed_from": str(resume_from) if resumed else None,
            "resumed_at_step": start_step if resumed else None,
            "final_loss": curve[-1]["loss"] if curve else None}


def heldout_figures(model, cfg: TrainConfig, heldout) -> dict[str, float]:
    """Loss, accuracy@1 and MRR of the held-out pairs (see :mod:`pretriever.train.heldout`)."""
    return {"loss": round(pairs_loss(model, cfg, heldout), 4),
            **{k: round(v, 4) for k, v in retrieval_check(model, heldout["anchor"], heldout["positive"]).items()}}


def training_report(cfg: TrainConfig, data: TrainingData, model_info: dict[str, Any], training: dict[str, Any],
                    curve: list[dict[str, Any]], pairs_trained: int, *, train_seconds: float, train_cpu: float,
                    total_seconds: float, heldout: dict[str, Any] | None = None) -> TrainManifest:
    """train.json: the config, the data (pairs per method), the model, the run, its loss curve and speed.

    ``train_cpu`` is the CPU seconds of this process (all threads) while training; ``heldout``: the
    held-out check before and after training, when pairs were held out.
    """
    return TrainManifest.from_json({
        "pretriever_version": __version__,
        "config": cfg.to_json(),
        "data": {"pairs": data.pairs, "per_method": data.counts, "negatives": data.with_negatives, **data.info},
        "model": model_info,
        "training": training,
        "loss_curve": curve,
        "seconds": {"train": round(train_seconds, 3), "total": round(total_seconds, 3),
                    "train_cpu": round(train_cpu, 3)},
        "pairs_trained": pairs_trained,
        "pairs_per_second": round(pairs_trained / train_seconds, 3) if train_seconds > 0 else None,
        **({"heldout": heldout} if heldout else {}),
    })


def run(cfg: TrainConfig, report: Reporter = QUIET, device: str | None = None) -> TrainResult:
    """Train as ``cfg`` says and write MODEL_DIR; ``report`` hears each step of the work and the training's
    progress (task ``training``: optimizer steps, with the loss and pairs/s)."""
    t_start = time.perf_counter()
    main = process_rank() == 0
    barrier = process_barrier()
    folder = output_folder(cfg.out, report)
    if main:
        resume_from = prepare_out(cfg, folder)
    barrier()
    if not main:
        resume_from = folder.last_checkpoint() if cfg.resume else None
    try:
        data = build_data(cfg, report)
        if data.pairs == 0:
            raise TrainError("no training pairs were selected")
        fingerprint = data.fingerprint()
        if resume_from is not None:
            check_same_data(cfg.out / CHECKPOINTS / RUN_SETTINGS, fingerprint)

        report.message("loading the model")
        import transformers

        transformers.set_seed(cfg.seed)  # layers added to a plain checkpoint start alike
        model, model_info = build_model(cfg, device=device)
    except BaseException:
        if main:  # leave MODEL_DIR as it was: nothing was trained yet
            shutil.rmtree(cfg.out / WORK, ignore_errors=True)
            folder.abandon()
        raise
    loss = build_loss(model, cfg)
    dataset, heldout = split_heldout(data.dataset(), cfg.heldout_pairs, cfg.seed)
    per_epoch, total_steps = plan_steps(cfg, len(dataset))
    logging_steps = cfg.logging_steps or max(1, total_steps // 50)
    args = training_args(cfg, dataset.column_names, logging_steps, device=device)
    trainer = make_trainer(model, loss, args, dataset, [progress_callback(report)])
    if main:
        OutputFolder.save_fingerprint(cfg.out / CHECKPOINTS / RUN_SETTINGS, cfg.run_settings(), data=fingerprint)
    start_step = 0
    if resume_from is not None:
        start_step = int(json.loads((resume_from / "trainer_state.json").read_text(encoding="utf-8"))["global_step"])
    checks: dict[str, Any] = {}
    if heldout is not None:
        report.message(f"checking {len(heldout):,} held-out pairs before training")
        checks = {"pairs": len(heldout), "before": {"at_step": start_step, **heldout_figures(model, cfg, heldout)}}
    report.message(f"training on {len(dataset):,} pairs")
    t0, c0 = time.perf_counter(), time.process_time()
    trainer.train(resume_from_checkpoint=str(resume_from) if resume_from is not None else None)
    train_seconds, train_cpu = time.perf_counter() - t0, time.process_time() - c0
    state = trainer.state
    pairs_trained, per_epoch = trained_pairs(cfg, len(dataset), state, start_step, total_steps, per_epoch)
    if heldout is not None:
        checks["after"] = heldout_figures(model, cfg, heldout)

    report.message(f"saving the model to {cfg.out}")
    trainer.save_model(str(cfg.out))
    curve = loss_curve(state.log_history)
    training = training_summary(cfg, state, per_epoch, resume_from, start_step, curve)
    manifest = training_report(cfg, data, model_info, training, curve, pairs_trained,
                               train_seconds=train_seconds, train_cpu=train_cpu,
                               total_seconds=time.perf_counter() - t_start, heldout=checks)
    barrier()
    if main:
        manifest.write(cfg.out)
        plot_loss(curve, cfg.out / PLOT, f"{model_info['base']} on {data.pairs:,} pairs "
                  f"({', '.join(f'{k} {v:,}' for k, v in data.counts.items())})")
        if not cfg.keep_checkpoints:
            shutil.rmtree(cfg.out / CHECKPOINTS, ignore_errors=True)
    if main:
        shutil.rmtree(cfg.out / WORK, ignore_errors=True)
        folder.seal()
    else:
        data.path.unlink(missing_ok=True)
    return TrainResult(out=cfg.out, manifest=manifest, model=model)
