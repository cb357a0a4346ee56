"""Errors of the train stage; each message says what is wrong and what to do."""

from __future__ import annotations

from pretriever.errors import PretrieverError


class TrainError(PretrieverError):
    """Training cannot start or go on (the CLI prints the message and exits with status 2)."""
