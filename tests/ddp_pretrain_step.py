"""One pre-training step's loss terms and gradients, in one process or as one of several (torchrun, gloo), for
``test_distributed.py``: ``python ddp_pretrain_step.py MODEL OBJECTIVE OUT [MINI_BATCH]``.

Eight (x, y) pairs make the global batch; each process takes its share (as ``pretrain`` does) and the first writes
the terms and the gradients summed over the processes to OUT (safetensors). Masks are drawn per row from the row's
own word pieces, so a row gets the same mask whichever process masks it: one process and two then compute the
same step (``pretrain`` itself draws each process's masks from its own seed)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

from pretriever.pretrain import PretrainConfig
from pretriever.pretrain.distributed import share, sum_gradients, summed
from pretriever.pretrain.gradcache import gradcache_step
from pretriever.pretrain.objectives.base import Tokenized
from pretriever.pretrain.run import build_objective

XS = [f"Passage {i} says that {w} changes how cells in the {o} respond to stress over many years."
      for i, (w, o) in enumerate(zip(["vitamin d", "aspirin", "sleep", "exercise", "coffee", "fasting", "cold",
                                      "light"], ["brain", "liver", "heart", "skin", "gut", "lung", "blood", "eye"]))]
YS = [f"what does {w} do" if i % 2 else f"Another passage of the same document, number {i}, on {w}."
      for i, w in enumerate(["vitamin d", "aspirin", "sleep", "exercise", "coffee", "fasting", "cold", "light"])]
METHODS = ["qc" if i % 2 else "cc" for i in range(8)]


def row_seeded(mask):
    """``mask`` applied row by row, each row without its padding and seeded with its own word pieces."""
    def masked(enc: Tokenized, rate: float) -> tuple[torch.Tensor, torch.Tensor]:
        ids, labels = enc["input_ids"].clone(), torch.full_like(enc["input_ids"], -100)
        for row in range(len(ids)):
            n = int(enc["attention_mask"][row].sum())
            torch.manual_seed(sum(ids[row, :n].tolist()))
            one = Tokenized(enc["input_ids"][row:row + 1, :n], enc["attention_mask"][row:row + 1, :n],
                            [enc.word_ids(row)[:n]])
            ids[row, :n], labels[row, :n] = (t[0] for t in mask(one, rate))
        return ids, labels
    return masked


def main() -> None:
    model, objective_name, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    mini = int(sys.argv[4]) if len(sys.argv) > 4 else None
    processes = int(os.environ.get("WORLD_SIZE", "1"))
    if processes > 1:
        torch.distributed.init_process_group("gloo")
    rank = torch.distributed.get_rank() if processes > 1 else 0
    cfg = PretrainConfig(pairs=out, out=out / "unused", model=model, objective=objective_name, seed=0)
    _, objective, _ = build_objective(cfg, "cpu")
    objective.mask = row_seeded(objective.mask)
    mine = share(list(range(8)), rank, processes)
    inputs = objective.prepare([XS[i] for i in mine], [YS[i] for i in mine], [METHODS[i] for i in mine])
    if mini:
        terms = gradcache_step(objective, inputs, mini)
    else:
        terms = objective(**inputs)
        terms["loss"].backward()
    params = [p for p in objective.parameters() if p.requires_grad]
    sum_gradients(params)
    terms = summed({k: v.detach().float() for k, v in terms.items()})
    if rank == 0:
        grads = {name: p.grad for name, p in objective.named_parameters() if p.grad is not None}
        save_file({**{f"term.{k}": v.reshape(1) for k, v in terms.items()},
                   **{f"grad.{k}": v.contiguous() for k, v in grads.items()}}, str(out / "step.safetensors"))
    if processes > 1:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
