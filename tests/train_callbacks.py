"""Trainer callbacks the training tests share: stop a run part-way, and record the steps a run takes."""

from __future__ import annotations

from transformers import TrainerCallback


class Interrupt(TrainerCallback):
    """Stops training with an exception once ``at`` steps are done (after the checkpoint before it: the
    trainer saves after ``on_step_end``, so step ``at``'s own checkpoint is never written)."""

    def __init__(self, at: int):
        self.at = at

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.at:
            raise KeyboardInterrupt(f"interrupted at step {self.at}")


class Steps(TrainerCallback):
    """Records every step a run takes (a resumed run starts after its checkpoint)."""

    def __init__(self):
        self.seen = []

    def on_step_end(self, args, state, control, **kwargs):
        self.seen.append(state.global_step)
