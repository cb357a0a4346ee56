"""Stage 3: train a bi-encoder on mined pairs (pre-training) or labelled data (fine-tuning).

``pretriever train PAIRS_DIR --out MODEL_DIR`` (see ``pretriever/cli/train.py``) or, from Python::

    from pretriever.train import TrainConfig, train
    result = train(TrainConfig(out="model/", pairs="pairs/", max_steps=100))

Heavy imports (torch, sentence-transformers) happen inside the functions.
"""

from pretriever.train.config import TrainConfig, parse_mix
from pretriever.train.errors import TrainError
from pretriever.train.run import TrainResult, train

__all__ = ["TrainConfig", "TrainError", "TrainResult", "parse_mix", "train"]
