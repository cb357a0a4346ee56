"""pretriever tune: on a tiny corpus where BM25 must win (queries share rare code words with their positives) and
one where dense must win (paraphrases, no shared word), the choice goes the right way; the masked-ICT positive
lacks its sentence in both the vectors and BM25; the choice never reads --qrels; a low-confidence winner keeps
dense; search, evaluate, serve and answer pick the tuned setting up and --no-tuned turns it off. Real
all-MiniLM-L6-v2 on hand-made corpora of 16 and 30 documents."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from conftest import build
import pretriever.evaluate.pipeline
import pretriever.refine.pipeline
import pretriever.tune.run
from pretriever.cli import app
from pretriever.data import PassageLookup
from pretriever.evaluate import EvaluateConfig
from pretriever.index import BM25Index, IndexConfig, IndexFolder, TunedRecord, encode
from pretriever.index.encode import encode_texts
from pretriever.reader.config import AnswerConfig
from pretriever.reader.prepare import open_for_reading
from pretriever.refine import RefineConfig
from pretriever.serve import ServeConfig, create_app
from pretriever.tune import TuneConfig, choose
from pretriever.tune.run import run
from pretriever.tune.generators import GENERATORS, TuneError
from pretriever.tune.overlay import MaskedDense, encoder_model, masked_bm25, masked_texts

PARAPHRASES = [  # one topic per document; no content word shared between a topic's sentences
    ("Dogs", "Canines are loyal household companions. Puppies need walking every single morning. "
             "Hounds often bark loudly at strangers."),
    ("Pasta", "Spaghetti should boil in salted water. Italian noodles taste best al dente. "
              "Macaroni dishes usually include melted cheese."),
    ("Astronomy", "Telescopes reveal distant glowing galaxies. Astronomers study planets orbiting faraway stars. "
                  "The night sky holds countless shining suns."),
    ("Football", "The striker scored a late goal. Soccer fans cheered inside the stadium. "
                 "A referee showed the defender a yellow card."),
    ("Weather", "Heavy rain flooded the valley roads. Storm clouds gathered before the downpour. "
                "Meteorologists predicted wet conditions all week."),
    ("Music", "She practised piano scales every evening. The orchestra performed a beautiful symphony. "
              "Musicians tuned their violins before the concert."),
    ("Computers", "The laptop crashed after a software update. Programmers fixed the bug in the code. "
                  "My desktop machine needs more memory to run."),
    ("Gardening", "Tomatoes ripen slowly in the greenhouse. Gardeners water their vegetable beds at dawn. "
                  "Fresh lettuce grows well in spring soil."),
    ("Ocean", "Whales migrate across the vast sea. Dolphins leap playfully beside fishing boats. "
              "Sharks hunt seals near the coast."),
    ("Medicine", "The doctor prescribed antibiotics for the infection. Patients recover faster with proper rest. "
                 "Nurses monitor hospital wards through the night."),
    ("Trains", "The express locomotive departed the station early. Railway passengers waited on the platform. "
               "Commuters ride subway carriages to work."),
    ("Baking", "Bakers knead dough before sunrise each day. Warm loaves smell wonderful from the oven. "
               "Croissants require layers of cold butter."),
    ("Mountains", "Climbers reached the snowy summit at noon. Hikers trekked up steep alpine trails. "
                  "The peak towers above the glacier below."),
    ("Elections", "Voters cast ballots in the national election. The candidate gave a speech about campaign "
                  "promises. Parliament tallied results after polls closed."),
    ("Cats", "Kittens chase little balls of yarn. A feline purrs when it feels content. "
             "Tabby pets nap on sunny windowsills."),
    ("Coffee", "Baristas brew espresso in busy cafes. A morning latte keeps me awake. "
               "Roasted beans release a rich aroma."),
]


def _word(rng: random.Random) -> str:
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz") + rng.choice("aeiou") for _ in range(4))


def _codes() -> list[tuple[str, str, str]]:
    """30 documents that share every word but a code word (twice in each sentence's document) and one word unique to
    each sentence: only the code word ties a sentence to the rest of its document."""
    rng = random.Random(7)
    docs = []
    for i in range(30):
        code = _word(rng)
        u = [_word(rng) for _ in range(3)]
        text = (f"The {code} specimen {u[0]} was measured in the laboratory. Results for the {code} batch {u[1]} "
                f"were recorded by the team. Further analysis of {code} material {u[2]} followed later that year.")
        docs.append((f"d{i}", f"Report on {code} samples", text))
    return docs


def _store_and_index(root: Path, docs: list[tuple[str, str, str]]) -> Path:
    src = root / "docs.jsonl"
    src.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in docs), encoding="utf-8")
    store = build(src, root / "store", min_title_chars=0, workers=1)
    encode.run(IndexConfig(corpus=store.path, out=root / "index"))
    BM25Index.build(store).save(root / "index" / "bm25")
    return root / "index"


@pytest.fixture(scope="module")
def lexical(tmp_path_factory) -> dict:
    """The code-word corpus, its index, real queries with judgments (validation only), and its tune (dry run)."""
    root = tmp_path_factory.mktemp("tune-lexical")
    docs = _codes()
    index = _store_and_index(root, docs)
    queries = [{"_id": f"q{i}", "text": f"which samples of {t.split()[2]} were analysed"} for i, (_, t, _) in
               enumerate(docs[:10])]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    (root / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(10)),
                                    encoding="utf-8")
    before = (index / "index.json").read_bytes()
    result = run(TuneConfig(index=index, n=30, dry_run=True))
    return {"root": root, "index": index, "docs": docs, "result": result, "index_json": before}


def test_bm25_must_win_where_queries_share_rare_words_with_their_positives(lexical):
    result = lexical["result"]
    scores = result.choice.scores
    assert scores["bm25"].mean > scores["dense"].mean + 0.1
    assert result.generators["masked-ict"]["overlap"] < 0.7  # the masked sentence shares only the code word
    assert not result.choice.kept_dense, result.choice.reason
    assert result.choice.label != "dense" and result.setting.mode in ("bm25", "hybrid")
    assert scores[result.choice.label].low > scores["dense"].high
    for name in ("masked-ict", "titles"):
        assert result.generators[name]["queries"] == 30


def test_a_dry_run_writes_nothing(lexical):
    assert (lexical["index"] / "index.json").read_bytes() == lexical["index_json"]
    assert not (lexical["index"] / "tune.json").exists()
    assert not lexical["result"].written


def test_dense_must_win_on_paraphrases(tmp_path):
    index = _store_and_index(tmp_path, [(f"t{i}", title, text) for i, (title, text) in enumerate(PARAPHRASES)])
    result = run(TuneConfig(index=index, n=16, queries_from=["masked-ict"], dry_run=True))
    scores = result.choice.scores
    assert result.generators["masked-ict"]["queries"] == 16
    assert result.generators["masked-ict"]["overlap"] < 0.3  # paraphrases: few query words in the positive
    assert scores["dense"].mean > scores["bm25"].mean + 0.3
    assert result.choice.label == "dense"


def test_the_masked_ict_positive_lacks_its_sentence_in_the_vectors_and_in_bm25(lexical):
    index = lexical["index"]
    with IndexFolder(index).open() as system:
        lookup = system.lookup
        pseudo = GENERATORS["masked-ict"]().make(lookup, n=5, seed=0)
        qid, query = next(iter(pseudo.queries.items()))
        pid = qid.split(":", 1)[1]
        original = lookup.passages([pid])[pid].text
        assert query in original and query not in pseudo.masked[pid].body
        [unique] = [w for w in query.split() if original.count(w) == 1 and w.islower() and len(w) == 8
                    and sum(w in t for _, _, t in lexical["docs"]) == 1]  # the word only this sentence holds
        texts = masked_texts(pseudo.masked, prepend_title=True)
        dense = MaskedDense(system, texts)
        expected = encode_texts(encoder_model(system), [texts[pid]], 8, False)[0]
        assert np.allclose(dense.vectors_of([pid])[0], expected, atol=1e-5)
        assert not np.allclose(system.vectors_of([pid])[0], expected, atol=1e-3)
        assert dense.search_vectors(expected[None, :], 1)[0][0].passage_id == pid  # searched with its new vector
        bm25 = BM25Index.load(index / "bm25")
        assert [h.passage_id for h in bm25.search([unique], 3)[0]] == [pid]
        masked = masked_bm25(lookup, pseudo.masked, bm25.options)
        assert masked.search([unique], 3)[0] == []
        assert len(masked) == len(bm25)


def test_the_choice_does_not_read_the_qrels(lexical, tmp_path):
    root = lexical["root"]
    qrels = tmp_path / "qrels.tsv"  # plus a junk judgement (TREC's -2): not relevant, and the validation says so
    qrels.write_text((root / "qrels.tsv").read_text() + "q0\td5\t-2\n", encoding="utf-8")
    validated = run(TuneConfig(index=lexical["index"], n=30, dry_run=True, qrels=qrels,
                               queries=root / "queries.jsonl"))
    plain = lexical["result"]
    assert validated.choice.label == plain.choice.label and validated.choice.reason == plain.choice.reason
    assert ({c: (s.mean, s.low, s.high) for c, s in validated.choice.scores.items()}
            == {c: (s.mean, s.low, s.high) for c, s in plain.choice.scores.items()})
    assert plain.validation is None
    v = validated.validation
    assert v["queries"] == 10 and set(v["nDCG@10"]) == set(plain.choice.scores)
    assert v["nDCG@10"]["bm25"] == pytest.approx(1.0)
    assert v["negative_grades"] == 1 and "negative grades counted as not relevant" in v["notes"][0]
    assert v["lost"] == pytest.approx(v["nDCG@10"][v["best"]] - v["nDCG@10"][validated.choice.label])
    if len({round(x, 9) for x in v["nDCG@10"].values()}) > 1:  # tau is undefined when every candidate ties
        assert -1.0 <= v["kendall_tau"] <= 1.0
    else:
        assert v["kendall_tau"] is None


def _per_query(dense: list[float], other: dict[str, list[float]]) -> dict[str, list[float]]:
    return {"dense": dense, **other}


def test_a_low_confidence_winner_keeps_dense():
    rng = np.random.default_rng(0)
    noisy = rng.uniform(0, 1, 20).tolist()
    close = [min(1.0, v + 0.03) for v in noisy]  # better on average, well inside the noise
    choice = choose({"masked-ict": _per_query(noisy, {"bm25": close})}, rounds=500)
    assert choice.best == "bm25" and choice.label == "dense" and choice.kept_dense
    assert "overlaps" in choice.reason
    # clearly better on one generator, worse on the other: the generators disagree
    high, low = [0.2] * 50, [0.9] * 50
    disagree = choose({"masked-ict": _per_query(high, {"bm25": [0.95] * 50}),
                       "titles": _per_query(low, {"bm25": [0.85] * 50})}, rounds=200)
    assert disagree.label == "dense" and disagree.kept_dense and "disagree" in disagree.reason
    clear = choose({"masked-ict": _per_query(high, {"bm25": [0.95] * 50}),
                    "titles": _per_query([0.5] * 50, {"bm25": [0.9] * 50})}, rounds=200)
    assert clear.label == "bm25" and not clear.kept_dense


def test_search_evaluate_serve_and_answer_pick_up_the_tuned_setting(lexical, tmp_path):
    index = tmp_path / "index"
    shutil.copytree(lexical["index"], index)
    root = lexical["root"]
    runner = CliRunner()
    done = runner.invoke(app, ["tune", str(index), "-n", "30"], env={"COLUMNS": "160"})
    assert done.exit_code == 0, done.output
    setting = IndexFolder(index).meta.tuned_setting
    assert setting is not None and setting.label != "dense" and "choice: " + setting.label in done.output
    written = json.loads((index / "tune.json").read_text(encoding="utf-8"))
    assert written["choice"]["label"] == setting.label and len(written["candidates"]) == 22
    row = f"tuned: {setting.label}"
    shown = runner.invoke(app, ["index", "info", str(index)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and f"{setting.label} (`pretriever tune`" in shown.output

    def systems(**options) -> dict:
        cfg = EvaluateConfig(index=[index], queries=root / "queries.jsonl", qrels=root / "qrels.tsv",
                             out=tmp_path / "eval", plots=False, overlap=False, **options)
        return pretriever.evaluate.pipeline.run(cfg).evaluation.systems

    assert row in systems() and "all-MiniLM-L6-v2" in systems()
    assert not any(name.startswith("tuned") for name in systems(tuned=False))

    with TestClient(create_app(ServeConfig(index=index)), base_url="http://127.0.0.1") as client:
        info = client.get("/info").json()
        assert info["tuned"]["label"] == setting.label
        mode = {"bm25": "bm25", "hybrid": "hybrid"}[setting.mode]
        assert info["default_mode"] == mode and client.get("/search", params={"q": "samples"}).json()["mode"] == mode
    with TestClient(create_app(ServeConfig(index=index, tuned=False)), base_url="http://127.0.0.1") as client:
        assert client.get("/info").json()["default_mode"] == "dense"
        assert client.get("/search", params={"q": "samples"}).json()["mode"] == "dense"

    found = runner.invoke(app, ["search", str(index), "samples", "-k", "2"], env={"COLUMNS": "200"})
    assert found.exit_code == 0 and row in found.output
    plain = runner.invoke(app, ["search", str(index), "samples", "-k", "2", "--no-tuned"], env={"COLUMNS": "200"})
    assert plain.exit_code == 0 and "tuned" not in plain.output

    with open_for_reading(AnswerConfig(index=index, reader=tmp_path, questions=["x"])) as system:
        assert system.name == row
    with open_for_reading(AnswerConfig(index=index, reader=tmp_path, questions=["x"], tuned=False)) as system:
        assert system.name == "all-MiniLM-L6-v2"


def test_the_masked_overlay_searches_as_an_index_rebuilt_with_the_masked_vectors(lexical):
    """Brute force over the stored vectors with the masked rows replaced gives the same lists, also when the masked
    passages crowd a query's list (25 of 30 masked, k = 3: rows searched again, deeper)."""
    with IndexFolder(lexical["index"]).open() as system:
        ids = list(system.retriever.passage_ids)
        masked = {pid: f"an unrelated text number {i} about gardens" for i, pid in enumerate(ids[:25])}
        dense = MaskedDense(system, masked)
        matrix = np.asarray(system.retriever.embeddings, np.float32).copy()
        for pid in masked:
            matrix[ids.index(pid)] = dense.vectors_of([pid])[0]
        queries = system.encode_queries(["code samples", "gardens", "laboratory team results"])
        for k in (3, 10):
            expected = [[ids[i] for i in np.argsort(-(matrix @ q), kind="stable")[:k]] for q in queries]
            assert [[h.passage_id for h in row] for row in dense.search_vectors(queries, k)] == expected


def test_linked_pairs_give_one_query_per_document_whose_own_document_is_left_out(tmp_path):
    """The linked generator reads dl/cm pairs: one per query document, short queries and self-links skipped; the
    query's id is its document's, so evaluation (which drops a query's own id, as BEIR does) leaves that document,
    which holds the sentence verbatim, out."""
    rows = {"query": ["Canines are loyal companions of many households.", "too short",
                      "Spaghetti boils in salted water.",
                      "Another sentence of the dogs page about hounds.", "Self links are no evidence at all here."],
            "query_doc_id": ["t0", "t2", "t1", "t0", "t3"],
            "positive_doc_id": ["t14", "t1", "t15", "t9", "t3"],
            "positive_text": ["Kittens chase yarn.", "x", "Baristas brew espresso.", "Whales migrate.", "y"]}
    pq.write_table(pa.table(rows), tmp_path / "dl.parquet")
    pseudo = GENERATORS["linked"](tmp_path).make(None, n=10, seed=0)  # type: ignore[arg-type]
    assert set(pseudo.queries) == {"t0", "t1"} and pseudo.skipped == 3
    assert pseudo.qrels["t1"] == {"t15": 1} and pseudo.masked == {}
    with pytest.raises(TuneError, match="--pairs"):
        GENERATORS["linked"]().make(None, n=10, seed=0)  # type: ignore[arg-type]


def test_a_tuned_record_is_checked_when_read():
    hybrid = {"label": "hybrid convex 0.3", "mode": "hybrid", "fusion": {"fusion": "convex", "alpha": 0.3}}
    setting = TunedRecord.from_json(hybrid).setting
    assert setting.fusion.alpha == 0.3 and setting.to_json()["fusion"]["fusion"] == "convex"
    for broken in ({"label": "x", "mode": "sparse"}, {"label": "x", "mode": "hybrid"},
                   {"label": "x", "mode": "hybrid", "fusion": {"alpha": 2.0}}, {"mode": "index"}):
        with pytest.raises(ValueError, match="pretriever tune"):
            TunedRecord.from_json(broken)


# ---------------------------------------------------------------- corpora that one generator does not fit (issue 39)

def _beir_store(root: Path, docs: list[tuple[str, str, str]]) -> Path:
    """A BEIR corpus.jsonl of ``docs`` (id, title, text) built into ROOT/store."""
    (root / "beir").mkdir(parents=True)
    (root / "beir" / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in docs), encoding="utf-8")
    return build(root / "beir" / "corpus.jsonl", root / "store", workers=1).path


def _index(store: Path, out: Path) -> Path:
    encode.run(IndexConfig(corpus=store, out=out))
    return out


def _no_encoding(*args, **kwargs):
    raise AssertionError("masked passages were encoded before every named generator was checked")


@pytest.mark.parametrize("kind", ["beir", "dpr-tsv"])
def test_the_default_set_leaves_out_titles_where_there_are_none_and_says_why(tmp_path, kind, monkeypatch):
    """MS MARCO-like passages (BEIR with empty titles) and a passages-only DPR TSV: titles makes nothing and linked
    has no pairs, so the default set runs masked-ict alone and names the other two as left out, with why (output
    and tune.json); asked for by name, titles (or linked) is still an error, raised before anything is encoded,
    and the command exits 2."""
    docs = [(f"t{i}", "", text) for i, (_, text) in enumerate(PARAPHRASES)]
    if kind == "beir":
        store = _beir_store(tmp_path, docs)
    else:
        tsv = tmp_path / "psgs.tsv"
        tsv.write_text("id\ttext\ttitle\n" + "".join(f"{i}\t{x}\t\n" for i, _, x in docs), encoding="utf-8")
        store = build(tsv, tmp_path / "store", workers=1).path
    index = _index(store, tmp_path / "index")
    with IndexFolder(index).open() as system:
        assert len({p.doc_id for p in system.lookup.passages([i for i, _, _ in docs]).values()}) == len(docs)
    done = CliRunner().invoke(app, ["tune", str(index), "-n", "16"], env={"COLUMNS": "240"})
    assert done.exit_code == 0, done.output
    written = json.loads((index / "tune.json").read_text(encoding="utf-8"))
    assert list(written["generators"]) == ["masked-ict"] and written["generators"]["masked-ict"]["queries"] == 16
    assert list(written["left_out"]) == ["titles", "linked"]
    why = written["left_out"]["titles"]
    assert why.startswith("left out by default because it made no pseudo-query") and "without a title" in why
    assert "16 sampled passages looked at: 16 without a title" in why
    assert written["left_out"]["linked"].startswith("left out by default because it needs a pairs folder: give "
                                                    "--pairs PAIRS_DIR")
    assert written["config"]["queries_from"] is None
    shown = " ".join(done.output.split())
    assert "titles: left out by default because" in shown and "linked: left out by default because" in shown
    monkeypatch.setattr(pretriever.tune.run, "MaskedDense", _no_encoding)  # a named misfit fails before encoding
    with pytest.raises(TuneError, match="titles generator was asked for but it made no pseudo-query"):
        run(TuneConfig(index=index, n=16, queries_from=["masked-ict", "titles"], dry_run=True))
    with pytest.raises(TuneError, match="linked generator was asked for but it needs a pairs folder: give --pairs"):
        run(TuneConfig(index=index, n=16, queries_from=["masked-ict", "linked"], dry_run=True))
    named = CliRunner().invoke(app, ["tune", str(index), "-n", "16", "--queries-from", "masked-ict,titles"],
                               env={"COLUMNS": "240"})
    assert named.exit_code == 2 and "leave it out of --queries-from" in " ".join(named.output.split())


def test_tune_fails_only_when_no_default_generator_fits(tmp_path):
    """One-sentence passages without titles: neither masked-ict nor titles makes a query; the error names each
    and why."""
    store = _beir_store(tmp_path, [(f"d{i}", "", f"Sentence number {i} stands alone here.") for i in range(6)])
    index = _index(store, tmp_path / "index")
    with pytest.raises(TuneError) as caught:
        run(TuneConfig(index=index, n=6, dry_run=True))
    message = str(caught.value)
    assert "no pseudo-query generator fits" in message and "6 of one sentence" in message
    assert "6 without a title" in message and "linked left out by default because it needs a pairs folder" in message
    assert "titles, titles of 3 words or more that name one document each" in message
    done = CliRunner().invoke(app, ["tune", str(index), "-n", "6"], env={"COLUMNS": "240"})
    assert done.exit_code == 2 and "no pseudo-query generator fits" in " ".join(done.output.split())


def test_titles_mask_every_passage_of_their_document_and_skip_titles_of_several_documents(tmp_path):
    """Titles that repeat on every passage of a document: the query's whole document loses its title (else its
    other passages hand the title over); a title that two documents share gives no query."""
    body = " ".join(f"Sentence {w} of the long report follows here." for w in ("one", "two", "three", "four",
                                                                              "five", "six", "seven", "eight"))
    docs = [{"id": "long", "title": "A Long Report Title", "text": body},
            {"id": "a", "title": "Shared Three Words", "text": "The first document with this title."},
            {"id": "b", "title": "Shared Three Words", "text": "The second document with this title."},
            {"id": "c", "title": "Only One Here", "text": "A short document whose title is its own."}]
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    store = build(src, tmp_path / "store", workers=1, words=20, min_title_chars=0).path
    lookup = PassageLookup(store)
    try:
        parts = lookup.document_passages(["long", "c", "nope"])
        assert set(parts) == {"long", "c"} and len(parts["long"]) >= 3
        assert [p.passage_id for p in parts["long"]] == [f"long-{i}" for i in range(len(parts["long"]))]
        assert lookup.title_counts(["Shared Three Words", "Only One Here", "Nope"]) == \
            {"Shared Three Words": 2, "Only One Here": 1}
        pseudo = GENERATORS["titles"]().make(lookup, n=10, seed=0)
    finally:
        lookup.close()
    long_ids = [p.passage_id for p in parts["long"]]
    assert sorted(pseudo.queries.values()) == ["A Long Report Title", "Only One Here"]
    assert set(pseudo.masked) == {*long_ids, "c-0"}  # every passage of the long document, each without its title
    assert all(m.title is None for m in pseudo.masked.values())
    assert pseudo.skips["whose title names more than one document"] == 2
    assert pseudo.skips["whose title (or document) already gave a query"] == len(long_ids) - 1
    budget = GENERATORS["titles"]()
    assert len(budget.make(PassageLookup(store), n=2, seed=0).masked) <= 2 + len(long_ids)  # stops at n masked


def test_the_linked_generator_on_the_enwiki_sample(enwiki_store, mined_all):
    """HLP's dual-link pairs mined from the real sample: each query is a sentence of its own document, the positive
    another document of the store, one query per document."""
    out, _ = mined_all
    lookup = PassageLookup(enwiki_store.path)
    try:
        pseudo = GENERATORS["linked"](out).make(lookup, n=1000, seed=0)
        assert len(pseudo.queries) >= 10 and pseudo.masked == {}
        texts = lookup.document_texts(list(pseudo.queries))
        positives = {d for judged in pseudo.qrels.values() for d in judged}
        assert lookup.known_documents(positives) == positives
    finally:
        lookup.close()
    for qid, query in pseudo.queries.items():
        assert " ".join(query.split()) in " ".join(texts[qid].split())
        assert qid not in pseudo.qrels[qid] and len(query.split()) >= 5
    assert set(pseudo.skips) <= {"whose query document already gave a query", "linking a document to itself",
                                 "with a query under 5 words"}


def test_the_default_set_with_pairs_runs_linked_end_to_end(cowiki_store, mined_co, tmp_path):
    """The co-mention wiki with its dl/cm pairs: linked joins the default set; its short titles leave titles out."""
    out, _ = mined_co
    index = _index(cowiki_store.path, tmp_path / "index")
    result = run(TuneConfig(index=index, n=50, pairs=out, dry_run=True))
    assert "linked" in result.generators and result.generators["linked"]["queries"] > 0
    assert set(result.generators) | set(result.left_out) == {"masked-ict", "titles", "linked"}
    assert result.manifest.left_out == result.left_out
    old = json.loads((Path(__file__).parent / "data" / "stage_layout_0.1" / "index" / "tune.json").read_text())
    assert list(result.manifest.to_json()) == list(old)  # the keys, in the order 0.1.0 wrote them


def test_tune_on_a_refined_index(lexical, tmp_path):
    """A refined index (linear, on the code-word corpus's judged queries) is tuned as it searches: its refined
    passages, with the masked ones encoded again by its model."""
    root = lexical["root"]
    refined = tmp_path / "refined"
    pretriever.refine.pipeline.run(RefineConfig(index=lexical["index"], out=refined, method="linear",
                                                queries=root / "queries.jsonl", qrels=root / "qrels.tsv", k=10))
    result = run(TuneConfig(index=refined, n=30))
    assert IndexFolder(refined).kind == "refined" and set(result.generators) == {"masked-ict", "titles"}
    assert result.generators["masked-ict"]["queries"] == 30 and list(result.left_out) == ["linked"]  # no --pairs
    assert IndexFolder(refined).meta.tuned_setting.label == result.choice.label
    assert result.choice.scores["bm25"].mean > result.choice.scores["dense"].mean  # the code words still decide


def test_compare_scores_another_index_of_the_store_on_the_same_pseudo_queries(lexical, tmp_path):
    """--compare: a random 2-layer encoder over the same store is scored beside the candidates (never one of
    them); all-MiniLM-L6-v2 beats it on the code-word corpus, and the paired interval says so."""
    from pretrain_fixtures import tiny_bert_st

    from pretriever.cli.tune import compared_line

    store = Path(json.loads((lexical["index"] / "index.json").read_text())["corpus"]["store"])
    weak = encode.run(IndexConfig(corpus=store, out=tmp_path / "weak", model=str(tiny_bert_st(tmp_path / "st")))).out
    result = run(TuneConfig(index=lexical["index"], n=30, queries_from=["masked-ict"], compare=weak,
                            dry_run=True))
    compared = result.manifest.compare
    assert compared["this_dense"]["pseudo_nDCG@10"] == round(result.choice.scores["dense"].mean, 4)
    assert compared["dense"]["pseudo_nDCG@10"] < compared["this_dense"]["pseudo_nDCG@10"]
    low, high = compared["difference"]["interval"]
    assert 0 < low <= compared["difference"]["pseudo_nDCG@10"] <= high
    assert compared["difference"]["pseudo_nDCG@10"] == pytest.approx(
        compared["this_dense"]["pseudo_nDCG@10"] - compared["dense"]["pseudo_nDCG@10"], abs=2e-4)
    assert result.choice.label == lexical["result"].choice.label  # not a candidate: the choice is the same
    assert compared_line(compared).endswith(": up")
    other = _index(_beir_store(tmp_path / "other", [(f"t{i}", t, x) for i, (t, x) in enumerate(PARAPHRASES)]),
                   tmp_path / "other-index")
    with pytest.raises(TuneError, match="the pseudo-queries' positives must be passages of both"):
        run(TuneConfig(index=lexical["index"], n=5, queries_from=["masked-ict"], compare=other, dry_run=True))
