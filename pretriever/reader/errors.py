"""Errors of the reader stage (all :class:`~pretriever.errors.PretrieverError`: the CLI prints them and exits 2)."""

from __future__ import annotations

from pretriever.errors import PretrieverError


class ReaderError(PretrieverError):
    """Bad reader data, a folder that is not a reader, nothing retrieved to read; the message says which."""
