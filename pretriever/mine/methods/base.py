"""What a mining strategy is: a named, registered class that turns the store into candidates.

A strategy only says which (query, positive) pairs its definition allows, as an Ibis
expression with the columns of ``schema.CANDIDATE`` and a ``key`` naming the candidate.
Everything shared (sampling order, exact dedup, caps, the budget, negatives, titles,
writing) is done once for all strategies by ``pretriever.mine.pipeline``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import ibis.expr.types as ir

from pretriever.errors import ConfigError
from pretriever.mine.config import MineConfig
from pretriever.mine.context import MineContext
from pretriever.mine.engine import Part


class Method:
    """A mining strategy: which (query, positive) pairs its definition allows in a corpus store.

    A strategy only finds candidates, as one Ibis expression over the store's tables (through
    :class:`~pretriever.mine.context.MineContext`), so the same code runs on DuckDB and on Spark. Everything
    shared is done once for all strategies by :func:`pretriever.mine.pipeline.mine`: the seeded sampling
    order, exact dedup, the caps (``cap_doc_pairs``, ``cap_query_passages``), the ``--max-pairs`` budget,
    negatives, titles and writing METHOD.parquet.

    Requirements (of a subclass):
        1. ``name`` (the ``--method`` value), ``title`` and ``summary`` (one line: the definition, shown in
           help texts and kept in pairs.json), and the ``@register`` decorator.
        2. ``candidates(ctx)``: a table of the columns of ``schema.CANDIDATE`` (through ``ctx.candidate``,
           which sets the others to NULL), with ``key`` naming the candidate (hashed with the seed for
           sampling) and at least ``query``, ``positive_passage_id``, ``positive_doc_id`` and
           ``positive_text``.
        3. Optionally ``preflight`` (refuse a run before any output: a missing model or input),
           ``report`` (the method's own counts) and ``why_empty`` (a sentence for a run with no pairs).

    Example::

        from pretriever.mine.config import MineConfig
        from pretriever.mine.methods.base import Method, register
        from pretriever import mine


        @register
        class TitleLead(Method):  # a document's title as the query, its first passage as the positive
            name, title = "title-lead", "title and lead passage"
            summary = "query = the title of D; positive = the first passage of D"
            cap_query_passages = False  # the query is no passage's sentence

            def candidates(self, ctx):
                docs = ctx.docs.select(t_doc=ctx.docs.doc_id, t_title=ctx.docs.title)
                first = ctx.positives.filter(ctx.positives.position == 0)
                j = first.join(docs, first.doc_id == docs.t_doc)
                return ctx.candidate(j, key=j.passage_id, query=j.t_title, query_doc_id=j.doc_id,
                                     positive_passage_id=j.passage_id, positive_doc_id=j.doc_id,
                                     positive_text=j.text)


        result = mine.run(MineConfig(corpus="scifact-store/", out="lead-pairs/", methods="title-lead",
                                     negatives="none"))
        print(result.methods["title-lead"].pairs, "pairs")

    Relations:
        The strategies subclass it: :class:`~pretriever.mine.methods.dl.DualLink`,
        :class:`~pretriever.mine.methods.cm.CoMention` (HLP), :class:`~pretriever.mine.methods.ict.InverseCloze`,
        :class:`~pretriever.mine.methods.wlp.WikiLinkPrediction`,
        :class:`~pretriever.mine.methods.bfs.BodyFirstSelection` (HLP's baselines),
        :class:`~pretriever.mine.methods.qac.QAC` (C-MORE), :class:`~pretriever.mine.methods.cc.ContextPairs`,
        :class:`~pretriever.mine.methods.qc.QueryContext` (query-as-context) and
        :class:`~pretriever.mine.methods.tb.TitleBody`.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    summary: ClassVar[str]  # one line: the definition, for help texts and the manifest
    cap_doc_pairs: ClassVar[bool] = True  # apply max_per_doc_pair over (query doc, positive doc)
    cap_query_passages: ClassVar[bool] = True  # apply max_per_query_passage over the query's passage
    uses_links: ClassVar[bool] = True

    @classmethod
    def preflight(cls, config: MineConfig) -> None:
        """Refuse, before any output is written, a run this method cannot do (a missing model, input, ...).

        Args:
            config: the run's settings.
        """

    def candidates(self, ctx: MineContext) -> ir.Table:
        """The strategy's candidate pairs, as one Ibis expression (see the class docstring).

        Args:
            ctx: the store's tables and the shared derived ones.

        Returns:
            A table of ``schema.CANDIDATE``'s columns.
        """
        raise NotImplementedError

    def report(self, ctx: MineContext, candidates: int) -> dict[str, Any] | None:
        """What the method counted while finding its candidates (kept in pairs.json and stats.json), or None.

        ``candidates`` is the number left after the shared dedup and caps.

        Args:
            ctx: the store's tables.
            candidates: the candidates left.

        Returns:
            The counts, or None.
        """
        return None

    def why_empty(self, ctx: MineContext) -> str:
        """A sentence saying why the store gives this strategy no pairs.

        Args:
            ctx: the store's tables.

        Returns:
            The sentence.
        """
        return "no candidate pair passed the filters"


METHODS: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    """Class decorator: add a strategy to :data:`METHODS` under its ``name`` (twice is a ValueError).

    Args:
        cls: the strategy class.

    Returns:
        ``cls``, unchanged.
    """
    if cls.name in METHODS:
        raise ValueError(f"mining method {cls.name!r} registered twice")
    METHODS[cls.name] = cls
    return cls


def check_methods(names: list[str]) -> None:
    """Refuse names that no registered strategy has (a :class:`ConfigError` listing the known ones).

    Args:
        names: the ``--method`` values.
    """
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


def link_pair_candidates(ctx: MineContext, linked: ir.Table, name: str, anchor: str,
                         *steps: Callable[[ir.Table, Part], ir.Table], **extra: Any) -> ir.Table:
    """Candidates of a strategy that pairs a query sentence of q (linking on) with a positive p (linking back).

    ``linked`` holds one link triple per pair: ``q_doc``, ``q_pid``, ``q_sidx``, ``q_link`` (q's link) and
    ``p_doc``, ``p_pid`` and ``{anchor}_link`` (p's link back to Q). The anchors and texts are joined here,
    in this order: q's anchor, p's anchor, ``steps`` (further columns, e.g. a third link's anchor), q's
    sentence, p's text. ``extra`` maps further candidate columns to columns of the joined table. Dual-link
    and co-mention share this: they differ only in how ``linked`` is found.
    """
    j = ctx.joined(
        linked, f"{name}-with",
        lambda t, part: ctx.with_anchor(t, "q_doc", "q_link", "q", within="sentence", part=part),
        lambda t, part: ctx.with_anchor(t, "p_doc", f"{anchor}_link", anchor, within="passage", part=part),
        *steps,
        lambda t, part: ctx.with_sentence_text(t, "q_doc", "q_sidx", "q_text", part=part),
        lambda t, part: ctx.with_passage_text(t, "p_pid", "p_text", part=part))
    return ctx.candidate(
        j, key=j.q_pid + "|" + j.p_pid, query=j.q_text, query_doc_id=j.q_doc, query_passage_id=j.q_pid,
        query_sentence_idx=j.q_sidx, query_anchor=j.q_anchor, query_anchor_start=j.q_astart,
        query_anchor_end=j.q_aend, positive_passage_id=j.p_pid, positive_doc_id=j.p_doc,
        positive_text=j.p_text, positive_anchor=j[f"{anchor}_anchor"], positive_anchor_start=j[f"{anchor}_astart"],
        positive_anchor_end=j[f"{anchor}_aend"], **{column: j[source] for column, source in extra.items()})
