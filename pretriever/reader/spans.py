"""Reader inputs and span labels: ``question [SEP] title [SEP] passage`` and answer offsets as tokens.

The reader sees one passage at a time as the pair (question, ``title [SEP] passage``), cut to
``max_length`` tokens by trimming the passage (``truncation="only_second"``), as DPR's reader
(Karpukhin et al., 2020, section 3) does. The fast tokenizer's offset mapping ties every
passage token to its characters in the passage text, so:

* answers found in the passage as character spans become (start token, end token) pairs;
* an answer that runs past the last kept token (cut by truncation) is dropped and counted;
* a predicted token span maps back to the exact characters of the passage.

Example::

    enc = encode(tokenizer, ["who wrote Hamlet?"], ["Hamlet"], ["Hamlet is a tragedy by William Shakespeare."], 64)
    spans, dropped = token_spans(enc.offsets[0], answer_char_spans(enc.texts[0], ["William Shakespeare"]))
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import regex

CharSpan = tuple[int, int]  # [start, end) in the passage text


@lru_cache(maxsize=65536)
def _pattern(answer: str, mode: str):
    """The answer as written, case-insensitively, not inside a longer word (string mode), or the answer as a
    pattern (regex mode; None when it does not compile). Matched on the text as it is, so offsets stay true."""
    try:
        if mode == "regex":
            return regex.compile(answer, flags=regex.IGNORECASE | regex.UNICODE | regex.MULTILINE)
        return regex.compile(r"(?<!\w)" + regex.escape(answer) + r"(?!\w)", flags=regex.IGNORECASE | regex.UNICODE)
    except (regex.error, RecursionError, OverflowError):
        return None


def answer_char_spans(text: str, answers: list[str], mode: str = "string") -> list[CharSpan]:
    """Every occurrence of every answer in ``text``, sorted: literal, case-insensitive and at word
    boundaries (``string``), or where the pattern matches (``regex``, CuratedTREC's answers)."""
    spans: set[CharSpan] = set()
    for answer in answers:
        answer = answer.strip()
        if not answer:
            continue
        pattern = _pattern(answer, mode)
        if pattern is None:
            continue
        spans.update((m.start(), m.end()) for m in pattern.finditer(text) if m.end() > m.start())
    return sorted(spans)


@dataclass
class Encoded:
    """A batch of reader inputs: ``features`` (tensors for the model) and, per input, the passage
    character span of every token (None for question, title and special tokens)."""

    features: dict[str, Any]
    offsets: list[list[CharSpan | None]]
    texts: list[str]


def _separator(tokenizer) -> str:
    return tokenizer.sep_token or "|"


def second_texts(tokenizer, titles: list[str | None], texts: list[str]) -> tuple[list[str], list[str]]:
    """(each pair's second text, ``title [SEP] passage``; the part before the passage)."""
    sep = _separator(tokenizer)
    prefixes = [f"{title or ''} {sep} " for title in titles]
    return [prefix + text for prefix, text in zip(prefixes, texts)], prefixes


def in_passage(start: int, end: int, prefix: int) -> CharSpan | None:
    """A word piece's span in the passage text, from its span in ``title [SEP] passage`` (``prefix`` characters
    before the passage); None for the title's and the separator's pieces and for empty ones."""
    return (start - prefix, end - prefix) if start >= prefix and end > start else None


def encode(tokenizer, questions: list[str], titles: list[str | None], texts: list[str], max_length: int,
           return_tensors: str | None = "pt") -> Encoded:
    """Tokenize (question, ``title [SEP] passage``) pairs with a fast tokenizer, keeping passage offsets."""
    if not getattr(tokenizer, "is_fast", False):
        raise TypeError(f"the reader needs a fast tokenizer (offset mapping); {type(tokenizer).__name__} is not")
    seconds, prefixes = second_texts(tokenizer, titles, texts)
    batch = tokenizer(questions, seconds, truncation="only_second", max_length=max_length, padding=True,
                      return_offsets_mapping=True, return_tensors=return_tensors)
    offsets: list[list[CharSpan | None]] = []
    for i, prefix in enumerate(prefixes):
        sequence_ids = batch.sequence_ids(i)
        row: list[CharSpan | None] = []
        mapping = batch["offset_mapping"][i]
        for seq, (start, end) in zip(sequence_ids, mapping.tolist() if hasattr(mapping, "tolist") else mapping):
            row.append(in_passage(start, end, len(prefix)) if seq == 1 else None)
        offsets.append(row)
    features = {key: value for key, value in batch.items() if key != "offset_mapping"}
    return Encoded(features=features, offsets=offsets, texts=list(texts))


def token_spans(offsets: list[CharSpan | None], char_spans: list[CharSpan]) -> tuple[list[tuple[int, int]], int]:
    """(start token, end token) of each character span (inclusive token indices), and how many spans
    were dropped because truncation cut them (they end after the last kept passage token)."""
    passage = [(i, span) for i, span in enumerate(offsets) if span is not None]
    if not passage:
        return [], len(char_spans)
    kept_end = passage[-1][1][1]
    out, dropped = [], 0
    for start, end in char_spans:
        if end > kept_end:
            dropped += 1
            continue
        first = next((i for i, (s, e) in passage if e > start), None)
        last = next((i for i, (s, e) in reversed(passage) if s < end), None)
        if first is None or last is None or last < first:
            dropped += 1
            continue
        out.append((first, last))
    return sorted(set(out)), dropped
