"""Which interrogative phrases may ask for an entity where it stands in its statement (C-MORE's Table 5, and ours).

C-MORE (Yue et al., ACL 2022, Appendix Table 5) maps each spaCy entity type to a few phrases and replaces the
entity by one of them. Read as written, a phrase sometimes cannot ask for the entity where it stands: "what" for
the CARDINAL in "15 continental states" asks which states, not how many; "what time" for the DATE "2.2 years"
or "80 years" asks for a moment, not a duration; "what date census" for "the 2006 census"; "what country" for
"Alabama". :func:`alternatives` gives the phrases that fit the entity (its text, and the words before and after
it), per phrase set:

* ``table5`` (the default): Table 5's own phrases, less those that do not fit; an entity that none fits is not
  asked (the statement's other entities are tried; the funnel counts ``no_fitting_phrase``);
* ``ours``: Table 5's, plus phrases the table lacks, named in :data:`OURS_NOTE`: "how many" for a count,
  "how many years" for a duration, "what year" and "which year's" for a year, "what place" for a place that is
  no country, "which building" for a facility.

Example::

    alternatives("15", "CARDINAL", "toured through ", " continental states", "table5")  # () : not asked
    alternatives("15", "CARDINAL", "toured through ", " continental states", "ours")  # ("how many",)
    alternatives("Alabama", "GPE", "the people in ", " identified", "ours")  # ("where", "what place")
"""

from __future__ import annotations

import functools
import re
import unicodedata

# C-MORE Appendix Table 5: entity type -> candidate question phrases. The PDF text of the table is
# scrambled (continuation lines appear as rows "EVENI", "LUC", "UKU"); they belong to EVENT, LOC and
# ORG. CARDINAL's row reads only "what", as here; the paper's running example (section 1, Figure 1)
# replaces the CARDINAL "14" by "how many", which is ours (``--phrases ours``).
WH_PHRASES: dict[str, tuple[str, ...]] = {
    "CARDINAL": ("what",),
    "DATE": ("when", "what time", "what date"),
    "EVENT": ("what event", "what", "which event"),
    "FAC": ("where", "what buildings"),
    "GPE": ("where", "what country"),
    "LANGUAGE": ("what language", "which language"),
    "LAW": ("which law", "what law"),
    "LOC": ("where", "what location", "which place", "what place"),
    "MONEY": ("how much money", "how much"),
    "NORP": ("what", "what groups", "where"),
    "ORDINAL": ("what rank", "what"),
    "ORG": ("which organization", "what organization", "what"),
    "PERCENT": ("what percent", "what percentage"),
    "PERSON": ("who", "which person"),
    "PRODUCT": ("what", "what product"),
    "QUANTITY": ("how many", "how much"),
    "TIME": ("when", "what time"),
    "WORK_OF_ART": ("what", "what title"),
}

# ours, not Table 5 (``--phrases ours``): the type-level changes; the entity-level ones are in alternatives()
OURS: dict[str, tuple[str, ...]] = {**WH_PHRASES, "CARDINAL": ("how many", "what"), "FAC": ("where", "which building")}
PHRASE_SETS: dict[str, dict[str, tuple[str, ...]]] = {"table5": WH_PHRASES, "ours": OURS}
OURS_NOTE = ('"how many" for a CARDINAL (the paper\'s Figure 1 example); "how many years" (the duration\'s unit) '
             'for a DATE or TIME that is a duration; "what year" for a bare year, "which year\'s" for one that '
             'modifies a noun ("the 2006 census"); "what place" for a GPE that is no country; "which building" for a '
             'FAC')

PERSON_PHRASES = ("who", "which person")
# a title or rank just before a name goes with it (:func:`pretriever.mine.triplets.fit_phrase`): "led by Colonel which
# person" -> "led by which person"
TITLE = re.compile(r"(?:^|(?<=[\s(\"\u201c]))(?:Colonel|Col\.|General|Gen\.|Lieutenant|Lt\.|Major|Maj\.|Captain|"
                    r"Capt\.|Admiral|Commander|Sergeant|Marshal|President|Vice President|Prime Minister|Minister|"
                    r"Chancellor|Senator|Sen\.|Governor|Gov\.|Mayor|Judge|Justice|King|Queen|Prince|Princess|Emperor|"
                    r"Empress|Sultan|Duke|Duchess|Count|Countess|Baron|Lord|Lady|Sir|Dame|Saint|St\.|Pope|Bishop|"
                    r"Archbishop|Cardinal|Father|Rabbi|Imam|Sheikh|Professor|Prof\.|Doctor|Dr\.|Mr\.|Mrs\.|Ms\.|Mr|Mrs|"
                    r"Ms|Dr)\s+$", re.IGNORECASE)
_UNITS = r"(?:years?|months?|weeks?|days?|hours?|minutes?|seconds?|decades?|centuries|century|millenni(?:a|um))"
_NUMBER = (r"(?:[\d.,]+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
           r"forty|fifty|sixty|hundred|several|many|a few|few)")
# "2.2 years", "80 years", "803 days, 9 hours and 39 minutes", "about 20 years", "ten months": how long, not when
DURATION = re.compile(rf"(?i)^(?:about|approximately|nearly|almost|over|under|more than|less than|some|around|"
                      rf"roughly|at least|up to)?\s*{_NUMBER}(?:[\s-]+{_NUMBER})*[\s-]+({_UNITS})\b"
                      rf"(?:\s*(?:,|and)\s*{_NUMBER}[\s-]+{_UNITS})*(?:\s+(?:long|old))?$")
YEAR = re.compile(r"^\d{3,4}$")  # a bare year: "1987"
# a date a reader can give: a digit, a month's or a weekday's name, a century, decade or era ("today", "each year",
# "the following year" are none)
_MONTHS = ("january february march april may june july august september october november december jan feb mar apr "
           "jun jul aug sep sept oct nov dec")
_DAYS = "monday tuesday wednesday thursday friday saturday sunday"
_ANSWERABLE_DATE = re.compile(rf"(?i)\d|\b(?:{'|'.join((_MONTHS + ' ' + _DAYS).split())})\b|centur|decade|millenni|"
                              r"\b(?:BC|AD|BCE)\b")
_DETERMINER_BEFORE = re.compile(r"(?i)(?:^|[\s(\"\u201c])(?:the|a|an|this|these|those|its|his|her|their)\s+$")
_POSSESSIVE_BEFORE = re.compile("(?:['\u2019]s|s['\u2019])\\s+$")  # "Welles' 1941 Oscar"
# a word after the entity that is the noun it modifies or counts ("the 2006 census", "15 continental states",
# "14 of the men"), not a preposition, conjunction or verb that starts the rest of the clause
_WORD_AFTER = re.compile(r"^\s+(?!(?:in|on|at|by|to|from|and|or|but|as|for|with|than|while|when|since|until|after|"
                         r"before|during|per|is|was|were|are|be|been|he|she|it|they|we|i|you)\b)[A-Za-z]", re.I)
# a determiner and a number before a name, which the phrase would leave stranded: "the 1997 Stockholm ... Festival"
_STRANDED = re.compile(r"(?i)(?:^|[\s(\"\u201c])(?:the|a|an|this|its|his|her|their)\s+(?:\d[\d,.]*\s+)+$")
NUMERIC = ("CARDINAL", "DATE", "MONEY", "ORDINAL", "PERCENT", "QUANTITY", "TIME")
# a capitalised word just before: "Apollo 11", "Section 5", "Mercè Pons"
_NAME_BEFORE = re.compile(r"(?:^|[\s(\"\u201c])[A-Z][\w.-]*\s+$")


def alternatives(text: str, label: str, head: str, tail: str, phrases: str = "table5") -> tuple[str, ...]:
    """The phrases of set ``phrases`` (:data:`PHRASE_SETS`) that may ask for the entity ``text`` of type
    ``label`` between ``head`` and ``tail`` (the statement's text before and after it); () when none fits.

    Table 5's phrases that cannot ask for it go: a CARDINAL that counts a noun ("15 continental states": "what"
    asks which), a name after a determiner and a number ("at the 1997 what"), an ORDINAL before its noun ("the
    what rank movie"), a duration ("2.2 years": when/what time/what date ask for a moment), a year modifying a
    noun ("the 2006 census"), a date with no digit, month or era ("today", "each year": no answer a reader can give),
    "what country" for a GPE that is no country (:func:`is_country`). ``ours`` puts its own phrases there.
    """
    if phrases not in PHRASE_SETS:
        raise ValueError(f"phrases must be one of {', '.join(PHRASE_SETS)}, got {phrases!r}")
    ours = phrases == "ours"
    table = PHRASE_SETS[phrases][label]
    text = text.strip()
    if label == "ORDINAL" and _WORD_AFTER.match(tail):  # "the first movie": "what rank movie", "what movie" misread
        return ()
    if label == "CARDINAL" and _WORD_AFTER.match(tail):  # a count of the noun after it
        return ("how many",) if ours and not _NAME_BEFORE.search(head) else ()
    if label in ("DATE", "TIME"):
        if (duration := DURATION.match(text)) is not None:
            unit = duration.group(1).lower()
            plural = {"century": "centuries", "millennium": "millennia"}
            unit = plural.get(unit, unit if unit.endswith("s") else unit + "s")
            return ((f"how many {unit}" if not text.lower().endswith(" old") else "how old"),) if ours else ()
        if not _ANSWERABLE_DATE.search(text):  # "today", "each year", "the following year"
            return ()
        if label == "DATE" and YEAR.match(text):
            if _POSSESSIVE_BEFORE.search(head) and _WORD_AFTER.match(tail):  # "Welles' 1941 Oscar": no phrase reads
                return ()
            if _DETERMINER_BEFORE.search(head) and _WORD_AFTER.match(tail):  # "the 2006 census"
                return ("which year's",) if ours else ()
            if ours:
                return ("when", "what year")
    if label not in NUMERIC and _STRANDED.search(head):  # "at the 1997 what": the determiner cannot go
        return ()
    if label == "PERSON" and _NAME_BEFORE.search(head) and not TITLE.search(head) and head.strip():
        return ()  # part of a longer name spaCy cut ("Mercè Pons" as "Pons"): "Mercè who" reads wrong
    if label == "NORP" and _WORD_AFTER.match(tail):  # "English ancestry": "what ancestry", not "what groups ancestry"
        # but "The 2015 what film": after a number no phrase reads
        return () if re.search(r"\d\s+$", head) else tuple(p for p in table if p == "what")
    if label == "GPE" and not is_country(text):
        return ("where", "what place") if ours else tuple(p for p in table if p != "what country")
    return table


_MONTH = "|".join(_MONTHS.split())
# "3 September 1914", "January 1, 2007"
_DAY_DATE = re.compile(rf"(?i)\b\d{{1,2}}(?:st|nd|rd|th)?\b.*\b(?:{_MONTH})\b|"
                       rf"\b(?:{_MONTH})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?!\d)")
_MONTH_YEAR = re.compile(rf"(?i)^(?:{_MONTH})\.?,?\s+\d{{3,4}}$")  # "July 1627"
_DECADE = re.compile(r"(?i)^(?:the\s+)?(?:early\s+|mid-?\s*|late\s+)?\d{3}0['\u2019]?s$")
_CENTURY = re.compile(r"(?i)^(?:the\s+)?(?:early\s+|mid-?\s*|late\s+)?\d{1,2}(?:st|nd|rd|th)[\s-]+century"
                      r"(?:\s+(?:AD|BC|BCE|CE))?$")


def noun_phrase(text: str, alternatives: tuple[str, ...], place: bool = False) -> str | None:
    """The "what + noun" that asks for the entity ``text`` in place of "when" or "where" ("was discovered when by"
    is no English; "in what year" is), or where they cannot stand (a modifier, a possessive): for a time, the noun
    its form names ("1800" -> "what year", "3 September 1914" -> "what date", "the 1990s" -> "what decade", "the
    2nd century AD" -> "what century", "July 1627" -> "what month and year"; a TIME: Table 5's "what time"; else
    None: "in what date" reads no better); for anything else, the first "what/which + noun" among
    ``alternatives`` ("what country"), else, with ``place`` (the entity is the object of a preposition that
    "where" stood for), LOC's "what place" (Table 5 leaves a GPE that is no country only "where")."""
    if "when" in alternatives or "what time" in alternatives:
        text = text.strip()
        for pattern, noun in ((YEAR, "what year"), (_MONTH_YEAR, "what month and year"), (_DAY_DATE, "what date"),
                              (_DECADE, "what decade"), (_CENTURY, "what century")):
            if pattern.search(text):
                return noun
        return "what time" if "what date" not in alternatives and "what time" in alternatives else None
    found = next((p for p in alternatives if p.split()[0] in ("what", "which") and " " in p), None)
    return found if found is not None or not place or "where" not in alternatives else "what place"


_ALIASES = ("us", "usa", "united states of america", "america", "uk", "britain", "great britain", "england",
            "scotland", "wales", "northern ireland", "soviet union", "ussr", "russian federation", "yugoslavia",
            "czechoslovakia", "east germany", "west germany", "prussia", "ottoman empire", "austria-hungary", "persia",
            "siam", "ceylon", "zaire", "rhodesia", "burma", "turkey", "ivory coast", "czech republic", "macedonia",
            "swaziland", "holland", "korea", "south vietnam", "north vietnam", "democratic republic of the congo",
            "republic of the congo", "dr congo", "east timor", "vatican", "people's republic of china", "prc",
            "republic of china", "uae", "drc")
_NOT_COUNTRIES = ("EU", "EZ", "UN", "QO", "XA", "XB", "ZZ", "AQ")  # CLDR's two-letter regions that are no country


def _key(name: str) -> str:
    name = unicodedata.normalize("NFKC", name).casefold().replace("&", "and").replace("\u2019", "'").strip()
    name = re.sub(r"^the\s+", "", name)
    return re.sub(r"\s+", " ", name.replace(".", "")).strip()


@functools.cache
def countries() -> frozenset[str]:
    """Names of countries, matched by :func:`_key`: CLDR's English names of its two-letter regions (via Babel:
    "Congo - Kinshasa" also as "Congo", "Myanmar (Burma)" as both), and common other names ("U.S.", "Britain",
    "Soviet Union")."""
    from babel import Locale

    names = set(_ALIASES)
    for code, name in Locale("en").territories.items():
        if len(code) != 2 or not code.isalpha() or code in _NOT_COUNTRIES:
            continue
        names.update({name, *re.split(r"\s+-\s+|\s*[()]\s*", name)})
    return frozenset(_key(n) for n in names if n.strip())


def is_country(name: str) -> bool:
    """Whether ``name`` names a country (:func:`countries`), articles and dots aside: "the U.S." is, "Alabama" and
    "Utö" are not."""
    return _key(name) in countries()
