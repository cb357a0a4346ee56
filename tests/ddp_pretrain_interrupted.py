"""``pretrain`` stopped after step AT (its checkpoint of step AT - 1 written), alone or as one of several processes
(torchrun), for ``test_distributed.py``: ``python ddp_pretrain_interrupted.py CONFIG_JSON AT``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from train_callbacks import Interrupt

from pretriever.pretrain import PretrainConfig
from pretriever.pretrain.run import run

if __name__ == "__main__":
    options = json.loads(sys.argv[1])
    try:
        run(PretrainConfig(**{**options, "pairs": Path(options["pairs"]), "out": Path(options["out"])}),
            report=Interrupt(int(sys.argv[2]), "pretraining"))
    except KeyboardInterrupt:  # every process stops at the same step
        sys.exit(0)
    sys.exit("the run was not interrupted")
