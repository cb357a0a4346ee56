"""Open-domain QA answer matching as DPR does it, and the question-answer files it reads.

Matching (Karpukhin et al., 2020, the ``has_answer`` rule of DPR's evaluation):

* both the passage text and every answer are Unicode NFD-normalised (so ``Röntgen`` written
  with a precomposed ``ö`` matches one written as ``o`` + combining diaeresis);
* ``string`` mode: both are cut by the *simple tokenizer* into tokens, each either a run of
  letters, numbers and combining marks (``[\\p{L}\\p{N}\\p{M}]+``) or a single character that
  is neither a separator nor a control/other character (``[^\\p{Z}\\p{C}]``: punctuation,
  symbols), lower-cased; an answer matches when its token sequence occurs contiguously in the
  passage's. So ``May 18 , 2018`` matches ``on May 18, 2018`` and ``U.S.`` matches ``U. S.``;
* ``regex`` mode (CuratedTREC, whose answers are regular expressions): an answer matches when
  the pattern is found anywhere in the normalised text, case-insensitively. A pattern that
  does not compile matches nothing.

One deliberate difference: an answer with no tokens at all (an empty string, whitespace)
never matches; DPR's loop would count it as found in every passage.

Files (:func:`load_qa_file`), recognised by content:

* NQ-open / WebQuestions / CuratedTREC JSONL: one ``{"question": ..., "answer": [...]}`` a
  line (``answers`` is accepted too);
* DPR qas TSV: ``question<TAB>['answer', ...]``, read with :mod:`csv` like DPR does. The
  answer list is parsed with :func:`ast.literal_eval`, which only builds literals and never
  runs code; anything that is not a list of strings is rejected with the file and line;
* DPR JSON: a list of ``{"question", "answers", "positive_ctxs": [{"title", "text",
  "passage_id"}...], ...}`` (DPR's retriever training/dev files). The first positive
  context, when given, is the question's gold passage for the overlap analysis.
"""

from __future__ import annotations

import ast
import csv
import json
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import regex

from pretriever.data.beir import DatasetError
from pretriever.io import read_jsonl

MATCH_MODES = ("string", "regex")

_ALPHA_NUM = r"[\p{L}\p{N}\p{M}]+"
_NON_WS = r"[^\p{Z}\p{C}]"
_TOKEN = regex.compile(f"({_ALPHA_NUM})|({_NON_WS})", flags=regex.IGNORECASE | regex.UNICODE | regex.MULTILINE)
_WORD = regex.compile(_ALPHA_NUM)


class QAFileError(DatasetError):
    """A question-answer file cannot be read; the message names the file and the line."""


def normalize(text: str) -> str:
    """Unicode NFD, as DPR applies to passages and answers before matching."""
    return unicodedata.normalize("NFD", text)


def tokenize(text: str) -> list[str]:
    """DPR's simple tokenizer on NFD text, lower-cased: word runs and single non-space characters.

    Args:
        text: any text.

    Returns:
        Its tokens.
    """
    return [m.group().lower() for m in _TOKEN.finditer(normalize(text))]


def word_tokens(text: str) -> list[str]:
    """The simple tokenizer's word tokens only (letters/numbers/marks), lower-cased: for overlap."""
    return [m.group().lower() for m in _WORD.finditer(normalize(text))]


@lru_cache(maxsize=65536)
def _compiled(pattern: str):
    try:
        return regex.compile(normalize(pattern), flags=regex.IGNORECASE | regex.UNICODE | regex.MULTILINE)
    except (regex.error, TypeError, ValueError, OverflowError, RecursionError):
        return None


def _contains(haystack: list[str], needle: list[str]) -> bool:
    """Whether ``needle`` occurs as a contiguous run of ``haystack`` (an empty needle never does)."""
    n = len(needle)
    if n == 0 or n > len(haystack):
        return False
    first, last_start = needle[0], len(haystack) - n
    i = 0
    while True:
        try:
            i = haystack.index(first, i, last_start + 1)
        except ValueError:
            return False
        if haystack[i:i + n] == needle:
            return True
        i += 1


class AnswerMatcher:
    """``has_answer(answers, text)`` in one mode, caching tokenized answers and passages.

    Args:
        mode: ``string`` (token sequences, DPR's default) or ``regex`` (CuratedTREC's answer patterns).
    """

    def __init__(self, mode: str = "string"):
        if mode not in MATCH_MODES:
            raise ValueError(f"match mode must be one of {', '.join(MATCH_MODES)}, got {mode!r}")
        self.mode = mode
        self._answer_tokens: dict[str, list[str]] = {}

    def answer_tokens(self, answer: str) -> list[str]:
        """An answer's tokens (:func:`tokenize`), cut once per matcher.

        Args:
            answer: one answer.

        Returns:
            Its tokens.
        """
        tokens = self._answer_tokens.get(answer)
        if tokens is None:
            tokens = self._answer_tokens[answer] = tokenize(answer)
        return tokens

    def has_answer(self, answers: list[str], text: str | None, text_tokens: list[str] | None = None) -> bool:
        """Whether any answer occurs in ``text`` (``text_tokens``: its :func:`tokenize`, if already cut).

        Args:
            answers: the accepted answers (patterns in ``regex`` mode).
            text: a passage's text (None: no passage, no answer).
            text_tokens: its tokens, when the caller has them.

        Returns:
            Whether one occurs.
        """
        if text is None:
            return False
        if self.mode == "regex":
            normalized = normalize(text)
            for answer in answers:
                pattern = _compiled(answer)
                if pattern is not None and pattern.search(normalized) is not None:
                    return True
            return False
        if text_tokens is None:
            # a cheap necessary condition first: every token of an answer occurs in the lower-cased
            # text as a substring (final sigma folded: str.lower picks it by context); most passages
            # hold no answer at all and are never tokenized
            folded = normalize(text).lower().replace("\u03c2", "\u03c3")
            answers = [a for a in answers
                       if all(t.replace("\u03c2", "\u03c3") in folded for t in self.answer_tokens(a))]
            if not answers:
                return False
            text_tokens = tokenize(text)
        return any(_contains(text_tokens, self.answer_tokens(answer)) for answer in answers)


def has_answer(answers: list[str], text: str, mode: str = "string") -> bool:
    """DPR's ``has_answer``: does any of ``answers`` occur in ``text``? (see the module docstring).

    Args:
        answers: the accepted answers.
        text: a passage's text.
        mode: ``string`` or ``regex`` (:class:`AnswerMatcher`).

    Returns:
        Whether one occurs.
    """
    return AnswerMatcher(mode).has_answer(list(answers), text)


def invalid_patterns(answers: list[str]) -> list[str]:
    """The answers that are not valid regular expressions (they can never match in regex mode)."""
    return [a for a in answers if _compiled(a) is None]


@dataclass
class QAExample:
    """A question of an open-domain QA file, its accepted answers and, where the file gives them, its gold passages."""
    question: str
    answers: list[str]
    qid: str = ""  # the 0-based line/item number as a string unless the file gives an id
    gold: list[dict] = field(default_factory=list)  # gold passages (DPR JSON positive_ctxs): title, text, passage_id
    source_passage_id: str | None = None  # qac: the passage holding the statement the question was made from


def _answer_list(value, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise QAFileError(f"{where}: the answers must be a list of strings, got {type(value).__name__} "
                          f"{str(value)[:80]!r}")
    return value


def _read_tsv(path: Path) -> list[QAExample]:
    out = []
    with open(path, encoding="utf-8", newline="") as f:
        for line_no, row in enumerate(csv.reader(f, delimiter="\t"), 1):
            where = f"{path}, line {line_no}"
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) < 2:
                raise QAFileError(f"{where}: expected `question<TAB>['answer', ...]`, found no tab")
            question, field_ = row[0], row[1]
            try:
                # literal_eval builds Python literals only: a call such as __import__('os') is a syntax
                # error for it, never executed
                value = ast.literal_eval(field_.strip())
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as err:
                raise QAFileError(f"{where}: the answer field is not a Python list literal of strings "
                                  f"({type(err).__name__}): {field_[:80]!r}") from None
            out.append(QAExample(question=question, answers=_answer_list(value, where), qid=str(len(out))))
    return out


def _example(obj, where: str, index: int) -> QAExample:
    if not isinstance(obj, dict) or not isinstance(obj.get("question"), str):
        raise QAFileError(f"{where}: expected an object with a \"question\" string")
    if "answers" in obj:
        answers = obj["answers"]
    elif "answer" in obj:
        answers = obj["answer"]
    else:
        raise QAFileError(f"{where}: no \"answer\" (or \"answers\") list")
    if isinstance(answers, str):
        answers = [answers]
    gold = obj.get("positive_ctxs") or []
    if not isinstance(gold, list) or not all(isinstance(g, dict) for g in gold):
        raise QAFileError(f"{where}: \"positive_ctxs\" must be a list of objects")
    qid = obj.get("id", obj.get("qid", index))
    source = obj.get("source_passage_id")
    return QAExample(question=obj["question"], answers=_answer_list(answers, where), qid=str(qid), gold=gold,
                     source_passage_id=str(source) if source is not None else None)


def _read_jsonl(path: Path) -> list[QAExample]:
    out: list[QAExample] = []
    for where, obj in read_jsonl(path, QAFileError):
        out.append(_example(obj, where, len(out)))
    return out


def _read_json(path: Path) -> list[QAExample]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise QAFileError(f"{path}: not JSON ({err.msg} at line {err.lineno})") from None
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        data = data["data"]
    if not isinstance(data, list):
        raise QAFileError(f"{path}: expected a JSON list of questions (DPR format)")
    return [_example(obj, f"{path}, item {i}", i) for i, obj in enumerate(data)]


def sniff_qa_format(path: Path) -> str:
    """``jsonl``, ``json`` (DPR) or ``tsv`` (DPR qas), from the first non-blank characters."""
    with open(path, encoding="utf-8", errors="replace") as f:
        head = f.read(65536)
    stripped = head.lstrip("\ufeff \t\r\n")
    if stripped.startswith("["):
        return "json"
    if stripped.startswith("{"):
        first = stripped.split("\n", 1)[0].strip()
        try:
            json.loads(first)
            return "jsonl"
        except json.JSONDecodeError:
            return "json"
    return "tsv"


def load_qa_file(path: Path | str) -> list[QAExample]:
    """Questions and answers from NQ-open JSONL, DPR qas TSV or DPR JSON (see the module docstring).

    Args:
        path: the file; its format is told from its content.

    Returns:
        The questions in file order.

    Raises:
        QAFileError: the file is missing, malformed (the message names the line or item) or empty.
    """
    path = Path(path)
    if not path.is_file():
        raise QAFileError(f"{path}: no such file")
    reader = {"json": _read_json, "jsonl": _read_jsonl, "tsv": _read_tsv}[sniff_qa_format(path)]
    examples = reader(path)
    if not examples:
        raise QAFileError(f"{path}: holds no questions")
    return examples


def guess_match_mode(path: Path | str) -> str:
    """``regex`` for CuratedTREC files (their answers are patterns), else ``string`` (DPR's choice)."""
    return "regex" if "trec" in Path(path).name.lower() else "string"
