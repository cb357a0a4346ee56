"""The reader stage: span labels, the marginal span loss, EM/F1, training, reloading, `answer`, bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from pretriever.cli import app
from pretriever.data.reading import ReadingExample, ReadingFileError, ReadingPassage, load_reading_file
from pretriever.index import encoder_info, save_dense_index
from pretriever.metrics import exact_match, f1_score, normalize_answer
from pretriever.models import resolve_model
from pretriever.reader.config import ReaderConfig
from pretriever.reader.errors import ReaderError
from pretriever.reader.model import load_reader_model, reader_loss
from pretriever.reader.predict import Reader, whole_words
from pretriever.reader.prepare import answer_questions, open_system
from pretriever.reader.samples import build_samples, instance
from pretriever.reader.spans import answer_char_spans, encode, token_spans
from pretriever.reader.train import collate, train_reader

DOCS = [
    ("eiffel", "Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower in Paris. It was designed by the "
                               "engineer Gustave Eiffel and completed in 1889."),
    ("hamlet", "Hamlet", "Hamlet is a tragedy written by William Shakespeare around 1600. The play is set in Denmark."),
    ("python", "Python (programming language)", "Python is a programming language created by Guido van Rossum and "
                                                "first released in 1991."),
    ("everest", "Mount Everest", "Mount Everest is the highest mountain on Earth, located in the Himalayas on the "
                                 "border of Nepal and China."),
    ("penicillin", "Penicillin", "Penicillin was discovered by Alexander Fleming in 1928 at St Mary's Hospital in "
                                 "London."),
    ("apollo", "Apollo 11", "Apollo 11 landed on the Moon in July 1969. Neil Armstrong was the first person to walk "
                            "on the lunar surface."),
]
QUESTIONS = {
    "eiffel": [("Who designed the Eiffel Tower?", "Gustave Eiffel"), ("When was the Eiffel Tower completed?", "1889")],
    "hamlet": [("Who wrote Hamlet?", "William Shakespeare"), ("Where is Hamlet set?", "Denmark")],
    "python": [("Who created the Python programming language?", "Guido van Rossum")],
    "everest": [("Where is Mount Everest located?", "the Himalayas")],
    "penicillin": [("Who discovered penicillin?", "Alexander Fleming")],
    "apollo": [("Who was the first person to walk on the Moon?", "Neil Armstrong")],
}
runner = CliRunner()


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_model(None))


def _squad(path: Path) -> Path:
    data = []
    for doc_id, title, text in DOCS:
        qas = [{"id": f"{doc_id}{i}", "question": q, "answers": [{"text": a, "answer_start": text.index(a)}]}
               for i, (q, a) in enumerate(QUESTIONS[doc_id])]
        data.append({"title": title, "paragraphs": [{"context": text, "qas": qas}]})
    path.write_text(json.dumps({"version": "1.1", "data": data}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A six-document store built by `pretriever corpus build`, its BM25 index, and SQuAD data on its passages."""
    root = tmp_path_factory.mktemp("reader")
    docs = root / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in DOCS), encoding="utf-8")
    for args in (["corpus", "build", str(docs), "--out", str(root / "store")],
                 ["index", "bm25", str(root / "store"), "--out", str(root / "bm25")]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
    return root, _squad(root / "squad.json")


@pytest.fixture(scope="module")
def trained(tiny):
    """MiniLM trained on the eight SQuAD questions (dev = the same questions, to exercise best-checkpoint)."""
    root, squad = tiny
    cfg = ReaderConfig(data=squad, out=root / "reader", dev=squad, passages=2, max_steps=30, batch_size=4, lr=2e-4,
                       max_length=64, eval_steps=15, seed=1)
    return train_reader(cfg)


# ---------------------------------------------------------------- span labels

def test_answer_offsets_map_to_the_answer_tokens(tokenizer):
    text = "Hamlet is a tragedy written by William Shakespeare around 1600."
    enc = encode(tokenizer, ["who wrote hamlet?"], ["Hamlet"], [text], 64)
    spans, dropped = token_spans(enc.offsets[0], answer_char_spans(text, ["william shakespeare"]))
    assert dropped == 0 and len(spans) == 1
    start, end = spans[0]
    ids = enc.features["input_ids"][0].tolist()
    assert tokenizer.decode(ids[start:end + 1]) == "william shakespeare"
    # the title token "hamlet" is not a passage token: the passage's own "Hamlet" is position 0 of the text
    first_passage = next(i for i, o in enumerate(enc.offsets[0]) if o is not None)
    assert enc.offsets[0][first_passage] == (0, 6)


def test_every_occurrence_is_labelled_and_marginalised(tokenizer):
    import torch

    text = "Paris is the capital. Many people visit Paris, and paris has museums; Parisian food."
    chars = answer_char_spans(text, ["Paris"])
    assert chars == [(0, 5), (40, 45), (51, 56)]  # case-insensitive, never inside "Parisian"
    ex = ReadingExample("what is the capital?", ["Paris"], [ReadingPassage(text, "France", "f", positive=True)])
    samples, counts = build_samples([ex], tokenizer, 64)
    assert len(samples[0].char_spans) == 3 and counts.kept == 1
    batch = collate([instance(samples[0], [], 1, 0, 0)], tokenizer, 64)
    assert batch["span_mask"].sum().item() == 3
    # the loss is -log of the summed probability of the three (start, end) pairs
    length = batch["input_ids"].shape[-1]
    start, end = torch.randn(1, 1, length), torch.randn(1, 1, length)
    loss = reader_loss(start, end, torch.zeros(1, 1), batch["span_starts"], batch["span_ends"], batch["span_mask"])
    ls, le = torch.log_softmax(start[0, 0], -1), torch.log_softmax(end[0, 0], -1)
    pairs = [(s, e) for s, e in zip(batch["span_starts"][0].tolist(), batch["span_ends"][0].tolist())]
    expected = -math.log(sum(math.exp(ls[s] + le[e]) for s, e in pairs))
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    single = -(ls[pairs[0][0]] + le[pairs[0][1]]).item()
    assert loss.item() < single


def test_an_answer_cut_by_truncation_is_dropped_and_counted(tokenizer):
    text = " ".join(["filler"] * 80) + " The answer is Zanzibar."
    kept_ex = ReadingExample("where?", ["filler"], [ReadingPassage(text, "T", "a", positive=True)])
    cut_ex = ReadingExample("where?", ["Zanzibar"], [ReadingPassage(text, "T", "b", positive=True)])
    samples, counts = build_samples([kept_ex, cut_ex], tokenizer, 32)
    assert [s.positive.passage_id for s in samples] == ["a"]
    assert counts.truncated_questions == 1
    kept_end = [o for o in encode(tokenizer, ["where?"], ["T"], [text], 32).offsets[0] if o is not None][-1][1]
    fillers_kept = sum(1 for i in range(80) if 7 * i + 6 <= kept_end)  # "filler " is 7 characters
    assert 0 < fillers_kept < 80
    assert counts.truncated_spans == (80 - fillers_kept) + 1  # the cut fillers and Zanzibar
    no_answer = ReadingExample("q", ["absent"], [ReadingPassage("nothing here", "T", "c", positive=True)])
    assert build_samples([no_answer], tokenizer, 32)[1].no_positive == 1


def test_squad_offsets_are_checked_and_other_occurrences_found(tokenizer, tmp_path):
    text = DOCS[0][2]
    assert text.index("Eiffel") == 4 and text.index("Gustave Eiffel") == 91
    qas = [{"id": "1", "question": "whose name?", "answers": [{"text": "Eiffel", "answer_start": 99}]},
           {"id": "2", "question": "whose name?", "answers": [{"text": "Eiffel", "answer_start": 3}]}]  # wrong offset
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"data": [{"title": "Eiffel Tower", "paragraphs": [{"context": text, "qas": qas}]}]}))
    examples = load_reading_file(path)
    assert examples[0].answers == ["Eiffel"] and examples[0].passages[0].answer_starts == [(99, "Eiffel")]
    samples, counts = build_samples(examples, tokenizer, 64)
    assert samples[0].char_spans == [(4, 10), (99, 105)]  # the given one and the other occurrence
    assert samples[1].char_spans == [(4, 10), (99, 105)] and counts.squad_offsets_wrong == 1
    assert whole_words("Penicillin was", 3, 7) == (0, 10)


# ---------------------------------------------------------------- EM / F1

@pytest.mark.parametrize("prediction, golds, em, f1", [
    ("The Eiffel Tower", ["Eiffel Tower"], 1.0, 1.0),  # article
    ("an apple", ["apple"], 1.0, 1.0),
    ("Eiffel Tower!", ["eiffel tower"], 1.0, 1.0),  # punctuation and case
    ("U.S.", ["US"], 1.0, 1.0),  # punctuation removed, not spaced
    ("«Röntgen»", ["Röntgen"], 1.0, 1.0),  # Unicode punctuation (guillemets)
    ("Ro\u0308ntgen", ["R\u00f6ntgen"], 1.0, 1.0),  # combining diaeresis vs precomposed
    ("William  Shakespeare", ["Shakespeare", "William Shakespeare"], 1.0, 1.0),  # several golds, whitespace
    ("William Shakespeare", ["Shakespeare"], 0.0, 2 / 3),
    ("Paris", ["London", "Berlin"], 0.0, 0.0),
    ("the", ["a"], 1.0, 1.0),  # both normalise to nothing
])
def test_em_and_f1(prediction, golds, em, f1):
    assert exact_match(prediction, golds) == em
    assert f1_score(prediction, golds) == pytest.approx(f1)


def test_regex_answers_and_normalisation():
    assert normalize_answer("  The  Beatles, an English band ") == "beatles english band"
    assert exact_match("1,000 km", [r"1,?000\s*(km|kilometers)"], regex=True) == 1.0
    assert exact_match("about 1000 km", [r"1,?000"], regex=True) == 0.0  # must match at the start
    assert exact_match("x", ["(unclosed"], regex=True) == 0.0
    assert f1_score("1000", [r"1,?000"], regex=True) == 1.0


# ---------------------------------------------------------------- training, reloading, answering

@pytest.mark.slow
def test_training_lowers_the_loss_and_the_saved_reader_reloads(trained, tiny, tokenizer):
    import torch

    out = trained.out
    meta = json.loads((out / "reader.json").read_text())
    curve = [p["loss"] for p in meta["loss_curve"]]
    assert curve[-1] < curve[0] / 2
    assert meta["data"]["kept"] == 8 and meta["dev_curve"] and meta["best_checkpoint"]
    assert meta["dev"]["EM"] > meta["dev_before"]["EM"]  # the same dev questions, read before training
    # the same batch: the saved reader's loss is far below the untrained model's (fresh heads)
    samples, _ = build_samples(load_reading_file(tiny[1]), tokenizer, 64)
    pool = [s.positive for s in samples]
    batch = collate([instance(s, pool, 2, 0, i) for i, s in enumerate(samples)], tokenizer, 64)
    torch.manual_seed(0)
    losses = []
    for source in (None, str(out)):
        module, _ = load_reader_model(source)
        with torch.no_grad():
            losses.append(module.eval()(**batch)["loss"].item())
    assert losses[1] < losses[0] / 2
    # a standard transformers question-answering folder: AutoModelForQuestionAnswering reads it and its
    # span head alone ranks the answer's start among its top three (8 training questions: near, not exact)
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    plain, tok = AutoModelForQuestionAnswering.from_pretrained(out), AutoTokenizer.from_pretrained(out)
    inputs = tok("Who wrote Hamlet?", DOCS[1][2], return_tensors="pt")
    with torch.no_grad():
        logits = plain(**inputs)
    context = torch.tensor([sid == 1 for sid in inputs.sequence_ids(0)])  # as the pipeline, only context tokens
    starts = logits.start_logits[0].masked_fill(~context, -1e4).topk(3).indices.tolist()
    assert "william" in [tok.decode(inputs["input_ids"][0][i:i + 1]) for i in starts]


@pytest.mark.slow
def test_answer_returns_the_trained_span(trained, tiny):
    root, _ = tiny
    result = runner.invoke(app, ["answer", str(root / "bm25"), "--reader", str(trained.out), "Who wrote Hamlet?",
                                 "Who discovered penicillin?", "-k", "3", "--json"])
    assert result.exit_code == 0, result.output
    answers = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [a["answer"] for a in answers] == ["William Shakespeare", "Alexander Fleming"]
    assert answers[0]["title"] == "Hamlet" and answers[0]["passage_id"] == "hamlet-0"
    hamlet = DOCS[1][2]
    assert hamlet[answers[0]["start"]:answers[0]["end"]] == "William Shakespeare"
    printed = runner.invoke(app, ["answer", str(root / "bm25"), "--reader", str(trained.out), "Who wrote Hamlet?",
                                  "-k", "3", "--rank", "span"])
    assert printed.exit_code == 0 and "William Shakespeare" in printed.stdout and "Hamlet" in printed.stdout


@pytest.mark.slow
def test_prepare_writes_dpr_reader_json_that_trains_and_evaluates(trained, tiny, tmp_path):
    root, _ = tiny
    qa = tmp_path / "qa.jsonl"
    qa.write_text("".join(json.dumps({"question": q, "answer": [a]}) + "\n"
                          for qs in QUESTIONS.values() for q, a in qs), encoding="utf-8")
    out = tmp_path / "reader-data.json"
    result = runner.invoke(app, ["reader", "prepare", str(root / "bm25"), str(qa), "-k", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    items = json.loads(out.read_text())
    hamlet = next(i for i in items if i["question"] == "Who wrote Hamlet?")
    assert hamlet["ctxs"][0]["id"] == "hamlet-0" and hamlet["ctxs"][0]["has_answer"] is True
    assert all(not c["has_answer"] for c in hamlet["ctxs"][1:])
    examples = load_reading_file(out)
    assert examples[2].passages[0].positive and examples[2].answers == ["William Shakespeare"]
    result = runner.invoke(app, ["reader", "evaluate", str(root / "bm25"), str(qa), "--reader", str(trained.out),
                                 "-k", "3", "--out", str(tmp_path / "eval.json")])
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "eval.json").read_text())["metrics"]
    assert metrics["top-3 accuracy"] == 1.0 and metrics["EM"] >= 0.5 and metrics["questions"] == 8
    # the same through `pretriever evaluate --reader`, beside the retrieval metrics
    result = runner.invoke(app, ["evaluate", "--bm25", "--corpus", str(root / "store"), "--answers", str(qa),
                                 "--reader", str(trained.out), "--reader-k", "3", "--k", "1,3", "--no-plots",
                                 "--out", str(tmp_path / "eval")])
    assert result.exit_code == 0, result.output
    saved = json.loads((tmp_path / "eval" / "results.json").read_text())
    assert saved["reader"]["systems"]["bm25"] == metrics


# ---------------------------------------------------------------- bad input

def test_bad_input_gets_a_clear_error(tiny, tmp_path):
    root, _ = tiny
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "a?", "answer": ["b"]}\n{"question": "no answers here"}\n', encoding="utf-8")
    result = runner.invoke(app, ["reader", "prepare", str(root / "bm25"), str(bad), "--out", str(tmp_path / "o.json")])
    assert result.exit_code == 2 and "line 2" in result.output and "answer" in result.output
    squad = tmp_path / "bad-squad.json"
    squad.write_text(json.dumps({"data": [{"title": "T", "paragraphs": [{"context": "c", "qas": [{"id": "1"}]}]}]}))
    with pytest.raises(ReadingFileError, match=r"qas\[0\].*question"):
        load_reading_file(squad)
    result = runner.invoke(app, ["reader", "train", str(squad), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "question" in result.output


def test_empty_index_and_no_passage_retrieved(tiny, tmp_path):
    root, _ = tiny
    system = open_system(root / "bm25", "index")
    with pytest.raises(ReaderError, match="no passage was retrieved"):
        answer_questions(system, Reader(None, None), ["zzzq qqqz"], 3)  # no term of it is in the index
    with pytest.raises(ReaderError, match="nothing was retrieved"):
        Reader(None, None).read("q", [])
    # an index folder with no passages (a dense index over no vectors, on the tiny store)
    empty = tmp_path / "empty-index"
    save_dense_index(empty, [], np.zeros((0, 384), dtype="float32"), encoder_info(None, 128, True, True),
                     extra={"corpus": {"store": str(root / "store")}})
    result = runner.invoke(app, ["answer", str(empty), "--reader", str(root), "who?"])
    assert result.exit_code == 2 and "holds no passages" in result.output
