"""``pretrain`` stopped in its step AT (its checkpoint of step AT - 1 written), alone or as one of several processes
(torchrun), for ``test_distributed.py``: ``python ddp_pretrain_interrupted.py CONFIG_JSON AT``. Every process
stops there: a hook on the optimizer's step, which each process takes (only the first one reports progress)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from torch.optim.optimizer import register_optimizer_step_post_hook

from pretriever.pretrain import PretrainConfig
from pretriever.pretrain.run import run


def stop_at(at: int):
    steps = []

    def hook(*_):
        steps.append(1)
        if len(steps) == at:
            raise KeyboardInterrupt(f"interrupted in step {at}")
    return hook


if __name__ == "__main__":
    options = json.loads(sys.argv[1])
    register_optimizer_step_post_hook(stop_at(int(sys.argv[2])))
    try:
        run(PretrainConfig(**{**options, "pairs": Path(options["pairs"]), "out": Path(options["out"])}))
    except KeyboardInterrupt:
        sys.exit(0)
    sys.exit("the run was not interrupted")
