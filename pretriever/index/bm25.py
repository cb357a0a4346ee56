"""BM25 over a corpus store with bm25s: the lexical baseline and the hard-negative miner.

Defaults: bm25s' Lucene variant with k1=1.5, b=0.75, bm25s' English stop-word list,
the Snowball English stemmer (PyStemmer) and ``title + " " + text``; on SciFact (test)
this gives nDCG@10 0.686. A saved BM25 folder holds::

    bm25.json            options, counts, corpus store, pretriever version
    passage_ids.parquet  passage_id of each bm25s document row
    *.index.npy/json     bm25s' own files (scores matrix, vocabulary, parameters)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pretriever import __version__
from pretriever.config import option
from pretriever.data import CorpusStore, PassageSource
from pretriever.index.errors import NotAnIndexError
from pretriever.index.meta import BM25_FORMAT, BM25_JSON, IDS_FILE, IndexMeta
from pretriever.io import read_json, write_parquet
from pretriever.progress import QUIET, Reporter
from pretriever.retrieval import Hit, RankedRows
from pretriever.stage import OutputFolder

TOKENIZING = "BM25 tokenizing"  # the Reporter's task while a build tokenizes
BM25_METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")


@dataclass
class BM25Options:
    """BM25 scoring and text analysis ([index.bm25] in TOML); the defaults are BEIR's BM25 baseline."""

    k1: float = option(1.5, "Term-frequency saturation.")
    b: float = option(0.75, "Length normalisation.")
    delta: float = option(0.5, "bm25l and bm25+ only: the lower bound added to term frequencies.")
    method: str = option("lucene", "Scoring: lucene, robertson, atire, bm25l or bm25+.")
    stopwords: str = option("en", "A bm25s stop-word list (en, de, fr, ...) or none.")
    stemmer: str = option("english", "A Snowball stemmer of PyStemmer (english, porter, german, ...) or none.")
    prepend_title: bool = option(True, "Index \"title text\" or the passage text alone.")
    lowercase: bool = option(True, "Lower-case passages and queries.")

    def __post_init__(self) -> None:
        self.method = str(self.method).lower()
        if self.method not in BM25_METHODS:
            raise ValueError(f"BM25 method must be one of {', '.join(BM25_METHODS)}, got {self.method!r}")
        self.stemmer_fn()  # an unknown stemmer fails here, not after the corpus was read
        self.stopword_list()

    def stemmer_fn(self):
        if not self.stemmer or str(self.stemmer).lower() == "none":
            return None
        import Stemmer

        try:
            return Stemmer.Stemmer(self.stemmer)
        except KeyError as err:
            raise ValueError(f"unknown stemmer {self.stemmer!r}; PyStemmer has: "
                             f"{', '.join(Stemmer.algorithms())}, or 'none'") from err

    def stopword_list(self) -> str | None:
        """The stop-word list name for bm25s (None: keep every word); an unknown name is refused here."""
        if not self.stopwords or str(self.stopwords).lower() == "none":
            return None
        import bm25s

        try:
            bm25s.tokenize(["x"], stopwords=self.stopwords, show_progress=False)
        except ValueError as err:
            raise ValueError(f"unknown stop-word list {self.stopwords!r}: {err}") from err
        return self.stopwords


class BM25Index:
    """A BM25 index (bm25s) over a store's passages: the lexical baseline and the lexical side of hybrid
    search; implements :class:`pretriever.retrieval.Retriever`.

    The defaults (:class:`BM25Options`) are BEIR's BM25 baseline: Lucene scoring, k1 = 1.5, b = 0.75,
    English stop words and Snowball stemming, "title text" indexed.

    Requirements:
        A corpus store (``build``), or passage ids with their texts (``build_from_texts``); a saved
        index folder for ``load`` (``pretriever index bm25``, or ``index build --bm25``).

    Example::

        from pretriever.index import BM25Index

        toy = BM25Index.build_from_texts(["p1", "p2"], ["Vitamin D and bone fractures in the elderly.",
                                                        "Aspirin inhibits platelet aggregation."])
        assert toy.search(["does aspirin act on platelets"], k=2)[0][0].passage_id == "p2"

        bm25 = BM25Index.build("scifact-store/")  # or BM25Index.load("scifact-index/bm25")
        for hit in bm25.search(["vitamin D deficiency increases the risk of fractures"], k=3)[0]:
            print(hit.passage_id, round(hit.score, 2))

    References:
        Lù, "BM25S: Orders of magnitude faster lexical search via eager sparse scoring", 2024 (bm25s);
        Thakur et al., "BEIR", NeurIPS 2021 Datasets and Benchmarks (the BM25 baseline's settings).

    Relations:
        One of the searchers behind :class:`pretriever.retrieval.Retriever`, beside
        :class:`~pretriever.index.DenseIndex`, :class:`~pretriever.refine.RefinedIndex` and
        :class:`~pretriever.index.HybridRetriever` (which fuses this with one of them).

    Args:
        retriever: the bm25s index.
        passage_ids: the passages, by row.
        options: the settings it was built with.
        meta: its metadata (bm25.json).
    """

    name = "bm25"

    def __init__(self, retriever, passage_ids: Sequence[str], options: BM25Options, meta: IndexMeta):
        self.retriever = retriever
        self.passage_ids = np.asarray(passage_ids, dtype=object)
        self.options = options
        self.meta = meta
        self._stemmer = options.stemmer_fn()
        self._stopwords = options.stopword_list()
        self._rows: dict[str, int] | None = None  # passage id -> row, built on the first scores_of()

    def __len__(self) -> int:
        return len(self.passage_ids)

    @classmethod
    def build(cls, store: CorpusStore | Path | str, options: BM25Options | None = None,
              report: Reporter = QUIET) -> BM25Index:
        """Tokenize every passage of ``store`` (one part file at a time) and index them; ``report`` hears the
        passages tokenized.

        Args:
            store: the corpus store, or its folder.
            options: the BM25 settings (default: BEIR's).
            report: hears the progress.

        Returns:
            The index (in memory; :meth:`save` writes it).
        """
        options = options or BM25Options()
        source = PassageSource(store)
        started = time.perf_counter()
        try:
            ids: list[str] = []
            tokens: list[list[int]] = []
            tokenizer = _tokenizer(options)
            report.progress(TOKENIZING, 0, source.total, unit="passages")
            for part_ids, texts in source.iter_parts(options.prepend_title):
                ids.extend(part_ids)
                tokens.extend(tokenizer.tokenize(texts, update_vocab=True, return_as="ids", show_progress=False))
                report.progress(TOKENIZING, len(ids), source.total, unit="passages")
        finally:
            source.close()
        return cls._from_tokens(ids, tokens, tokenizer.get_vocab_dict(), options,
                                store=str(source.store.path.resolve()), n_passages=source.total,
                                recorded={"build_seconds": round(time.perf_counter() - started, 3)})

    @classmethod
    def build_from_texts(cls, passage_ids: Sequence[str], texts: Sequence[str],
                         options: BM25Options | None = None) -> BM25Index:
        """An index over given texts (titles, if wanted, already in them).

        Args:
            passage_ids: the passages.
            texts: their texts.
            options: the BM25 settings (default: BEIR's).

        Returns:
            The index.
        """
        options = options or BM25Options()
        tokenizer = _tokenizer(options)
        tokens = tokenizer.tokenize(list(texts), update_vocab=True, return_as="ids", show_progress=False)
        return cls._from_tokens(list(passage_ids), tokens, tokenizer.get_vocab_dict(), options)

    @classmethod
    def _from_tokens(cls, ids, tokens, vocab, options: BM25Options, recorded: dict[str, Any] | None = None,
                     **fields: Any) -> BM25Index:
        """``fields``: more :class:`IndexMeta` fields (the store); ``recorded``: keys kept as given."""
        import bm25s

        retriever = bm25s.BM25(k1=options.k1, b=options.b, delta=options.delta, method=options.method)
        retriever.index((tokens, vocab), show_progress=False)
        meta = IndexMeta(format=BM25_FORMAT, name=cls.name, count=len(ids), options=asdict(options),
                         vocabulary=len(vocab), **fields,
                         recorded={"pretriever_version": __version__, **(recorded or {})})
        return cls(retriever, ids, options, meta)

    def save(self, path: Path | str, report: Reporter = QUIET) -> None:
        """Write the index to a folder (bm25.json last: its presence means the folder is complete).

        The folder is empty, new or a BM25 index pretriever wrote (:class:`pretriever.stage.FolderError`
        otherwise); an earlier index there is replaced.

        Args:
            path: the folder.
            report: hears what an earlier index there was.
        """
        path = Path(path)
        folder = bm25_folder(path, report)
        folder.check()
        folder.claim()
        (path / BM25_JSON).unlink(missing_ok=True)
        self.retriever.save(str(path), show_progress=False)
        write_parquet(pa.table({"passage_id": pa.array(self.passage_ids.tolist(), pa.string())}), path / IDS_FILE)
        self.meta.write(path)
        folder.seal()

    @classmethod
    def load(cls, path: Path | str, mmap: bool = False) -> BM25Index:
        """Open a BM25 index folder (a :class:`NotAnIndexError` says what is missing).

        Args:
            path: the folder.
            mmap: memory-map the index instead of reading it.

        Returns:
            The index.
        """
        import bm25s

        path = Path(path)
        meta_path = path / BM25_JSON
        if not meta_path.exists():
            raise NotAnIndexError(f"{path} is not a BM25 index: {BM25_JSON} is missing; build one with "
                                  "`pretriever index bm25 CORPUS_DIR --out DIR`")
        meta = IndexMeta.from_json(read_json(meta_path, NotAnIndexError), meta_path)
        if meta.format != BM25_FORMAT or meta.options is None:
            raise NotAnIndexError(f"{meta_path} was not written by pretriever (kind is not {BM25_FORMAT!r})")
        retriever = bm25s.BM25.load(str(path), mmap=mmap, show_progress=False)
        ids = pq.read_table(path / IDS_FILE).column("passage_id").to_pylist()
        return cls(retriever, ids, BM25Options(**meta.options), meta)

    def tokenize_queries(self, queries: Sequence[str]) -> list[list[str]]:
        """Queries tokenized exactly as the passages were (lower-case, stop words, stemmer).

        Args:
            queries: the query texts.

        Returns:
            Each query's tokens.
        """
        import bm25s

        return bm25s.tokenize(list(queries), lower=self.options.lowercase, stopwords=self._stopwords,
                              stemmer=self._stemmer, return_ids=False, show_progress=False)

    def search_arrays(self, queries: Sequence[str], k: int, n_threads: int = 0) -> RankedRows:
        """The top ``min(k, N)`` rows of each query, best first; ``n_threads`` as in bm25s (-1: all cores).

        Args:
            queries: the query texts.
            k: hits per query.
            n_threads: bm25s' parallel jobs (0: none; -1: all cores).

        Returns:
            ``RankedRows(scores, rows)``, each len(queries) x min(k, N).
        """
        k = min(k, len(self))
        if not queries or k == 0:
            return RankedRows(np.zeros((len(queries), 0), np.float32), np.zeros((len(queries), 0), np.int64))
        rows, scores = self.retriever.retrieve(self.tokenize_queries(queries), k=k, show_progress=False,
                                               n_threads=n_threads)
        return RankedRows(scores, rows)

    def scores_of(self, query: str, passage_ids: Sequence[str]) -> list[float]:
        """``query``'s score for each of these passages of the index, ranked high or not (a reader file scores a
        positive that BM25 did not retrieve).

        Args:
            query: the query text.
            passage_ids: passages of the index (an unknown one is a KeyError).

        Returns:
            One score per passage, in the order given.
        """
        if self._rows is None:
            self._rows = {pid: i for i, pid in enumerate(self.passage_ids.tolist())}
        unknown = [pid for pid in passage_ids if pid not in self._rows]
        if unknown:
            raise KeyError(f"passage(s) not in the BM25 index: {', '.join(map(str, unknown[:3]))}")
        vocab = self.retriever.vocab_dict
        words = [w for w in self.tokenize_queries([query])[0] if w in vocab]
        scores = self.retriever.get_scores(words) if words else np.zeros(len(self), np.float32)
        return [float(scores[self._rows[pid]]) for pid in passage_ids]

    def search(self, queries: list[str], k: int, n_threads: int = 0) -> list[list[Hit]]:
        """The top ``k`` passages for each query, best first; passages scoring 0 are left out.

        Args:
            queries: the query texts.
            k: hits per query.
            n_threads: bm25s' parallel jobs (0: none; -1: all cores).

        Returns:
            One list of hits per query.
        """
        scores, rows = self.search_arrays(queries, k, n_threads)
        ids = self.passage_ids
        return [[Hit(ids[r], float(s)) for s, r in zip(srow, rrow) if s > 0] for srow, rrow in zip(scores, rows)]


def _tokenizer(options: BM25Options):
    from bm25s.tokenization import Tokenizer

    return Tokenizer(lower=options.lowercase, stopwords=options.stopword_list(), stemmer=options.stemmer_fn())


def bm25_folder(path: Path | str, report: Reporter = QUIET) -> OutputFolder:
    """A BM25 index's folder (alone, or INDEX_DIR/bm25): bm25.json, the ids and bm25s's files are its own; check it
    before building, so that a folder that is not pretriever's is refused before the work."""
    return OutputFolder(Path(path), stage="bm25", holds="a BM25 index", owns=(BM25_JSON, IDS_FILE, "*.index.*"),
                        report=report)


def build_bm25(store: CorpusStore | Path | str, out: Path | str, options: BM25Options | None = None,
               report: Reporter = QUIET) -> BM25Index:
    """``pretriever index bm25``: BM25 over ``store`` saved in ``out`` (alone, or INDEX_DIR/bm25); the folder is
    checked before the work, so one that is not pretriever's is refused before it starts."""
    bm25_folder(out, report).check()
    index = BM25Index.build(store, options, report)
    index.save(out, report)
    return index
