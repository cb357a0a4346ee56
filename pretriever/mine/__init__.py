"""Stage 2: mine pseudo query-passage pairs from a corpus store (HLP's DL/CM, ICT, WLP, BFS)."""

from pretriever.mine.config import MineConfig
from pretriever.mine.engine import MineError
from pretriever.mine.pipeline import MineResult, run

__all__ = ["MineConfig", "MineError", "MineResult", "run"]
