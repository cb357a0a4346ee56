"""The text put before every passage when ``generate`` runs without ``--prefix``: the model's own.

doc2query's ``*-with-prefix-*`` models (e.g. doc2query/all-with-prefix-t5-base-v1) were
trained on ``text2query: <passage>`` and give other queries without it; docTTTTTquery and
doc2query's models without "with-prefix" in the name take the bare passage. A config that
names a prefix (``prefix``, or a query task in ``task_specific_params``) is followed first.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

DOC2QUERY_PREFIX = "text2query: "


def _config(model: str) -> dict:
    """The model's config as a dict (empty when it cannot be read offline: loading reports that later)."""
    try:
        from transformers import AutoConfig

        return AutoConfig.from_pretrained(model).to_dict()
    except (OSError, ValueError):
        return {}


def model_prefix(model: str) -> tuple[str, str | None]:
    """(prefix, why) for ``model``; why is None when nothing says whether the model needs a prefix."""
    config = _config(model)
    if config.get("prefix"):
        return config["prefix"], "its config.json names it (prefix)"
    for task, params in (config.get("task_specific_params") or {}).items():
        if "query" in task.lower() and isinstance(params, dict) and params.get("prefix"):
            return params["prefix"], f"its config.json names it (task_specific_params.{task})"
    names = f"{model} {config.get('_name_or_path', '')}".lower()
    if "with-prefix" in names:
        return DOC2QUERY_PREFIX, "doc2query *-with-prefix-* models were trained with it"
    if "doc2query" in names or "doctttttquery" in names:
        return "", "a doc2query model trained on the bare passage"
    return "", None


def resolve_prefix(model: str, given: str | None) -> tuple[str, str]:
    """(prefix, a line saying which and why): ``given`` as is, else the model's; warns when nothing tells."""
    if given is not None:
        return given, f"prefix {given!r} (--prefix)"
    prefix, why = model_prefix(model)
    if why is None:
        line = (f"{model}: neither its name nor its config says whether it needs a prefix, so none is used; a "
                "model trained with one (doc2query *-with-prefix-*: --prefix 'text2query: ') gives other "
                "queries without it")
        log.warning(line)
        return prefix, "warning: " + line
    return prefix, f"prefix {prefix!r} ({why})"
