"""Does a sentence still have a hole where markup stood?

A template we cannot render (``{{inflation|US|5|1929}}``), a dropped ``<math>`` formula
or a removed link can leave a sentence that reads wrongly: "was $5 ($ in dollars)",
"Thus,.", "(see video at).". Such a sentence is kept in passages (the reader of a
passage skips the hole) but flagged ``has_hole`` in the sentences table, and mining
never makes it a query, where the hole would be the whole point of the sentence.

:func:`has_hole` looks for these signs, each a regular expression:

* an article right before punctuation: "the.", "an,";
* a preposition before a comma and a capital: "an area of, Algeria", "At, Alabama"
  (not "independent of, but": the phrase goes on), or before a closing bracket where
  it cannot end a phrase: "(see video at)", "(larger than)" (not "(the building of)");
* a sentence ending on a word that cannot end one: "larger than.", "approximately.";
* brackets holding nothing but spaces or commas: "()", "( ; )" (not "[...]");
* a bracket opened onto punctuation or a space: "(, from", "( occasionally";
* punctuation doubled by a gap: ", ,", ",.", ";:", ":,";
* a sentence that starts with punctuation: ", which means" (not "...one ought");
* a currency sign without its amount: "($ in dollars)";
* an empty pair of quotes: ``""``.

It errs on the side of flagging (";:" in a sentence about keyboards is a false alarm,
costing one query sentence), and it never looks at words alone, so it works for any
language written with Latin punctuation.
"""

from __future__ import annotations

import re

__all__ = ["has_hole"]

_ARTICLE = r"\b(?i:the|an)[,;:.](?!\w)"
_PREPOSITION = (r"\b(?i:of|between), (?=[A-Z\d])"
                r"|\b(?i:than|at|from|approximately|about|around)(?:, (?=[A-Z\d])|\))")
_BAD_END = r"\b(?:than|approximately|roughly|nearly)\.$"
_HOLE_RE = re.compile(
    "|".join([
        _ARTICLE,
        _PREPOSITION,
        _BAD_END,
        r"[(\[][\s,;:]*[)\]]",  # "()", "( ; )"
        r"[(\[][\s,;:]",  # "(, from", "( occasionally"
        r"[,;:] ?[,;:]|[,;:]\.(?!\.)",  # ", ,", ",.", ";:" (not ", ...")
        r"^(?:[,;:)\]]|\.(?!\.\.))",  # ", which means", "." (not "...one")
        r"(?<![\w$£€¥])[$£€¥] (?=[a-z(])",  # "($ in dollars)"
        r"(?:^|\s)\"\"|“”",  # ""
    ]),
)


def has_hole(sentence: str) -> bool:
    """True when ``sentence`` shows a sign of markup removed from it (see the module docstring).

    >>> has_hole("With an area of, Algeria is the tenth-largest country.")
    True
    >>> has_hole("With an area of 2,381,741 km², Algeria is the tenth-largest country.")
    False
    """
    return _HOLE_RE.search(sentence) is not None
