"""Errors of the generate stage; each message says what is wrong and what to do."""

from __future__ import annotations

from pretriever.errors import PretrieverError


class GenerateError(PretrieverError):
    """Generation or an import cannot start or go on (bad input, a folder holding other work)."""
