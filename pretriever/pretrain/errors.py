"""Errors of the pretrain stage; each message says what is wrong and what to do."""

from __future__ import annotations

from pretriever.errors import PretrieverError


class PretrainError(PretrieverError):
    """Pre-training cannot start or go on (bad pairs, a model without a BERT-style encoder, a busy MODEL_DIR)."""
