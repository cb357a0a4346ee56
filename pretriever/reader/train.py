"""``pretriever reader train``: train DPR's extractive reader with the transformers Trainer.

Batches hold ``batch_size`` questions x ``passages`` passages (1 positive, the rest negatives), drawn
anew every epoch: a positive sampled from all of the question's, its own negatives reshuffled first
(:func:`~pretriever.reader.samples.instance`); questions of similar input length share a batch unless
``group_by_length`` is off (less padding computed);
the loss is :func:`~pretriever.reader.model.reader_loss`. Precision follows the device (bf16 or
fp16 on a GPU, fp32 on CPU) unless set; gradient accumulation, warm-up and decay are the
Trainer's. Every ``eval_steps`` the dev split (given, or documents held out of the training
data) is read as at test time and its EM decides the best checkpoint, which is the one written to
READER_DIR (C-MORE selects on its pre-training dev set). Checkpoints live in
READER_DIR/checkpoints; ``--resume`` continues from the newest.

Example::

    result = run(ReaderConfig(data=Path("squad.json"), out=Path("reader/"), passages=4, max_steps=200))
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pretriever.data.qa import guess_match_mode
from pretriever.data.reading import load_reading_file
from pretriever.models import model_label, resolve_device
from pretriever.progress import QUIET, Reporter
from pretriever.reader.config import ReaderConfig
from pretriever.reader.errors import ReaderError
from pretriever.reader.evaluate import evaluate_gold
from pretriever.reader.manifest import ReaderManifest
from pretriever.reader.model import READER_JSON, SELECTION_HEAD, load_reader_model, save_reader_model
from pretriever.reader.predict import Reader
from pretriever.reader.samples import Instance, Sample, build_samples, instance, split_by_document
from pretriever.reader.pairs import pad_inputs, pair_maker
from pretriever.retrieval import Passage
from pretriever.stage import OutputFolder, StageResult
from pretriever.training import (cuda_available, loss_curve, process_barrier, process_rank, progress_callback, quiet,
                                 trainer_precision, world_size)

CHECKPOINTS = "checkpoints"


@dataclass(kw_only=True)
class ReaderTrainResult(StageResult):
    """READER_DIR (``out``), its reader.json (``manifest``) and the figures a summary prints."""

    manifest: ReaderManifest | None = None

    counts: dict[str, Any]
    dev: dict[str, float] | None
    seconds: float
    dev_before: dict[str, float] | None = None  # the starting model on the same dev questions


def collate(instances: list[Instance], tokenizer, max_length: int) -> dict[str, Any]:
    """Tensors for a batch: inputs ``[B, m, L]`` (m = the fewest passages in the batch), the passage-token
    mask and the positive's answer token spans ``[B, S]`` (padded, with a mask). The inputs are joined from word
    pieces tokenised once (:func:`~pretriever.reader.pairs.pair_maker`): only a passage never met before is
    tokenised here."""
    import torch  # lazily: torch is slow to import

    m = min(len(inst.passages) for inst in instances)
    rows = pair_maker(tokenizer, max_length).inputs([inst.question for inst in instances for _ in range(m)],
                                                    [p for inst in instances for p in inst.passages[:m]])
    features, passage_mask, shifts = pad_inputs(rows, tokenizer)
    batch, length = len(instances), features["input_ids"].shape[-1]
    spans = [[(s + shifts[b * m], e + shifts[b * m]) for s, e in inst.token_spans] for b, inst in enumerate(instances)]
    width = max(1, max(len(s) for s in spans))
    # padded in Python and made tensors once: a tensor write per occurrence ran ~400 operators a batch
    padded = [row + [(0, 0)] * (width - len(row)) for row in spans]
    out = {key: torch.from_numpy(value).view(batch, m, length) for key, value in features.items()}
    out.update(passage_mask=torch.from_numpy(passage_mask).view(batch, m, length),
               span_starts=torch.tensor([[s for s, _ in row] for row in padded], dtype=torch.long),
               span_ends=torch.tensor([[e for _, e in row] for row in padded], dtype=torch.long),
               span_mask=torch.tensor([[j < len(row) for j in range(width)] for row in spans], dtype=torch.bool))
    return out


class InstanceSet:
    """A map-style dataset of training instances: the positive and the negatives of each are drawn anew every
    epoch (with the seed, the epoch and the index: :func:`~pretriever.reader.samples.instance`)."""

    def __init__(self, samples: list[Sample], pool: list[Passage], passages: int, seed: int):
        self.samples, self.pool, self.passages, self.seed = samples, pool, passages, seed
        self.epoch = 0  # set by EpochCallback as each epoch begins

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> Instance:
        return instance(self.samples[index], self.pool, self.passages, self.seed, index, self.epoch)


def epoch_callback(dataset: InstanceSet):
    """A TrainerCallback telling ``dataset`` which epoch begins (resumed runs included), so that every
    epoch samples fresh positives and negatives. Data-loader workers see it too: the Trainer calls this before it
    iterates the epoch, and workers that do not persist (the Trainer's default) copy the dataset then."""
    from transformers import TrainerCallback

    class EpochCallback(TrainerCallback):
        def on_epoch_begin(self, args, state, control, **kwargs):
            dataset.epoch = int(state.epoch or 0)

    return EpochCallback()


def negative_pool(samples: list[Sample]) -> list[Passage]:
    """Every distinct passage of the samples (positives and negatives), to draw random negatives from."""
    seen: dict[str, Passage] = {}
    for s in samples:
        for p in [*s.positives, *s.negatives]:
            seen.setdefault(p.text, p)
    return list(seen.values())


def _folder(cfg: ReaderConfig, report: Reporter) -> OutputFolder:
    """READER_DIR: the report, checkpoints and the selection head are the run's; the model's own files (as many as
    its save writes) are listed in the marker once it is saved."""
    return OutputFolder(cfg.out, stage="reader", holds="a reader or a run",
                        owns=(READER_JSON, CHECKPOINTS, SELECTION_HEAD), error=ReaderError, report=report)


def _load_split(cfg: ReaderConfig, tokenizer, report: Reporter):
    mode = guess_match_mode(cfg.data)
    examples = load_reading_file(cfg.data)
    if cfg.limit is not None:
        examples = examples[:cfg.limit]
    samples, counts = build_samples(examples, tokenizer, cfg.max_length, mode)
    dev_counts = None
    if cfg.dev is not None:
        train, (dev, dev_counts) = samples, build_samples(load_reading_file(cfg.dev), tokenizer, cfg.max_length, mode)
    else:
        train, dev = split_by_document(samples, cfg.dev_share, cfg.seed)
    if not train:
        raise ReaderError(f"{cfg.data}: no training question left ({counts.no_positive} without an answer in a "
                          f"positive passage, {counts.truncated_questions} with every answer cut by truncation)")
    report.message(f"{len(train):,} training and {len(dev):,} dev questions; skipped {counts.unanswerable:,} "
                   f"unanswerable, {counts.no_positive:,} without an answer in a positive passage and "
                   f"{counts.truncated_questions:,} whose answers truncation cut off ({counts.truncated_spans:,} "
                   "answer occurrences dropped)")
    return train, dev, counts, dev_counts, mode


def _training_args(cfg: ReaderConfig, precision: str, evaluate: bool):
    import transformers
    from transformers import TrainingArguments

    # transformers 5 takes the warm-up share as a fraction in warmup_steps (warmup_ratio is gone)
    warmup = ({"warmup_steps": cfg.warmup_ratio} if int(transformers.__version__.split(".")[0]) >= 5
              else {"warmup_ratio": cfg.warmup_ratio})
    return TrainingArguments(
        output_dir=str(cfg.out / CHECKPOINTS), per_device_train_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation, learning_rate=cfg.learning_rate, **warmup,
        weight_decay=cfg.weight_decay, num_train_epochs=cfg.epochs, max_steps=cfg.max_steps or -1,
        logging_steps=max(1, min(cfg.eval_steps, 10)), eval_strategy="steps" if evaluate else "no",
        eval_steps=cfg.eval_steps, save_strategy="steps", save_steps=cfg.eval_steps,
        save_total_limit=cfg.save_total_limit, load_best_model_at_end=evaluate, metric_for_best_model="em",
        greater_is_better=True, seed=cfg.seed, report_to="none", disable_tqdm=True, remove_unused_columns=False,
        fp16=precision == "fp16", bf16=precision == "bf16", dataloader_num_workers=cfg.dataloader_workers,
        dataloader_pin_memory=cuda_available(),
        # on the device the Trainer would pick; said outright so that torchrun on CPUs makes a process group (gloo)
        # and splits the batches (before, each process trained alone on every batch, as train did until it said so)
        use_cpu=resolve_device() == "cpu")


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return str(value) if isinstance(value, Path) else value


def _trainer_class():
    from transformers import Trainer

    class ReaderTrainer(Trainer):
        """The Trainer with the dev metric of a reader: EM of its answers on the dev questions."""

        def __init__(self, *args, dev_eval: Callable[[Any], dict[str, float]], lengths: list[int] | None = None,
                     **kwargs):
            super().__init__(*args, **kwargs)
            self.dev_eval, self.lengths = dev_eval, lengths

        def _get_train_sampler(self, train_dataset=None):
            """transformers' LengthGroupedSampler over the samples' lengths (the Trainer's own one would
            tokenize every instance to learn them), or the Trainer's random order."""
            if self.lengths is None:
                return super()._get_train_sampler(train_dataset)
            from transformers.trainer_pt_utils import LengthGroupedSampler

            return LengthGroupedSampler(self.args.train_batch_size * self.args.gradient_accumulation_steps,
                                        lengths=self.lengths)

        def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval") -> dict[str, float]:
            scores = self.dev_eval(self.model)
            metrics = {f"{metric_key_prefix}_em": scores["EM"], f"{metric_key_prefix}_f1": scores["F1"]}
            self.log(metrics)
            self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
            return metrics

    return ReaderTrainer


def run(cfg: ReaderConfig, report: Reporter = QUIET) -> ReaderTrainResult:
    """Train as ``cfg`` says and write READER_DIR (see the module docstring); ``report`` hears the data
    counts and the training's progress (task ``training``: optimizer steps, with the loss)."""
    from transformers import set_seed

    main, wait = process_rank() == 0, process_barrier()  # several processes (torchrun): the first owns --out
    folder = _folder(cfg, report)
    if main:
        resume_from = folder.prepare(resume=cfg.resume, overwrite=cfg.overwrite)
    wait()
    if not main:
        resume_from = folder.last_checkpoint() if cfg.resume else None
    set_seed(cfg.seed)  # the new span and selection heads are drawn here, before the Trainer seeds its own steps
    module, tokenizer = load_reader_model(cfg.model)
    train, dev, counts, dev_counts, mode = _load_split(cfg, tokenizer, report)
    pool = negative_pool(train)
    dev = dev[:cfg.dev_limit]
    regex = mode == "regex"

    def dev_eval(model) -> dict[str, Any]:
        return evaluate_gold(Reader(model, tokenizer, cfg.read), dev, pool, cfg.passages, cfg.seed + 1, regex,
                             cfg.lenient_match)

    precision = trainer_precision(cfg.precision)
    args = _training_args(cfg, precision, evaluate=bool(dev))
    dataset = InstanceSet(train, pool, cfg.passages, cfg.seed)
    callbacks = [epoch_callback(dataset), progress_callback(report)]
    trainer = _trainer_class()(model=module, args=args, train_dataset=dataset,
                               eval_dataset=dev or None,  # read by dev_eval, not by the Trainer
                               data_collator=lambda batch: collate(batch, tokenizer, cfg.max_length),
                               callbacks=callbacks, dev_eval=dev_eval,
                               lengths=[s.length for s in train] if cfg.group_by_length else None)
    quiet(trainer)
    before = dev_eval(trainer.model) if dev and not resume_from else None  # the starting model, for comparison
    t0 = time.perf_counter()
    trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    seconds = time.perf_counter() - t0
    final = dev_eval(trainer.model) if dev else None
    questions = trainer.state.global_step * cfg.batch_size * cfg.gradient_accumulation * world_size()
    history = trainer.state.log_history
    manifest = ReaderManifest.from_json({
        "base_model": model_label(cfg.model), "config": _jsonable(asdict(cfg)), "match": mode,
        "precision": precision, "data": counts.as_dict(), "dev_data": dev_counts.as_dict() if dev_counts else None,
        "train_questions": len(train), "dev_questions": len(dev), "dev_before": before, "dev": final,
        "best_checkpoint": trainer.state.best_model_checkpoint, "steps": trainer.state.global_step,
        "loss_curve": loss_curve(history),
        "dev_curve": [{"step": e["step"], "EM": e["eval_em"], "F1": e["eval_f1"]} for e in history if "eval_em" in e],
        "seconds": round(seconds, 2),
        "questions_per_second": round(questions / seconds, 3) if seconds > 0 else None,
    })
    if main:
        save_reader_model(trainer.model, tokenizer, cfg.out)
        manifest.write(cfg.out)
        folder.seal()
    wait()  # the other processes return once the folder is whole
    return ReaderTrainResult(out=cfg.out, manifest=manifest, counts=counts.as_dict(), dev=final, seconds=seconds,
                             dev_before=before)
