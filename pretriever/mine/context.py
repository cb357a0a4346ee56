"""The store's tables as the strategies see them, plus the derived tables they share.

Notation (HLP paper, section 3): passage q of document Q gives the query, passage p of
document P is the positive, M(x) is the set of entities linked from passage x, an
entity is a link target identified by its (redirect-resolved) title, and t_X is the
title of document X. Links from a document to itself are not entities of it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

import ibis
import ibis.expr.types as ir
import pyarrow as pa

from pretriever.data import generated_queries_path
from pretriever.mine.config import MineConfig
from pretriever.mine.engine import MineEngine, Part, part_key, word_count
from pretriever.mine.schema import CANDIDATE


class MineContext:
    """The store's tables as every mining strategy sees them, and the derived tables they share (docs,
    articles, passages, sentences, links, in-degrees), each built once per run and cached on the context.

    One context per run, over one :class:`~pretriever.mine.engine.MineEngine`: a table that two strategies use
    (DL and CM both read the passage links) is computed once, on DuckDB or Spark alike.

    Args:
        engine: where the tables live and expressions run.
        config: the run's settings (the seed, the caps, skip_disambiguation, ...).
    """

    def __init__(self, engine: MineEngine, config: MineConfig):
        self.engine = engine
        self.config = config
        self.seed = config.seed

    # -- base tables ---------------------------------------------------------------
    @cached_property
    def docs(self) -> ir.Table:
        """Documents that may give queries and passages: (doc_id, title)."""
        if self.config.skip_disambiguation:
            return self.articles
        return self.engine.table("documents").select("doc_id", "title")

    @cached_property
    def articles(self) -> ir.Table:
        """Articles: documents that are not disambiguation pages, (doc_id, title). They are the entities
        whose in-degrees rank co-mention's E ("among the Wikipedia entities"), whatever
        ``skip_disambiguation`` says about queries and passages."""
        d = self.engine.table("documents")
        return d.filter(~d.is_disambiguation.fill_null(False)).select("doc_id", "title")

    @cached_property
    def passages(self) -> ir.Table:
        p = self.engine.table("passages")
        p = p.semi_join(self.docs, p.doc_id == self.docs.doc_id)
        return p.select("passage_id", "doc_id", "position", "section_idx", "start", "n_words", "text")

    @cached_property
    def sentences(self) -> ir.Table:
        """Sentences of usable documents with a word count (``words``) and ``clean``: no hole, not a list item.

        A sentence with a hole where markup stood ("With an area of, Algeria is ...") or from a
        list line is never a query (see ``pretriever.corpus.hygiene``); it still counts as text.
        """
        s = self.engine.table("sentences")
        s = s.semi_join(self.docs, s.doc_id == self.docs.doc_id)
        return s.mutate(words=word_count(s.text), clean=~(s.has_hole | s.is_list_item))

    @cached_property
    def query_sentences(self) -> ir.Table:
        """Sentences that may be queries: clean and long enough."""
        s = self.sentences
        return s.filter(s.clean, s.words >= self.config.min_query_words)

    @cached_property
    def flagged_sentences(self) -> dict[str, int]:
        """How many sentences of usable documents can never be queries, by flag (reported in stats and pairs.json)."""
        s = self.sentences
        row = self.engine.to_arrow(s.aggregate(
            sentences=s.count(), with_hole=s.has_hole.cast("int64").sum(), list_items=s.is_list_item.cast("int64").sum(),
            excluded=(~s.clean).cast("int64").sum())).to_pylist()[0]
        return {k: int(v or 0) for k, v in row.items()}

    @cached_property
    def positives(self) -> ir.Table:
        """Passages long enough to be positives or negatives."""
        p = self.passages
        return p.filter(p.n_words >= self.config.min_passage_words)

    @cached_property
    def generated_queries(self) -> ir.Table:
        """(passage_id, candidate, text) from ``--queries`` (``pretriever generate``; checked by the config)."""
        return self.engine.read(generated_queries_path(self.config.queries), "generated_queries")

    @cached_property
    def elinks(self) -> ir.Table:
        """Entity links: every link of a usable document to another page, with its sentence.

        Columns: doc_id, link_idx, passage_id, sentence_idx, start, end, passage_start,
        passage_end, anchor, entity (target title), target_doc_id (NULL when the target is
        not a usable document), s_start (the sentence's offset), s_ok (the sentence can be a
        query holding the whole anchor: clean, long enough), in_passage (the anchor lies wholly
        inside its passage; one that crosses into the next passage is only partly in the one it
        starts in), doc_part and target_part (:func:`part_key` of doc_id and target_doc_id, so a
        join on documents can run in parts). Computed once (materialized). Sentence texts are
        not in it: they are joined to the winners only (``with_sentence_text``).
        """
        raw = self.engine.table("links")
        docs = self.docs
        src = docs.select(src_doc=docs.doc_id, src_title=docs.title, doc_part=part_key(docs.doc_id))
        tgt = docs.select(tgt_doc=docs.doc_id, target_part=part_key(docs.doc_id))
        l = raw.join(src, raw.doc_id == src.src_doc)
        l = l.filter(l.target_title.notnull(), l.target_title != l.src_title,
                     l.target_doc_id.isnull() | (l.target_doc_id != l.doc_id))
        l = l.left_join(tgt, l.target_doc_id == tgt.tgt_doc)
        l = l.select("doc_id", "link_idx", "passage_id", "sentence_idx", "start", "end", "passage_start",
                     "passage_end", "anchor", "doc_part", "target_part", entity=l.target_title,
                     target_doc_id=l.tgt_doc)
        s = self.sentences.select(s_doc=self.sentences.doc_id, s_idx=self.sentences.sentence_idx,
                                  s_start=self.sentences.start, s_end=self.sentences.end,
                                  s_words=self.sentences.words, s_clean=self.sentences.clean)
        l = l.left_join(s, (l.doc_id == s.s_doc) & (l.sentence_idx == s.s_idx))
        ok = (l.s_idx.notnull() & l.s_clean & (l.s_words >= self.config.min_query_words)
              & (l.start >= l.s_start) & (l.end <= l.s_end))
        l = l.mutate(s_ok=ok.fill_null(False)).drop("s_doc", "s_idx", "s_end", "s_words", "s_clean")
        p = self.passages.select(p_pid=self.passages.passage_id, p_len=self.passages.text.length())
        l = l.left_join(p, l.passage_id == p.p_pid)
        inside = (l.passage_start >= 0) & (l.passage_end <= l.p_len)
        l = l.mutate(in_passage=inside.fill_null(False)).drop("p_pid", "p_len")
        return self.engine.materialize(l, "elinks")

    @cached_property
    def doc_links(self) -> ir.Table:
        """Entity links whose target is a usable document of the store."""
        return self.elinks.filter(self.elinks.target_doc_id.notnull())

    @cached_property
    def passage_links(self) -> ir.Table:
        """Links to usable documents whose anchor lies wholly inside its passage: the only links that can be
        the evidence of a positive (M(p) in the paper). An anchor crossing a passage boundary is cut in two,
        so neither passage holds it."""
        return self.doc_links.filter(self.doc_links.in_passage)

    @cached_property
    def positive_links(self) -> ir.Table:
        """The evidence side of DL, CM and WLP: links held wholly inside a passage long enough to be a
        positive. Columns p_pid, p_doc, p_link, p_target (the linked document), p_entity (its title),
        p_anchor, p_astart, p_aend (offsets in the passage); a strategy selects the ids it joins on and
        joins the text (``with_passage_text``) and the anchors (``with_anchor``) after its windows."""
        held = self.passage_links
        pos = self.positives.select(pp=self.positives.passage_id)
        j = held.join(pos, held.passage_id == pos.pp)
        return j.select(p_pid=j.passage_id, p_doc=j.doc_id, p_link=j.link_idx, p_target=j.target_doc_id,
                        p_target_part=j.target_part, p_entity=j.entity, p_anchor=j.anchor, p_astart=j.passage_start,
                        p_aend=j.passage_end)

    @cached_property
    def parts(self) -> int:
        """How many parts DL's and CM's joins of a query's links with a positive's run in (``--parts``, or as
        many as the engine's memory needs for the links that can give a query: :meth:`MineEngine.parts_for`)."""
        if self.config.parts:
            return self.config.parts
        return self.engine.parts_for(self.engine.count(self.doc_links.filter(self.doc_links.s_ok)))

    def in_parts(self, build: Callable[[Part], ir.Table], name: str) -> ir.Table:
        """``build(part)`` for each of :attr:`parts` parts, materialized as one table (see :class:`Part`)."""
        return self.engine.materialize_parts(build, name, self.parts)

    # -- in-degree -----------------------------------------------------------------------
    @cached_property
    def indegree(self) -> ir.Table:
        """(entity_doc_id, entity, indegree) for every article of the store: the number of distinct usable
        documents linking to it (0 when none does). Red links and disambiguation pages are not in it."""
        l = self.doc_links
        counts = l.group_by(c_doc=l.target_doc_id).agg(c_deg=l.doc_id.nunique().cast("int64"))
        a = self.articles
        t = a.left_join(counts, a.doc_id == counts.c_doc)
        t = t.select(entity_doc_id=t.doc_id, entity=t.title, indegree=t.c_deg.fill_null(0).cast("int64"))
        return self.engine.materialize(t, "indegree")

    @cached_property
    def indegree_threshold(self) -> dict[str, Any]:
        """K for co-mention: entities with in-degree >= K are too common to be evidence.

        With a percentile x (default 90), K is the smallest in-degree such that at most
        (100 - x)% of the store's articles have an in-degree of K or more, so the top 10% (ties
        kept on the safe side: never more than 10% excluded) are dropped. The ranking is over
        articles (HLP: "among the Wikipedia entities"), those no document links to included,
        not over every link target: red links would swamp it on a sample of a wiki.
        """
        if self.config.cm_indegree_threshold is not None:
            return {"k": int(self.config.cm_indegree_threshold), "rule": "absolute",
                    "entities": None, "excluded": None}
        ind = self.indegree
        hist = self.engine.to_arrow(ind.group_by("indegree").agg(n=ind.count()).order_by("indegree")).to_pylist()
        total = sum(r["n"] for r in hist)
        allowed = (100.0 - self.config.cm_indegree_percentile) / 100.0 * total
        k = (hist[-1]["indegree"] + 1) if hist else 1
        at_or_above = 0
        for row in reversed(hist):  # highest in-degree first
            at_or_above += row["n"]
            if at_or_above <= allowed + 1e-9:
                k = row["indegree"]
            else:
                break
        excluded = sum(r["n"] for r in hist if r["indegree"] >= k)
        return {"k": int(k), "rule": f"top {100 - self.config.cm_indegree_percentile:g}% of in-degree",
                "entities": int(total), "excluded": int(excluded)}

    # -- helpers for strategies -------------------------------------------------------------
    def candidate(self, t: ir.Table, **columns: Any) -> ir.Table:
        """Select the standard candidate columns (see ``schema.CANDIDATE``); missing ones are NULL."""
        out = {}
        for field in CANDIDATE:
            value = columns.get(field.name)
            dtype = ibis_type(field.type)
            out[field.name] = ibis.null(dtype) if value is None else value.cast(dtype)
        unknown = set(columns) - set(CANDIDATE.names)
        if unknown:
            raise KeyError(f"not candidate columns: {sorted(unknown)}")
        return t.select(**out)

    def with_passage_text(self, t: ir.Table, passage_id: str, name: str, part: Part = Part()) -> ir.Table:
        """``t``'s rows in ``part`` (split by ``t[passage_id]``) plus column ``name``: the text of that passage.

        Strategies join texts after their joins and windows, which then carry ids only: at 10^8 links the
        texts would be most of the bytes those joins hold in memory or spill to disk.
        """
        p = self.engine.table("passages")  # ids of positives only come here: no filter needed
        p = p.filter(part.holds(part_key(p.passage_id)))
        texts = p.select(_t_pid=p.passage_id, **{name: p.text})
        t = t.filter(part.holds(part_key(t[passage_id])))
        return t.join(texts, t[passage_id] == texts._t_pid).drop("_t_pid")

    def with_sentence_text(self, t: ir.Table, doc_id: str, sentence_idx: str, name: str,
                           part: Part = Part()) -> ir.Table:
        """``t``'s rows in ``part`` (split by ``t[doc_id]``) plus column ``name``: the text of sentence
        ``t[sentence_idx]`` of document ``t[doc_id]``."""
        s = self.engine.table("sentences")
        s = s.filter(part.holds(part_key(s.doc_id)))
        texts = s.select(_t_doc=s.doc_id, _t_idx=s.sentence_idx, **{name: s.text})
        t = t.filter(part.holds(part_key(t[doc_id])))
        return t.join(texts, (t[doc_id] == texts._t_doc) & (t[sentence_idx] == texts._t_idx)).drop("_t_doc", "_t_idx")

    def with_anchor(self, t: ir.Table, doc_id: str, link_idx: str, prefix: str, within: str,
                    entity: str | None = None, part: Part = Part()) -> ir.Table:
        """``t``'s rows in ``part`` (split by ``t[doc_id]``) plus ``{prefix}_anchor``, ``{prefix}_astart`` and
        ``{prefix}_aend``: the anchor of link ``t[link_idx]`` of document ``t[doc_id]`` and its offsets in its
        ``within="sentence"`` (a query) or ``"passage"`` (a positive); with ``entity``, also that column: the
        link's target title.

        Like texts, anchors are joined after a strategy's joins and windows, which then carry link ids only:
        co-mention pairs every link of a passage with every other, and those rows should stay narrow.
        """
        e = self.elinks
        e = e.filter(part.holds(e.doc_part))
        start, end = ((e.start - e.s_start, e.end - e.s_start) if within == "sentence"
                      else (e.passage_start, e.passage_end))
        cols = {f"{prefix}_anchor": e.anchor, f"{prefix}_astart": start, f"{prefix}_aend": end}
        if entity:
            cols[entity] = e.entity
        a = e.select(_a_doc=e.doc_id, _a_link=e.link_idx, **cols)
        t = t.filter(part.holds(part_key(t[doc_id])))
        return t.join(a, (t[doc_id] == a._a_doc) & (t[link_idx] == a._a_link)).drop("_a_doc", "_a_link")

    def joined(self, t: ir.Table, name: str, *steps: Callable[[ir.Table, Part], ir.Table]) -> ir.Table:
        """``t`` through each step, a join adding columns to the rows of ``t`` in a part (:meth:`with_anchor`,
        :meth:`with_passage_text`, :meth:`with_sentence_text`); each step runs in :attr:`parts` parts and is
        materialized, and the table before it released.

        Each join then sees two inputs whose row counts DuckDB knows exactly: planned as one query, its
        estimates multiply along the chain (13 billion rows for four joins of a million winners) and it
        builds its hash tables on the wrong side, ten million links each. In parts, each join's build side
        (a slice of the texts, or of the winners with their texts) fits in memory at 10^8 links.
        """
        for index, step in enumerate(steps):
            done = self.in_parts(lambda part, before=t: step(before, part), f"{name}-{index}")
            if index:
                self.engine.release(t)
            t = done
        return t

    @cached_property
    def link_counts(self) -> dict[str, int]:
        """Numbers used to explain empty results."""
        raw = self.engine.table("links")
        return {"links": self.engine.count(raw),
                "links_to_documents": self.engine.count(raw.filter(raw.target_doc_id.notnull())),
                "entity_links": self.engine.count(self.elinks),
                "links_between_documents": self.engine.count(self.doc_links)}


def ibis_type(t: pa.DataType) -> str:
    """The Ibis type name of an Arrow column type (the few the candidate schema uses)."""
    return {pa.string(): "string", pa.int32(): "int32", pa.int64(): "int64", pa.bool_(): "boolean"}[t]
