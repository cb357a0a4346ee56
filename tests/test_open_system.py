"""IndexFolder.open: one assembly of index, store, BM25 and fusion; a searcher that returns its passages; the vector
protocol passed through wrappers; a moved store with and without --corpus. A tiny store, hand-made vectors and a
fake query encoder, so nothing here loads a model."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from pretriever.corpus import build
from pretriever.corpus.config import CorpusConfig
from pretriever.data import CorpusStore, PassageLookup, StoreError
from pretriever.evaluate import AnswersTask, EvaluateConfig, EvaluationError, EvaluationOptions, evaluate_retrievers
from pretriever.evaluate.pipeline import open_systems
from pretriever.index import (BM25Index, DenseIndex, HybridOptions, HybridRetriever, IndexFolder, NotAnIndexError,
                              System, encoder_info, fuse, save_dense_index)
from pretriever.reader.config import PrepareConfig
from pretriever.reader.prepare import open_for_reading
from pretriever.refine.retriever import RefinedIndex
from pretriever.retrieval import Hit, Passage, PassageStore, Searcher, VectorSearch

DOCS = [("A", "Alpha", "The Eiffel Tower stands in Paris."),
        ("B", "Beta", "Roentgen discovered X-rays in Wuerzburg."),
        ("C", "Gamma", "Penicillin was found by Fleming in London.")]
DIRECTION = {"A": [1.0, 0.0, 0.0], "B": [0.0, 1.0, 0.0], "C": [0.0, 0.0, 1.0]}
QUERIES = {"tower": [0.9, 0.1, 0.0], "x-rays": [0.1, 0.9, 0.2], "mould": [0.0, 0.3, 0.8]}


class _Model:
    """A query encoder that knows three queries (vectors by hand)."""

    max_seq_length = 256

    def encode_query(self, texts, **kwargs):
        return np.array([QUERIES[t] for t in texts], dtype=np.float32)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """A three-document store, a dense index over it (a vector per passage, pointing at its document) with its
    BM25 beside it, a BM25 folder, and a copy of the dense index whose store has moved."""
    root = tmp_path_factory.mktemp("open-system")
    src = root / "docs.jsonl"
    src.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in DOCS), encoding="utf-8")
    build.run(CorpusConfig(input=src, out=root / "store", min_title_chars=0, workers=1))
    rows = CorpusStore(root / "store").connect().execute(
        "SELECT passage_id, doc_id FROM passages ORDER BY passage_id").fetchall()
    ids = [pid for pid, _ in rows]
    vectors = np.array([DIRECTION[doc] for _, doc in rows], dtype=np.float32)
    encoder = encoder_info(None, 256, False, True)
    store = str((root / "store").resolve())
    save_dense_index(root / "index", ids, vectors, encoder, store=store)
    BM25Index.build(root / "store").save(root / "index" / "bm25")
    BM25Index.build(root / "store").save(root / "bm25")
    save_dense_index(root / "moved", ids, vectors, encoder, store=str(root / "gone"))
    save_dense_index(root / "unnamed", ids, vectors, encoder)
    return {"root": root, "store": root / "store", "index": root / "index", "bm25": root / "bm25",
            "moved": root / "moved", "unnamed": root / "unnamed"}


def _store_passages(store: Path) -> dict[str, tuple[str, str, str]]:
    """passage id -> (title, text, document) read from the store's tables."""
    lookup = PassageLookup(store)
    try:
        ids = [pid for pid, in lookup.store.connect().execute("SELECT passage_id FROM passages").fetchall()]
        return {p.passage_id: (p.title, p.text, p.doc_id) for p in lookup.passages(ids).values()}
    finally:
        lookup.close()


def _first(system, query: str) -> Hit:
    return system.search([query], 3)[0][0]


def test_each_mode_searches_and_returns_the_stores_passages(built):
    truth = _store_passages(built["store"])
    with IndexFolder(built["index"]).open(model=_Model()) as dense:
        assert isinstance(dense, Searcher) and isinstance(dense, VectorSearch)
        assert isinstance(dense.lookup, PassageStore)  # the store, as the Searcher protocol types it
        assert isinstance(dense.retriever, DenseIndex) and dense.name == "all-MiniLM-L6-v2" and len(dense) == 3
        top = _first(dense, "tower")
        assert truth[top.passage_id][2] == "A"
        found = dense.passages([top.passage_id, "nope", top.passage_id])
        assert list(found) == [top.passage_id, "nope"]  # in the order asked, each once
        assert (found[top.passage_id].title, found[top.passage_id].text, found[top.passage_id].doc_id) == \
            truth[top.passage_id]
        assert found["nope"] == Passage("nope", None, None, None)

    with IndexFolder(built["index"]).open("bm25") as lexical:
        assert isinstance(lexical.retriever, BM25Index) and not isinstance(lexical, VectorSearch)
        assert lexical.name == "bm25" and lexical.meta.format == "pretriever-bm25-index"
        top = _first(lexical, "Fleming penicillin")
        assert truth[top.passage_id][2] == "C"
        assert lexical.passages([top.passage_id])[top.passage_id].text == truth[top.passage_id][1]

    options = HybridOptions(fusion="convex", alpha=0.5)
    with IndexFolder(built["index"]).open("hybrid", fusion=options, model=_Model()) as hybrid:
        assert hybrid.name == "hybrid[convex alpha=0.5](all-MiniLM-L6-v2+bm25)"
        assert hybrid.meta.encoder.model_label == "all-MiniLM-L6-v2"  # the index's own metadata
        dense, bm25 = DenseIndex.load(built["index"], model=_Model()), BM25Index.load(built["index"] / "bm25")
        expected = fuse(dense.search(["x-rays"], 100)[0], bm25.search(["x-rays"], 100)[0], options, 3)
        assert hybrid.search(["x-rays"], 3)[0] == expected
        ids = [h.passage_id for h in expected]
        assert [p.text for p in hybrid.passages(ids).values()] == [truth[i][1] for i in ids]


def test_a_bm25_folder_opens_as_itself_and_is_no_hybrid(built):
    with IndexFolder(built["bm25"]).open() as itself, IndexFolder(built["bm25"]).open("bm25") as same:
        assert isinstance(itself.retriever, BM25Index) and isinstance(same.retriever, BM25Index)
        assert itself.lookup.path == Path(itself.meta.store)  # bm25.json names the store
        assert _first(itself, "Eiffel") == _first(same, "Eiffel")
    with pytest.raises(NotAnIndexError, match="is a BM25 index: hybrid retrieval fuses"):
        IndexFolder(built["bm25"]).open("hybrid")
    with pytest.raises(ValueError, match="mode must be one of index, bm25, hybrid"):
        IndexFolder(built["index"]).open("dense")


def test_wrappers_pass_the_vector_protocol_through(built):
    index = DenseIndex.load(built["index"], model=_Model())
    with IndexFolder(built["index"]).open(model=_Model()) as system:
        renamed = system.renamed("other")
        for wrapper in (system, renamed):
            assert isinstance(wrapper, VectorSearch)
            assert np.array_equal(wrapper.encode_queries(["tower"]), index.encode_queries(["tower"]))
            assert wrapper.search_vectors(np.array([[0.0, 0.0, 1.0]], np.float32), 1) == \
                index.search_vectors(np.array([[0.0, 0.0, 1.0]], np.float32), 1)
            assert np.array_equal(wrapper.vectors_of([_first(index, "tower").passage_id]), [[1.0, 0.0, 0.0]])
        assert renamed.name == "other" and renamed.lookup is system.lookup
        bm25 = BM25Index.load(built["index"] / "bm25")
        assert not isinstance(System.of(bm25, system.lookup, bm25.meta), VectorSearch)
        # dense PRF needs the dense side's vectors: through the wrapper it moves them as on the bare index
        prf = HybridOptions(prf_k=1)
        assert HybridRetriever(system, bm25, prf).search(["mould"], 3) == \
            HybridRetriever(index, bm25, prf).search(["mould"], 3)
        # a fused system does not search by vector alone: that would silently drop BM25
        assert not isinstance(system.fused(bm25), VectorSearch)

    # a refined index is a wrapper too: its own query side (a stored vector for a feedback query), then its passages
    refined = RefinedIndex(index, {"tower": np.array([0.0, 0.0, 1.0], np.float32)})
    assert isinstance(refined, VectorSearch)
    assert np.allclose(refined.encode_queries(["tower", "x-rays"]), [[0.0, 0.0, 1.0], QUERIES["x-rays"]])
    assert refined.last_stats == {"stored": 1, "test_time_refined": 0, "plain": 1}
    assert _first(refined, "tower").passage_id == _first(index, "mould").passage_id  # its stored vector points at C
    wrapped = System.of(refined, None, index.meta)
    assert isinstance(wrapped, VectorSearch) and wrapped.search(["tower"], 1) == refined.search(["tower"], 1)


def test_a_moved_store_with_and_without_the_override(built):
    truth = _store_passages(built["store"])
    with IndexFolder(built["moved"]).open(model=_Model()) as system:  # the store is optional: no passages, still search
        assert system.lookup is None
        top = _first(system, "tower")
        assert system.passages([top.passage_id]) == {top.passage_id: Passage(top.passage_id, None, None, None)}
    with pytest.raises(StoreError, match=r"moved/index.json names the corpus store .*gone, which is not there "
                                         r"\(moved\?\); give its new place with --corpus"):
        IndexFolder(built["moved"]).open(require_store=True)
    with pytest.raises(StoreError, match=r"unnamed/index.json names no corpus store; give the store with --corpus"):
        IndexFolder(built["unnamed"]).open(require_store=True)
    with IndexFolder(built["moved"], built["store"]).open("hybrid", require_store=True, model=_Model()) as system:
        assert system.lookup.path == built["store"]
        hits = system.search(["tower"], 3)[0]
        assert {h.passage_id: p.text for h, p in zip(hits, system.passages(h.passage_id for h in hits).values())} \
            == {h.passage_id: truth[h.passage_id][1] for h in hits}
    # BM25 with the store gone: the folder beside the index, unchecked; none there: a clear error
    with pytest.raises(StoreError, match="no BM25 index in .*moved/bm25, and no corpus store is known"):
        IndexFolder(built["moved"]).open("bm25")
    shutil.copytree(built["index"] / "bm25", built["moved"] / "bm25")
    try:
        with IndexFolder(built["moved"]).open("bm25") as lexical:
            assert isinstance(lexical.retriever, BM25Index) and lexical.lookup is None
    finally:
        shutil.rmtree(built["moved"] / "bm25")


def test_evaluate_and_the_reader_resolve_the_store_the_same_way(built, tmp_path):
    (tmp_path / "queries.jsonl").write_text('{"_id": "q", "text": "tower"}\n', encoding="utf-8")
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq\tA\t1\n", encoding="utf-8")
    common = dict(out=tmp_path / "eval", queries=tmp_path / "queries.jsonl", qrels=tmp_path / "qrels.tsv")
    with pytest.raises(StoreError, match=r"\(moved\?\); give its new place with --corpus"):
        open_systems(EvaluateConfig(index=[built["moved"]], **common))
    systems = open_systems(EvaluateConfig(index=[built["moved"], built["index"]], corpus=built["store"], bm25=True,
                                          **common))
    try:
        assert [s.name for s in systems.retrievers] == ["all-MiniLM-L6-v2", "all-MiniLM-L6-v2@index", "bm25"]
        assert {d["store"] for d in systems.described.values()} == {str(built["store"])}
        assert all(s.lookup is not None for s in systems.retrievers)
    finally:
        systems.close()
    source = dict(questions=tmp_path / "qa.jsonl", out=tmp_path / "reader.json")
    with pytest.raises(StoreError, match=r"\(moved\?\)"):
        open_for_reading(PrepareConfig(index=built["moved"], **source))
    with open_for_reading(PrepareConfig(index=built["moved"], corpus=built["store"], retrieval="bm25",
                                        **source)) as system:
        assert system.lookup.path == built["store"] and isinstance(system.retriever, BM25Index)


def test_evaluate_retrievers_reads_a_searchers_own_store(built):
    answers = [("where is the tower", ["Paris"]), ("who found penicillin", ["Fleming"])]
    with IndexFolder(built["index"]).open("bm25") as lexical:
        result = evaluate_retrievers([lexical], AnswersTask(answers, ks=[1]))  # no store: the searcher brings its own
        assert result.systems["bm25"]["Acc@1"] == 1.0
        with pytest.raises(EvaluationError, match="corpus store"):  # the bare index knows no store
            evaluate_retrievers([lexical.retriever], AnswersTask(answers, ks=[1]))
        same = evaluate_retrievers([lexical.retriever], AnswersTask(answers, ks=[1]),
                                   EvaluationOptions(store=built["store"]))
        assert same.systems == result.systems


def test_one_lookup_serves_many_threads(built):
    truth = _store_passages(built["store"])
    lookup = PassageLookup(built["store"])
    seen, failures = [], []

    def read() -> None:
        try:
            for _ in range(20):
                seen.append({p.passage_id: p.text for p in lookup.passages(truth).values()})
        except Exception as err:  # noqa: BLE001 - reported below
            failures.append(err)

    threads = [threading.Thread(target=read) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lookup.close()
    assert not failures and len(seen) == 120
    assert all(s == {pid: text for pid, (_, text, _) in truth.items()} for s in seen)


def test_a_held_lookup_answers_from_memory_as_the_store_does(built):
    con = CorpusStore(built["store"]).connect()
    truth = {pid: Passage(pid, title, text, doc) for pid, title, text, doc in con.execute(
        "SELECT p.passage_id, d.title, p.text, p.doc_id FROM passages p LEFT JOIN documents d USING (doc_id)"
    ).fetchall()}
    asked = [*sorted(truth, reverse=True), "nope", next(iter(truth))]
    expected = {**{i: truth[i] for i in sorted(truth, reverse=True)}, "nope": Passage("nope", None, None, None)}
    lookup = PassageLookup(built["store"])
    assert lookup.passages(asked) == expected and list(lookup.passages(asked)) == list(expected)  # from the store
    assert not lookup.hold(lookup.text_bytes() - 1) and not lookup.held  # over the budget: not read
    assert lookup.hold(lookup.text_bytes()) and lookup.held
    lookup.close()  # a held lookup no longer needs its store connection
    assert lookup.passages(asked) == expected and list(lookup.passages(asked)) == list(expected)
