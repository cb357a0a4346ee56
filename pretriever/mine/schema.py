"""Arrow schemas of mining: the columns every strategy produces, and the pairs files.

A pair is (query, positive passage[, negative passage]) plus the evidence it was mined
from. Offsets of anchors are character offsets into the text they sit in: the query's
anchor into ``query``, the positive's anchors into ``positive_text``.
"""

from __future__ import annotations

import pyarrow as pa

from pretriever.data.pairs import MANIFEST  # noqa: F401  (the data layer reads the folders mine writes)

# the files of a pairs folder besides METHOD.parquet and MANIFEST
STATS = "stats.json"
PLOT = "overlap.png"
CHECKPOINTS = ".checkpoints"  # what methods keep across an interruption (qac: finished batches), for --resume

STR, I32, I64, BOOL = pa.string(), pa.int32(), pa.int64(), pa.bool_()

# What a strategy (pretriever/mine/methods/*) returns, one row per candidate pair.
CANDIDATE = pa.schema([
    ("key", STR),                    # identity of the candidate, hashed with the seed for sampling
    ("query", STR),                  # the query sentence
    ("query_doc_id", STR),           # Q: the document the query comes from
    ("query_passage_id", STR),       # q: the passage holding the query sentence (DL/CM: its anchor)
    ("query_sentence_idx", I32),
    ("query_anchor", STR),           # DL: anchor linking to P; CM: anchor linking to E
    ("query_anchor_start", I32),
    ("query_anchor_end", I32),
    ("positive_passage_id", STR),    # p
    ("positive_doc_id", STR),        # P
    ("positive_text", STR),
    ("positive_anchor", STR),        # DL/CM/WLP: the anchor in p linking to Q
    ("positive_anchor_start", I32),
    ("positive_anchor_end", I32),
    ("entity", STR),                 # CM: the co-mentioned entity E (title of the link target)
    ("entity_doc_id", STR),          # CM: E's document when it is in the store
    ("entity_indegree", I64),        # CM: documents linking to E
    ("entity_anchor", STR),          # CM: the anchor in p linking to E
    ("entity_anchor_start", I32),
    ("entity_anchor_end", I32),
    ("query_sentence_kept", BOOL),   # ICT: the query sentence was left in the positive
    ("candidate", I32),              # QC: which of the passage's C generated queries (0..C-1)
    ("answer", STR),                 # QAC: the entity taken out of the statement, as written in the positive
    ("answer_start", I32),           # QAC: its character offsets in positive_text
    ("answer_end", I32),
    ("answer_type", STR),            # QAC: its spaCy entity type (PERSON, DATE, ...)
    ("answer_phrase", STR),          # QAC: the interrogative phrase that replaced it (C-MORE Table 5)
    ("statement", STR),              # QAC: the cited sentence the question was made from
    ("reference_url", STR),          # QAC: the cited page the positive block comes from (NULL: a linked article)
    ("reference_title", STR),        # QAC: that page's title
    ("context_source", STR),         # QAC: reference | link (--context links fallback)
    ("block_words", I32),            # QAC: n, words per block of the reference text (NULL: a linked passage)
    ("block_stride", I32),           # QAC: m, words between block starts
])

PAIRS = pa.schema([
    ("pair_id", STR),
    ("method", STR),
    ("query", STR),
    ("query_doc_id", STR),
    ("query_title", STR),
    ("query_passage_id", STR),
    ("query_sentence_idx", I32),
    ("query_anchor", STR),
    ("query_anchor_start", I32),
    ("query_anchor_end", I32),
    ("positive_passage_id", STR),
    ("positive_doc_id", STR),
    ("positive_title", STR),
    ("positive_text", STR),
    ("positive_anchor", STR),
    ("positive_anchor_start", I32),
    ("positive_anchor_end", I32),
    ("entity", STR),
    ("entity_doc_id", STR),
    ("entity_indegree", I64),
    ("entity_anchor", STR),
    ("entity_anchor_start", I32),
    ("entity_anchor_end", I32),
    ("query_sentence_kept", BOOL),
    ("candidate", I32),              # QC: index of the generated query; NULL for other methods
    ("answer", STR),
    ("answer_start", I32),
    ("answer_end", I32),
    ("answer_type", STR),
    ("answer_phrase", STR),
    ("statement", STR),
    ("reference_url", STR),
    ("reference_title", STR),
    ("context_source", STR),
    ("block_words", I32),
    ("block_stride", I32),
    ("negative_passage_id", STR),
    ("negative_doc_id", STR),
    ("negative_title", STR),
    ("negative_text", STR),
    ("negative_kind", STR),          # random | overlap | NULL (no negatives asked, or none found)
])
