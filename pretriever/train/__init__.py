"""Stage 3: train a bi-encoder on mined pairs (pre-training) or labelled data (fine-tuning).

``pretriever train PAIRS_DIR --out MODEL_DIR`` (see ``pretriever/cli/train.py``) or, from Python::

    from pretriever.train import TrainConfig
    from pretriever.train.run import run
    result = run(TrainConfig(out="model/", pairs="pairs/", max_steps=100))   # result.out, result.manifest

Two-stage fine-tuning (retriever 1 with BM25 negatives, an index, retriever 2 with negatives
mined by retriever 1) is :func:`pretriever.train.finetune.run` (``pretriever finetune --two-stage``).

Heavy imports (torch, sentence-transformers) happen inside the functions.
"""

from pretriever.train.config import FinetuneConfig, TrainConfig, parse_mix
from pretriever.train.errors import TrainError
from pretriever.train.finetune import FinetuneResult
from pretriever.train.run import TrainResult

__all__ = ["FinetuneConfig", "FinetuneResult", "TrainConfig", "TrainError", "TrainResult", "parse_mix"]
