"""Co-mention (CM): q and p both link to a third entity E, and p links to Q (HLP, section 3.2).

``IsCM`` in the paper's Appendix D: some m in M(q) with d_in(m) < K, m in M(p) and t_Q in
M(p). E is neither Q nor P, and Q != P. E is an article of the store: a red link or a
disambiguation page is no entity. Query: the sentence of q holding the hypertext to E.
Positive: p, whose anchors to Q and to E lie wholly inside it (M(p)). E is recorded with its
in-degree. Entities in the top 10% of in-degree (ranked among the store's articles) are
excluded by default (``cm_indegree_percentile``), or those at or above an absolute K
(``cm_indegree_threshold``).

The joins run in ``--parts`` passes over the hash of Q: p's links back to Q and q's links to E
are split by it, p's links to E are not (every pass reads them whole), so each pass holds 1/parts
of the (Q, E) keys it looks up and spills neither side at 10^8 links.
"""

from __future__ import annotations

import ibis.expr.types as ir

from pretriever.mine.context import MineContext
from pretriever.mine.engine import SEP, Part, first_per_group, hkey
from pretriever.mine.methods.base import Method, link_pair_candidates, links_reason, register


@register
class CoMention(Method):
    """Co-mention (CM) pairs: q and p both link to a third entity E that is not too common, and p links
    to q's document Q.

    Query: the sentence of q holding the link to E; positive: p, without its title. Entities whose in-degree
    is in the store's top 10% are excluded by default (``cm_indegree_percentile``), or those at or above
    ``cm_indegree_threshold``; the module docstring has the details.

    Requirements:
        A store with links between its documents in which linked entities are articles of the store (a
        sample of a wiki links mostly outside itself and gives few CM pairs).

    Pairs:
        +------------------------------------------+------------------------------------------+
        | Query                                    | Positive                                 |
        +==========================================+==========================================+
        | a sentence of q (its anchor to E)        | p (its anchors to Q and to E inside it)  |
        +------------------------------------------+------------------------------------------+

    Example::

        from pretriever.mine.config import MineConfig
        from pretriever import mine

        result = mine.run(MineConfig(corpus="enwiki/", out="cm-pairs/", methods="cm"))
        found = result.methods["cm"]
        print(found.pairs, "pairs", found.reason or f"in {found.file}")  # or why none

    From the command line: ``pretriever mine enwiki/ --method cm --out cm-pairs/``.

    References:
        Zhou et al., "Hyperlink-induced Pre-training for Passage Retrieval in Open-domain Question
        Answering", ACL 2022, section 3.2 and Appendix D (``IsCM``, in-degree threshold K).
    """

    name = "cm"
    title = "co-mention"
    summary = ("E in M(q), E in M(p), d_in(E) < K, t_Q in M(p); query = the sentence of q linking to E; "
               "positive = p")

    def candidates(self, ctx: MineContext) -> ir.Table:
        linked = ctx.in_parts(lambda part: self.linked(ctx, part), "cm-links")
        return link_pair_candidates(
            ctx, linked, "cm", "pq",
            lambda t, part: ctx.with_anchor(t, "p_doc", "pe_link", "pe", within="passage", entity="e", part=part),
            entity="e", entity_doc_id="e_doc", entity_indegree="e_deg", entity_anchor="pe_anchor",
            entity_anchor_start="pe_astart", entity_anchor_end="pe_aend")

    @staticmethod
    def linked(ctx: MineContext, part: Part) -> ir.Table:
        """The ids of one (q->E, p->Q, p->E) link triple for every passage pair (q, p) with Q in ``part``."""
        k = ctx.indegree_threshold["k"]
        ind = ctx.indegree.filter(ctx.indegree.indegree < k)  # articles only
        ind = ind.select(i_doc=ind.entity_doc_id, i_deg=ind.indegree)
        pl = ctx.positive_links  # anchors wholly inside p
        # p (in P) links back to Q
        back = pl.filter(part.holds(pl.p_target_part))
        pq = back.select(p_pid=back.p_pid, p_doc=back.p_doc, q_doc=back.p_target, pq_link=back.p_link)
        # p links to an article E that is not too common
        pe = pl.join(ind, pl.p_target == ind.i_doc)
        pe = pe.select(pe_pid=pe.p_pid, e_doc=pe.p_target, e_deg=pe.i_deg, pe_link=pe.p_link)
        j = pq.join(pe, pq.p_pid == pe.pe_pid)
        j = j.filter(j.e_doc != j.q_doc)
        j = j.mutate(_qe=j.q_doc + SEP + j.e_doc)  # one key, so q's side joins (Q, E) pairs, not all links of Q
        # q (in Q) links to E from a sentence usable as a query
        qs = ctx.doc_links.filter(ctx.doc_links.s_ok, part.holds(ctx.doc_links.doc_part))
        qe = qs.select(q_pid=qs.passage_id, qe=qs.doc_id + SEP + qs.target_doc_id, q_link=qs.link_idx,
                       q_sidx=qs.sentence_idx)
        j = j.join(qe, qe.qe == j._qe).drop("_qe", "qe", "pe_pid")
        j = j.mutate(_h=hkey(ctx.seed, "cm-link", j.q_link, j.pq_link, j.pe_link, j.q_doc, j.p_doc, j.e_doc))
        return first_per_group(j, ["q_pid", "p_pid"], ["_h", "q_link", "pq_link", "pe_link"]).drop("_h")

    def why_empty(self, ctx: MineContext) -> str:
        reason = links_reason(ctx, "co-mention")
        if reason:
            return reason
        t = ctx.indegree_threshold
        if t["k"] <= 2:
            below = (f"the {t['entities'] - t['excluded']:,} of its {t['entities']:,} articles below it are"
                     if t.get("entities") else "the articles below it are")
            return (f"the in-degree threshold is K={t['k']} ({t['rule']}, ranked among the store's articles): "
                    f"{below} linked from at most one document, but a co-mentioned entity is linked from both Q "
                    "and P (in-degree 2 or more). This happens on small samples (on a full wiki, where articles "
                    "are linked from many documents, K is much larger); use --cm-indegree-percentile 99 or "
                    "--cm-indegree-threshold K")
        counts = ctx.link_counts
        return ("no passage p links back to a document Q and to an entity E with in-degree below "
                f"K={t['k']} ({t['rule']}) that a passage of Q links to as well. E must be an article of the "
                f"store (not a red link or a disambiguation page): {counts['links_between_documents']:,} of the "
                f"{counts['links']:,} links point to a document of the store, and p's anchors must lie wholly "
                "inside p. A sample of a wiki links mostly outside itself; try a larger corpus or a higher "
                "--cm-indegree-percentile")
