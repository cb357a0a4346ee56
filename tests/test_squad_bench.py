"""bench/bench_squad.py's pieces: the run_qa-style recipe (bench/squad_recipe.py), SQuAD v1.1 scoring against
evaluate-v1.1.py's formula, and the SQuAD v2.0 file as `reader train` reads it (unanswerable questions counted)."""

from __future__ import annotations

import json
import re
import string
import sys
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from conftest import QA, shared
from pretriever.metrics import exact_match, f1_score
from pretriever.models import resolve_model
from pretriever.progress import Reporter
from pretriever.reader.config import ReaderConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from squad_recipe import (RecipeSettings, SquadExample, StepClock, postprocess_qa_predictions,  # noqa: E402
                          prepare_train_features, prepare_validation_features, squad_examples)

SQUAD2 = QA / "squad2-dev-5articles.json"


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_model(None))


@pytest.fixture(scope="module")
def squad2() -> dict:
    return json.loads(shared(SQUAD2).read_text())


# ------------------------------------------------ evaluate-v1.1.py, written out (the official formula)

def official_normalize(s: str) -> str:
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def official_f1(prediction: str, truth: str) -> float:
    p, t = official_normalize(prediction).split(), official_normalize(truth).split()
    same = sum((Counter(p) & Counter(t)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(t)
    return 2 * precision * recall / (precision + recall)


def test_em_and_f1_equal_the_official_v11_formula_on_real_squad_answers(squad2):
    """Every answerable question: its first answer, and a span 12 characters longer, scored against the others."""
    pairs = []
    for e in squad_examples(squad2):
        if len(e.answers) > 1:
            context_span = e.context[e.answer_starts[0]:e.answer_starts[0] + len(e.answers[0]) + 12]
            pairs += [(e.answers[0], e.answers[1:]), (context_span, e.answers[1:])]
    assert len(pairs) > 1000
    partial = 0
    for prediction, golds in pairs:
        em = max(float(official_normalize(prediction) == official_normalize(g)) for g in golds)
        f1 = max(official_f1(prediction, g) for g in golds)
        assert exact_match(prediction, golds) == em, (prediction, golds)
        assert f1_score(prediction, golds) == pytest.approx(f1, abs=1e-12), (prediction, golds)
        partial += 0 < f1 < 1
    assert partial > 300  # the longer spans exercise F1 between 0 and 1


# ------------------------------------------------ the SQuAD v2.0 file

def test_the_split_of_the_five_articles(squad2):
    counts = {a["title"]: len(squad_examples({"data": [a]})) for a in squad2["data"]}
    assert counts == {"Normans": 96, "Computational_complexity_theory": 197, "Southern_California": 180,
                      "Sky_(United_Kingdom)": 108, "Victoria_(Australia)": 124}
    every = squad_examples(squad2, answerable_only=False)
    assert len(every) == 1407 and sum(1 for e in every if e.answers) == 705


class Messages(Reporter):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def message(self, text: str) -> None:
        self.lines.append(text)


def test_reader_train_reports_the_unanswerable_questions_it_skips(squad2, tokenizer, tmp_path):
    """`reader train` on a SQuAD v2.0 article: the message the CLI prints and the counts reader.json keeps."""
    from pretriever.reader.train import _load_split

    normans = next(a for a in squad2["data"] if a["title"] == "Normans")
    unanswerable = sum(1 for p in normans["paragraphs"] for qa in p["qas"] if qa.get("is_impossible"))
    assert unanswerable == 112  # 208 questions, 96 answerable
    path = tmp_path / "normans-v2.json"
    path.write_text(json.dumps({"version": "v2.0", "data": [normans]}))
    report = Messages()
    train, dev, counts, _, _ = _load_split(ReaderConfig(data=path, out=tmp_path / "r", dev_share=0.0, max_length=384),
                                           tokenizer, report)
    assert counts.unanswerable == 112 and counts.questions == 208 and len(train) == counts.kept == 96 and not dev
    assert any("skipped 112 unanswerable" in line for line in report.lines), report.lines
    assert counts.as_dict()["unanswerable"] == 112  # what reader.json's "data" holds


# ------------------------------------------------ run_qa's preprocessing and post-processing

def squeeze(text: str) -> str:
    """Text as the uncased tokenizer decodes it, for comparing: no accents, no blanks ("30, 000" is "30,000")."""
    return "".join(c for c in unicodedata.normalize("NFKD", text.lower()) if not unicodedata.combining(c) and not c.isspace())


def test_train_features_label_the_answer_tokens_and_cls_outside_the_window(squad2, tokenizer):
    examples = squad_examples(squad2, {"Normans"})
    settings = RecipeSettings(max_length=128, doc_stride=64)
    features = prepare_train_features(tokenizer, examples, settings)
    assert len(features) > len(examples)  # long paragraphs give several windows at 128 tokens
    labelled = [f for f in features if f["start_positions"] != 0]
    outside = [f for f in features if f["start_positions"] == 0]
    assert outside and all(f["end_positions"] == 0 for f in outside)
    assert all(f["start_positions"] <= f["end_positions"] for f in labelled)
    # every example keeps its answer in at least one window (the doc stride), and the labels decode to it
    enc = tokenizer([e.question.lstrip() for e in examples], [e.context for e in examples], truncation="only_second",
                    max_length=128, stride=64, return_overflowing_tokens=True)
    owners = enc["overflow_to_sample_mapping"]
    decoded_ok = 0
    covered = set()
    for f, owner in zip(features, owners):
        if f["start_positions"] == 0:
            continue
        covered.add(owner)
        text = tokenizer.decode(f["input_ids"][f["start_positions"]:f["end_positions"] + 1])
        decoded_ok += squeeze(text) == squeeze(examples[owner].answers[0])
    assert covered == set(range(len(examples)))
    assert decoded_ok == len(labelled)


def test_validation_features_keep_context_offsets_only(tokenizer):
    example = SquadExample("q1", "T", "  Who wrote Hamlet?", "Hamlet is a tragedy by William Shakespeare.",
                           ["William Shakespeare"], [23])
    inputs, meta = prepare_validation_features(tokenizer, [example], RecipeSettings())
    assert len(inputs) == 1 and meta[0]["example_index"] == 0
    offsets = meta[0]["offsets"]
    assert offsets[0] is None  # [CLS]
    kept = [o for o in offsets if o is not None]
    assert kept[0] == (0, 6) and example.context[kept[-1][0]:kept[-1][1]] == "."
    question_tokens = len(tokenizer("Who wrote Hamlet?")["input_ids"]) - 1  # [CLS] question [SEP]
    assert all(o is None for o in offsets[:question_tokens + 1])


def test_postprocessing_picks_the_best_valid_span_over_windows():
    context = "aa bb cc dd ee"
    example = SquadExample("q", "T", "?", context, ["cc"], [6])
    offsets = [None, (0, 2), (3, 5), (6, 8), (9, 11), (12, 14), None]
    meta = [{"example_index": 0, "offsets": offsets} for _ in range(3)]
    start = np.full((3, 7), -5.0)
    end = np.full((3, 7), -5.0)
    start[0, 0] = end[0, 0] = 9.0  # [CLS]: not in the context, never an answer
    start[0, 3], end[0, 3] = 2.0, 2.0  # "cc": 4.0
    start[1, 5], end[1, 1] = 6.0, 6.0  # end before start: 12.0, skipped
    start[2, 1], end[2, 5] = 3.0, 3.5  # "aa bb cc dd ee": 6.5, five tokens, in another window
    assert postprocess_qa_predictions([example], meta, start, end, n_best=20, max_answer_length=30) == {"q": context}
    assert postprocess_qa_predictions([example], meta, start, end, n_best=20, max_answer_length=4) == {"q": "cc"}
    # logits beyond a window's length (the Trainer pads batches with -100) are out of range, never picked
    padded_start = np.concatenate([start, np.full((3, 3), 50.0)], axis=1)
    padded_end = np.concatenate([end, np.full((3, 3), 50.0)], axis=1)
    assert postprocess_qa_predictions([example], meta, padded_start, padded_end, max_answer_length=4) == {"q": "cc"}


def test_step_clock_times_steps_two_to_n():
    clock = StepClock()
    for step in (0, 1, 1, 2, 3):
        clock.mark(step)
    steps, seconds = clock.timed()
    assert steps == 2 and seconds >= 0 and clock.cpu_seconds() >= 0
    assert StepClock().timed() == (0, 0.0) and StepClock().cpu_seconds() == 0.0
