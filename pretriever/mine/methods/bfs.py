"""Body first selection (BFS; Chang et al., 2020): a lead sentence of A, a body passage of A.

Query: a sentence from the lead section (section 0) of document A. Positive: a random
passage of A outside the lead (section_idx > 0). Each lead sentence gives one candidate.
Needs a store with section structure (MediaWiki XML input; WikiExtractor output has
only the lead section).
"""

from __future__ import annotations

import ibis.expr.types as ir

from pretriever.mine.context import MineContext
from pretriever.mine.engine import hkey
from pretriever.mine.methods.base import Method, register
from pretriever.mine.methods.wlp import lead_sentences, numbered


@register
class BodyFirstSelection(Method):
    """Body first selection (BFS) pairs: a sentence of A's lead section as the query, a random passage of
    A outside the lead as the positive.

    Requirements:
        A store with section structure (a MediaWiki dump; WikiExtractor output has only the lead section
        and gives no pairs).

    Pairs:
        +------------------------------------------+------------------------------------------+
        | Query                                    | Positive                                 |
        +==========================================+==========================================+
        | a sentence of A's lead section           | a passage of A outside the lead          |
        +------------------------------------------+------------------------------------------+

    Example::

        from pretriever.mine.config import MineConfig
        from pretriever import mine

        result = mine.run(MineConfig(corpus="enwiki/", out="bfs-pairs/", methods="bfs"))
        found = result.methods["bfs"]
        print(found.pairs, "pairs", found.reason or f"in {found.file}")  # or why none

    From the command line: ``pretriever mine enwiki/ --method bfs --out bfs-pairs/``.

    References:
        - Chang et al., "Pre-training Tasks for Embedding-based Large-scale Retrieval", ICLR 2020.
        - Zhou et al., "Hyperlink-induced Pre-training for Passage Retrieval in Open-domain Question
        Answering", ACL 2022, section 4.4 (BFS as a baseline).
    """

    name = "bfs"
    title = "body first selection"
    summary = "query = a sentence of A's lead section; positive = a random passage of A outside the lead"
    cap_doc_pairs = False
    uses_links = False

    def candidates(self, ctx: MineContext) -> ir.Table:
        body = ctx.positives.filter(ctx.positives.section_idx > 0)
        body = body.select(b_pid=body.passage_id, b_doc=body.doc_id, b_text=body.text)
        body = body.mutate(_h=hkey(ctx.seed, "bfs-body", body.b_pid))
        body = numbered(body, "b_doc", ["_h", "b_pid"])
        counts = body.group_by("b_doc").agg(b_n=body.count().cast("int64"))
        counts = counts.select(c_doc=counts.b_doc, b_n=counts.b_n)
        lead, _ = lead_sentences(ctx, "bfs-lead")
        j = lead.join(counts, lead.l_doc == counts.c_doc)
        j = j.mutate(_slot=j.l_k % j.b_n)
        j = j.join(body, (j.l_doc == body.b_doc) & (j._slot == body._k))
        return ctx.candidate(
            j, key=j.l_doc + "|" + j.l_idx.cast("string"), query=j.l_text, query_doc_id=j.l_doc,
            query_passage_id=j.l_pid, query_sentence_idx=j.l_idx, positive_passage_id=j.b_pid,
            positive_doc_id=j.b_doc, positive_text=j.b_text)

    def why_empty(self, ctx: MineContext) -> str:
        body = ctx.positives.filter(ctx.positives.section_idx > 0)
        if ctx.engine.count(body) == 0:
            return ("no document has a passage outside its lead section (every passage has section_idx 0): "
                    "the store has no section structure (BEIR, JSONL, DPR and WikiExtractor inputs have "
                    "only a lead; a MediaWiki XML dump has sections)")
        return (f"no document has both a lead sentence of at least {ctx.config.min_query_words} words and a "
                f"body passage of at least {ctx.config.min_passage_words} words")
