"""Stage ``pretrain``: coCondenser and CoT-MAE pre-training on mined pairs (cc, qc, ...).

``pretriever.pretrain.run`` (torch) is imported by the command only when it runs.
"""

from pretriever.pretrain.config import PretrainConfig
from pretriever.pretrain.errors import PretrainError

__all__ = ["PretrainConfig", "PretrainError"]
