"""Title-body pairs (TB): a document's title as the query, a passage of its body as the positive.

Query: the title of document D (at least ``min_query_words`` words, so Wikipedia's entity
names such as "Albedo" give nothing and paper titles do). Positive: a passage of D, as
stored (without the title). A document gives at most ``max_per_doc_pair`` pairs (its
passages in a seeded order).

Requirements: titles that read like statements or questions, such as scientific papers
("Vitamin D deficiency is associated with bone fractures in the elderly") or news; no links
or sections are needed, so any BEIR or JSONL store works. Train with the title left out of
the positive (``pretriever train --no-prepend-title`` for DPR/BEIR exports; mined pairs
never carry it unless ``mine --prepend-title``), or the model only learns to copy the title.

Example::

    pretriever mine scifact-store/ --method tb --negatives none --out tb-pairs/

Paper: the (title, abstract) and (title, passage) pairs of E5's CCPairs (Wang et al., 2022,
"Text Embeddings by Weakly-Supervised Contrastive Pre-training", section 3.1), which also
appear among all-MiniLM-L6-v2's training pairs (S2ORC title-abstract); here mined from the
user's own corpus for label-free adaptation.
"""

from __future__ import annotations

import ibis.expr.types as ir

from pretriever.mine.context import MineContext
from pretriever.mine.engine import word_count
from pretriever.mine.methods.base import Method, register


@register
class TitleBody(Method):
    """Title-body (TB) pairs: a document's title as the query, a passage of its body as the positive.

    Requirements:
        Titles that read like statements or questions (scientific papers, news), at least
        ``min_query_words`` words; any store, no links or sections needed. Train with the title left out
        of the positive, or the model only learns to copy it (module docstring).

    Pairs:
        +------------------------------------------+------------------------------------------+
        | Query                                    | Positive                                 |
        +==========================================+==========================================+
        | the title of D                           | a passage of D, without the title        |
        +------------------------------------------+------------------------------------------+

    Example::

        from pretriever.mine.config import MineConfig
        from pretriever import mine

        result = mine.run(MineConfig(corpus="scifact-store/", out="tb-pairs/", methods="tb", negatives="none"))
        found = result.methods["tb"]
        print(found.pairs, "pairs", found.reason or f"in {found.file}")  # or why none

    From the command line: ``pretriever mine scifact-store/ --method tb --negatives none --out tb-pairs/``.

    References:
        Wang et al., "Text Embeddings by Weakly-Supervised Contrastive Pre-training", 2022, section 3.1
        (the (title, passage) pairs of E5's CCPairs).
    """

    name = "tb"
    title = "title-body"
    summary = "query = the title of D (a statement-like title); positive = a passage of D without the title"
    cap_doc_pairs = True  # at most max_per_doc_pair passages per title
    cap_query_passages = False  # the query is no passage's sentence
    uses_links = False

    def candidates(self, ctx: MineContext) -> ir.Table:
        d = ctx.docs.filter(word_count(ctx.docs.title) >= ctx.config.min_query_words)
        d = d.select(t_doc=d.doc_id, t_title=d.title)
        p = ctx.positives
        j = p.join(d, p.doc_id == d.t_doc)
        return ctx.candidate(
            j, key=j.passage_id, query=j.t_title, query_doc_id=j.doc_id, positive_passage_id=j.passage_id,
            positive_doc_id=j.doc_id, positive_text=j.text)

    def why_empty(self, ctx: MineContext) -> str:
        return (f"no document has a title of at least {ctx.config.min_query_words} words and a passage of at least "
                f"{ctx.config.min_passage_words} words (entity names such as Wikipedia's titles are too short to be "
                "queries; tb suits paper or news titles)")
