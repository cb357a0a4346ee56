"""Question-answer-context triplets from citations (C-MORE; Yue et al., ACL 2022, "Pretraining to Answer
Open-Domain Questions by Consulting Millions of References").

Input: the store's ``citations`` (the statement each one supports) and a references folder
(``--references REFS_DIR``: the cited pages' main text). For each citation whose page has
text (statements with a hole where markup stood, or from a list, are skipped and counted as
``flagged_statement``): the page is cut into n-word blocks with stride m (``--blocks``, one triplet
per size, or ``block_words``:``block_stride``); spaCy (``ner_model``) finds the statement's entities and
parses it (a statement with a pronoun it does not resolve, or an anaphoric "such", is not asked,
``unresolved_pronoun``); one entity that
also occurs in the page is sampled (seeded) and replaced in the statement by an interrogative phrase for its type
(Table 5; ``--phrases ours`` adds ours, :mod:`pretriever.mine.phrases`), in the order a person would ask it
(:func:`pretriever.mine.triplets.make_question`); the answer must stand in the page where the noun it complements in
the statement does (``answer_in_other_role``);
a block must name one of the other entities the question holds (``--min-other-entities``, ours), the noun of a
bare "the NOUN" it holds (``unresolved_definite``), and, for a question asking for a member of a class ("what
country was recommended as a top travel destination"), no list of others of the answer's type
(``answer_not_unique``; :func:`pretriever.mine.triplets.build_triplet`); BM25 with that
question picks the block (section 3.1; ``--block-query statement``: with the statement, first). Query = that
question, positive = the block, answer = the entity with its offsets in the block. With several sizes the filter counts
and triplets are per citation and size.

``--context links`` (pretriever's own fallback, not the paper's): a citation without
reference text takes its block from the articles linked in the statement: the passage,
among those that mention one of the statement's entities, that BM25 ranks first.

Types from Wikipedia (ours): an entity naming an article its statement links to takes the Table 5 type of
that article's kind (infoboxes and categories, :mod:`pretriever.mine.kinds`) where spaCy disagrees; the
report counts the answers with a kind and the overrides beside the funnel.

The work is Python (spaCy, bm25s): rows stream from the engine ordered by citation, are
processed in batches (``nlp.pipe``), and each batch is written to ``OUT/.checkpoints/qac/``
with a checkpoint, so ``--resume`` after an interruption redoes at most one batch; the
shared steps (dedup, budget, negatives, writing) then read the parts like any other
method's candidates. Every filter is counted (:meth:`QAC.report`).

Example: ``pretriever mine enwiki/ --method qac --references refs/ --out pairs/``.
"""

from __future__ import annotations

import itertools
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ibis
import ibis.expr.types as ir
import pyarrow as pa
import pyarrow.parquet as pq

from pretriever.data.references import load_references
from pretriever.errors import ConfigError
from pretriever.io import read_json, write_json, write_parquet
from pretriever.metrics import normalize_answer
from pretriever.mine.config import MineConfig
from pretriever.mine.context import MineContext
from pretriever.mine.kinds import kind_of, parse_links, wiki_typed
from pretriever.mine.methods.base import Method, register
from pretriever.mine.triplets import Triplet, block_id, build_triplet, choose_block, cut_blocks, load_ner, supports
from pretriever.mine.schema import CANDIDATE, CHECKPOINTS

BATCH = 512  # statements per nlp.pipe call
ROWS = pa.schema([("doc_id", pa.string()), ("citation_idx", pa.int32()), ("passage_id", pa.string()),
                  ("sentence_idx", pa.int32()), ("statement", pa.string()), ("source", pa.string()),
                  ("ctx_id", pa.string()), ("ctx_doc", pa.string()), ("ctx_title", pa.string()),
                  ("ctx_text", pa.string()), ("statement_links", pa.string())])
TAGS = pa.schema([("doc_id", pa.string()), ("source", pa.string()), ("name", pa.string())])
KINDS_TABLE = pa.schema([("k_doc", pa.string()), ("k_kind", pa.string())])
CHECKPOINT = "_checkpoint.json"  # "_": Spark skips it when reading the folder of parts
FILTERS = ("unresolved_pronoun", "no_entity", "no_entity_in_block", "no_fitting_phrase", "answer_in_question",
           "unnamed_topic", "answer_span_not_found", "answer_in_other_role", "context_unsupported",
           "unresolved_definite", "answer_not_unique", "answer_is_context_title")
LINKS_ONLY = ("no_linked_passage", "answer_is_context_title")
# beside the funnel (each counts triplets): another entity than the sampled one answered; the blocks BM25 ranks
# first for the statement and for the question differ; the question's first block lacks the answer
# answer_wiki_kind: the answer names a linked article with a kind (pretriever.mine.kinds, ours); kind_overrides: of
# those, the ones whose kind gave another type than spaCy's (and so the wh-phrase)
TRIPLET_COUNTS = ("other_entity", "block_choice_differs", "question_block_lacks_answer", "answer_wiki_kind",
                  "kind_overrides")
# per statement processed, over all its entities (not only answers): how many name a linked article with a kind,
# and how many of those the kind retyped
ENTITY_COUNTS = ("entities_wiki_kind", "entities_kind_overrides")
# --include-unanswered: citations dropped for these reasons still give a retriever pair (statement, its block),
# counted as "unanswered" beside the funnel (they stay counted at their step)
UNANSWERED = ("no_entity", "no_entity_in_block")
FUNNEL = ("citations", "disambiguation_page", "no_statement", "flagged_statement", "no_reference_text",
          "no_linked_passage", "unresolved_pronoun", "no_entity", "no_entity_in_block", "no_fitting_phrase",
          "answer_in_question", "unnamed_topic", "answer_span_not_found", "answer_in_other_role",
          "context_unsupported", "unresolved_definite", "answer_not_unique", "answer_is_context_title", "triplets",
          "duplicate", "candidates")


@register
class QAC(Method):
    """Question-answer-context (QAC) triplets from citations (C-MORE): a cited statement turned into a
    question by replacing an entity with a wh-phrase, a block of the cited page that BM25 picks and that
    holds the entity as the positive, the entity as the answer.

    Every filter is counted in :meth:`report` (the funnel); the module docstring has the steps.

    Requirements:
        1. A store with citations (a MediaWiki dump) and, for ``context="references"``, the cited pages'
           text (``--references REFS_DIR`` from ``pretriever references fetch`` or ``import``);
           ``context="links"`` takes blocks from the linked articles instead (offline, not the paper's).
        2. A spaCy NER pipeline (``ner_model``, en_core_web_sm by default).

    Pairs:
        +--------------------------------------------------+------------------------------------------------+
        | Query                                            | Positive                                       |
        +==================================================+================================================+
        | the statement, an entity replaced by a wh-phrase | the block holding the entity (answer, offsets) |
        +--------------------------------------------------+------------------------------------------------+

    Example::

        from pretriever.mine.config import MineConfig
        from pretriever import mine

        result = mine.run(MineConfig(corpus="enwiki/", out="qac-links/", methods="qac", context="links"))
        found = result.methods["qac"]
        print(found.pairs, "pairs", found.reason or f"in {found.file}")  # or why none

    From the command line: ``pretriever mine enwiki/ --method qac --references refs/ --out qac-pairs/``.

    References:
        Yue et al., "C-MORE: Pretraining to Answer Open-Domain Questions by Consulting Millions of
        References", ACL 2022, sections 2.2 and 3.1 (Table 5: the interrogative phrases).
    """

    name = "qac"
    title = "question-answer-context (C-MORE)"
    summary = ("query = the cited statement with an entity replaced by a wh-phrase (Table 5); positive = the block "
               "of its context holding that entity (the answer) that BM25 ranks first for the question; the "
               "context (context_source) is the cited page (reference) or, with --context links, the passages of "
               "the articles the statement links to (link)")
    cap_doc_pairs = False  # one pair per citation: the paper keeps them all
    cap_query_passages = False
    uses_links = False

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    @classmethod
    def preflight(cls, config: MineConfig) -> None:
        load_ner(config.ner_model)  # a ModelError with the pip command; cached for candidates()
        if config.references is not None:
            load_references(config.references)

    # -- the rows to process -------------------------------------------------------------
    def _citations(self, ctx: MineContext) -> ir.Table:
        c = ctx.engine.table("citations")
        c = c.semi_join(ctx.docs, c.doc_id == ctx.docs.doc_id)
        return c.select("doc_id", "citation_idx", "passage_id", "sentence_idx", "statement", "url")

    def _rows(self, ctx: MineContext) -> ir.Table:
        """One row per (citation, context): the reference text, or (links) each linked passage."""
        cfg, engine = ctx.config, ctx.engine
        self.counts["citations"] = engine.count(engine.table("citations"))
        c = self._citations(ctx)
        on_documents = engine.count(c)
        # the pages --skip-disambiguation leaves out of queries and passages (the only documents ctx.docs lacks)
        self.counts["disambiguation_page"] = self.counts["citations"] - on_documents
        c = c.filter(c.statement.notnull() & (c.statement.strip().length() > 0))
        with_statement = engine.count(c)
        self.counts["no_statement"] = on_documents - with_statement
        # a statement with a hole where markup stood, or a list item, never becomes a question
        s = ctx.sentences
        flags = s.select(f_doc=s.doc_id, f_idx=s.sentence_idx, f_clean=s.clean)
        c = c.left_join(flags, (c.doc_id == flags.f_doc) & (c.sentence_idx == flags.f_idx))
        c = c.filter(c.f_clean.fill_null(True)).drop("f_doc", "f_idx", "f_clean")
        self.counts["flagged_statement"] = with_statement - engine.count(c)
        c = self._with_statement_links(ctx, c)
        if cfg.references is not None:
            refs = load_references(cfg.references)
            if refs.citations is not None:  # the fetcher's own map of citation -> fetched URL
                m = engine.read(refs.citations, "ref_citations")
                m = m.select(m_doc=m.doc_id, m_idx=m.citation_idx.cast("int32"), m_url=m.url)
                c = c.left_join(m, (c.doc_id == m.m_doc) & (c.citation_idx == m.m_idx))
                c = c.mutate(url=c.m_url.fill_null(c.url)).drop("m_doc", "m_idx", "m_url")
            r = engine.read(refs.references, "references")
            r = r.filter(r.text.notnull() & (r.text.strip().length() > 0))
            r = r.select(r_url=r.url, r_title=r.title, r_text=r.text)
            c = c.left_join(r, c.url == r.r_url).drop("r_url")
        else:
            c = c.mutate(r_title=ibis.null("string"), r_text=ibis.null("string"))
        c = engine.materialize(c, "qac-citations")
        with_ref = c.filter(c.r_text.notnull())
        null = ibis.null("string")
        ref_rows = with_ref.select("doc_id", "citation_idx", "passage_id", "sentence_idx", "statement",
                                   source=ibis.literal("reference"), ctx_id=with_ref.url, ctx_doc=null,
                                   ctx_title=with_ref.r_title, ctx_text=with_ref.r_text,
                                   statement_links=with_ref.statement_links, ctx_pos=ibis.literal(0, "int32"))
        n_ref = engine.count(with_ref)
        without = c.filter(c.r_text.isnull())
        if cfg.context != "links":
            self.counts["no_reference_text"] = engine.count(without)
            return ref_rows.order_by(["doc_id", "citation_idx"])
        links = engine.table("links")
        links = links.filter(links.target_doc_id.notnull()).select(l_doc=links.doc_id, l_sidx=links.sentence_idx,
                                                                   l_target=links.target_doc_id)
        p = ctx.passages
        p = p.select(p_pid=p.passage_id, p_doc=p.doc_id, p_text=p.text, p_pos=p.position.cast("int32"))
        j = without.join(links, (without.doc_id == links.l_doc) & (without.sentence_idx == links.l_sidx))
        j = j.filter(j.l_target != j.doc_id)
        j = j.join(p, j.l_target == p.p_doc)
        t = ctx.docs.select(t_doc=ctx.docs.doc_id, t_title=ctx.docs.title)
        j = j.join(t, j.l_target == t.t_doc)
        link_rows = j.select("doc_id", "citation_idx", "passage_id", "sentence_idx", "statement",
                             source=ibis.literal("link"), ctx_id=j.p_pid, ctx_doc=j.l_target, ctx_title=j.t_title,
                             ctx_text=j.p_text, statement_links=j.statement_links, ctx_pos=j.p_pos).distinct()
        rows = engine.materialize(ref_rows.union(link_rows), "qac-rows")
        with_ctx = engine.count(rows.select("doc_id", "citation_idx").distinct())
        self.counts["no_reference_text"] = engine.count(without)
        self.counts["no_linked_passage"] = self.counts["no_reference_text"] - (with_ctx - n_ref)
        return rows.order_by(["doc_id", "citation_idx", "ctx_doc", "ctx_pos"])

    def _with_statement_links(self, ctx: MineContext, c: ir.Table) -> ir.Table:
        """``c`` with ``statement_links``: the statement's links to articles of the store that have a kind
        (:func:`pretriever.mine.kinds.kind_of` of their infoboxes and categories), as
        :func:`pretriever.mine.kinds.parse_links` reads them (offsets in the statement), or null."""
        engine = ctx.engine
        if not engine.store.has_table("page_tags"):
            return c.mutate(statement_links=ibis.null("string"))
        s = engine.table("sentences").select(s_doc="doc_id", s_idx="sentence_idx", s_start="start")
        links = engine.table("links")
        links = links.filter(links.target_doc_id.notnull())
        links = links.semi_join(c, (links.doc_id == c.doc_id) & (links.sentence_idx == c.sentence_idx))
        links = engine.materialize(links.select("doc_id", "sentence_idx", "start", "end", "target_doc_id",
                                                "target_title"), "qac-statement-links")
        tags = engine.table("page_tags")
        tags = tags.semi_join(links, tags.doc_id == links.target_doc_id).order_by(["doc_id", "tag_idx"])
        found: dict[str, tuple[list[str], list[str]]] = {}
        for batch in engine.batches(tags.select("doc_id", "source", "name"), TAGS):
            for row in batch.to_pylist():
                infoboxes, categories = found.setdefault(row["doc_id"], ([], []))
                (infoboxes if row["source"] == "infobox" else categories).append(row["name"])
        kinds = {doc: kind for doc, tags_of in found.items() if (kind := kind_of(*tags_of)) is not None}
        path = engine.work / "qac-kinds.parquet"
        write_parquet(pa.Table.from_pydict({"k_doc": list(kinds), "k_kind": list(kinds.values())}, schema=KINDS_TABLE),
                      path)
        k = engine.read(path, "qac_kinds")
        j = links.join(k, links.target_doc_id == k.k_doc)
        j = j.join(s, (j.doc_id == s.s_doc) & (j.sentence_idx == s.s_idx))
        sep = ibis.literal("\x1f")
        record = ((j.start - j.s_start).cast("string") + sep + (j.end - j.s_start).cast("string") + sep + j.k_kind
                  + sep + j.target_title)
        agg = j.group_by(a_doc=j.doc_id, a_idx=j.sentence_idx).aggregate(statement_links=record.group_concat("\x1e"))
        c = c.left_join(agg, (c.doc_id == agg.a_doc) & (c.sentence_idx == agg.a_idx))
        return c.drop("a_doc", "a_idx")

    def _groups(self, ctx: MineContext, rows: ir.Table) -> Iterator[list[dict[str, Any]]]:
        """Rows of one citation at a time, in citation order."""
        stream = (row for batch in ctx.engine.batches(rows, ROWS) for row in batch.to_pylist())
        for _, group in itertools.groupby(stream, key=lambda r: (r["doc_id"], r["citation_idx"])):
            yield list(group)

    # -- candidates ------------------------------------------------------------------------
    def candidates(self, ctx: MineContext) -> ir.Table:
        """Triplets in batches of ``BATCH`` citations, each batch a part file plus a checkpoint (``--resume``)."""
        cfg = ctx.config
        nlp = load_ner(cfg.ner_model)
        rows = self._rows(ctx)
        parts = cfg.out / CHECKPOINTS / self.name
        done = self._restart(parts, cfg)
        groups = self._groups(ctx, rows)
        for _ in itertools.islice(groups, done * BATCH):  # finished before an interruption
            pass
        while batch := list(itertools.islice(groups, BATCH)):
            docs = nlp.pipe([g[0]["statement"] for g in batch], batch_size=128)
            out = [row for group, doc in zip(batch, docs) for row in self._candidate(ctx, group, doc)]
            write_parquet(pa.Table.from_pylist(out, schema=CANDIDATE),
                          parts / f"part-{done:06d}.parquet")
            done += 1
            kept = (*FILTERS, *TRIPLET_COUNTS, *ENTITY_COUNTS, "unanswered")
            write_json(parts / CHECKPOINT, {"options": self._options(cfg), "batches": done,
                                            "counts": {k: self.counts[k] for k in kept}})
        if done == 0:  # no citation to process: one empty part, so there is a table to read
            write_parquet(CANDIDATE.empty_table(), parts / "part-000000.parquet")
        rows = sum(pq.ParquetFile(p).metadata.num_rows for p in parts.glob("part-*.parquet"))
        self.counts["triplets"] = rows - self.counts["unanswered"]
        return ctx.engine.read(parts, "qac_candidates", is_dir=True)

    @staticmethod
    def _options(cfg: MineConfig) -> dict[str, Any]:
        """What the triplets depend on: a resumed run must have the same."""
        return {"references": str(cfg.references), "context": cfg.context, "block_words": cfg.block_words,
                "block_stride": cfg.block_stride, "ner_model": cfg.ner_model, "seed": cfg.seed,
                "skip_disambiguation": cfg.skip_disambiguation, "phrases": cfg.phrases,
                "min_other_entities": cfg.min_other_entities,
                "blocks": [f"{n}:{m}" for n, m in cfg.granularities()], "block_query": cfg.block_query,
                "min_shared_words": cfg.min_shared_words,
                "min_shared_share": cfg.min_shared_share, "include_unanswered": cfg.include_unanswered}

    def _restart(self, parts: Path, cfg: MineConfig) -> int:
        """Batches already done (their counts restored) when resuming, else 0 with an empty folder."""
        checkpoint = parts / CHECKPOINT
        if cfg.resume and checkpoint.exists():
            state = read_json(checkpoint, ConfigError)
            if state["options"] != self._options(cfg):
                raise ConfigError(f"{parts} holds triplets made with other options ({state['options']}); "
                                  "run with --overwrite instead of --resume")
            for path in parts.glob("part-*.parquet"):  # a part written after the last checkpoint
                if int(path.stem.split("-")[1]) >= state["batches"]:
                    path.unlink()
            self.counts.update(state["counts"])
            return int(state["batches"])
        shutil.rmtree(parts, ignore_errors=True)
        parts.mkdir(parents=True)
        return 0

    def _candidate(self, ctx: MineContext, group: list[dict[str, Any]], doc) -> list[dict[str, Any]]:
        """The triplets of one citation: one per block size (``--blocks``) for a reference, one for links."""
        cfg = ctx.config
        first = group[0]
        key = f"{first['doc_id']}|{first['citation_idx']}"
        # choices hang on the statement-context pair, not the citation: the same sentence citing the same
        # page twice gives the same triplet, which the shared dedup then counts as a duplicate
        choice = f"{first['statement']}|{first['ctx_id'] if first['source'] == 'reference' else 'links'}"
        entities = [(e.text, e.label_, e.start_char, e.end_char) for e in doc.ents]
        # the kind of a linked article types the entity that names it (ours): overrides spaCy where they disagree
        entities, kinds = wiki_typed(entities, parse_links(first["statement_links"]), first["statement"])
        self.counts["entities_wiki_kind"] += len(kinds)
        self.counts["entities_kind_overrides"] += sum(e[1] != kinds[e[2], e[3]][1] for e in entities
                                                      if (e[2], e[3]) in kinds)
        if first["source"] == "reference":
            sizes = cfg.granularities()
            contexts = [(cut_blocks(first["ctx_text"], n, m), n, m, False) for n, m in sizes]
        else:  # linked passages: only those mentioning an entity of the statement compete
            sizes = [None]
            contexts = [([r["ctx_text"] for r in group], None, None, True)]
        out = []
        for blocks, n, m, mentioning in contexts:
            accept = None if not mentioning else self._links_filter(first["statement"], group, cfg.min_shared_words,
                                                                     cfg.min_shared_share)
            result = build_triplet(first["statement"], entities, blocks, ctx.seed, choice, mentioning=mentioning,
                                   phrases=cfg.phrases, block_query=cfg.block_query, accept=accept,
                                   min_other=cfg.min_other_entities, doc=doc, nlp=load_ner(cfg.ner_model))
            if isinstance(result, Triplet):
                self.counts["other_entity"] += result.tries > 1
                self.counts["block_choice_differs"] += result.question_block != result.statement_block
                self.counts["question_block_lacks_answer"] += result.question_block != result.block_idx
                if (kind := kinds.get(result.entity_span)) is not None:
                    self.counts["answer_wiki_kind"] += 1
                    self.counts["kind_overrides"] += kind[1] != result.answer_type
                idx, query, block = result.block_idx, result.question, result.block
                answer = {"answer": result.answer, "answer_start": result.answer_start,
                          "answer_end": result.answer_end, "answer_type": result.answer_type,
                          "answer_phrase": result.phrase}
            else:
                self.counts[result] += 1
                if not (cfg.include_unanswered and result in UNANSWERED):
                    continue
                # C-MORE pre-trains the retriever on these too: the statement is the query, BM25's block the positive
                idx = choose_block(first["statement"], blocks)
                if mentioning and not supports(first["statement"], "", blocks[idx], cfg.min_shared_words,
                                                cfg.min_shared_share):
                    continue
                self.counts["unanswered"] += 1
                query, block, answer = first["statement"], blocks[idx], {}
            if first["source"] == "reference":
                url = first["ctx_id"]
                pid = block_id(url, idx, (n, m) if len(sizes) > 1 else None)
                doc_id, title = None, first["ctx_title"]
            else:
                url, doc_id, title, pid = None, group[idx]["ctx_doc"], None, group[idx]["ctx_id"]
            out.append({
                "key": key if len(sizes) == 1 else f"{key}|{n}:{m}", "query": query,
                "query_doc_id": first["doc_id"], "query_passage_id": first["passage_id"],
                "query_sentence_idx": first["sentence_idx"], "positive_passage_id": pid, "positive_doc_id": doc_id,
                "positive_text": block, **answer, "statement": first["statement"], "reference_url": url,
                "reference_title": title, "context_source": first["source"], "block_words": n, "block_stride": m})
        return out

    @staticmethod
    def _links_filter(statement: str, group: list[dict[str, Any]], min_shared: int, min_share: float):
        """The links route's checks of a passage holding the answer: it must support the statement
        (:func:`supports`: ``min_shared`` content words and ``min_share`` of the statement's, besides the
        answer) and not be the answer's own article (trivial)."""
        def accept(i: int, answer: str) -> str | None:
            title = group[i]["ctx_title"] or ""
            if normalize_answer(answer, lenient=True) == normalize_answer(title, lenient=True):
                return "answer_is_context_title"
            if not supports(statement, answer, group[i]["ctx_text"], min_shared, min_share):
                return "context_unsupported"
            return None

        return accept

    # -- reporting ---------------------------------------------------------------------------
    def report(self, ctx: MineContext, candidates: int) -> dict[str, Any]:
        """The funnel: citations, then what each filter removed, then the triplets and candidates left."""
        made = self.counts["triplets"] + self.counts["unanswered"]
        counts = {**self.counts, "duplicate": made - candidates, "candidates": candidates}
        steps = [k for k in FUNNEL if k not in LINKS_ONLY or ctx.config.context == "links"]
        return {"funnel": {k: int(counts.get(k, 0)) for k in steps},
                "block_query": ctx.config.block_query, "blocks": [f"{n}:{m}" for n, m in ctx.config.granularities()],
                **{k: int(counts.get(k, 0)) for k in (*TRIPLET_COUNTS, *ENTITY_COUNTS)},
                # False: a store built before page_tags (rebuild it): spaCy's types alone
                "wiki_kinds": ctx.engine.store.has_table("page_tags"),
                **({"unanswered": int(counts.get("unanswered", 0))} if ctx.config.include_unanswered else {})}

    def why_empty(self, ctx: MineContext) -> str:
        c = self.counts
        if not c.get("citations"):
            return "the store has no citations (a corpus format without <ref> tags?)"
        lost = {k: c[k] for k in FUNNEL[1:FUNNEL.index("triplets")] if c.get(k)}
        worst = max(lost, key=lost.get) if lost else "no_reference_text"
        hint = {"no_reference_text": " (fetch the cited pages with `pretriever references fetch`, or use "
                                     "--context links)"}.get(worst, "")
        return (f"no citation gave a triplet; most were dropped as {worst.replace('_', ' ')} "
                f"({c.get(worst, 0):,} of {c['citations']:,}){hint}")
