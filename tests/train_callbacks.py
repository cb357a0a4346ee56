"""Reporters the training tests share: stop a run part-way, and record the steps a run takes.

Training tells its Reporter ``progress("training", step, ...)`` (pre-training: ``"pretraining"``) where it starts (a resumed run: at its
checkpoint's step), after every optimizer step (before that step's checkpoint is written) and at every
logged loss.
"""

from __future__ import annotations

from pretriever.progress import Reporter


class Interrupt(Reporter):
    """Stops training with an exception once ``at`` steps are done (after the checkpoint before it: the
    trainer saves after the step is reported, so step ``at``'s own checkpoint is never written)."""

    def __init__(self, at: int, task: str = "training"):
        self.at, self.task = at, task

    def progress(self, task, done, total=None, unit="items", **fields):
        if task == self.task and done == self.at:
            raise KeyboardInterrupt(f"interrupted at step {self.at}")


class Steps(Reporter):
    """Records every step a run takes (a resumed run starts after its checkpoint)."""

    def __init__(self):
        self.seen: list[int] = []
        self.start: int | None = None

    def progress(self, task, done, total=None, unit="items", **fields):
        if task != "training":
            return
        if self.start is None:
            self.start = done  # where the run starts: not a step it took
        elif done > (self.seen[-1] if self.seen else self.start):
            self.seen.append(done)
