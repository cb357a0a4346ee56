"""The registry of mining strategies: name -> class (``METHODS``), one module each."""

from pretriever.mine.methods.base import METHODS, Method, check_methods, register
from pretriever.mine.methods import dl, cm, ict, wlp, bfs, cc, qc, qac, tb  # noqa: F401,E402  (register themselves)

__all__ = ["METHODS", "Method", "check_methods", "register"]
