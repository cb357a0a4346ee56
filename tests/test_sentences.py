"""The rule-based sentence splitter: known hard cases (abbreviations, initials, numbers)."""

from __future__ import annotations

import pytest

from pretriever.corpus.sentences import split_sentences


def sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text)]


@pytest.mark.parametrize("text, expected", [
    ("He was promoted to Brig. Gen. Smith in 1942. He retired.",
     ["He was promoted to Brig. Gen. Smith in 1942.", "He retired."]),
    ("The rifle is the Sa vz. 58. It was made in Czechoslovakia.",
     ["The rifle is the Sa vz. 58.", "It was made in Czechoslovakia."]),
    ("J. R. R. Tolkien wrote it. J.R.R. Tolkien was British.",
     ["J. R. R. Tolkien wrote it.", "J.R.R. Tolkien was British."]),
    ("The U.S. Army grew. It was big.", ["The U.S. Army grew.", "It was big."]),
    ("He wore No. 5 for the team. Then he left.", ["He wore No. 5 for the team.", "Then he left."]),
    ("They lived on St. Mark's Place. It was loud.", ["They lived on St. Mark's Place.", "It was loud."]),
    ("Lt. Col. Jones and Dr. Smith et al. spoke. Fr. Brown left.",
     ["Lt. Col. Jones and Dr. Smith et al. spoke.", "Fr. Brown left."]),
    ("It rose to 3.5 in 2010. It fell.", ["It rose to 3.5 in 2010.", "It fell."]),
    ('He said: "Go." She went. Really? Yes! (Then) it ended.',
     ['He said: "Go."', "She went.", "Really?", "Yes!", "(Then) it ended."]),
    ("See p. 5. Then go.", ["See p. 5.", "Then go."]),
    ("Роден е в гр. София. Учи там.", ["Роден е в гр. София.", "Учи там."]),
    ("lower case after a stop. does not split", ["lower case after a stop. does not split"]),
])
def test_hard_cases(text, expected):
    assert sentences(text) == expected


def test_spans_cover_the_words_without_surrounding_spaces():
    text = "One two.  Three four!   Five"
    spans = split_sentences(text)
    assert [text[s:e] for s, e in spans] == ["One two.", "Three four!", "Five"]
    assert "".join(text[s:e] for s, e in spans).replace(" ", "") == text.replace(" ", "")
