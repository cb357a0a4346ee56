"""The registry of pre-training objectives: name -> class (``OBJECTIVES``), one module each."""

from pretriever.pretrain.objectives import cocondenser, cotmae, mlm  # noqa: F401,E402  (register themselves)
from pretriever.pretrain.objectives.base import OBJECTIVES, Objective, register

__all__ = ["OBJECTIVES", "Objective", "register"]
