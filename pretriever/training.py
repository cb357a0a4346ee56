"""Pieces every training loop shares: checkpoint discovery, the loss curve, a progress bar, a quiet Trainer.

``train`` (sentence-transformers), ``reader`` (a transformers Trainer) and ``pretrain`` (its own
loop) keep their checkpoints and logs the same way through here, so that ``--resume`` finds
the newest complete checkpoint and every report holds the same ``loss_curve`` rows.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pretriever.progress import console


def cuda_available() -> bool:
    """Whether torch sees a GPU (torch is imported here, lazily: it is slow to import)."""
    import torch

    return torch.cuda.is_available()


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


def last_checkpoint(folder: Path) -> Path | None:
    """The newest complete Trainer checkpoint (a ``checkpoint-N`` folder with trainer_state.json) in ``folder``."""
    found = checkpoints(folder)
    return found[-1] if found else None


def loss_curve(log_history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Trainer's ``log_history`` as the ``loss_curve`` rows of a report: step, epoch, loss, learning rate."""
    return [{"step": int(e["step"]), "epoch": round(float(e.get("epoch", 0.0)), 4), "loss": float(e["loss"]),
             "learning_rate": float(e.get("learning_rate", 0.0))} for e in log_history if "loss" in e]


def quiet(trainer):
    """No printed log dicts or tqdm bars: progress is ours (rich), the logs go to the report."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    for cb in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(cb)
    return trainer


def progress_callback():
    """A rich progress bar over a Trainer's optimizer steps with the running loss and pairs/s."""
    from transformers import TrainerCallback

    class RichProgress(TrainerCallback):
        def __init__(self):
            self.progress = None
            self.loss = float("nan")

        def on_train_begin(self, args, state, control, **kwargs):
            if not state.is_world_process_zero:
                return
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)

            self.pairs_per_step = args.per_device_train_batch_size * max(1, args.world_size)
            self.start_step, self.t0 = state.global_step, time.perf_counter()
            self.progress = Progress(TextColumn("[bold]training"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("steps  loss {task.fields[loss]}  {task.fields[rate]}"),
                                     TimeElapsedColumn(), TimeRemainingColumn(), console=console)
            self.progress.start()
            self.task = self.progress.add_task("train", total=state.max_steps, completed=state.global_step,
                                               loss="-", rate="")

        def on_step_end(self, args, state, control, **kwargs):
            if self.progress is None:
                return
            seconds = time.perf_counter() - self.t0
            rate = (state.global_step - self.start_step) * self.pairs_per_step / seconds if seconds > 0 else 0
            self.progress.update(self.task, completed=state.global_step, rate=f"{rate:,.1f} pairs/s")

        def on_log(self, args, state, control, logs=None, **kwargs):
            if self.progress is not None and logs and "loss" in logs:
                self.progress.update(self.task, loss=f"{float(logs['loss']):.4f}")

        def on_train_end(self, args, state, control, **kwargs):
            self.close()

        def close(self):
            if self.progress is not None:
                self.progress.stop()
                self.progress = None

    return RichProgress()
