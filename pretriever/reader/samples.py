"""Training instances of the reader: a question, its positive passage with every answer occurrence,
and negatives (DPR's reader training, Karpukhin et al., 2020, section 3).

* the positive is the first passage marked positive in which an answer occurs (SQuAD's given
  offsets plus every other occurrence of an answer: all are marginalised in the loss);
* negatives are the question's own negatives (retrieved passages without the answer) first, then
  passages of other questions drawn with a seed, up to ``passages - 1``;
* an answer occurrence cut off by truncation is dropped and counted; a question left with no
  occurrence is skipped and counted.

Example::

    samples, counts = build_samples(load_reading_file("squad.json"), tokenizer, max_length=256)
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from pretriever.data.reading import ReadingExample, ReadingPassage
from pretriever.reader.predict import Passage
from pretriever.reader.spans import CharSpan, answer_char_spans, encode, token_spans


@dataclass
class Sample:
    question: str
    answers: list[str]
    positive: Passage
    char_spans: list[CharSpan]
    negatives: list[Passage]
    group: str  # the positive's document (title): the dev split holds out whole documents


@dataclass
class SampleCounts:
    questions: int = 0
    kept: int = 0
    no_positive: int = 0  # no passage marked positive holds an answer
    truncated_spans: int = 0  # answer occurrences cut off by truncation (dropped)
    truncated_questions: int = 0  # questions whose every occurrence was cut off (skipped)
    squad_offsets_wrong: int = 0  # SQuAD answer_start that does not point at the answer text

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class Instance:
    """One question's m passages (positive first) and its answer occurrences in the positive."""

    question: str
    passages: list[Passage]
    char_spans: list[CharSpan]


def _positive_spans(passage: ReadingPassage, answers: list[str], mode: str, counts: SampleCounts) -> list[CharSpan]:
    spans = set(answer_char_spans(passage.text, answers, mode))
    for start, text in passage.answer_starts:
        if passage.text[start:start + len(text)] == text:
            spans.add((start, start + len(text)))
        else:
            counts.squad_offsets_wrong += 1
    return sorted(spans)


def build_samples(examples: list[ReadingExample], tokenizer, max_length: int,
                  mode: str = "string") -> tuple[list[Sample], SampleCounts]:
    """Training samples with answer occurrences that survive truncation (see the module docstring)."""
    counts = SampleCounts(questions=len(examples))
    candidates: list[Sample] = []
    for ex in examples:
        positive, spans = None, []
        for passage in ex.passages:
            if passage.positive:
                spans = _positive_spans(passage, ex.answers, mode, counts)
                if spans:
                    positive = passage
                    break
        if positive is None:
            counts.no_positive += 1
            continue
        negatives = [Passage(p.title, p.text, p.passage_id) for p in ex.passages if not p.positive]
        candidates.append(Sample(ex.question, ex.answers, Passage(positive.title, positive.text, positive.passage_id),
                                 spans, negatives, positive.title or positive.passage_id))
    samples = []
    for lo in range(0, len(candidates), 64):
        chunk = candidates[lo:lo + 64]
        enc = encode(tokenizer, [s.question for s in chunk], [s.positive.title for s in chunk],
                     [s.positive.text for s in chunk], max_length, return_tensors=None)
        for sample, offsets in zip(chunk, enc.offsets):
            kept, dropped = token_spans(offsets, sample.char_spans)
            counts.truncated_spans += dropped
            if kept:
                samples.append(sample)
            else:
                counts.truncated_questions += 1
    counts.kept = len(samples)
    return samples, counts


def split_by_document(samples: list[Sample], share: float, seed: int) -> tuple[list[Sample], list[Sample]]:
    """(train, dev): a seeded hash of each positive's document puts ``share`` of the documents in dev."""
    def held_out(group: str) -> bool:
        digest = hashlib.md5(f"{seed}:{group}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2 ** 64 < share

    dev = [s for s in samples if share > 0 and held_out(s.group)]
    train = [s for s in samples if not (share > 0 and held_out(s.group))]
    return train, dev


def instance(sample: Sample, pool: list[Passage], passages: int, seed: int, index: int) -> Instance:
    """The sample's positive and ``passages - 1`` negatives: its own first, then pool passages drawn with
    ``(seed, index)`` that are not the positive."""
    negatives = sample.negatives[:passages - 1]
    if len(negatives) < passages - 1 and pool:
        rng = random.Random(f"{seed}:{index}")
        tries = 0
        while len(negatives) < passages - 1 and tries < 4 * passages:
            tries += 1
            candidate = pool[rng.randrange(len(pool))]
            if candidate.text != sample.positive.text:
                negatives.append(candidate)
    return Instance(sample.question, [sample.positive] + negatives, sample.char_spans)
