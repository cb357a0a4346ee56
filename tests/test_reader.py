"""The reader stage: span labels, the marginal span loss, EM/F1, training, reloading, `answer`, bad input."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import QA, shared
from reader_fixtures import DOCS, QUESTIONS
from pretriever.cli import app
from pretriever import stage
from pretriever.evaluate import pipeline
from pretriever.evaluate.config import EvaluateConfig
from pretriever.data.reading import ReadingExample, ReadingFileError, ReadingPassage, load_reading_file
from pretriever.index import IndexFolder, encoder_info, save_dense_index
from pretriever.metrics import exact_match, f1_score, normalize_answer
from pretriever.models import resolve_model
from pretriever.reader.config import ReaderConfig, ReadOptions
from pretriever.reader.errors import ReaderError
from pretriever.reader.model import load_reader_model, reader_loss
from pretriever.reader.predict import Reader, whole_words
from pretriever.reader.prepare import answer_questions
from pretriever.reader.samples import build_samples, instance
from pretriever.reader.spans import answer_char_spans, encode, token_spans
from pretriever.reader.train import collate, run
from pretriever.retrieval import Passage

runner = CliRunner()


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_model(None))


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


def test_each_epoch_samples_one_of_all_positives_and_fresh_negatives_hard_first(tokenizer):
    positives = [ReadingPassage(f"Paris is the capital, says source {i}.", "France", f"p{i}", positive=True)
                 for i in range(3)]
    hard = [ReadingPassage(f"Lyon is a city, says source {i}.", "France", f"h{i}") for i in range(6)]
    ex = ReadingExample("what is the capital?", ["Paris"], positives + hard)
    other = ReadingExample("what river?", ["Seine"], [ReadingPassage("The Seine flows.", "Seine", "s", positive=True)])
    samples, counts = build_samples([ex, other], tokenizer, 64)
    assert [p.passage_id for p in samples[0].positives] == ["p0", "p1", "p2"]  # all kept, not only the first
    assert [p.passage_id for p in samples[0].negatives] == [f"h{i}" for i in range(6)]  # all of them
    pool = [Passage("s", "Seine", "The Seine flows.")]
    epochs = [instance(samples[0], pool, 4, seed=13, index=0, epoch=e) for e in range(12)]
    assert {inst.passages[0].passage_id for inst in epochs} == {"p0", "p1", "p2"}
    assert all(len(inst.passages) == 4 and {p.passage_id for p in inst.passages[1:]} <= {f"h{i}" for i in range(6)}
               for inst in epochs)  # the question's own negatives come before any random one
    assert len({tuple(p.passage_id for p in inst.passages[1:]) for inst in epochs}) > 6  # fresh every epoch
    assert epochs[3].passages == instance(samples[0], pool, 4, seed=13, index=0, epoch=3).passages  # reproducible
    for inst in epochs:  # the spans are those of the positive drawn
        start, end = inst.char_spans[0]
        assert inst.passages[0].text[start:end] == "Paris"
    # too few of its own: random passages of other questions fill up, never a positive
    few = instance(samples[1], [Passage("p0", "France", positives[0].text), pool[0]], 3, seed=0, index=1)
    assert few.passages[0].passage_id == "s" and all(p.passage_id == "p0" for p in few.passages[1:])


def test_the_trainer_tells_the_dataset_each_epoch(tokenizer):
    from transformers import TrainerControl, TrainerState

    from pretriever.reader.train import InstanceSet, epoch_callback

    positives = [ReadingPassage(f"Paris, source {i}.", "France", f"p{i}", positive=True) for i in range(4)]
    samples, _ = build_samples([ReadingExample("capital?", ["Paris"], positives)], tokenizer, 64)
    dataset = InstanceSet(samples, [], 1, seed=0)
    callback, seen = epoch_callback(dataset), set()
    for epoch in range(8):
        callback.on_epoch_begin(None, TrainerState(epoch=float(epoch)), TrainerControl())
        assert dataset.epoch == epoch
        seen.add(dataset[0].passages[0].passage_id)
    assert len(seen) > 1


def test_presets_set_the_papers_settings_on_options_left_at_their_defaults():
    cpu = ReaderConfig(data=Path("d.json"), out=Path("r"))
    assert (cpu.passages, cpu.max_length, cpu.batch_size) == (4, 256, 4)  # CPU-sized
    dpr = ReaderConfig(data=Path("d.json"), out=Path("r"), preset="dpr")
    assert (dpr.passages, dpr.max_length, dpr.batch_size, dpr.learning_rate, dpr.epochs) == (24, 350, 16, 2e-5, 2.0)
    cmore = ReaderConfig(data=Path("d.json"), out=Path("r"), preset="cmore", passages=8)
    assert (cmore.passages, cmore.max_length, cmore.batch_size, cmore.epochs) == (8, 350, 16, 3.0)  # 8: given
    with pytest.raises(ValueError, match="preset"):
        ReaderConfig(data=Path("d.json"), out=Path("r"), preset="orqa")


@pytest.mark.slow
def test_a_training_run_draws_its_instances_anew_each_epoch(tmp_path, monkeypatch):
    epochs = []

    def spy(sample, pool, passages, seed, index, epoch=0):
        epochs.append(epoch)
        return instance(sample, pool, passages, seed, index, epoch)

    monkeypatch.setattr("pretriever.reader.train.instance", spy)
    data = [{"title": "France", "paragraphs": [{"context": f"Paris is the capital of France, source {i}.", "qas": [
        {"id": str(i), "question": "What is the capital?", "answers": [{"text": "Paris", "answer_start": 0}]}]}]}
        for i in range(4)]
    (tmp_path / "s.json").write_text(json.dumps({"version": "v1.1", "data": data}), encoding="utf-8")
    run(ReaderConfig(data=tmp_path / "s.json", out=tmp_path / "r", passages=2, epochs=3, batch_size=2,
                     max_length=48, dev_share=0.0))
    assert sorted(set(epochs)) == [0, 1, 2] and len(epochs) == 12


def test_samples_record_their_input_length(tokenizer):
    """The length batches are grouped by: word pieces of the question with its positive, as tokenized for
    training (title included, cut at max_length)."""
    examples = [e for e in load_reading_file(shared(QA / "squad2-dev-5articles.json")) if e.answers][:40]
    samples, _ = build_samples(examples, tokenizer, 256)
    for s in samples:
        p = s.positive
        full = len(tokenizer(s.question, f"{p.title} {tokenizer.sep_token} {p.text}")["input_ids"])
        assert s.length == min(full, 256)
    assert len({s.length for s in samples}) > 5 and max(s.length for s in samples) == 256  # Normans: long ones cut


def test_a_question_that_leaves_no_room_for_its_passage_is_named(tokenizer):
    """As the tokenizer refuses to cut a pair's passage to nothing, but with the question and the option named."""
    ex = ReadingExample("why " * 40 + "is it so?", ["Paris"],
                        [ReadingPassage("Paris is the capital of France. " * 3, "France", "f", positive=True)])
    with pytest.raises(ReaderError, match=r"a question of 44 word pieces leaves no room .* --max-length 32: 'why why"):
        build_samples([ex], tokenizer, 32)
    assert build_samples([ex], tokenizer, 128)[1].kept == 1  # room enough


@pytest.mark.parametrize("joined", ["bert", "roberta-like"])
@pytest.mark.parametrize("side", ["right", "left"])
def test_a_batch_is_what_tokenising_its_pairs_together_gives(tokenizer, side, joined):
    """The inputs are joined from each question's and passage's word pieces, tokenised once: the batch is the one
    that tokenising every pair of it at once gives (BERT's [CLS] q [SEP] p [SEP] with token types, or a RoBERTa-like
    q [SEP] [SEP] p without; padded on the tokenizer's side; passages cut to fit), and the answer spans point at
    the same tokens."""
    import copy

    import torch
    from tokenizers import processors

    tok = copy.deepcopy(tokenizer)
    tok.padding_side = side
    if joined == "roberta-like":
        tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", tok.cls_token_id), ("[SEP]", tok.sep_token_id)])
        tok.model_input_names = ["input_ids", "attention_mask"]
    examples = [e for e in load_reading_file(shared(QA / "squad2-dev-5articles.json")) if e.answers][:12]
    samples, _ = build_samples(examples, tok, 160)  # some positives are cut at 160 pieces, some are shorter
    pool = [p for s in samples for p in s.positives]
    instances = [instance(s, pool, 3, seed=0, index=i) for i, s in enumerate(samples)]
    batch = collate(instances, tok, 160)
    flat = [p for inst in instances for p in inst.passages]
    expected = encode(tok, [inst.question for inst in instances for _ in range(3)], [p.title for p in flat],
                      [p.text for p in flat], 160)
    assert len({s.length for s in samples}) > 1 and max(s.length for s in samples) == 160  # cut and padded
    assert ("token_type_ids" in batch) == (joined == "bert")
    for key, value in expected.features.items():
        assert batch[key].dtype == value.dtype and torch.equal(batch[key].view(len(flat), -1), value), key
    assert batch["passage_mask"].view(len(flat), -1).tolist() == [[o is not None for o in row] for row in
                                                                   expected.offsets]
    for b, inst in enumerate(instances):
        spans, _ = token_spans(expected.offsets[3 * b], inst.char_spans)
        kept = batch["span_mask"][b].tolist()
        got = [(s, e) for s, e, k in zip(batch["span_starts"][b].tolist(), batch["span_ends"][b].tolist(), kept) if k]
        assert spans and got == spans


@pytest.mark.slow
@pytest.mark.parametrize("grouped", [True, False])
def test_batches_are_grouped_by_length_unless_turned_off(tmp_path, monkeypatch, grouped):
    import transformers.trainer_pt_utils as pt_utils

    given = []

    class Spy(pt_utils.LengthGroupedSampler):
        def __init__(self, batch_size, dataset=None, lengths=None, **kwargs):
            given.append((batch_size, list(lengths)))
            super().__init__(batch_size, dataset, lengths, **kwargs)

    monkeypatch.setattr(pt_utils, "LengthGroupedSampler", Spy)
    words = ["short", "a much longer context that goes on and on about the capital of France and more"]
    data = [{"title": "France", "paragraphs": [{"context": f"Paris is the capital, {words[i % 2]}.", "qas": [
        {"id": str(i), "question": "What is the capital?", "answers": [{"text": "Paris", "answer_start": 0}]}]}]}
        for i in range(4)]
    (tmp_path / "s.json").write_text(json.dumps({"version": "v1.1", "data": data}), encoding="utf-8")
    run(ReaderConfig(data=tmp_path / "s.json", out=tmp_path / "r", passages=1, max_steps=2, batch_size=2,
                     max_length=48, dev_share=0.0, group_by_length=grouped))
    if not grouped:
        assert given == []
        return
    (batch, lengths), = given
    assert batch == 2 and len(lengths) == 4 and lengths[0] < lengths[1] and lengths[0] == lengths[2]


def test_squad_v2_unanswerable_questions_are_skipped_and_counted(tokenizer):
    examples = load_reading_file(shared(QA / "squad2-dev-5articles.json"))
    assert len(examples) == 1407 and sum(1 for e in examples if e.answers) == 705  # SQuAD 2.0 dev, 5 articles
    samples, counts = build_samples(examples[:60], tokenizer, 384)
    assert counts.unanswerable == sum(1 for e in examples[:60] if not e.answers) > 0
    assert counts.kept + counts.unanswerable + counts.no_positive + counts.truncated_questions == 60
    assert all(s.answers for s in samples)


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
    ("William  Shakespeare", ["Shakespeare", "William Shakespeare"], 1.0, 1.0),  # several golds, whitespace
    ("William Shakespeare", ["Shakespeare"], 0.0, 2 / 3),
    ("Paris", ["London", "Berlin"], 0.0, 0.0),
    ("the", ["a"], 1.0, 1.0),  # both normalise to nothing
])
def test_em_and_f1(prediction, golds, em, f1):
    assert exact_match(prediction, golds) == em
    assert f1_score(prediction, golds) == pytest.approx(f1)


# The tricky pairs of issue 22. Expected values were computed by SQuAD v1.1's evaluate-v1.1.py rules
# (lower; delete string.punctuation; \b(a|an|the)\b -> " "; split/join), which DPR's
# qa_validation._normalize_answer copies: only ASCII punctuation goes, nothing is Unicode-folded.
TRICKY = [
    # prediction, gold, official EM, official F1, lenient EM
    ("\u201cThe Beatles\u201d", "The Beatles", 0.0, 0.0, 1.0),  # curly quotes ("\u201c beatles\u201d": 2 tokens)
    ("\u2018Hello\u2019", "Hello", 0.0, 0.0, 1.0),
    ("1914\u20131918", "1914-1918", 0.0, 0.0, 1.0),  # en dash stays; "-" is deleted: "19141918"
    ("\ufb01nal", "final", 0.0, 0.0, 1.0),  # ligature fi: only NFKC splits it
    ("x\u00b2", "x2", 0.0, 0.0, 1.0),  # superscript two
    ("\u00abLe Monde\u00bb", "Le Monde", 0.0, 0.0, 1.0),  # guillemets stick to the words: "\u00able", "monde\u00bb"
    ("\u00bfQu\u00e9?", "Qu\u00e9", 0.0, 0.0, 1.0),  # inverted question mark stays, "?" goes
    ("Qu\u00e9", "Que\u0301", 0.0, 0.0, 1.0),  # composed vs decomposed \u00e9
    ("Caf\u00e9", "Cafe\u0301", 0.0, 0.0, 1.0),
    ("\u201eFaust\u201c", "Faust", 0.0, 0.0, 1.0),
    ("U.S.", "US", 1.0, 1.0, 1.0),
    ("The  Eiffel Tower.", "eiffel tower", 1.0, 1.0, 1.0),
]


@pytest.mark.parametrize("prediction, gold, em, f1, lenient_em", TRICKY)
def test_em_f1_follow_squad_v11_by_default_and_lenient_only_when_asked(prediction, gold, em, f1, lenient_em):
    assert exact_match(prediction, [gold]) == em
    assert f1_score(prediction, [gold]) == pytest.approx(f1)
    assert exact_match(prediction, [gold], lenient=True) == lenient_em


def test_official_normal_forms_of_the_tricky_answers():
    assert normalize_answer("\u201cThe Beatles\u201d") == "\u201c beatles\u201d"  # "the" after a curly quote goes
    assert normalize_answer("1914\u20131918") == "1914\u20131918" and normalize_answer("1914-1918") == "19141918"
    assert normalize_answer("\u00abLe Monde\u00bb") == "\u00able monde\u00bb"
    assert normalize_answer("\u00bfQu\u00e9?") == "\u00bfqu\u00e9"
    assert normalize_answer("\u00abLe Monde\u00bb", lenient=True) == "le monde"
    assert normalize_answer("1914\u20131918", lenient=True) == "19141918"


def test_results_name_the_normalisation():
    from pretriever.metrics import LENIENT_NORMALISATION, SQUAD_NORMALISATION
    from pretriever.reader.evaluate import evaluate_gold

    assert evaluate_gold(None, [], [], 4, 0)["normalisation"] == SQUAD_NORMALISATION
    assert evaluate_gold(None, [], [], 4, 0, lenient=True)["normalisation"] == LENIENT_NORMALISATION
    assert "NFKC" in LENIENT_NORMALISATION and "Unicode punctuation" in LENIENT_NORMALISATION


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
    assert [p["step"] for p in meta["dev_curve"]] == [15, 30]
    assert meta["dev"]["EM"] == max(p["EM"] for p in meta["dev_curve"])  # the written reader is the best one
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


def test_prepare_leaves_out_a_qac_questions_own_source_unless_kept(tiny, tmp_path):
    root, _ = tiny
    qa = tmp_path / "qac-dpr.json"  # as `pairs export --format dpr` writes a qac triplet: its statement's passage
    question = "Who wrote the tragedy Hamlet, set in Denmark, in the language of Paris?"  # BM25 hits 3 passages
    qa.write_text(json.dumps([{"question": question, "answers": ["William Shakespeare"], "positive_ctxs": [],
                               "source_passage_id": "hamlet-0"}]), encoding="utf-8")
    out = tmp_path / "r.json"
    result = runner.invoke(app, ["reader", "prepare", str(root / "bm25"), str(qa), "-k", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    ctxs = json.loads(out.read_text())[0]["ctxs"]
    assert len(ctxs) == 2 and "hamlet-0" not in [c["id"] for c in ctxs]  # still k passages
    result = runner.invoke(app, ["reader", "prepare", str(root / "bm25"), str(qa), "-k", "2", "--keep-source",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())[0]["ctxs"][0]["id"] == "hamlet-0"  # the top hit when kept


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


@pytest.mark.slow
def test_evaluate_reports_reader_only_em_on_the_gold_passages(trained, tiny, tmp_path):
    """DPR JSON with positive_ctxs for five of the eight questions: `evaluate --reader` reads each of those
    on its gold passage alone, and "gold EM" is the mean over those five (none retrieved, no negatives)."""
    root, _ = tiny
    texts = {doc: (title, text) for doc, title, text in DOCS}
    with_gold = {"hamlet", "python", "penicillin", "apollo"}  # five questions
    items = [{"question": q, "answers": [a], "positive_ctxs": [{"title": texts[doc][0], "text": texts[doc][1],
                                                                "passage_id": f"{doc}-0"}] if doc in with_gold else []}
             for doc, qs in QUESTIONS.items() for q, a in qs]
    qa = tmp_path / "gold.json"
    qa.write_text(json.dumps(items), encoding="utf-8")
    reader = Reader.load(trained.out)
    expected = [exact_match(reader.read(i["question"], [Passage(c["passage_id"], c["title"], c["text"])
                                                        for c in i["positive_ctxs"]]).text, i["answers"])
                for i in items if i["positive_ctxs"]]
    assert len(expected) == 5 and sum(expected) >= 3  # the reader learnt these questions
    result = runner.invoke(app, ["evaluate", "--bm25", "--corpus", str(root / "store"), "--answers", str(qa),
                                 "--reader", str(trained.out), "--reader-k", "1", "--k", "1", "--no-plots",
                                 "--out", str(tmp_path / "eval")])
    assert result.exit_code == 0, result.output
    scores = json.loads((tmp_path / "eval" / "results.json").read_text())["reader"]["systems"]["bm25"]
    assert scores["gold questions"] == 5 and scores["questions"] == 8
    assert scores["gold EM"] == pytest.approx(sum(expected) / 5)


@pytest.mark.slow
def test_a_library_evaluate_run_reads_behind_the_systems_it_opened_once(trained, tiny, tmp_path, monkeypatch):
    """`evaluate.run(cfg)` with cfg.reader is the whole of `pretriever evaluate --reader`: the reader's scores
    are in the result and in results.json, each index is opened once and results.json is written once (the
    library ignored cfg.reader; the command read afterwards, opening every index again and rewriting the file)."""
    root, _ = tiny
    qa = tmp_path / "qa.jsonl"
    qa.write_text("".join(json.dumps({"question": q, "answer": [a]}) + "\n"
                          for qs in QUESTIONS.values() for q, a in qs), encoding="utf-8")
    opened, written = [], []
    open_folder, write = IndexFolder.open, stage.write_json  # every manifest is written through pretriever.stage
    monkeypatch.setattr(IndexFolder, "open",
                        lambda self, *a, **kw: opened.append(self.path) or open_folder(self, *a, **kw))
    monkeypatch.setattr(stage, "write_json", lambda path, data: written.append(path) or write(path, data))
    cfg = EvaluateConfig(index=[root / "bm25"], answers=qa, reader=trained.out, reader_k=3, ks=[1, 3], plots=False,
                         out=tmp_path / "eval")
    result = pipeline.run(cfg)
    assert opened == [root / "bm25"] and [p for p in written if p.name == "results.json"] == [
        tmp_path / "eval" / "results.json"]
    saved = json.loads((tmp_path / "eval" / "results.json").read_text())
    assert saved["reader"] == result.manifest.to_json()["reader"] == result.evaluation.reader
    [(name, scores)] = saved["reader"]["systems"].items()
    assert name in saved["systems"] and saved["reader"]["k"] == 3 and saved["reader"]["match"] == "string"
    assert scores["questions"] == 8 and scores["top-3 accuracy"] == 1.0 and scores["EM"] >= 0.5


# ---------------------------------------------------------------- resume, best checkpoint

def _short_run(squad: Path, out: Path, **options) -> ReaderConfig:
    """Four optimizer steps, a checkpoint every two."""
    return ReaderConfig(data=squad, out=out, passages=2, max_steps=4, batch_size=4, learning_rate=2e-4, max_length=64,
                        eval_steps=2, seed=1, **options)


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def _same(a: dict, b: dict, prefix: str = "") -> bool:
    import torch

    return all(torch.equal(a[prefix + k], v) for k, v in b.items())


class _Interrupted(Exception):
    pass


def _callback(on_step, on_start=lambda model: None):
    """A Trainer callback: ``on_step(step)`` after each optimizer step, ``on_start(model)`` before the first
    step this run takes."""
    from transformers import TrainerCallback

    class Step(TrainerCallback):
        started = False

        def on_step_begin(self, args, state, control, model=None, **kwargs):
            if not self.started:
                self.started = True
                on_start(model)

        def on_step_end(self, args, state, control, **kwargs):
            on_step(state.global_step)

    return Step()


@pytest.mark.slow
def test_resume_continues_an_interrupted_run(tiny, tmp_path, monkeypatch):
    """Killed after the checkpoint of step 2, `--resume` runs steps 3 and 4 only, from that checkpoint's weights
    and optimizer state, and ends with the weights of the same run never interrupted (same seed: same heads,
    same data order, same dropout)."""
    _, squad = tiny
    whole = run(_short_run(squad, tmp_path / "whole", dev_share=0.0))  # no dev: the last step is written

    def stop_at_3(step):
        if step == 3:
            raise _Interrupted  # killed after the checkpoint of step 2, before the one of step 4

    monkeypatch.setattr("pretriever.reader.train.progress_callback", lambda report: _callback(stop_at_3))
    cut = _short_run(squad, tmp_path / "cut", dev_share=0.0)
    with pytest.raises(_Interrupted):
        run(cut)
    checkpoint = cut.out / "checkpoints" / "checkpoint-2"
    assert sorted(p.name for p in checkpoint.parent.iterdir()) == ["checkpoint-2"]
    at_2 = _weights(checkpoint)
    with pytest.raises(ReaderError, match="already holds a reader"):  # no silent restart over it
        run(cut)
    steps: list[int] = []
    start: dict = {}
    monkeypatch.setattr("pretriever.reader.train.progress_callback", lambda report: _callback(
        steps.append, lambda model: start.update({k: v.detach().clone() for k, v in model.state_dict().items()})))
    resumed = run(replace(cut, resume=True))
    assert steps == [3, 4]  # only the steps after the checkpoint were run
    assert start.keys() == at_2.keys() and _same(at_2, start)  # and from its weights
    meta, whole_meta = (json.loads((r.out / "reader.json").read_text()) for r in (resumed, whole))
    assert meta["steps"] == 4 and meta["dev_before"] is None
    # step 2: the same seed gave the same first steps, and the history came back with the state
    assert meta["loss_curve"][0] == whole_meta["loss_curve"][0]
    assert [(c["step"], c["learning_rate"]) for c in meta["loss_curve"]] == \
        [(c["step"], c["learning_rate"]) for c in whole_meta["loss_curve"]]  # the schedule resumed at step 3
    assert not _same(at_2, _weights(resumed.out), prefix="qa.")  # it trained on from there
    assert _same(_weights(whole.out), _weights(resumed.out))  # bit-equal to the run never interrupted
    with pytest.raises(ReaderError, match="nothing to resume"):
        run(_short_run(squad, tmp_path / "never", resume=True))


@pytest.mark.slow
def test_the_written_reader_is_the_best_dev_checkpoint_not_the_last(tiny, tmp_path, monkeypatch):
    """Dev EM is scripted per set of weights (0.75 after step 2, 0.25 after step 4), so the best checkpoint
    is not the last: the reader written must be step 2's, and its final dev EM the curve's best."""
    import torch

    _, squad = tiny
    scripted, seen = [0.0, 0.75, 0.25], {}

    def fingerprint(module) -> float:
        return float(sum(p.detach().double().sum() for p in module.parameters()))

    def dev_em(reader, samples, *args, **kwargs):
        key = fingerprint(reader.module)
        if key not in seen:
            seen[key] = scripted[len(seen)]
        return {"EM": seen[key], "F1": seen[key], "questions": len(samples)}

    monkeypatch.setattr("pretriever.reader.train.evaluate_gold", dev_em)
    result = run(_short_run(squad, tmp_path / "r", dev=squad))
    meta = json.loads((result.out / "reader.json").read_text())
    old = Path(__file__).parent / "data" / "stage_layout_0.1" / "reader" / "reader.json"
    assert list(meta) == list(json.loads(old.read_text()))  # the keys, in the order 0.1.0 wrote them
    assert result.manifest.to_json() == meta and result.manifest.dev == meta["dev"]
    assert meta["dev_curve"] == [{"step": 2, "EM": 0.75, "F1": 0.75}, {"step": 4, "EM": 0.25, "F1": 0.25}]
    assert meta["best_checkpoint"].endswith("checkpoint-2") and meta["dev_before"]["EM"] == 0.0
    assert meta["dev"]["EM"] == 0.75 == max(p["EM"] for p in meta["dev_curve"])
    written = _weights(result.out)
    checkpoints = result.out / "checkpoints"
    assert _same(_weights(checkpoints / "checkpoint-2"), written, prefix="qa.")
    assert not _same(_weights(checkpoints / "checkpoint-4"), written, prefix="qa.")
    from safetensors.torch import load_file

    head = load_file(str(result.out / "selection_head.safetensors"))
    assert torch.equal(_weights(checkpoints / "checkpoint-2")["selector.weight"], head["weight"])


# ---------------------------------------------------------------- picking answers: rank, n-best, length cap

def _scripted(tokenizer, script: list[tuple[dict[str, float], dict[str, float], float]]):
    """A stand-in for the reader network: for passage j, ``script[j] = (starts, ends, selection)`` gives the start
    logits of some words, the end logits of some words and the selection logit; every other logit is 0. Words
    are found by their (single) token id."""
    import torch

    class Scripted(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.anchor = torch.nn.Parameter(torch.zeros(1))  # the reader asks a parameter for the device

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            start, end = torch.zeros(input_ids.shape), torch.zeros(input_ids.shape)
            relevance = torch.zeros(input_ids.shape[:2])
            for j, (starts, ends, selection) in enumerate(script):
                row = input_ids[0, j].tolist()
                for logits, words in ((start, starts), (end, ends)):
                    for word, value in words.items():
                        logits[0, j, row.index(tokenizer.convert_tokens_to_ids(word))] = value
                relevance[0, j] = selection
            return {"start_logits": start, "end_logits": end, "relevance_logits": relevance}

    return Scripted()


PASSAGES = [Passage("a", "A", "The capital of Freedonia is Alpha City, the old records say."),
            Passage("b", "B", "Others say the capital is Beta Town since the war.")]


def test_rank_passage_and_rank_span_choose_differently(tokenizer):
    # passage a: selection 3, best span 2 + 2 = 4; passage b: selection 1, best span 6 + 6 = 12
    module = _scripted(tokenizer, [({"alpha": 2.0}, {"city": 2.0}, 3.0), ({"beta": 6.0}, {"town": 6.0}, 1.0)])
    by_passage = Reader(module, tokenizer, ReadOptions(rank="passage", max_length=64)).read("which?", PASSAGES)
    by_span = Reader(module, tokenizer, ReadOptions(rank="span", max_length=64, n_best=3)).read("which?", PASSAGES)
    assert (by_passage.text, by_passage.passage.passage_id, by_passage.passage_rank) == ("Alpha City", "a", 0)
    assert by_passage.score == pytest.approx(4.0) and by_passage.relevance == pytest.approx(3.0)
    assert (by_span.text, by_span.passage.passage_id, by_span.passage_rank) == ("Beta Town", "b", 1)
    assert PASSAGES[1].text[by_span.start:by_span.end] == "Beta Town" and by_span.score == pytest.approx(12.0)
    # n-best over all passages by span score: both peaks, then a zero-score span
    assert [s.text for s in by_span.n_best[:2]] == ["Beta Town", "Alpha City"] and len(by_span.n_best) == 3
    assert by_span.n_best[2].score == pytest.approx(0.0)


def test_n_best_and_the_answer_length_cap(tokenizer):
    passage = [Passage("c", "C", "The winner was Gamma Delta Epsilon Zeta at the games.")]
    # span scores: Gamma..Zeta 10 (four tokens), Gamma..Epsilon 7, Gamma..Delta 6, Zeta alone 5
    module = _scripted(tokenizer, [({"gamma": 5.0}, {"delta": 1.0, "epsilon": 2.0, "zeta": 5.0}, 0.0)])

    def read(**options):
        return Reader(module, tokenizer, ReadOptions(max_length=64, **options)).read("who won?", passage)

    assert read(max_answer_length=4).text == "Gamma Delta Epsilon Zeta"
    capped = read(max_answer_length=3, n_best=4)
    assert capped.text == "Gamma Delta Epsilon" and capped.score == pytest.approx(7.0)
    assert [s.text for s in capped.n_best[:2]] == ["Gamma Delta Epsilon", "Zeta"] and len(capped.n_best) == 4
    for span in capped.n_best:  # every listed span obeys the cap and none overlaps another
        assert 1 <= len(tokenizer.tokenize(span.text)) <= 3
    ranges = sorted((s.start, s.end) for s in capped.n_best)
    assert all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:]))
    assert [s.score for s in capped.n_best] == sorted((s.score for s in capped.n_best), reverse=True)
    assert read(max_answer_length=2).text == "Gamma Delta" and len(read(n_best=1).n_best) == 1


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
    system = IndexFolder(root / "bm25").open()
    with pytest.raises(ReaderError, match="no passage was retrieved"):
        answer_questions(system, Reader(None, None), ["zzzq qqqz"], 3)  # no term of it is in the index
    with pytest.raises(ReaderError, match="nothing was retrieved"):
        Reader(None, None).read("q", [])
    # an index folder with no passages (a dense index over no vectors, on the tiny store)
    empty = tmp_path / "empty-index"
    save_dense_index(empty, [], np.zeros((0, 384), dtype="float32"), encoder_info(None, 128, True, True),
                     store=str(root / "store"))
    result = runner.invoke(app, ["answer", str(empty), "--reader", str(root), "who?"])
    assert result.exit_code == 2 and "holds no passages" in result.output


@pytest.mark.slow
def test_data_loader_workers_train_the_same_reader_epoch_by_epoch(tmp_path):
    """Workers draw each epoch's passages as the training process would (they copy the dataset after the epoch
    callback): three epochs with two workers give the weights that no workers give."""
    from safetensors.numpy import load_file

    data = [{"title": "France", "paragraphs": [{"context": f"Paris is the capital of France, source {i}.", "qas": [
        {"id": str(i), "question": "What is the capital?", "answers": [{"text": "Paris", "answer_start": 0}]}]}]}
        for i in range(4)]
    (tmp_path / "s.json").write_text(json.dumps({"version": "v1.1", "data": data}), encoding="utf-8")
    weights = []
    for workers in (0, 2):
        out = tmp_path / f"r{workers}"
        run(ReaderConfig(data=tmp_path / "s.json", out=out, passages=2, epochs=3, batch_size=2, max_length=48,
                         dev_share=0.0, dataloader_workers=workers, group_by_length=False))
        weights.append(load_file(str(out / "model.safetensors")))
    assert weights[0].keys() == weights[1].keys()
    for name in weights[0]:
        np.testing.assert_allclose(weights[0][name], weights[1][name], atol=1e-6, err_msg=name)
