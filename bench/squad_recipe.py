"""The standard transformers recipe for SQuAD, the anchor of ``bench/bench_squad.py``.

Written after transformers' ``examples/pytorch/question-answering/run_qa.py`` and ``utils_qa.py``
(not pasted): ``AutoModelForQuestionAnswering`` + ``Trainer`` on features made by

* :func:`prepare_train_features`: (question, context) with ``truncation="only_second"``, ``max_length``
  and a doc stride, so a long context becomes several overlapping windows; each window is labelled
  with the first answer's start and end token, or with [CLS] when the answer is not wholly inside it;
* :func:`prepare_validation_features`: the same windows, each remembering its example and the
  character offsets of its context tokens (None elsewhere);
* :func:`postprocess_qa_predictions`: the ``n_best`` start and ``n_best`` end logits of each window,
  every pair inside the context with ``end >= start`` and at most ``max_answer_length`` tokens scored
  by ``start + end`` logit, and the best over all windows of an example as its answer (SQuAD v1.1:
  no null answer).

run_qa pads every feature to ``max_length`` by default; here, as with its ``--pad_to_max_length
False``, batches are padded to their longest feature (``DataCollatorWithPadding``), as pretriever's
reader does, so that the throughput comparison is about the training, not the padding.

Example::

    from squad_recipe import SquadExample, train_and_predict
    result = train_and_predict(train_examples, test_examples, model_path, RecipeSettings(max_steps=100))
    result.predictions  # {qid: answer text}
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class SquadExample:
    qid: str
    title: str
    question: str
    context: str
    answers: list[str]  # every gold text (duplicates kept, as in the file)
    answer_starts: list[int]


@dataclass
class RecipeSettings:
    max_steps: int = 100
    batch_size: int = 16
    max_length: int = 256
    doc_stride: int = 128
    learning_rate: float = 5e-5
    warmup_ratio: float = 0.1
    seed: int = 13
    group_by_length: bool = False  # run_qa's default: random batches; True: the Trainer's LengthGroupedSampler
    n_best: int = 20
    max_answer_length: int = 30
    eval_batch_size: int = 64
    device: str = "cpu"  # "cuda": the Trainer's own device choice (a GPU when there is one)
    precision: str = "fp32"  # fp16 or bf16: the Trainer's mixed precision (on a GPU only)


def squad_examples(data: dict, titles: set[str] | None = None, answerable_only: bool = True) -> list[SquadExample]:
    """The questions of a SQuAD v1.1/v2.0 ``data`` dict (of the articles in ``titles``), answerable ones only
    unless ``answerable_only`` is false."""
    out = []
    for article in data["data"]:
        if titles is not None and article["title"] not in titles:
            continue
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                if answerable_only and (qa.get("is_impossible") or not qa["answers"]):
                    continue
                out.append(SquadExample(qa["id"], article["title"], qa["question"], paragraph["context"],
                                        [a["text"] for a in qa["answers"]], [a["answer_start"] for a in qa["answers"]]))
    return out


def _tokenize(tokenizer, examples: list[SquadExample], settings: RecipeSettings):
    # run_qa strips the questions' leading blanks: some SQuAD questions start with many spaces, which would
    # otherwise eat into the context's share of max_length
    return tokenizer([e.question.lstrip() for e in examples], [e.context for e in examples],
                     truncation="only_second", max_length=settings.max_length, stride=settings.doc_stride,
                     return_overflowing_tokens=True, return_offsets_mapping=True, padding=False)


def prepare_train_features(tokenizer, examples: list[SquadExample], settings: RecipeSettings) -> list[dict[str, Any]]:
    """One feature per window: input ids, masks, and ``start_positions``/``end_positions`` of the first answer
    (its [CLS] index when the window does not hold the whole answer), as run_qa labels them."""
    enc = _tokenize(tokenizer, examples, settings)
    features = []
    for i, offsets in enumerate(enc["offset_mapping"]):
        example = examples[enc["overflow_to_sample_mapping"][i]]
        ids = enc["input_ids"][i]
        cls = ids.index(tokenizer.cls_token_id)
        sequence = enc.sequence_ids(i)
        first = sequence.index(1)
        last = len(sequence) - 1 - sequence[::-1].index(1)
        start_char = example.answer_starts[0]
        end_char = start_char + len(example.answers[0])
        if offsets[first][0] <= start_char and offsets[last][1] >= end_char:
            start = first
            while start <= last and offsets[start][0] <= start_char:
                start += 1
            end = last
            while end >= first and offsets[end][1] >= end_char:
                end -= 1
            start, end = start - 1, end + 1
        else:
            start = end = cls
        feature = {k: enc[k][i] for k in enc if k not in ("offset_mapping", "overflow_to_sample_mapping")}
        feature.update(start_positions=start, end_positions=end)
        features.append(feature)
    return features


def prepare_validation_features(tokenizer, examples: list[SquadExample],
                                settings: RecipeSettings) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(model inputs, per window: ``example_index`` and the context offsets, None for other tokens)."""
    enc = _tokenize(tokenizer, examples, settings)
    inputs, meta = [], []
    for i, offsets in enumerate(enc["offset_mapping"]):
        sequence = enc.sequence_ids(i)
        inputs.append({k: enc[k][i] for k in enc if k not in ("offset_mapping", "overflow_to_sample_mapping")})
        meta.append({"example_index": enc["overflow_to_sample_mapping"][i],
                     "offsets": [o if s == 1 else None for o, s in zip(offsets, sequence)]})
    return inputs, meta


def postprocess_qa_predictions(examples: list[SquadExample], meta: list[dict[str, Any]], start_logits, end_logits,
                               n_best: int = 20, max_answer_length: int = 30) -> dict[str, str]:
    """{qid: best answer text} from the windows' logits (``[features, L]``, padding beyond a window's length
    ignored), as utils_qa's ``postprocess_qa_predictions`` with ``version_2_with_negative=False``."""
    by_example: dict[int, list[int]] = {}
    for f, m in enumerate(meta):
        by_example.setdefault(m["example_index"], []).append(f)
    predictions = {}
    for e, example in enumerate(examples):
        best_score, best_text = -np.inf, ""
        for f in by_example.get(e, []):
            offsets = meta[f]["offsets"]
            starts = np.argsort(start_logits[f])[-1:-n_best - 1:-1]
            ends = np.argsort(end_logits[f])[-1:-n_best - 1:-1]
            for s in starts:
                for t in ends:
                    if s >= len(offsets) or t >= len(offsets) or offsets[s] is None or offsets[t] is None:
                        continue
                    if t < s or t - s + 1 > max_answer_length:
                        continue
                    score = float(start_logits[f][s] + end_logits[f][t])
                    if score > best_score:
                        best_score, best_text = score, example.context[offsets[s][0]:offsets[t][1]]
        predictions[example.qid] = best_text  # utils_qa answers "empty" when no span fits; EM/F1 treat both alike
    return predictions


class StepClock:
    """Times the optimizer steps: wall and process CPU seconds (all threads) from the end of the first step to
    the end of the last one, so model loading, the first step's warm-up and the checkpoint written at the end
    do not count. CPU seconds barely move with other processes' load on a shared machine; wall seconds do."""

    def __init__(self) -> None:
        self.marks: list[tuple[int, float, float]] = []

    def mark(self, step: int) -> None:
        if step > 0 and (not self.marks or step > self.marks[-1][0]):
            self.marks.append((step, time.perf_counter(), time.process_time()))

    def timed(self) -> tuple[int, float]:
        """(steps timed, wall seconds): steps 2..N."""
        if len(self.marks) < 2:
            return 0, 0.0
        return self.marks[-1][0] - self.marks[0][0], self.marks[-1][1] - self.marks[0][1]

    def cpu_seconds(self) -> float:
        """Process CPU seconds over the same steps."""
        return self.marks[-1][2] - self.marks[0][2] if len(self.marks) >= 2 else 0.0


@dataclass
class RecipeResult:
    predictions: dict[str, str]
    train_examples: int
    train_features: int
    steps: int
    timed_steps: int
    timed_seconds: float
    cpu_seconds: float
    loss_curve: list[dict[str, float]] = field(default_factory=list)


class _Features:
    """A torch dataset over feature dicts (the Trainer's collator pads them)."""

    def __init__(self, rows: list[dict[str, Any]]):
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.rows[i]


def train_and_predict(train: list[SquadExample], test: list[SquadExample] | None, model_path: str,
                      settings: RecipeSettings, out_dir: str) -> RecipeResult:
    """Fine-tune ``model_path`` with ``AutoModelForQuestionAnswering`` + ``Trainer`` on ``train`` and predict
    ``test`` (none: training only; run_qa's steps; the step times come from a callback, see :class:`StepClock`)."""
    from transformers import (AutoModelForQuestionAnswering, AutoTokenizer, DataCollatorWithPadding, Trainer,
                              TrainerCallback, TrainingArguments, set_seed)
    from transformers.utils import logging as hf_logging

    set_seed(settings.seed)
    hf_logging.set_verbosity_error()
    tokenizer = AutoTokenizer.from_pretrained(model_path, use_fast=True)
    model = AutoModelForQuestionAnswering.from_pretrained(model_path)
    features = prepare_train_features(tokenizer, train, settings)
    clock = StepClock()

    class Clock(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            clock.mark(state.global_step)

    args = TrainingArguments(output_dir=out_dir, per_device_train_batch_size=settings.batch_size,
                             per_device_eval_batch_size=settings.eval_batch_size, learning_rate=settings.learning_rate,
                             warmup_steps=settings.warmup_ratio, max_steps=settings.max_steps, seed=settings.seed,
                             logging_steps=10, save_strategy="no", report_to="none", disable_tqdm=True,
                             dataloader_num_workers=0, use_cpu=settings.device == "cpu",
                             bf16=settings.precision == "bf16", fp16=settings.precision == "fp16",
                             train_sampling_strategy="group_by_length" if settings.group_by_length else "random")
    trainer = Trainer(model=model, args=args, train_dataset=_Features(features),
                      data_collator=DataCollatorWithPadding(tokenizer), callbacks=[Clock()])
    trainer.train()
    predictions = {}
    if test:
        inputs, meta = prepare_validation_features(tokenizer, test, settings)
        output = trainer.predict(_Features(inputs))
        start_logits, end_logits = output.predictions[:2]
        predictions = postprocess_qa_predictions(test, meta, start_logits, end_logits, settings.n_best,
                                                 settings.max_answer_length)
    steps, seconds = clock.timed()
    curve = [{"step": e["step"], "loss": e["loss"]} for e in trainer.state.log_history if "loss" in e]
    return RecipeResult(predictions, len(train), len(features), trainer.state.global_step, steps, seconds,
                        clock.cpu_seconds(), curve)
