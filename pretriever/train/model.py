"""The bi-encoder and its loss, as sentence-transformers objects.

Shared encoder (pre-training): the model as loaded, with ``query_length`` and
``document_length`` set on its Transformer, so queries are cut at ``max_query_length``
and passages at ``max_passage_length`` (the trainer tags the ``anchor`` column as
``query`` and the passage columns as ``document``; ``model.encode_query`` and
``model.encode_document`` do the same after loading).

Separate encoders (DPR-style fine-tuning): a ``Router`` with a ``query`` and a ``document``
route, each a full copy of the model's modules; both start from the same weights and
then train apart. ``SentenceTransformer(path)`` loads it; encode queries with
``encode_query`` and passages with ``encode_document`` (plain ``encode`` uses the
document route).

Pooling: kept as the model has it unless ``pooling`` is given (a changed pooling is
logged); a plain Hugging Face checkpoint (no ``modules.json``) gets the papers' CLS
pooling and no normalisation unless told otherwise.
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path

from pretriever.models import model_label, resolve_model
from pretriever.train.config import TrainConfig
from pretriever.train.errors import TrainError

log = logging.getLogger(__name__)

def route(column: str) -> str:
    """The encoder route of a training column: ``anchor`` is the query; positive and negatives are documents."""
    return "query" if column == "anchor" else "document"


def is_sentence_transformers_model(ref: str) -> bool | None:
    """True/False for a local folder (has modules.json or not); None when it cannot be told offline."""
    path = Path(ref)
    if path.is_dir():
        return (path / "modules.json").exists()
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(ref, "modules.json")
        if isinstance(found, str):
            return True
        config = try_to_load_from_cache(ref, "config.json")
        return False if isinstance(config, str) else None
    except Exception:  # noqa: BLE001 - an odd name: let loading report it
        return None


def _modules(model) -> list:
    return list(model.children())


def build_model(cfg: TrainConfig, device: str | None = None):
    """Load the base model and shape it as the config says; returns (model, description dict)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Router, Transformer

    ref = resolve_model(cfg.model)
    is_st = is_sentence_transformers_model(ref)
    try:
        base = SentenceTransformer(ref, device=device)
    except (OSError, ValueError) as err:
        raise TrainError(f"cannot load model {cfg.model or ref!r}: {err}") from err
    modules = _modules(base)
    if any(isinstance(m, Router) for m in modules):
        if cfg.shared_encoder:
            raise TrainError(f"{model_label(cfg.model)} already has separate query and passage encoders (a Router); "
                             "train it with --separate-encoders")
        if cfg.pooling is not None or cfg.normalize is not None:
            raise TrainError("--pooling/--normalize cannot reshape a model that already has separate encoders")
        model = base
        for route in modules[0].sub_modules.values():
            _set_lengths(route[0], cfg)
        pooling_desc, normalize = "as in the model", None
    else:
        if not modules or not isinstance(modules[0], Transformer):
            raise TrainError(f"{model_label(cfg.model)} does not start with a Transformer module; "
                             "pretriever trains Transformer bi-encoders")
        transformer = modules[0]
        modules, pooling_desc, normalize = shape_pooling(modules, cfg.pooling, cfg.normalize, is_st,
                                                         model_label(cfg.model))
        _set_lengths(transformer, cfg)
        if not cfg.shared_encoder:  # two copies of the same start; both cut queries and passages as set above
            document = [copy.deepcopy(m) for m in modules]
            modules = [Router.for_query_document(query_modules=modules, document_modules=document)]
        model = SentenceTransformer(modules=modules, device=device, prompts=base.prompts,
                                    default_prompt_name=base.default_prompt_name,
                                    similarity_fn_name="cosine" if cfg.similarity == "cos" else "dot")
    model.similarity_fn_name = "cosine" if cfg.similarity == "cos" else "dot"
    description = {"base": model_label(cfg.model), "base_path": ref, "base_is_sentence_transformers": is_st,
                   "pooling": pooling_desc, "normalize": normalize, "shared_encoder": cfg.shared_encoder,
                   "similarity": cfg.similarity, "scale": cfg.scale,
                   "max_query_length": cfg.max_query_length, "max_passage_length": cfg.max_passage_length,
                   "parameters": sum(p.numel() for p in model.parameters())}
    return model, description


def shape_pooling(modules: list, pooling: str | None, normalize: bool | None, is_st: bool | None,
                  label: str) -> tuple[list, str | None, bool]:
    """(modules, pooling mode, normalised): the modules after the Transformer reshaped as asked. None keeps the
    model's own; a plain Hugging Face checkpoint (``is_st`` False) gets CLS pooling and no normalisation, as in
    the papers. A changed pooling replaces the Pooling module, so the saved model's pooling config says so."""
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling

    modules = list(modules)
    poolings = [i for i, m in enumerate(modules) if isinstance(m, Pooling)]
    current = modules[poolings[0]].pooling_mode if poolings else None
    wanted = pooling or ("cls" if is_st is False else None)
    if wanted is not None and wanted != current:
        pool = Pooling(modules[0].get_embedding_dimension(), pooling_mode=wanted)
        if poolings:
            modules[poolings[0]] = pool
        else:
            modules.insert(1, pool)
        if is_st:
            log.warning("pooling of %s changed from %s to %s as asked", label, current, wanted)
    has_norm = any(isinstance(m, Normalize) for m in modules)
    normalised = normalize if normalize is not None else (False if is_st is False else has_norm)
    if normalised and not has_norm:
        modules.append(Normalize())
    elif not normalised and has_norm:
        modules = [m for m in modules if not isinstance(m, Normalize)]
    return modules, wanted or current, normalised


def _set_lengths(transformer, cfg: TrainConfig) -> None:
    transformer.max_seq_length = cfg.max_passage_length
    transformer.query_length = cfg.max_query_length
    transformer.document_length = cfg.max_passage_length


def build_loss(model, cfg: TrainConfig):
    """In-batch negatives + the pairs' negatives, NLL of the positive (MNRL; GradCache with mini_batch_size)."""
    from sentence_transformers import util
    from sentence_transformers.sentence_transformer.losses import (CachedMultipleNegativesRankingLoss,
                                                                   MultipleNegativesRankingLoss)

    similarity = util.cos_sim if cfg.similarity == "cos" else util.dot_score
    if cfg.mini_batch_size:
        return CachedMultipleNegativesRankingLoss(model, scale=cfg.scale, similarity_fct=similarity,
                                                  mini_batch_size=cfg.mini_batch_size,
                                                  gather_across_devices=cfg.gather_across_devices)
    return MultipleNegativesRankingLoss(model, scale=cfg.scale, similarity_fct=similarity,
                                        gather_across_devices=cfg.gather_across_devices)
