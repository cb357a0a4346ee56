"""Errors of the index stage; each message says what is wrong and what to do."""

from __future__ import annotations

from pretriever.data.passages import ShardSpecError  # noqa: F401 - raised by parse_shard, caught as an index error
from pretriever.errors import PretrieverError


class IndexStageError(PretrieverError):
    """Base class: the CLI prints the message and exits with status 2."""


class NotAnIndexError(IndexStageError):
    """The folder holds no (complete) dense or BM25 index."""


class EncodeStateError(IndexStageError):
    """The output folder holds other work (a finished index, or an encode with other settings)."""


class MergeError(IndexStageError):
    """Shards are missing or were encoded with different settings."""


class IndexExportError(IndexStageError):
    """The index cannot be exported as asked (its kind, or --out)."""
