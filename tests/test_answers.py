"""DPR answer matching and the QA files, with cases from ../shared/data/qa and handwritten ones."""

from __future__ import annotations

import collections
import json
import unicodedata
from pathlib import Path

import pytest
import regex

from conftest import QA
from pretriever.data.qa import (AnswerMatcher, QAFileError, guess_match_mode, has_answer, load_qa_file,
                                         tokenize)



def qa(name: str) -> Path:
    path = QA / name
    if not path.exists():
        pytest.skip(f"real test data not found: {path}")
    return path


def by_question(path: Path) -> dict[str, list[str]]:
    return {ex.question: ex.answers for ex in load_qa_file(path)}


# --- the simple tokenizer -------------------------------------------------------------------


def test_simple_tokenizer_words_and_single_symbols():
    assert tokenize("U.S. forces' 1,020–1,080 kg!") == ["u", ".", "s", ".", "forces", "'", "1", ",", "020", "–",
                                                        "1", ",", "080", "kg", "!"]
    # combining marks stay inside their word after NFD
    assert tokenize("Röntgen") == [unicodedata.normalize("NFD", "röntgen")]
    assert tokenize("  \t\n") == []


# --- answer matching: cases from the real files -----------------------------------------------


def test_nfd_accents_from_the_dpr_file():
    answers = by_question(qa("nq-test-dpr.tsv"))["who got the first nobel prize in physics"]
    assert answers == ["Wilhelm Conrad Röntgen"]
    composed = "The first prize went to Wilhelm Conrad R\u00f6ntgen in 1901."
    decomposed = unicodedata.normalize("NFD", composed)
    assert composed != decomposed
    assert has_answer(answers, composed) and has_answer(answers, decomposed)
    assert has_answer([unicodedata.normalize("NFD", answers[0])], composed)
    assert not has_answer(answers, "Wilhelm Conrad Rontgen")  # DPR keeps accents: NFD, not stripping


def test_punctuation_spacing_from_both_nq_files():
    dpr = by_question(qa("nq-test-dpr.tsv"))
    nq = by_question(qa("nq-open-dev.jsonl"))
    assert dpr["when is the next deadpool movie being released"] == ["May 18 , 2018"]
    assert nq["when is the next deadpool movie being released"] == ["May 18, 2018"]
    passage = "Deadpool 2 was released in the United States on May 18, 2018."
    assert has_answer(dpr["when is the next deadpool movie being released"], passage)
    assert has_answer(nq["when is the next deadpool movie being released"], passage)
    # NQ-open writes this answer with no-break spaces; tokens ignore the kind of space
    assert nq["when is the next scandal episode coming out"] == ["February\u00a01,\u00a02018"]
    assert has_answer(nq["when is the next scandal episode coming out"], "It returns on February 1,2018.")
    assert not has_answer(nq["when is the next scandal episode coming out"], "It returns on February 12, 2018.")


def test_curatedtrec_regex_answers():
    trec = by_question(qa("curatedtrec-test.jsonl"))
    jerusalem = trec["How many feet above sea level is Jerusalem?"]
    assert jerusalem == [r"\b2,?[4567][0-9][0-9]\b"]
    assert has_answer(jerusalem, "Jerusalem lies about 2,474 feet above sea level.", mode="regex")
    assert not has_answer(jerusalem, "Jerusalem lies about 12,474 feet above sea level.", mode="regex")
    assert not has_answer(jerusalem, "about 2,474 feet", mode="string")  # string mode reads it as tokens
    mckinley = trec["How tall is Mount McKinley?"]
    assert has_answer(mckinley, "DENALI RISES 20,320 FEET above sea level", mode="regex")  # case-insensitive
    assert not has_answer(mckinley, "it rises 19,320 feet", mode="regex")
    anthem = trec["What is the national anthem in England?"]
    assert has_answer(anthem, "they sang god save the queen", mode="regex")
    assert guess_match_mode(qa("curatedtrec-test.jsonl")) == "regex"
    assert guess_match_mode(qa("nq-open-dev.jsonl")) == "string"
    # every pattern of the file compiles
    assert all(regex.compile(a) for answers in trec.values() for a in answers)


def test_regex_mode_on_nfd_text():
    # the text is NFD-normalised before matching; so is the pattern
    assert has_answer(["Würzburg"], "He worked at W\u00fcrzburg", mode="regex")
    assert has_answer(["caf\u00e9 c"], unicodedata.normalize("NFD", "Caf\u00e9 Central"), mode="regex")


# --- handwritten cases -------------------------------------------------------------------------


@pytest.mark.parametrize("answer, text, expected", [
    ("South Carolina", "the south carolina gamecocks won", True),  # lower-cased
    ("2017", "in 20170 cases", False),  # whole tokens only
    ("one", "someone else", False),
    ("one", "one's own", True),  # one ' s
    ("Bobby Scott", "written by Bobby\n  Scott and", True),  # any whitespace between tokens
    ("Bobby Scott", "Scott Bobby", False),  # order matters
    ("U.S.", "the U. S. army", True),
    ("Dai Xiuli", "Dai Yongge and Xiuli", False),  # contiguous
    ("", "anything at all", False),  # an empty answer never matches (DPR's loop would say yes)
    ("hit points or health points", "HP: hit points or health points.", True),
])
def test_string_matching(answer, text, expected):
    assert has_answer([answer], text) is expected


def test_fast_path_agrees_with_full_tokenization():
    """has_answer skips tokenizing passages that cannot hold an answer; it must decide as DPR's loop."""
    from pretriever.data.qa import _contains

    nq = load_qa_file(qa("nq-open-dev.jsonl"))[:400]
    passages = [f"In {ex.answers[0]}, the record said {nq[(i + 7) % len(nq)].answers[-1]}." for i, ex in enumerate(nq)]
    passages += ["\u039f\u0394\u039f\u03a3'\u0391 and more", "Stra\u00dfe", "\u0130stanbul"]
    answers = [ex.answers for ex in nq] + [["\u039f\u0394\u039f\u03a3"], ["strasse"], ["i\u0307stanbul"]]
    decided = 0
    for text in passages:
        for ans in answers[::9] + answers[-3:]:
            full = any(_contains(tokenize(text), tokenize(a)) for a in ans)
            assert has_answer(ans, text) is full, (ans, text)
            decided += full
    assert decided > 50  # positives are exercised, not only misses


def test_invalid_pattern_never_matches_and_does_not_raise():
    assert not has_answer(["(unclosed", "[a-"], "(unclosed [a-", mode="regex")
    assert has_answer(["(unclosed", "clos"], "(unclosed", mode="regex")


def test_matcher_reuses_tokens():
    m = AnswerMatcher("string")
    tokens = tokenize("Paris is in France")
    assert m.has_answer(["france"], "ignored when tokens are given", tokens)
    with pytest.raises(ValueError):
        AnswerMatcher("fuzzy")


# --- files ---------------------------------------------------------------------------------------


def test_malicious_tsv_answer_is_rejected_not_run(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "qas.tsv"
    path.write_text(f"a fine question\t['fine']\n"
                    f"an evil question\t__import__('os').system('touch {marker}')\n", encoding="utf-8")
    with pytest.raises(QAFileError) as info:
        load_qa_file(path)
    assert str(path) in str(info.value) and "line 2" in str(info.value)
    assert not marker.exists()


@pytest.mark.parametrize("field", ["{'a': 1}", "[1, 2]", "['a', ['b']]", "'just a string'", "(lambda: 1)()",
                                   "['a'] + ['b']", "[x for x in 'ab']"])
def test_tsv_answers_must_be_a_list_of_strings(tmp_path, field):
    path = tmp_path / "qas.tsv"
    path.write_text(f"q\t{field}\n", encoding="utf-8")
    with pytest.raises(QAFileError, match=r"line 1"):
        load_qa_file(path)


def test_dpr_tsv_quoting_is_csv(tmp_path):
    path = tmp_path / "qas.tsv"
    path.write_text('who sings it\t"[\'Solange Knowles\', ""Destiny \'s Child""]"\n', encoding="utf-8")
    (ex,) = load_qa_file(path)
    assert ex.answers == ["Solange Knowles", "Destiny 's Child"]


def test_dpr_json_with_gold_passages(tmp_path):
    path = tmp_path / "nq-dev.json"
    path.write_text(json.dumps([{"question": "q?", "answers": ["a"],
                                 "positive_ctxs": [{"title": "T", "text": "a b", "passage_id": "7"}]}]))
    (ex,) = load_qa_file(path)
    assert ex.answers == ["a"] and ex.gold[0]["passage_id"] == "7"
    path.write_text(json.dumps([{"question": "q?", "answers": "a"}, {"question": 3, "answers": []}]))
    with pytest.raises(QAFileError, match="item 1"):
        load_qa_file(path)


def _key(text: str) -> str:
    """Letters and digits only: DPR's file is PTB-tokenized ("do n't", "gon na"), NQ-open's is not."""
    return "".join(regex.findall(r"[\p{L}\p{N}\p{M}]+", unicodedata.normalize("NFD", text).lower()))


def test_dpr_tsv_and_nq_open_jsonl_hold_the_same_3610_questions():
    dpr = load_qa_file(qa("nq-test-dpr.tsv"))
    nq = load_qa_file(qa("nq-open-dev.jsonl"))
    assert len(dpr) == len(nq) == 3610
    assert collections.Counter(_key(e.question) for e in dpr) == collections.Counter(_key(e.question) for e in nq)
    nq_answers = {_key(e.question): {_key(a) for a in e.answers} for e in nq}
    differ = sorted(e.question for e in dpr if {_key(a) for a in e.answers} != nq_answers[_key(e.question)])
    # two answers differ in the source files themselves (a footnote mark, a cut-off character)
    assert differ == ["when did television come out in the us", "where is the boy who played charlie in willy wonka"]


def test_other_real_files_load():
    assert len(load_qa_file(qa("webq-test.jsonl"))) == 2032
    trec = load_qa_file(qa("curatedtrec-test.jsonl"))
    assert len(trec) == 694 and all(ex.answers for ex in trec)
