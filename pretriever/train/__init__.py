"""Stage 3: train a bi-encoder on mined pairs (pre-training) or labelled data (fine-tuning).

``pretriever train PAIRS_DIR --out MODEL_DIR`` (see ``pretriever/cli/train.py``) or, from Python::

    from pretriever.train import TrainConfig, train
    result = train(TrainConfig(out="model/", pairs="pairs/", max_steps=100))

Two-stage fine-tuning (retriever 1 with BM25 negatives, an index, retriever 2 with negatives
mined by retriever 1) is :func:`finetune` (``pretriever finetune --two-stage``).

Heavy imports (torch, sentence-transformers) happen inside the functions.
"""

from pretriever.train.config import FinetuneConfig, TrainConfig, parse_mix
from pretriever.train.errors import TrainError
from pretriever.train.finetune import FinetuneResult, finetune
from pretriever.train.run import TrainResult, train

__all__ = ["FinetuneConfig", "FinetuneResult", "TrainConfig", "TrainError", "TrainResult", "finetune", "parse_mix",
           "train"]
