"""Rule-based sentence splitting.

HLP's queries are the sentence that holds a link, so sentence boundaries matter,
but they must also be cheap at 22M passages. A regex splitter with an abbreviation
list is fast, deterministic and language-light (it works on Cyrillic as well as
Latin text); it never splits inside a line break-free abbreviation such as
"U.S." or an initial such as "J. R. R. Tolkien".
"""

from __future__ import annotations

import re

# A candidate boundary: terminal punctuation, optional closing quotes/brackets, then space.
_BOUNDARY = re.compile(r"[.!?\u2026]+[\"'\u201d\u2019)\]]*\s+")

ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st mt ft no nos vs etc e.g i.e cf ca c approx fig figs vol
    vols pp p ed eds inc ltd co corp gen gov sen rep rev col lt sgt capt maj cmdr adm
    jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k u.n a.d b.c est al op
    ch sec art dept univ assn bros""".split()
)


def _is_abbreviation(word: str) -> bool:
    token = word.rstrip(".!?\"')]\u201d\u2019").lstrip("(\"'\u201c\u2018[").lower()
    if not token:
        return False
    if len(token) == 1 and token.isalpha():  # an initial: "J. Smith"
        return True
    if any(ch.isdigit() for ch in token):  # "0.4." ends a sentence; it is no abbreviation
        return False
    return token in ABBREVIATIONS or (len(token) <= 4 and "." in token)  # "U.S", "e.g"


def split_sentences(line: str) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` of the sentences of one paragraph, covering its words."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _BOUNDARY.finditer(line):
        end = match.end()
        if end >= len(line):
            break
        following = line[end]
        if not (following.isupper() or following.isdigit() or following in "\"'(\u201c\u2018["):
            continue
        word_start = max(line.rfind(" ", 0, match.start()), line.rfind("\n", 0, match.start())) + 1
        if _is_abbreviation(line[word_start:match.start() + 1]):
            continue
        sentence_end = match.end() - (len(match.group()) - len(match.group().rstrip()))
        spans.append((start, sentence_end))
        start = end
    if start < len(line):
        spans.append((start, len(line.rstrip())))
    return [(s, e) for s, e in spans if e > s]
