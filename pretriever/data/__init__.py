"""The data layer: every stage reads corpus stores and dataset files through here.

* :mod:`~pretriever.data.store` - :class:`CorpusStore`: open and check a store, DuckDB views;
* :mod:`~pretriever.data.passages` - passages in index order (:class:`PassageSource`) and the
  one rule for the text that is encoded (:func:`passage_text`);
* :mod:`~pretriever.data.lookup` - passages by id: text, title, document, samples
  (:class:`PassageLookup`);
* :mod:`~pretriever.data.beir` - BEIR queries, qrels (BEIR or TREC) and corpus;
* :mod:`~pretriever.data.qa` - open-domain QA files (NQ-open, DPR TSV/JSON, WebQ, CuratedTREC)
  and DPR's answer matching;
* :mod:`~pretriever.data.multihop` - multi-hop questions and gold sets;
* :mod:`~pretriever.data.pairs` - pairs folders: the checked Parquet files of any folder
  (:func:`open_pair_files`), a mined folder by its manifest (:class:`PairsDir`);
* :mod:`~pretriever.data.generated` - where generated queries are (``pretriever generate``);
* :mod:`~pretriever.data.references` - a references folder (the cited pages' texts) for C-MORE
  (:func:`load_references`).

No stage writes SQL against a store: a new read belongs here, with a test.
"""

from pretriever.data.beir import (DatasetError, Qrels, load_corpus, load_qrels, load_queries, qrels_path,
                                  queries_in_qrels, relevant)
from pretriever.data.generated import QUERIES_FILE, generated_queries_path
from pretriever.data.lookup import PassageLookup
from pretriever.data.multihop import MultiHopExample, load_multihop
from pretriever.data.passages import PassageSource, passage_text
from pretriever.data.qa import AnswerMatcher, QAExample, QAFileError, has_answer, load_qa_file, tokenize
from pretriever.data.references import References, ReferencesError, load_references
from pretriever.data.store import CorpusStore, StoreError

__all__ = [
    "AnswerMatcher", "CorpusStore", "DatasetError", "MultiHopExample", "PassageLookup", "PassageSource",
    "QAExample", "QAFileError", "QUERIES_FILE", "Qrels", "References", "ReferencesError", "StoreError", "generated_queries_path", "has_answer", "load_corpus",
    "load_multihop", "load_qa_file", "load_references", "load_qrels", "load_queries", "passage_text", "qrels_path",
    "queries_in_qrels", "relevant", "tokenize",
]
