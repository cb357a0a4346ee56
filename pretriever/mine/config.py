"""Settings of ``pretriever mine`` (also the ``[mine]`` table of a TOML config).

Defaults follow the HLP paper where it says something (dual-link and co-mention pairs,
sentence-level queries holding the evidential anchor, no title prepended to the positive,
co-mentioned entities in the top 10% of in-degree excluded, one random negative per
query, ICT keeping the sentence in 10% of cases); the caps and length filters are
pretriever's own choices, as the paper gives no numbers for them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pretriever.config import deprecation_note, option, overwrite_option, resume_option, seed_option
from pretriever.data import generated_queries_path
from pretriever.mine.phrases import OURS_NOTE, PHRASE_SETS

ENGINES = ("duckdb", "spark")
NEGATIVES = ("random", "overlap", "none")
QAC_CONTEXTS = ("references", "links")
BLOCK_QUERIES = ("question", "statement")
DEFAULT_METHODS = ("dl", "cm")


@dataclass
class MineConfig:
    """Settings of ``pretriever mine`` (stage 2: pseudo query-passage pairs from a corpus store).

    Each field's help lives in its metadata (:func:`pretriever.config.option`), which ``--help`` and the TOML config
    read.
    """

    corpus: Path = option(help="A corpus store folder (from `pretriever corpus build`).")
    out: Path = option(help="Folder for the pairs: one METHOD.parquet per method, pairs.json (manifest), "
                            "stats.json and overlap.png.")
    methods: list[str] = option(
        default_factory=lambda: list(DEFAULT_METHODS),
        help="Strategies to run, in this order (comma-separated, or a list in TOML): dl (dual-link: q links to P "
             "and p links to Q), cm (co-mention: q and p link to a third entity E and p links to Q), ict (inverse "
             "cloze task), wlp (wiki link prediction), bfs (body first selection), qac (C-MORE question-answer-"
             "context triplets; needs references or context links), cc (two passages of one document: "
             "coCondenser), qc (a passage and its generated queries; needs queries), tb (title-body: a statement-like "
             "title and a passage of its document). HLP: dl,cm.")
    negatives: str = option("random", "One extra negative passage per pair: random (the paper's choice: any "
                                      "passage of another document), overlap (shares a linked entity with the "
                                      "query but is neither DL nor CM; falls back to random) or none.")
    max_pairs: int | None = option(None, "Total number of pairs, split evenly over the methods (a method that has "
                                         "fewer gives the rest to the others); each keeps a seeded random sample.",
                                   default_help="no limit: every pair that passes the caps")
    seed: int = seed_option("every sampling decision (each is a hash of seed and key); the same seed gives the "
                             "same pairs on either engine")
    engine: str = option("duckdb", "duckdb (one machine, out-of-core) or spark (local PySpark; same pairs as "
                                   "duckdb for the same seed).")
    prepend_title: bool = option(False, "Prepend the document title to positive and negative passages "
                                        "(\"Title. text\"). HLP does not, to avoid superficial entity overlap.")
    cm_indegree_percentile: float = option(
        90.0, "CM: the co-mentioned entity E is an article of the store (never a red link or a disambiguation "
              "page) whose in-degree (documents linking to it) is below the top (100 - this)% of the store's "
              "articles. Paper: 90 (the top 10% are excluded). On a small sample few articles are linked from "
              "two documents, so try 99.")
    cm_indegree_threshold: int | None = option(
        None, "CM: an absolute in-degree threshold K instead of the percentile (entities with in-degree >= K "
              "are excluded).")
    ict_keep_fraction: float = option(0.1, "ICT: share of pairs whose positive keeps the query sentence.")
    max_per_doc_pair: int = option(4, "DL/CM/WLP: at most this many pairs per (query document, positive "
                                      "document), so hub documents do not dominate.")
    max_per_query_passage: int = option(2, "At most this many pairs whose query comes from the same passage.")
    min_query_words: int = option(5, "Shortest query sentence, in words.")
    min_passage_words: int = option(20, "Shortest positive or negative passage, in words.")
    skip_disambiguation: bool = option(True, "Disambiguation pages give neither queries nor passages.")
    overlap_candidates: int = option(16, "Overlap negatives: passages sampled per shared entity.")
    stats_sample: int = option(10000, "Pairs per method tokenized for the query-passage lexical overlap statistic.")
    overwrite: bool = overwrite_option("pairs already in --out")
    threads: int | None = option(None, "Cores to use (DuckDB threads, Spark local cores).", default_help="all")
    memory_limit: str | None = option(
        None, "DuckDB's memory before it spills to OUT/.work/spill (removed at the end), e.g. 8GiB or 500MB. "
              "Peak memory stays near this plus about 1 GiB; the spill needs free disk of a few times the "
              "pairs' size (bench/README.md).",
        default_help="half of this machine's RAM (psutil; a smaller container limit wins)")
    max_spill: str | None = option(
        None, "Most disk DuckDB may spill to under OUT/.work/spill, e.g. 200GB (0B: never spill; a run that needs "
              "more than --memory-limit then stops with an out-of-memory error instead of filling the disk).",
        default_help="DuckDB's: 90% of the free space on that disk")
    parts: int = option(0, "DL and CM: run the join of query links with positive links in this many passes, each "
                            "over the documents whose id hashes into its share, so a large corpus needs no spill "
                            "there (the pairs do not depend on it).",
                        default_help="as many as --memory-limit needs (1 on Spark)")
    spark_master: str | None = option(None, "Spark master URL.", default_help="local[THREADS or *]")
    tokenizer: Path | None = option(None, "A tokenizer.json for the overlap statistic and --cc-max-tokens.",
                                    default_help="all-MiniLM-L6-v2's BERT uncased WordPiece")
    references: Path | None = option(
        None, "QAC: a references folder (REFS_DIR from `pretriever references fetch/import`) whose page texts "
              "give the contexts.")
    context: str = option(
        "references", "QAC: where contexts come from. references: the cited page (C-MORE). links: the cited page "
                      "when it has text, else the passage of an article linked from the statement that mentions "
                      "one of its entities (pretriever's offline fallback, not in the paper).")
    block_words: int = option(128, "QAC: words per block of a reference text (paper: 128, 256 or 512).")
    block_stride: int = option(64, "QAC: words between block starts (paper: 64, 128 or 256).")
    blocks: list[str] | None = option(None, "QAC: several block sizes in one run, n:m comma-separated (the paper: "
                                            "128:64,256:128,512:256); a citation gives a triplet for each, and "
                                            "each records its n and m (block_words, block_stride).",
                                      default_help="--block-words:--block-stride")
    block_query: str = option("question", "QAC: what BM25 picks the block with. question (C-MORE section 3.1): the "
                                          "question made from the statement; statement (ours, for comparison): "
                                          "the statement, before an answer is chosen, so its answer words help. "
                                          "pairs.json counts how often the two choices differ and how often the "
                                          "question's block lacks the answer.")
    resume: bool = resume_option("an interrupted run into the same --out with the same options: qac keeps the "
                                  "batches of triplets it finished (the relational methods rerun; they are "
                                  "quick)")
    queries: Path | None = option(None, "QC: QUERIES_DIR from `pretriever generate` (or its "
                                        "generated_queries.parquet): the generated queries paired with their "
                                        "passages.")
    cc_max_tokens: int | None = option(
        None, "CC: build each document's passages from whole sentences (the store's sentences table), packed in "
              "order up to this many WordPiece tokens of --tokenizer (Wu et al. 2023, section 4.1: 128), and pair "
              "two of them; a longer sentence is a passage alone. Tokens are counted exactly, in Python "
              "(~15,000 sentences per CPU-second).", default_help="off: the store's passages")
    ner_model: str = option("en_core_web_sm", "QAC: spaCy pipeline (package name or path) that finds the "
                                              "answer entities and parses the statement (the question's word "
                                              "order).")
    min_shared_words: int = option(
        2, "QAC --context links: a linked passage is a context only when it shares at least this many content "
           "words with the statement besides the answer (stopwords out). 2, chosen on the enwiki sample: the contexts "
           "sharing fewer (5 of 20) shared at most one word: the article's own name, \"mimesis\", \"30\" or "
           "\"space\".")
    min_shared_share: float = option(
        0.4, "QAC --context links: and at least this share of the statement's content words (the answer's out). "
             "0.4, chosen on the enwiki sample by judging its 14 link triplets at 2 words alone: 12 of the 13 "
             "contexts sharing 30% or less did not answer their question (they named the answer in passing); "
             "the one sharing 80% did. 0 keeps --min-shared-words alone.")
    include_unanswered: bool = option(
        False, "QAC: a statement with no answer entity (none found, or none in its context) still gives a "
               "retriever pair: the statement as the query, the block BM25 ranks first for it as the positive (C-MORE "
               "pre-trains its retriever on these too). Counted as `unanswered`; no answer, so readers skip them.")
    phrases: str = option(
        "table5", "QAC: the wh-phrases. table5: C-MORE's Table 5 as written, less the phrases that cannot ask for the "
                  "entity where it stands (\"what\" for the count in \"15 states\", \"what time\" for the duration "
                  "\"2.2 years\", \"what date census\", \"what country\" for Alabama): such an entity is not asked, "
                  "counted as no_fitting_phrase; where \"when\"/\"where\" would sit mid-clause (\"was discovered "
                  "when by\"), the question is fronted (\"When was petalite discovered by\") or the preposition keeps "
                  "a noun phrase (\"during what year\", \"in what place\"), a name after a common noun is asked by "
                  "it (\"Which 2015 Japanese film\"), the predicate of \"be\" is fronted (\"Who was the first "
                  "...\"), and the question ends with the entity's clause (an independent clause after \";\" or "
                  "\", and\" goes, as does a relative clause or apposition after the entity set off by a comma); "
                  "an entity in a list or one of coordinated phrases, or in such a later clause, is "
                  f"not asked (no_fitting_phrase). ours (not the paper's): Table 5 plus {OURS_NOTE}.")
    min_other_entities: int = option(
        1, "QAC (ours): a block is a context only when it names at least this many of the other entities the "
           "question holds besides the answer (all of them when it has fewer; 0: off; an entity of a clause or an "
           "aside the question cut does not count); else context_unsupported. 1, "
           "chosen on the canned reference pages: the one context naming none (an Alabama page for \"As of 2011, "
           "50.7% of Alaska's population ...\") did not answer its question; every other context named one.")
    how_many: bool = option(False, "Deprecated: --phrases ours (which gives a CARDINAL \"how many\", and more).")

    def __post_init__(self) -> None:
        self.corpus, self.out = Path(self.corpus), Path(self.out)
        if self.tokenizer is not None:
            self.tokenizer = Path(self.tokenizer)
        self.methods = parse_methods(self.methods)
        self.engine = str(self.engine).lower()
        self.negatives = str(self.negatives).lower()
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.negatives not in NEGATIVES:
            raise ValueError(f"negatives must be one of {', '.join(NEGATIVES)}, got {self.negatives!r}")
        if self.max_pairs is not None and self.max_pairs <= 0:
            raise ValueError(f"max_pairs must be a positive number of pairs (or left out for no limit), "
                             f"got {self.max_pairs}: there would be nothing to mine")
        if not 0.0 < self.cm_indegree_percentile <= 100.0:
            raise ValueError(f"cm_indegree_percentile must be in (0, 100], got {self.cm_indegree_percentile}")
        if self.cm_indegree_threshold is not None and self.cm_indegree_threshold < 1:
            raise ValueError(f"cm_indegree_threshold must be at least 1, got {self.cm_indegree_threshold}")
        if not 0.0 <= self.ict_keep_fraction <= 1.0:
            raise ValueError(f"ict_keep_fraction must be between 0 and 1, got {self.ict_keep_fraction}")
        if self.parts < 0:
            raise ValueError(f"parts must be 0 (as many as the memory limit needs) or a number of passes, got {self.parts}")
        for name in ("max_per_doc_pair", "max_per_query_passage", "overlap_candidates"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.references is not None:
            self.references = Path(self.references)
        if self.queries is not None:
            self.queries = Path(self.queries)
        if "qc" in self.methods and (self.queries is None or not generated_queries_path(self.queries).is_file()):
            raise ValueError(f"method qc needs generated queries: give --queries QUERIES_DIR written by `pretriever "
                             f"generate CORPUS --model NAME --out QUERIES_DIR` (got {self.queries or 'none'})")
        self.context = str(self.context).lower()
        if self.context not in QAC_CONTEXTS:
            raise ValueError(f"context must be one of {', '.join(QAC_CONTEXTS)}, got {self.context!r}")
        if "qac" in self.methods and self.references is None and self.context == "references":
            raise ValueError("method qac needs references (--references REFS_DIR from `pretriever references "
                             "fetch`), or --context links to build contexts from the linked articles")
        if self.cc_max_tokens is not None and self.cc_max_tokens < 1:
            raise ValueError(f"cc_max_tokens must be at least 1 token (or left out for the store's passages), "
                             f"got {self.cc_max_tokens}")
        if self.block_words < 1 or not 1 <= self.block_stride <= self.block_words:
            raise ValueError(f"block_words must be at least 1 and block_stride between 1 and block_words, got "
                             f"{self.block_words} and {self.block_stride}")
        if self.blocks is not None:
            items = self.blocks.split(",") if isinstance(self.blocks, str) else self.blocks
            self.blocks = [str(b).strip() for b in items if str(b).strip()]
            self.granularities()  # checked now, not at mining time
        self.block_query = str(self.block_query).lower()
        if self.block_query not in BLOCK_QUERIES:
            raise ValueError(f"block_query must be one of {', '.join(BLOCK_QUERIES)}, got {self.block_query!r}")
        for name in ("min_query_words", "min_passage_words", "stats_sample", "min_shared_words",
                     "min_other_entities"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 or more, got {getattr(self, name)}")
        self.phrases = str(self.phrases).lower()
        if self.how_many:
            deprecation_note("--how-many / how_many", "--phrases ours")
            self.phrases = "ours"
        if self.phrases not in PHRASE_SETS:
            raise ValueError(f"phrases must be one of {', '.join(PHRASE_SETS)}, got {self.phrases!r}")
        if not 0 <= self.min_shared_share <= 1:
            raise ValueError(f"min_shared_share must be between 0 and 1, got {self.min_shared_share}")

    def granularities(self) -> list[tuple[int, int]]:
        """QAC's (n, m) block sizes: --blocks, else (--block-words, --block-stride)."""
        if not self.blocks:
            return [(self.block_words, self.block_stride)]
        sizes = []
        for item in self.blocks:
            n, sep, m = item.partition(":")
            if not (sep and n.strip().isdigit() and m.strip().isdigit()):
                raise ValueError(f"blocks takes n:m pairs such as 128:64,256:128; got {item!r}")
            n_, m_ = int(n), int(m)
            if n_ < 1 or not 1 <= m_ <= n_:
                raise ValueError(f"blocks: n must be at least 1 and m between 1 and n, got {item!r}")
            sizes.append((n_, m_))
        if len(set(sizes)) != len(sizes):
            raise ValueError(f"blocks: each n:m once, got {','.join(self.blocks)}")
        return sizes

    def to_json(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}


def parse_methods(value: Any) -> list[str]:
    """``"dl,cm"`` or ``["dl", "cm"]`` -> ``["dl", "cm"]`` (names are checked against the registry where
    they are used: :func:`pretriever.mine.methods.check_methods`)."""
    if isinstance(value, str):
        items = [v.strip().lower() for v in value.split(",")]
    else:
        items = [str(v).strip().lower() for v in value]
    items = [v for v in items if v]
    if not items:
        raise ValueError("no mining method given")
    return list(dict.fromkeys(items))
