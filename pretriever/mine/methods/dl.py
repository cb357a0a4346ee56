"""Dual-link (DL): q links to P and p links to Q (HLP, section 3.2; ``IsDL`` in Appendix D).

Query: the sentence of q holding the hypertext to P. Positive: p, without its title; its
anchor to Q lies wholly inside p (an anchor crossing a passage boundary is no evidence).
Both directions give pairs (a passage pair (a, b) gives a->b and b->a). Each passage pair
gives one candidate; when q links to P (or p to Q) more than once, the link is sampled.

The join of query links with positive links runs in ``--parts`` passes over the hash of Q (both
sides are split by it: q's document, p's link target), so at 10^8 links no pass spills.
"""

from __future__ import annotations

import ibis.expr.types as ir

from pretriever.mine.context import MineContext
from pretriever.mine.engine import Part, first_per_group, hkey
from pretriever.mine.methods.base import Method, link_pair_candidates, links_reason, register


@register
class DualLink(Method):
    """Dual-link (DL) pairs: passage q of document Q links to P, and passage p of P links back to Q.

    Query: the sentence of q holding the link to P; positive: p, without its title. The link back makes p
    evidence for q's claim about P (HLP's dual-link topology); the module docstring has the details.

    Requirements:
        A store with links between its documents: a MediaWiki dump, or WikiExtractor output run with
        ``--links`` (BEIR, DPR and plain JSONL stores have no links).

    Pairs:
        +------------------------------------------+------------------------------------------+
        | Query                                    | Positive                                 |
        +==========================================+==========================================+
        | a sentence of q (its anchor to P)        | p (its anchor to Q inside it)            |
        +------------------------------------------+------------------------------------------+

    Example::

        from pretriever.mine.config import MineConfig
        from pretriever import mine

        result = mine.run(MineConfig(corpus="enwiki/", out="dl-pairs/", methods="dl"))
        found = result.methods["dl"]
        print(found.pairs, "pairs", found.reason or f"in {found.file}")  # or why none

    From the command line: ``pretriever mine enwiki/ --method dl --out dl-pairs/``.

    References:
        Zhou et al., "Hyperlink-induced Pre-training for Passage Retrieval in Open-domain Question
        Answering", ACL 2022, section 3.2 and Appendix D (``IsDL``).
    """

    name = "dl"
    title = "dual-link"
    summary = "t_P in M(q) and t_Q in M(p); query = the sentence of q linking to P; positive = p"

    def candidates(self, ctx: MineContext) -> ir.Table:
        linked = ctx.in_parts(lambda part: self.linked(ctx, part), "dl-links")
        return link_pair_candidates(ctx, linked, "dl", "p")

    @staticmethod
    def linked(ctx: MineContext, part: Part) -> ir.Table:
        """The ids of one link each way for every passage pair (q, p) with Q in ``part``: a narrow table."""
        links = ctx.doc_links
        # query side: a link in q (document Q) to document P, in a sentence usable as a query
        qs = links.filter(links.s_ok, part.holds(links.doc_part))
        q = qs.select(q_doc=qs.doc_id, q_pid=qs.passage_id, q_link=qs.link_idx, q_sidx=qs.sentence_idx,
                      q_target=qs.target_doc_id)
        # positive side: a link in p (document P) back to Q, its anchor wholly inside p
        pl = ctx.positive_links
        pl = pl.filter(part.holds(pl.p_target_part))
        p = pl.select(pl.p_pid, pl.p_doc, pl.p_link, pl.p_target)
        j = q.join(p, (q.q_target == p.p_doc) & (p.p_target == q.q_doc))
        j = j.mutate(_h=hkey(ctx.seed, "dl-link", j.q_link, j.p_link, j.q_doc, j.p_doc))
        return first_per_group(j, ["q_pid", "p_pid"], ["_h", "q_link", "p_link"]).drop("_h")

    def why_empty(self, ctx: MineContext) -> str:
        return links_reason(ctx, "dual-link") or (
            "no two documents of the store link to each other from passages that pass the filters "
            f"(query sentences of at least {ctx.config.min_query_words} words holding the anchor, "
            f"positives of at least {ctx.config.min_passage_words} words)")
