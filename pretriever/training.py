"""Pieces every training loop shares: checkpoint discovery, the loss curve, progress for a Reporter, a quiet Trainer.

``train`` (sentence-transformers), ``reader`` (a transformers Trainer) and ``pretrain`` (its own
loop) keep their checkpoints and logs the same way through here, so that ``--resume`` finds
the newest complete checkpoint and every report holds the same ``loss_curve`` rows.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pretriever import models
from pretriever.errors import ConfigError
from pretriever.progress import Reporter


def cuda_available() -> bool:
    """Whether torch sees a GPU (torch is imported here, lazily: it is slow to import)."""
    import torch

    return torch.cuda.is_available()


def process_rank() -> int:
    """This process's rank among those torchrun or accelerate launch started (0 when started alone)."""
    return int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")) or 0)


def world_size() -> int:
    """How many processes torchrun or accelerate launch started for this run (1 when started alone)."""
    return max(1, int(os.environ.get("WORLD_SIZE", "1") or 1))


def process_barrier() -> Callable[[], None]:
    """A function that waits for every process (torchrun / accelerate launch); a no-op in a single process."""
    if world_size() == 1:
        return lambda: None
    from accelerate import PartialState  # lazily: accelerate imports torch

    return PartialState().wait_for_everyone


PRECISIONS = ("auto", "fp32", "fp16", "bf16")  # every stage's --precision takes these
PRECISION_HELP = "auto (bf16 on a GPU that has it, else fp16 on a GPU, fp32 on a CPU), fp32, fp16 or bf16."


def check_precision(value: str) -> str:
    """``value`` lower-cased, or a ValueError worded alike in every stage's config."""
    value = str(value).lower()
    if value not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {value!r}")
    return value


def resolve_precision(value: str, device: str | None) -> str:
    """fp32, fp16 or bf16 for a model on ``device``: ``value`` itself unless it is auto, which means bf16 on a
    CUDA device that supports it, else fp16 on CUDA, and fp32 elsewhere (CPU, MPS) where half precision is slow."""
    value = check_precision(value)
    if value != "auto":
        return value
    if device is None or not str(device).startswith("cuda") or not cuda_available():
        return "fp32"
    import torch  # lazily: torch is slow to import

    return "bf16" if torch.cuda.is_bf16_supported() else "fp16"


def precision_dtype(precision: str):
    """The torch dtype of a resolved ``precision`` (fp32, fp16 or bf16): what a model is cast to."""
    import torch  # lazily: torch is slow to import

    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]


def trainer_precision(value: str) -> str:
    """:func:`resolve_precision` for a stage that trains with the Hugging Face Trainer (train, reader), on the
    device the Trainer picks; a ConfigError for fp16 or bf16 without a GPU, which the Trainer cannot run."""
    device = models.resolve_device()  # through the module: a test can replace it
    precision = resolve_precision(value, device)
    if precision != "fp32" and not device.startswith("cuda"):
        raise ConfigError(f"--precision {value}: the Hugging Face Trainer runs fp16 and bf16 on a GPU only, and this "
                          f"machine has {device}; use --precision auto (fp32 here) or fp32")
    return precision


def checkpoints(folder: Path, prefix: str = "checkpoint-", suffix: str = "",
                complete: str | None = "trainer_state.json") -> list[Path]:
    """The checkpoints ``{prefix}{step}{suffix}`` in ``folder``, oldest step first.

    ``complete``: a file a checkpoint folder holds once it is whole (a Trainer writes
    ``trainer_state.json`` last); None for checkpoints that are single files written atomically.
    """
    if not folder.is_dir():
        return []
    found = []
    for p in folder.iterdir():
        step = p.name[len(prefix):len(p.name) - len(suffix)] if p.name.startswith(prefix) and p.name.endswith(suffix) else ""
        if step.isdigit() and (complete is None or (p / complete).exists()):
            found.append((int(step), p))
    return [p for _, p in sorted(found)]


def loss_curve(log_history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Trainer's ``log_history`` as the ``loss_curve`` rows of a report: step, epoch, loss, learning rate."""
    return [{"step": int(e["step"]), "epoch": round(float(e.get("epoch", 0.0)), 4), "loss": float(e["loss"]),
             "learning_rate": float(e.get("learning_rate", 0.0))} for e in log_history if "loss" in e]


def quiet(trainer):
    """No printed log dicts or tqdm bars: progress goes to a Reporter, the logs to the report."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    for cb in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(cb)
    return trainer


def progress_callback(report: Reporter):
    """A TrainerCallback that tells ``report`` how far training is: ``progress("training", step, max_steps,
    unit="steps", loss=..., **{"pairs/s": ...})`` at the start (a resumed run starts at its checkpoint's
    step), after every optimizer step and at every logged loss; only the main process reports."""
    from transformers import TrainerCallback

    class Reporting(TrainerCallback):
        def __init__(self) -> None:
            self.fields: dict[str, float] = {}

        def on_train_begin(self, args, state, control, **kwargs):
            self.pairs_per_step = args.per_device_train_batch_size * max(1, args.world_size)
            self.start_step, self.t0 = state.global_step, time.perf_counter()
            self.tell(state)

        def on_step_end(self, args, state, control, **kwargs):
            seconds = time.perf_counter() - self.t0
            if seconds > 0:
                self.fields["pairs/s"] = (state.global_step - self.start_step) * self.pairs_per_step / seconds
            self.tell(state)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                self.fields = {"loss": float(logs["loss"]), **{k: v for k, v in self.fields.items() if k != "loss"}}
                self.tell(state)

        def tell(self, state) -> None:
            if state.is_world_process_zero:
                report.progress("training", state.global_step, state.max_steps or None, unit="steps", **self.fields)

    return Reporting()
