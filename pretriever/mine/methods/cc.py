"""Context pairs (CC; coCondenser, Gao and Callan 2022): two passages of the same document.

Query: a passage x of document D. Positive: another passage y of D. The passages of each
document are put in a seeded random order (``hkey``) and each one is paired with the
next one round the circle, so every passage of a document with two or more passages is a
query once and a positive once, in O(passages). Used by ``pretriever pretrain``
(coCondenser's contrastive span pairs, CoT-MAE's encoder/decoder pairs; Wu et al. 2023,
eq. 1).
"""

from __future__ import annotations

import ibis.expr.types as ir

from pretriever.mine.context import MineContext
from pretriever.mine.engine import hkey
from pretriever.mine.methods.base import Method, register
from pretriever.mine.methods.wlp import numbered


@register
class ContextPairs(Method):
    name = "cc"
    title = "context pairs"
    summary = "query = a passage x of D; positive = another passage y of D (seeded random pairing)"
    cap_doc_pairs = False  # every pair is within one document
    uses_links = False

    def candidates(self, ctx: MineContext) -> ir.Table:
        p = ctx.positives.select("passage_id", "doc_id", "text")
        p = p.mutate(_h=hkey(ctx.seed, "cc", p.passage_id))
        p = numbered(p, "doc_id", ["_h", "passage_id"])
        counts = p.group_by("doc_id").agg(n=p.count().cast("int64"))
        counts = counts.filter(counts.n > 1).select(c_doc=counts.doc_id, n=counts.n)
        x = p.join(counts, p.doc_id == counts.c_doc)
        x = x.mutate(_next=(x._k + 1) % x.n)
        y = p.select(y_doc=p.doc_id, y_pid=p.passage_id, y_text=p.text, y_k=p._k)
        j = x.join(y, (x.doc_id == y.y_doc) & (x._next == y.y_k))
        return ctx.candidate(
            j, key=j.passage_id + "|" + j.y_pid, query=j.text, query_doc_id=j.doc_id, query_passage_id=j.passage_id,
            positive_passage_id=j.y_pid, positive_doc_id=j.doc_id, positive_text=j.y_text)

    def why_empty(self, ctx: MineContext) -> str:
        return (f"no document has two passages of at least {ctx.config.min_passage_words} words (BEIR and DPR "
                "stores keep whole documents as one passage unless built with --words N)")
