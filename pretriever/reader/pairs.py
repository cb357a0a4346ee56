"""Training inputs of the reader joined from word pieces tokenised once.

A (question, passage) input is the pair (question, ``title [SEP] passage``) as :func:`~pretriever.reader.spans.encode`
tokenises it. A fast tokenizer tokenises the two texts of a pair apart and then joins them with its special tokens
and token types (its post-processor), cutting the second text to fit ``max_length`` (``truncation="only_second"``).
:class:`PairMaker` does the same from word pieces it keeps: each question's and each passage's (its second text,
without special tokens), tokenised the first time they are met. A training batch then only joins and pads: its
positives were tokenised with the samples, and the negatives it draws are passages met before (a batch of the
QA recipe pads features tokenised once before training, likewise). How the tokenizer joins a pair
(:class:`PairTemplate`) is read from the tokenizer itself, and a test checks that the inputs equal ``encode``'s.

Example::

    maker = pair_maker(tokenizer, max_length=256)
    inputs = maker.inputs(["who wrote Hamlet?"], [Passage("p1", "Hamlet", "Hamlet is a tragedy by Shakespeare.")])
    features, passage_mask, shifts = pad_inputs(inputs, tokenizer)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from pretriever.reader.errors import ReaderError
from pretriever.reader.spans import CharSpan, in_passage, second_texts
from pretriever.retrieval import Passage


@dataclass(frozen=True)
class PairInput:
    """One (question, ``title [SEP] passage``) input as the tokenizer makes it, unpadded and stored small."""

    features: dict[str, np.ndarray]  # the tokenizer's inputs (int32) but the attention mask (all ones unpadded)
    passage: np.ndarray  # bool per token: a passage token (one whose offsets fall in the passage text)

    def __len__(self) -> int:
        return len(self.passage)


@dataclass(frozen=True)
class Side:
    """A passage as the second text of a pair, tokenised alone and without special tokens (at most ``max_length``
    word pieces: a pair never keeps more), and which of its word pieces are the passage's (not the title's)."""

    ids: np.ndarray  # int32
    passage: np.ndarray  # bool


def _find(ids: list[int], part: list[int], start: int) -> int | None:
    return next((i for i in range(start, len(ids) - len(part) + 1) if ids[i:i + len(part)] == part), None)


@dataclass(frozen=True)
class PairTemplate:
    """How a tokenizer joins a pair (A, B): ``before`` A ``between`` B ``after`` (special tokens), and the token
    type of each of the five parts (``types``: None when the tokenizer gives no token types). Read from the
    tokenizer's own encoding of a probe pair (BERT: [CLS] A [SEP] B [SEP], types 0 0 0 1 1; RoBERTa: <s> A </s></s>
    B </s>, no types)."""

    before: list[int]
    between: list[int]
    after: list[int]
    types: tuple[list[int], int, list[int], int, list[int]] | None

    @classmethod
    def of(cls, tokenizer) -> PairTemplate:
        """The template of ``tokenizer`` (a ReaderError when its pairs do not join a question and a passage whole)."""
        first, second = "who", "where"
        a = tokenizer(first, add_special_tokens=False)["input_ids"]
        b = tokenizer(second, add_special_tokens=False)["input_ids"]
        pair = tokenizer(first, second)
        ids = list(pair["input_ids"])
        i = _find(ids, a, 0)
        j = _find(ids, b, i + len(a)) if i is not None else None
        if j is None:
            raise ReaderError(f"{type(tokenizer).__name__}: its pairs do not hold the two texts whole, one after the "
                              "other; the reader cannot join pre-tokenised questions and passages as it does")
        types = None
        if "token_type_ids" in pair:
            t = list(pair["token_type_ids"])
            parts = [t[:i], t[i:i + len(a)], t[i + len(a):j], t[j:j + len(b)], t[j + len(b):]]
            if len(set(parts[1])) != 1 or len(set(parts[3])) != 1:
                raise ReaderError(f"{type(tokenizer).__name__}: a text of a pair has mixed token types")
            types = (parts[0], parts[1][0], parts[2], parts[3][0], parts[4])
        return cls(ids[:i], ids[i + len(a):j], ids[j + len(b):], types)

    @property
    def specials(self) -> int:
        return len(self.before) + len(self.between) + len(self.after)


class PairMaker:
    """Reader inputs of (question, passage) pairs for one tokenizer and ``max_length``, from the word pieces of
    each question and passage, tokenised once and kept (see the module docstring).

    Args:
        tokenizer: a fast tokenizer (offsets are needed to find the passage's word pieces).
        max_length: the longest input, in word pieces; the passage is cut to fit.
    """

    def __init__(self, tokenizer, max_length: int):
        if not getattr(tokenizer, "is_fast", False):
            raise TypeError(f"the reader needs a fast tokenizer (offset mapping); {type(tokenizer).__name__} is not")
        self.tokenizer, self.max_length = tokenizer, max_length
        self.template = PairTemplate.of(tokenizer)
        self.questions: dict[str, np.ndarray] = {}
        self.sides: dict[tuple[str, str], Side] = {}

    def question_ids(self, questions: list[str]) -> list[np.ndarray]:
        """Each question's word pieces (without special tokens), those not met before tokenised together."""
        new = list(dict.fromkeys(q for q in questions if q not in self.questions))
        if new:
            for question, ids in zip(new, self.tokenizer(new, add_special_tokens=False)["input_ids"]):
                self.questions[question] = np.asarray(ids, dtype=np.int32)
        return [self.questions[q] for q in questions]

    def side_offsets(self, passages: list[Passage]) -> list[list[CharSpan | None]]:
        """Tokenise ``passages`` (kept for :meth:`inputs`) and return each one's word pieces' character spans in
        the passage text (None for the title's and the separator's), to place the answers."""
        seconds, prefixes = second_texts(self.tokenizer, [p.title for p in passages], [p.text for p in passages])
        enc = self.tokenizer(seconds, add_special_tokens=False, truncation=True, max_length=self.max_length,
                             return_offsets_mapping=True)
        out = []
        for passage, prefix, ids, mapping in zip(passages, prefixes, enc["input_ids"], enc["offset_mapping"]):
            offsets = [in_passage(start, end, len(prefix)) for start, end in mapping]
            self.sides[(passage.title or "", passage.text)] = Side(np.asarray(ids, dtype=np.int32),
                                                                   np.array([o is not None for o in offsets]))
            out.append(offsets)
        return out

    def kept(self, question_length: int, side_length: int, question: str = "") -> int:
        """How many word pieces of a passage side fit beside a question of ``question_length`` (only_second
        truncation; a ReaderError, as the tokenizer's, when the question leaves no room for a passage that needs
        cutting)."""
        room = self.max_length - question_length - self.template.specials
        if side_length > room and room < 1:
            raise ReaderError(f"a question of {question_length} word pieces leaves no room for its passage within "
                              f"--max-length {self.max_length}: {question[:80]!r}")
        return min(side_length, room)

    def passage_start(self, question_length: int) -> int:
        """Where the passage side begins in an input whose question has ``question_length`` word pieces."""
        return len(self.template.before) + question_length + len(self.template.between)

    def inputs(self, questions: list[str], passages: list[Passage]) -> list[PairInput]:
        """The input of each (question, passage), as ``encode`` would tokenise it, unpadded."""
        missing = list({key: p for p in passages if (key := (p.title or "", p.text)) not in self.sides}.values())
        if missing:
            self.side_offsets(missing)
        out = []
        for question, ids, passage in zip(questions, self.question_ids(questions), passages):
            side = self.sides[(passage.title or "", passage.text)]
            out.append(self.join(ids, side, self.kept(len(ids), len(side.ids), question)))
        return out

    def join(self, question: np.ndarray, side: Side, kept: int) -> PairInput:
        """The input of a question's word pieces and the first ``kept`` of a passage side's, joined as the
        tokenizer joins a pair."""
        t = self.template
        parts = [t.before, question, t.between, side.ids[:kept], t.after]
        features = {"input_ids": np.concatenate([np.asarray(p, dtype=np.int32) for p in parts])}
        if t.types is not None:
            lengths = [len(p) for p in parts]
            features["token_type_ids"] = np.concatenate([
                np.asarray(t.types[0], dtype=np.int32), np.full(lengths[1], t.types[1], dtype=np.int32),
                np.asarray(t.types[2], dtype=np.int32), np.full(lengths[3], t.types[3], dtype=np.int32),
                np.asarray(t.types[4], dtype=np.int32)])
        passage = np.zeros(len(features["input_ids"]), dtype=bool)
        start = self.passage_start(len(question))
        passage[start:start + kept] = side.passage[:kept]
        return PairInput(features, passage)


@lru_cache(maxsize=4)
def pair_maker(tokenizer, max_length: int) -> PairMaker:
    """The :class:`PairMaker` of ``tokenizer`` at ``max_length``, one per pair of them: the samples built for a run
    and its batches share what was tokenised."""
    return PairMaker(tokenizer, max_length)


def pad_inputs(inputs: list[PairInput], tokenizer) -> tuple[dict[str, np.ndarray], np.ndarray, list[int]]:
    """``inputs`` padded to the longest as ``tokenizer(..., padding=True)`` pads (its pad ids, its side): the
    features with the attention mask ``[N, L]`` (int64), the passage-token mask ``[N, L]`` and each row's shift
    (where its first token went: non-zero only when padding on the left)."""
    n, length = len(inputs), max(len(x) for x in inputs)
    pad = {"input_ids": tokenizer.pad_token_id, "token_type_ids": tokenizer.pad_token_type_id}
    features = {key: np.full((n, length), pad.get(key, 0), dtype=np.int64) for key in inputs[0].features}
    features["attention_mask"] = np.zeros((n, length), dtype=np.int64)
    passage = np.zeros((n, length), dtype=bool)
    shifts = [length - len(x) if tokenizer.padding_side == "left" else 0 for x in inputs]
    for row, (x, shift) in enumerate(zip(inputs, shifts)):
        cols = slice(shift, shift + len(x))
        for key, values in x.features.items():
            features[key][row, cols] = values
        features["attention_mask"][row, cols] = 1
        passage[row, cols] = x.passage
    return features, passage, shifts
