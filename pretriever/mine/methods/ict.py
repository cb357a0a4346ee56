"""Inverse cloze task (ICT; Lee et al., 2019): a passage's own sentence as the query.

For every passage, one random sentence lying wholly inside it is the query; the positive
is the passage with that sentence removed, except in ``ict_keep_fraction`` (10%) of pairs
where it is kept, so the model also learns that word overlap matters.
"""

from __future__ import annotations

import ibis.expr.types as ir

from pretriever.mine.context import MineContext
from pretriever.mine.engine import first_per_group, hex_fraction_below, hkey
from pretriever.mine.methods.base import Method, register

_WS = "[ \t\r\n]+"  # an explicit class: the same on RE2 (DuckDB) and java.util.regex (Spark)


def strip_ws(s: ir.StringValue) -> ir.StringValue:
    """``s`` without leading and trailing spaces, tabs and newlines: one pattern that means the same on
    DuckDB (RE2) and Spark (java.util.regex)."""
    return s.re_replace("^" + _WS, "").re_replace(_WS + "$", "")


def remove_span(text: ir.StringValue, start: ir.IntegerValue, end: ir.IntegerValue) -> ir.StringValue:
    """``text`` without ``text[start:end]``, the whitespace around the gap collapsed to what preceded it."""
    left = text.substr(0, start)
    right = text.substr(end).re_replace("^" + _WS, "")
    return strip_ws(left + right)


@register
class InverseCloze(Method):
    """Inverse cloze task (ICT) pairs: a random sentence of a passage as the query, the passage without it
    (kept in ``ict_keep_fraction``, 10%, of pairs) as the positive.

    Requirements:
        Any store (passages and their sentences); no links, sections or titles needed.

    Pairs:
        +------------------------------------------+------------------------------------------+
        | Query                                    | Positive                                 |
        +==========================================+==========================================+
        | a random sentence of p                   | p without that sentence (10%: with it)   |
        +------------------------------------------+------------------------------------------+

    Example::

        from pretriever.mine.config import MineConfig
        from pretriever import mine

        result = mine.run(MineConfig(corpus="enwiki/", out="ict-pairs/", methods="ict"))
        found = result.methods["ict"]
        print(found.pairs, "pairs", found.reason or f"in {found.file}")  # or why none

    From the command line: ``pretriever mine enwiki/ --method ict --out ict-pairs/``.

    References:
        - Lee et al., "Latent Retrieval for Weakly Supervised Open Domain Question Answering", ACL 2019.
        - Zhou et al., "Hyperlink-induced Pre-training for Passage Retrieval in Open-domain Question
        Answering", ACL 2022, section 4.4 (ICT as a baseline).
    """

    name = "ict"
    title = "inverse cloze task"
    summary = "query = a random sentence of p; positive = p without it (kept in 10% of pairs)"
    cap_doc_pairs = False
    uses_links = False

    def candidates(self, ctx: MineContext) -> ir.Table:
        s = ctx.query_sentences
        s = s.select(s_doc=s.doc_id, s_idx=s.sentence_idx, s_pid=s.passage_id, s_start=s.start,
                     s_end=s.end, s_text=s.text)
        p = ctx.positives
        j = s.join(p, s.s_pid == p.passage_id)
        j = j.filter(j.s_start >= j.start, j.s_end <= j.start + j.text.length())
        j = j.mutate(_h=hkey(ctx.seed, "ict-sentence", j.passage_id, j.s_idx))
        j = first_per_group(j, ["passage_id"], ["_h", "s_idx"])
        kept = hex_fraction_below(hkey(ctx.seed, "ict-keep", j.passage_id), ctx.config.ict_keep_fraction)
        rel_start, rel_end = j.s_start - j.start, j.s_end - j.start
        j = j.mutate(kept=kept, removed=remove_span(j.text, rel_start, rel_end))
        j = j.filter(j.kept | (j.removed.length() > 0))
        positive = j.kept.ifelse(j.text, j.removed)
        return ctx.candidate(
            j, key=j.passage_id + "|" + j.s_idx.cast("string"), query=j.s_text, query_doc_id=j.doc_id,
            query_passage_id=j.passage_id, query_sentence_idx=j.s_idx, positive_passage_id=j.passage_id,
            positive_doc_id=j.doc_id, positive_text=positive, query_sentence_kept=j.kept)

    def why_empty(self, ctx: MineContext) -> str:
        return (f"no passage of at least {ctx.config.min_passage_words} words holds a whole sentence of at "
                f"least {ctx.config.min_query_words} words")
