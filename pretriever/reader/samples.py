"""Training instances of the reader: a question, one positive passage with every answer occurrence,
and negatives (DPR's reader training, Karpukhin et al., 2020, section 3; DPR's ``reader_data`` and
``_create_question_passages_tensors``).

* every passage marked positive in which an answer occurs is a positive (SQuAD's given offsets plus
  every other occurrence of an answer: all are marginalised in the loss);
* each epoch, each question gets one positive sampled from all of them, and fresh negatives: its
  own negatives (retrieved passages without the answer, all of a DPR reader file's) reshuffled, then
  passages of other questions, up to ``passages - 1``; the draw hangs on (seed, epoch, question), so
  a rerun gives the same instances;
* an answer occurrence cut off by truncation is dropped and counted; a positive left with none is
  dropped, and a question left with no positive is skipped and counted; a question with no answer
  (SQuAD v2.0's unanswerable) is skipped and counted;
* each question and positive is tokenised once, here, and kept (:func:`~pretriever.reader.pairs.pair_maker`),
  with the answer occurrences as token spans: a batch joins and pads them.

Example::

    samples, counts = build_samples(load_reading_file("squad.json"), tokenizer, max_length=256)
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from pretriever.data.reading import ReadingExample, ReadingPassage
from pretriever.reader.pairs import pair_maker
from pretriever.reader.spans import CharSpan, answer_char_spans, token_spans
from pretriever.retrieval import Passage


@dataclass
class Sample:
    """One training question for the reader: its answers, the positives with the answer's occurrences in each, and the
    negatives; ``group`` keeps a document's questions on one side of the dev split.
    """

    question: str
    answers: list[str]
    positives: list[Passage]
    spans: list[list[CharSpan]]  # the answer occurrences of each positive
    negatives: list[Passage]
    token_spans: list[list[tuple[int, int]]]  # the occurrences as (start, end) tokens of each positive's input
    group: str  # the first positive's document (title): the dev split holds out whole documents
    length: int = 0  # word pieces of the question with its longest kept positive (batches by length use it)

    @property
    def positive(self) -> Passage:
        return self.positives[0]

    @property
    def char_spans(self) -> list[CharSpan]:
        return self.spans[0]


@dataclass
class SampleCounts:
    """What turning a reading file into samples kept and dropped, and why (reported in the reader's manifest)."""
    questions: int = 0
    kept: int = 0
    unanswerable: int = 0  # no answer (SQuAD v2.0's is_impossible)
    no_positive: int = 0  # no passage marked positive holds an answer
    truncated_spans: int = 0  # answer occurrences cut off by truncation (dropped)
    truncated_questions: int = 0  # questions whose every occurrence was cut off (skipped)
    squad_offsets_wrong: int = 0  # SQuAD answer_start that does not point at the answer text

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class Instance:
    """One question's m passages (positive first) and its answer occurrences in the positive (as characters, and as
    tokens of the input of the question with the positive)."""

    question: str
    passages: list[Passage]
    char_spans: list[CharSpan]
    token_spans: list[tuple[int, int]]


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
    candidates: list[tuple[ReadingExample, list[ReadingPassage], list[list[CharSpan]]]] = []
    for ex in examples:
        if not ex.answers:
            counts.unanswerable += 1
            continue
        found = [(p, spans) for p in ex.passages
                 if p.positive and (spans := _positive_spans(p, ex.answers, mode, counts))]
        if not found:
            counts.no_positive += 1
            continue
        candidates.append((ex, [p for p, _ in found], [spans for _, spans in found]))
    maker = pair_maker(tokenizer, max_length)
    flat = [(c, i) for c, (_, positives, _) in enumerate(candidates) for i in range(len(positives))]
    kept: dict[int, list[tuple[int, int, list[tuple[int, int]]]]] = {}  # (positive, input length, token spans)
    for lo in range(0, len(flat), 256):
        chunk = flat[lo:lo + 256]
        questions = [candidates[c][0].question for c, _ in chunk]
        sides = maker.side_offsets([candidates[c][1][i] for c, i in chunk])
        for (c, i), question, ids, offsets in zip(chunk, questions, maker.question_ids(questions), sides):
            room = maker.kept(len(ids), len(offsets), question)
            survived, dropped = token_spans(offsets[:room], candidates[c][2][i])
            counts.truncated_spans += dropped
            if survived:
                start = maker.passage_start(len(ids))
                kept.setdefault(c, []).append((i, len(ids) + room + maker.template.specials,
                                               [(a + start, b + start) for a, b in survived]))
    samples = []
    for c, (ex, positives, spans) in enumerate(candidates):
        if c not in kept:
            counts.truncated_questions += 1
            continue
        chosen = [Passage(positives[i].passage_id, positives[i].title, positives[i].text) for i, _, _ in kept[c]]
        negatives = [Passage(p.passage_id, p.title, p.text) for p in ex.passages if not p.positive]
        samples.append(Sample(ex.question, ex.answers, chosen, [spans[i] for i, _, _ in kept[c]], negatives,
                              [survived for _, _, survived in kept[c]], chosen[0].title or chosen[0].passage_id,
                              max(length for _, length, _ in kept[c])))
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


def instance(sample: Sample, pool: list[Passage], passages: int, seed: int, index: int, epoch: int = 0) -> Instance:
    """The instance of ``sample`` in ``epoch``: one of its positives and ``passages - 1`` negatives, its own
    (reshuffled) first, then pool passages that are not a positive, all drawn with ``(seed, epoch, index)``."""
    rng = random.Random(f"{seed}:{epoch}:{index}")
    k = rng.randrange(len(sample.positives))
    own = list(sample.negatives)
    rng.shuffle(own)
    negatives = own[:passages - 1]
    if len(negatives) < passages - 1 and pool:
        positives = {p.text for p in sample.positives}
        tries = 0
        while len(negatives) < passages - 1 and tries < 4 * passages:
            tries += 1
            candidate = pool[rng.randrange(len(pool))]
            if candidate.text not in positives:
                negatives.append(candidate)
    return Instance(sample.question, [sample.positives[k]] + negatives, sample.spans[k], sample.token_spans[k])
