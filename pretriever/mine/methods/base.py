"""What a mining strategy is: a named, registered class that turns the store into candidates.

A strategy only says which (query, positive) pairs its definition allows, as an Ibis
expression with the columns of ``schema.CANDIDATE`` and a ``key`` naming the candidate.
Everything shared (sampling order, exact dedup, caps, the budget, negatives, titles,
writing) is done once for all strategies by ``pretriever.mine.pipeline``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import ibis.expr.types as ir

from pretriever.errors import ConfigError
from pretriever.mine.config import MineConfig
from pretriever.mine.context import MineContext


class Method:
    name: ClassVar[str]
    title: ClassVar[str]
    summary: ClassVar[str]  # one line: the definition, for help texts and the manifest
    cap_doc_pairs: ClassVar[bool] = True  # apply max_per_doc_pair over (query doc, positive doc)
    cap_query_passages: ClassVar[bool] = True  # apply max_per_query_passage over the query's passage
    uses_links: ClassVar[bool] = True

    @classmethod
    def preflight(cls, config: MineConfig) -> None:
        """Refuse, before any output is written, a run this method cannot do (a missing model, input, ...)."""

    def candidates(self, ctx: MineContext) -> ir.Table:
        raise NotImplementedError

    def report(self, ctx: MineContext, candidates: int) -> dict[str, Any] | None:
        """What the method counted while finding its candidates (kept in pairs.json and stats.json), or None.

        ``candidates`` is the number left after the shared dedup and caps.
        """
        return None

    def why_empty(self, ctx: MineContext) -> str:
        """A sentence saying why the store gives this strategy no pairs."""
        return "no candidate pair passed the filters"


METHODS: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    if cls.name in METHODS:
        raise ValueError(f"mining method {cls.name!r} registered twice")
    METHODS[cls.name] = cls
    return cls


def check_methods(names: list[str]) -> None:
    """Refuse names that no registered strategy has (a :class:`ConfigError` listing the known ones)."""
    unknown = [n for n in names if n not in METHODS]
    if unknown:
        raise ConfigError(f"unknown mining method(s) {', '.join(unknown)}; choose from {', '.join(METHODS)}")


def links_reason(ctx: MineContext, what: str) -> str | None:
    """The usual reasons a link-based strategy finds nothing, or None."""
    counts = ctx.link_counts
    if counts["links"] == 0:
        return (f"the store's links table is empty, and {what} needs hyperlinks (was the corpus a "
                "format without links, e.g. BEIR/DPR/plain JSONL, or WikiExtractor run without --links?)")
    if counts["links_between_documents"] == 0:
        return (f"none of the {counts['links']:,} links points to a document of the store "
                f"(target_doc_id is NULL for all of them), and {what} needs links between documents; "
                "the store holds only a sample of the wiki?")
    return None
