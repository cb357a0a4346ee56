"""Co-mention (CM): q and p both link to a third entity E, and p links to Q (HLP, section 3.2).

``IsCM`` in the paper's Appendix D: some m in M(q) with d_in(m) < K, m in M(p) and t_Q in
M(p). E is neither Q nor P, and Q != P. Query: the sentence of q holding the hypertext to
E. Positive: p. E is recorded with its in-degree. Entities in the top 10% of in-degree
(over all link targets) are excluded by default (``cm_indegree_percentile``), or those at
or above an absolute K (``cm_indegree_threshold``).
"""

from __future__ import annotations

import ibis.expr.types as ir

from pretriever.mine.context import MineContext
from pretriever.mine.engine import SEP, first_per_group, hkey
from pretriever.mine.methods.base import Method, links_reason, register


@register
class CoMention(Method):
    name = "cm"
    title = "co-mention"
    summary = ("E in M(q), E in M(p), d_in(E) < K, t_Q in M(p); query = the sentence of q linking to E; "
               "positive = p")

    def candidates(self, ctx: MineContext) -> ir.Table:
        k = ctx.indegree_threshold["k"]
        ind = ctx.indegree.filter(ctx.indegree.indegree < k)
        ind = ind.select(i_entity=ind.entity, i_deg=ind.indegree)
        links = ctx.elinks
        # p (in P) links back to Q
        pos = ctx.positives.select(pp=ctx.positives.passage_id)
        dl = ctx.doc_links
        pq = dl.join(pos, dl.passage_id == pos.pp)
        pq = pq.select(p_pid=pq.passage_id, p_doc=pq.doc_id, q_doc=pq.target_doc_id,
                       q_title=pq.entity, pq_link=pq.link_idx, pq_anchor=pq.anchor,
                       pq_astart=pq.passage_start, pq_aend=pq.passage_end)
        # p links to a not-too-common entity E
        pe = links.join(ind, links.entity == ind.i_entity)
        pe = pe.select(pe_pid=pe.passage_id, e=pe.entity, e_doc=pe.target_doc_id, e_deg=pe.i_deg,
                       pe_link=pe.link_idx, pe_anchor=pe.anchor, pe_astart=pe.passage_start,
                       pe_aend=pe.passage_end)
        j = pq.join(pe, pq.p_pid == pe.pe_pid)
        j = j.filter(j.e != j.q_title)
        j = j.mutate(_qe=j.q_doc + SEP + j.e)  # one key, so q's side joins (Q, E) pairs, not all links of Q
        # q (in Q) links to E from a sentence usable as a query
        qs = links.filter(links.s_ok)
        qe = qs.select(q_pid=qs.passage_id, qe=qs.doc_id + SEP + qs.entity, q_link=qs.link_idx,
                       q_sidx=qs.sentence_idx, q_anchor=qs.anchor,
                       q_astart=(qs.start - qs.s_start), q_aend=(qs.end - qs.s_start))
        j = j.join(qe, qe.qe == j._qe).drop("_qe", "qe")
        j = j.mutate(_h=hkey(ctx.seed, "cm-link", j.q_link, j.pq_link, j.pe_link, j.q_doc, j.p_doc, j.e))
        j = first_per_group(j, ["q_pid", "p_pid"], ["_h", "q_link", "pq_link", "pe_link"])
        j = ctx.with_sentence_text(ctx.with_passage_text(j, "p_pid", "p_text"), "q_doc", "q_sidx", "q_text")
        return ctx.candidate(
            j, key=j.q_pid + "|" + j.p_pid, query=j.q_text, query_doc_id=j.q_doc, query_passage_id=j.q_pid,
            query_sentence_idx=j.q_sidx, query_anchor=j.q_anchor, query_anchor_start=j.q_astart,
            query_anchor_end=j.q_aend, positive_passage_id=j.p_pid, positive_doc_id=j.p_doc,
            positive_text=j.p_text, positive_anchor=j.pq_anchor, positive_anchor_start=j.pq_astart,
            positive_anchor_end=j.pq_aend, entity=j.e, entity_doc_id=j.e_doc, entity_indegree=j.e_deg,
            entity_anchor=j.pe_anchor, entity_anchor_start=j.pe_astart, entity_anchor_end=j.pe_aend)

    def why_empty(self, ctx: MineContext) -> str:
        reason = links_reason(ctx, "co-mention")
        if reason:
            return reason
        t = ctx.indegree_threshold
        if t["k"] <= 2:
            share = f"{1 - t['excluded'] / t['entities']:.0%} of the {t['entities']:,} link targets are" \
                if t.get("entities") else "most link targets are"
            return (f"the in-degree threshold is K={t['k']} ({t['rule']}): {share} linked from a single "
                    "document, so only such entities pass, but a co-mentioned entity is linked from both Q and "
                    "P (in-degree 2 or more). This happens on small samples (on a full wiki, where targets are "
                    "linked from many documents, K is much larger); use --cm-indegree-percentile 99 or --cm-indegree-threshold K")
        return ("no passage p links back to a document Q while sharing an entity with in-degree below "
                f"K={t['k']} ({t['rule']}) with a passage of Q; try a larger corpus or a higher "
                "--cm-indegree-percentile")
