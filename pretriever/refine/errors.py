"""Errors of the refine stage; each message says what is wrong and what to do."""

from __future__ import annotations

from pretriever.errors import PretrieverError


class RefineError(PretrieverError, ValueError):
    """The inputs cannot be refined as given (a leak without --oracle, no store for answers, ...)."""
