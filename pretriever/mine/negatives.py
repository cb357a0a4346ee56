"""One extra negative passage per pair (HLP paper, Appendix B).

``random``: a passage drawn at random from the corpus. ``overlap``: a passage linking to
an entity that the query sentence links to, which satisfies neither DL nor CM with the
query's passage q; both of those need the passage to link to Q, so any passage that does
not link to Q qualifies (passages that link to Q are left out altogether, which keeps
every overlap negative provably outside DL and CM). Pairs without an overlap candidate
fall back to a random negative (``negative_kind`` says which). A negative is never the
positive, nor a passage of the query's document or of the positive's document.

Random draws are engine-independent: passages are numbered 0..N-1 in the order of
``md5(seed|neg|passage_id)``, pairs in the order of ``md5(seed|neg-pair|method|key)``,
and pair i takes passage (i + offset) mod N, trying a few further offsets when that
passage is excluded.
"""

from __future__ import annotations

import hashlib
from functools import cached_property

import ibis
import ibis.expr.types as ir

from pretriever.mine.context import MineContext
from pretriever.mine.engine import Part, first_per_group, hkey

TRIES = 8


class Negatives:
    """The negatives of one run (see the module docstring), numbered once and shared by every strategy.

    Args:
        ctx: the run's tables (the positives are the passages negatives are drawn from).
    """

    def __init__(self, ctx: MineContext):
        self.ctx = ctx

    @cached_property
    def ranked(self) -> ir.Table:
        """Candidate negatives numbered 0..N-1 in seeded random order (``_r``)."""
        p = self.ctx.positives
        p = p.select(n_pid=p.passage_id, n_doc=p.doc_id)
        p = p.mutate(_h=hkey(self.ctx.seed, "neg", p.n_pid))
        p = p.mutate(_r=ibis.row_number().over(order_by=[p._h, p.n_pid]).cast("int64"))
        return self.ctx.engine.materialize(p.drop("_h"), "negatives")

    @cached_property
    def n(self) -> int:
        return self.ctx.engine.count(self.ranked)

    def random(self, pairs: ir.Table, method: str) -> ir.Table:
        """(key, n_pid, n_doc) for the pairs that got a random negative."""
        n = self.n
        if n == 0:
            return self._none()
        offset = int(hashlib.md5(f"{self.ctx.seed}|neg-offset|{method}".encode()).hexdigest()[:12], 16) % n
        stride = n // TRIES + 1
        x = pairs.select("key", "query_doc_id", "positive_doc_id", "positive_passage_id")
        x = x.mutate(_i=ibis.row_number().over(order_by=[hkey(self.ctx.seed, "neg-pair", method, x.key), x.key])
                     .cast("int64"))
        tries = ibis.memtable({"_j": list(range(TRIES))}, schema={"_j": "int64"})
        x = x.cross_join(tries)
        x = x.mutate(_c=(x._i + x._j * stride + offset) % n)
        r = self.ranked.select("_r", "n_pid", "n_doc")  # the texts join the one chosen try, not all TRIES
        x = x.join(r, x._c == r._r)
        x = x.filter(x.n_doc != x.query_doc_id, x.positive_doc_id.isnull() | (x.n_doc != x.positive_doc_id),
                     x.n_pid != x.positive_passage_id)
        x = first_per_group(x, ["key"], ["_j"])
        return x.select("key", "n_pid", "n_doc")

    @cached_property
    def by_entity(self) -> ir.Table:
        """Up to ``overlap_candidates`` passages per entity, sampled among those linking to it with an
        anchor wholly inside the passage."""
        ctx = self.ctx
        links = ctx.elinks.filter(ctx.elinks.in_passage)
        pos = ctx.positives.select(c_pid=ctx.positives.passage_id, c_doc=ctx.positives.doc_id)
        t = links.join(pos, links.passage_id == pos.c_pid)
        t = t.select(c_entity=t.entity, c_pid=t.c_pid, c_doc=t.c_doc).distinct()
        t = t.mutate(_h=hkey(ctx.seed, "ovl-entity", t.c_entity, t.c_pid))
        t = first_per_group(t, ["c_entity"], ["_h", "c_pid"], ctx.config.overlap_candidates)
        return ctx.engine.materialize(t.drop("_h"), "overlap-candidates")

    @cached_property
    def sentence_entities(self) -> ir.Table:
        links = self.ctx.elinks
        t = links.select(e_doc=links.doc_id, e_sidx=links.sentence_idx, e_entity=links.entity).distinct()
        return self.ctx.engine.materialize(t, "sentence-entities")

    @cached_property
    def links_to_docs(self) -> ir.Table:
        t = self.ctx.doc_links
        t = t.select(t_pid=t.passage_id, t_doc=t.target_doc_id).distinct()
        return self.ctx.engine.materialize(t, "links-to-docs")

    def overlap(self, pairs: ir.Table, method: str) -> ir.Table:
        """(key, n_pid, n_doc) for the pairs that got an overlap negative."""
        ctx = self.ctx
        sent, by_entity, to_docs = self.sentence_entities, self.by_entity, self.links_to_docs
        x = pairs.select("key", "query_doc_id", "query_sentence_idx", "positive_doc_id", "positive_passage_id")
        x = x.join(sent, (x.query_doc_id == sent.e_doc) & (x.query_sentence_idx == sent.e_sidx))
        x = x.join(by_entity, x.e_entity == by_entity.c_entity)
        x = x.filter(x.c_doc != x.query_doc_id, x.positive_doc_id.isnull() | (x.c_doc != x.positive_doc_id),
                     x.c_pid != x.positive_passage_id)
        x = x.anti_join(to_docs, (x.c_pid == to_docs.t_pid) & (x.query_doc_id == to_docs.t_doc))
        x = x.select("key", "c_pid", "c_doc").distinct()
        x = x.mutate(_h=hkey(ctx.seed, "ovl-pick", method, x.key, x.c_pid))
        x = first_per_group(x, ["key"], ["_h", "c_pid"])
        return x.select("key", n_pid=x.c_pid, n_doc=x.c_doc)

    def choose(self, pairs: ir.Table, method: str, kind: str) -> ir.Table | None:
        """(key, _h, n_pid, n_doc, n_kind) for the pairs that got a negative of ``kind`` (an overlap negative
        where there is one, else a random one), materialized; None for ``none``.

        The choice is made over all the pairs at once (a random negative is the pair's rank among them, offset),
        so it does not depend on the parts :meth:`attach` then joins the texts in.
        """
        if kind == "none":
            return None
        chosen = self.random(pairs, method).mutate(n_kind=ibis.literal("random"))
        if kind == "overlap":
            ovl = self.overlap(pairs, method).mutate(n_kind=ibis.literal("overlap"))
            chosen = ovl.union(chosen.anti_join(ovl, chosen.key == ovl.key))
        h = pairs.select(_k=pairs.key, _h=pairs._h)
        chosen = chosen.join(h, chosen.key == h._k).drop("_k")
        return self.ctx.engine.materialize(chosen, f"negatives-{method}")

    def attach(self, pairs: ir.Table, chosen: ir.Table | None, part: Part = Part()) -> ir.Table:
        """``pairs`` (the rows of one part of the sampling key ``_h``) plus negative_passage_id, negative_doc_id,
        negative_text and negative_kind from :meth:`choose`; the texts of that part's negatives only."""
        if chosen is None:
            return pairs.mutate(negative_passage_id=ibis.null("string"), negative_doc_id=ibis.null("string"),
                                negative_text=ibis.null("string"), negative_kind=ibis.null("string"))
        c = chosen.filter(part.holds(chosen._h.substr(0, 4)))
        p = self.ctx.engine.table("passages")
        texts = p.select(_t_pid=p.passage_id, _t_text=p.text)
        c = c.join(texts, c.n_pid == texts._t_pid)
        c = c.select(_n_key=c.key, negative_passage_id=c.n_pid, negative_doc_id=c.n_doc, negative_text=c._t_text,
                     negative_kind=c.n_kind)
        return pairs.left_join(c, pairs.key == c._n_key).drop("_n_key")

    def _none(self) -> ir.Table:
        return ibis.memtable({"key": [], "n_pid": [], "n_doc": []},
                             schema={"key": "string", "n_pid": "string", "n_doc": "string"})
