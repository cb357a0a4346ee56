"""Query as context (QC; Wu et al., 2023): a passage with each of its generated queries.

Query: a query generated for passage p (``pretriever generate``, doc2query with nucleus
sampling), read from ``--queries QUERIES_DIR/generated_queries.parquet``. Positive: p.
Every candidate query of a passage is kept, with its index in ``candidate``, so that
training can draw one of the C per passage per epoch (eq. 12); ``cap_query_passages``
does not apply (it would drop candidates). Under ``--max-pairs`` the budget may keep only
some of a passage's candidates.
"""

from __future__ import annotations

import ibis.expr.types as ir

from pretriever.mine.context import MineContext
from pretriever.mine.methods.base import Method, register


@register
class QueryContext(Method):
    """Query-as-context (QC) pairs: a passage and each of its generated queries, for ``pretriever
    pretrain``.

    Every candidate query of a passage is kept, with its index in ``candidate``, so that pre-training can
    draw one of the C per passage per epoch (eq. 12).

    Requirements:
        Generated queries for the store's passages: ``--queries QUERIES_DIR`` from ``pretriever generate``
        (doc2query, or ``--from`` queries made elsewhere).

    Pairs:
        +-------------------------------------------+------------------------------------------+
        | Query                                     | Positive                                 |
        +===========================================+==========================================+
        | a generated query of p (column candidate) | p                                        |
        +-------------------------------------------+------------------------------------------+

    Example::

        from pretriever.mine.config import MineConfig
        from pretriever import mine

        result = mine.run(MineConfig(corpus="enwiki/", out="qc-pairs/", methods="qc", queries="queries/"))
        found = result.methods["qc"]
        print(found.pairs, "pairs", found.reason or f"in {found.file}")  # or why none

    From the command line: ``pretriever mine enwiki/ --method qc --queries queries/ --out qc-pairs/``.

    References:
        Wu et al., "Query-as-context Pre-training for Dense Passage Retrieval", EMNLP 2023, section 3.1
        (eq. 12) and section 4.1.
    """

    name = "qc"
    title = "query as context"
    summary = "query = a generated query of p (all C candidates kept, column candidate); positive = p"
    cap_doc_pairs = False
    cap_query_passages = False
    uses_links = False

    def candidates(self, ctx: MineContext) -> ir.Table:
        q = ctx.generated_queries
        q = q.filter(q.text.notnull() & (q.text.length() > 0))
        q = q.select(q_pid=q.passage_id, candidate=q.candidate, q_text=q.text)
        p = ctx.positives
        j = q.join(p, q.q_pid == p.passage_id)
        return ctx.candidate(
            j, key=j.passage_id + "|" + j.candidate.cast("string"), query=j.q_text, query_doc_id=j.doc_id,
            query_passage_id=j.passage_id, positive_passage_id=j.passage_id, positive_doc_id=j.doc_id,
            positive_text=j.text, candidate=j.candidate)

    def why_empty(self, ctx: MineContext) -> str:
        return ("none of the generated queries belongs to a passage of this store with at least "
                f"{ctx.config.min_passage_words} words (were they generated from another store?)")
