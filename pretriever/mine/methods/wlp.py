"""Wiki link prediction (WLP; Chang et al., 2020): a lead sentence of A, a passage linking to A.

Query: a sentence from the lead section (section 0) of document A. Positive: a passage p
of another document B that links to A, with an anchor wholly inside p. Every (p, A) link
gives a candidate; the lead sentences of A are dealt out to A's candidates in a seeded
random order, so a much-linked A uses all its lead sentences evenly before the caps pick
among them.
"""

from __future__ import annotations

import ibis
import ibis.expr.types as ir

from pretriever.mine.context import MineContext
from pretriever.mine.engine import first_per_group, hkey
from pretriever.mine.methods.base import Method, links_reason, register


def numbered(t: ir.Table, group: str, order: list[str]) -> ir.Table:
    """Add ``_k``: 0, 1, 2, ... within each group, in the given order."""
    return t.mutate(_k=ibis.row_number().over(group_by=t[group], order_by=[t[c] for c in order]).cast("int64"))


def lead_sentences(ctx: MineContext, tag: str) -> tuple[ir.Table, ir.Table]:
    """Query sentences of lead sections, numbered per document (``_k``), and their count per document."""
    s = ctx.query_sentences
    s = s.filter(s.section_idx == 0)
    s = s.select(l_doc=s.doc_id, l_idx=s.sentence_idx, l_pid=s.passage_id, l_text=s.text)
    s = s.mutate(_h=hkey(ctx.seed, tag, s.l_doc, s.l_idx))
    s = numbered(s, "l_doc", ["_h", "l_idx"])
    counts = s.group_by("l_doc").agg(l_n=s.count().cast("int64"))
    return s.select("l_doc", "l_idx", "l_pid", "l_text", l_k=s._k), counts.select(n_doc=counts.l_doc, l_n=counts.l_n)


@register
class WikiLinkPrediction(Method):
    """Wiki link prediction (WLP) pairs: a sentence of A's lead section as the query, a passage of another
    document that links to A as the positive.

    Requirements:
        A store with links between its documents and their lead sections (a MediaWiki dump, or
        WikiExtractor output run with ``--links``).

    Pairs:
        +------------------------------------------+------------------------------------------+
        | Query                                    | Positive                                 |
        +==========================================+==========================================+
        | a sentence of A's lead section           | a passage of B != A linking to A         |
        +------------------------------------------+------------------------------------------+

    Example::

        from pretriever.mine.config import MineConfig
        from pretriever import mine

        result = mine.run(MineConfig(corpus="enwiki/", out="wlp-pairs/", methods="wlp"))
        found = result.methods["wlp"]
        print(found.pairs, "pairs", found.reason or f"in {found.file}")  # or why none

    From the command line: ``pretriever mine enwiki/ --method wlp --out wlp-pairs/``.

    References:
        - Chang et al., "Pre-training Tasks for Embedding-based Large-scale Retrieval", ICLR 2020.
        - Zhou et al., "Hyperlink-induced Pre-training for Passage Retrieval in Open-domain Question
        Answering", ACL 2022, section 4.4 (WLP as a baseline).
    """

    name = "wlp"
    title = "wiki link prediction"
    summary = "query = a sentence of A's lead section; positive = a passage of another document linking to A"

    def candidates(self, ctx: MineContext) -> ir.Table:
        a = ctx.positive_links  # p links to A (p_target), the anchor wholly inside p
        a = a.mutate(_h=hkey(ctx.seed, "wlp-link", a.p_pid, a.p_target, a.p_link))
        a = first_per_group(a, ["p_pid", "p_target"], ["_h", "p_link"])
        a = a.mutate(_h=hkey(ctx.seed, "wlp", a.p_pid, a.p_target))
        a = numbered(a, "p_target", ["_h", "p_pid"])
        lead, counts = lead_sentences(ctx, "wlp-lead")
        a = a.join(counts, a.p_target == counts.n_doc)
        a = a.mutate(_slot=a._k % a.l_n)
        j = a.join(lead, (a.p_target == lead.l_doc) & (a._slot == lead.l_k))
        j = ctx.with_passage_text(j, "p_pid", "p_text")
        return ctx.candidate(
            j, key=j.p_pid + "|" + j.p_target, query=j.l_text, query_doc_id=j.p_target, query_passage_id=j.l_pid,
            query_sentence_idx=j.l_idx, positive_passage_id=j.p_pid, positive_doc_id=j.p_doc,
            positive_text=j.p_text, positive_anchor=j.p_anchor, positive_anchor_start=j.p_astart,
            positive_anchor_end=j.p_aend)

    def why_empty(self, ctx: MineContext) -> str:
        return links_reason(ctx, "wiki link prediction") or (
            "no document that other documents link to has a lead-section sentence of at least "
            f"{ctx.config.min_query_words} words")
