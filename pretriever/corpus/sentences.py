"""Rule-based sentence splitting.

HLP's queries are the sentence that holds a link, so sentence boundaries matter,
but they must also be cheap at 22M passages. A regex splitter with an abbreviation
list is fast, deterministic and language-light (it works on Cyrillic as well as
Latin text); it never splits after a known abbreviation ("Brig. Gen. Smith",
"Sa vz. 58", "No. 5", "St. Mark's", "et al."), an initial ("J. R. R. Tolkien") or an
initialism ("U.S. Army", "J.R.R. Tolkien").

Why not a maintained splitter: ``bench/bench_sentences.py`` on the enwiki sample's clean
text (2.8 MB, one core, 2026-11-24) measured this splitter at 32 MB per CPU second,
blingfire 0.1.8 at 11.6 (2.8 times slower) and pySBD 0.3.4 at 0.17 (190 times slower,
which would make it the most expensive step of a Wikipedia build); on the known misses
("Brig. Gen.", "vz.", initials, "U.S.", "No. 5", "St.") both split after "vz.", and
blingfire also joins "it. J.R.R. Tolkien". The price of the rules: "in the U.S. The
next" stays one sentence (an abbreviation before a capital is never taken as a
boundary), and a new abbreviation needs a word added here.
"""

from __future__ import annotations

import re

# A candidate boundary: terminal punctuation, optional closing quotes/brackets, then space, then
# no ASCII lower-case letter (the caller checks the next character further).
_BOUNDARY = re.compile(r"[.!?\u2026]+[\"'\u201d\u2019)\]]*\s+(?![a-z])")
# "U.S", "J.R.R", "e.g", "i.e": single letters joined by dots
_INITIALISM = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]")

ABBREVIATIONS = frozenset(
    # titles and ranks
    """mr mrs ms messrs dr prof sr jr st mt ft fr rev hon esq pres gov sen rep supt insp msgr sgt cpl pvt
    lt col gen brig maj capt cmdr cdr adm cmdre
    """
    # references and Latin
    """no nos vs etc cf ca c approx fig figs vol vols pp p ed eds trans repr ser op al ibid viz ch sec art
    est b d fl r
    """
    # organisations and places
    """inc ltd co corp bros dept univ assn ave blvd rd
    """
    # months
    """jan feb mar apr jun jul aug sep sept oct nov dec
    """
    # other languages: Czech/Slovak vz. (vzor, "model"), German, Bulgarian/Russian
    """vz tzv resp nr bzw usw vgl hl sv tj np г гр ул проф д-р""".split()
)


def _is_abbreviation(word: str) -> bool:
    token = word.rstrip(".!?\"')]\u201d\u2019").lstrip("(\"'\u201c\u2018[").lower()
    if not token:
        return False
    if len(token) == 1 and token.isalpha():  # an initial: "J. Smith"
        return True
    if any(ch.isdigit() for ch in token):  # "0.4." ends a sentence; it is no abbreviation
        return False
    return token in ABBREVIATIONS or _INITIALISM.fullmatch(token) is not None


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
        if match.group()[0] == ".":  # only a full stop can end an abbreviation
            word_start = line.rfind(" ", 0, match.start()) + 1
            if _is_abbreviation(line[word_start:match.start() + 1]):
                continue
        sentence_end = match.end() - (len(match.group()) - len(match.group().rstrip()))
        spans.append((start, sentence_end))
        start = end
    if start < len(line):
        spans.append((start, len(line.rstrip())))
    return [(s, e) for s, e in spans if e > s]
