"""Kinds of Wikipedia articles (person, place, organisation, work, event, ...) read from their infobox templates
and categories, to type the answers of qac triplets: ours, not C-MORE's (the paper types every answer with
spaCy's NER alone).

spaCy tags from a sentence alone and often misreads names ("Aristotle" as GPE, "Apollo" as ORG); an answer
that is a link anchor names an article that says what it is about. The corpus build keeps each page's infobox
names and categories (the store's ``page_tags``); :func:`kind_of` maps them to a :class:`Kind`, and
:func:`wiki_typed` gives the statement's entities that name a linked article the Table 5 type of its kind
where spaCy's label disagrees with it.

How a page gets its kind:

1. its first infobox (in page order) whose name, less "Infobox", fully matches a kind's ``infobox``
   pattern ("Infobox officeholder" -> person, "Infobox settlement" -> place);
2. else the first kind, in registration order (person first: a person's categories also name places and
   works), with a category its ``category`` pattern finds ("1809 births" -> person, "1997 films" -> work);
3. else none: the type stays spaCy's.

Example::

    kind_of(["infobox philosopher"], ["384 BC", "4th-century BC philosophers"])  # "person"
    KINDS["person"].entity_type  # "PERSON": asked with "who" or "which person"

A new kind is one :func:`register` call; ``tests/test_mine_qac.py`` holds the mapping's cases.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pretriever.metrics import normalize_answer

Entity = tuple[str, str, int, int]  # (text, spaCy type, start, end) in the statement, as in mine.triplets
# a link of the statement to an article with a kind: (start, end) in the statement, the kind, the target's title
KindLink = tuple[int, int, str, str]


@dataclass(frozen=True)
class Kind:
    """What an article is about, and the Table 5 type whose phrases ask for it.

    ``agrees``: the spaCy labels that do not contradict the kind (no override): NORP agrees with every kind,
    as it tags adjectives and group names whose link goes to the place, person or faith they derive from
    ("Greek" -> Greece, "Aristotelian" -> Aristotle), which the kind's phrase would misread.
    """

    name: str
    entity_type: str
    agrees: frozenset[str]
    infobox: re.Pattern[str]  # full match against the infobox name, lower-cased, less "infobox "
    category: re.Pattern[str] | None = None  # searched in each category name


KINDS: dict[str, Kind] = {}


def register(name: str, entity_type: str, agrees: Sequence[str], infobox: str, category: str | None = None) -> Kind:
    """Add a kind (registration order is the categories' priority)."""
    kind = Kind(name, entity_type, frozenset({entity_type, "NORP", *agrees}), re.compile(infobox),
                re.compile(category) if category else None)
    KINDS[name] = kind
    return kind


register("person", "PERSON", (),
         r"person|officeholder|philosopher|writer|scientist|deity|royalty|monarch|president|politician|actor|"
         r"artist|musical artist|saint|religious biography|criminal|academic|architect|engineer|economist|"
         r"journalist|comedian|model|noble|pope|christian leader|astronaut|clergy|cardinal|composer|painter|poet|"
         r"sculptor|mathematician|physician|character|.* (biography|person|player|character|leader|figure)",
         r"^\d+(?:s)?(?: BC| AD)? (?:births|deaths)$|^Living people$|^Year of (?:birth|death) (?:missing|unknown)|"
         r"^(?:People|Characters) (?:of|in|from) |^(?:Demigods|Deities|Heroes)\b")
register("event", "EVENT", (),
         r"military conflict|election|.* election|war|battle|civil conflict|event|historical event|earthquake|"
         r"hurricane|tropical cyclone|disaster|spaceflight|olympics|tournament|.* tournament|.* championships?|"
         r"festival|protest|revolution|attack|terrorist attack|summit",
         r"^(?:Battles|Wars|Conflicts|Elections|Revolutions|Sieges|Massacres)\b|\b(?:wars|battles|elections|sieges)$")
register("work", "WORK_OF_ART", ("PRODUCT", "LAW"),
         r"film|book|novel|album|song|single|television|television episode|video game|publication|journal|"
         r"magazine|document|musical composition|musical|opera|play|artwork|painting|sculpture|poem|short story|"
         r"comics?(?: .*)?|anime|manga",
         r"^\d+s? (?:films|books|novels|songs|singles|albums|compositions|plays|poems|paintings|video games|essays|"
         r"short stories|operas|musicals)$|\b(?:films|novels|albums|songs|operas|symphonies)$|"
         r"^(?:Compositions|Works|Novels|Films|Albums|Songs|Books|Essays|Plays|Poems|Paintings) by ")
register("organisation", "ORG", (),
         r"organi[sz]ation|company|university|college|school|political party|sports conference|national military|"
         r"military unit|government agency|agency|trade union|union|non-profit|football club|sports team|band|"
         r"record label|airline|court|legislature|parliament|newspaper|.* (team|club|league)",
         r"\b[Oo]rgani[sz]ations (?:established|based) in\b|^Companies\b|^Political parties\b|"
         r"^Universities and colleges\b|^Musical groups\b|\b(?:companies|organizations|organisations)$")
register("facility", "FAC", ("LOC", "GPE", "ORG"),
         r"building|bridge|airport|stadium|venue|station|castle|historic site|nrhp|dam|lighthouse|monument|"
         r"church building|religious building|tower|road|street|highway|museum")
register("place", "LOC", ("GPE", "FAC"),
         r"settlement|country|former country|u\.s\. state|u\.s\. county|province or territory of canada|state|"
         r"province|city|town|village|continent|island|islands|river|lake|mountain|mountain range|body of water|"
         r"ocean|sea|desert|valley|protected area|park|region|.* (place|location|settlement|commune|comune|"
         r"municipality|district|county|city|state|province|region)",
         r"^(?:Populated places|Cities|Towns|Villages|Countries|Capitals|States|Provinces|Regions|Islands|Rivers|"
         r"Lakes|Mountains|Continents|Oceans|Seas)\b|countries and territories$|^Countries in ")
register("language", "LANGUAGE", (),
         r"language|language family|proto-language|dialect",
         r"^Languages of |\blanguages$")
register("date", "DATE", ("TIME", "EVENT"), r"year|decade|century|month|day",
         r"^(?:Days of the year|Months|Years|Decades|Centuries|Millennia)$|^Months of the ")


def kind_of(infoboxes: Sequence[str], categories: Sequence[str]) -> str | None:
    """The kind of a page from its infobox names (as the store keeps them, "infobox officeholder") and its
    categories ("1809 births"), or None."""
    for name in infoboxes:
        name = name.lower().removeprefix("infobox").strip(" _-")
        for kind in KINDS.values():
            if kind.infobox.fullmatch(name):
                return kind.name
    for kind in KINDS.values():
        if kind.category is not None and any(kind.category.search(c) for c in categories):
            return kind.name
    return None


def _title(title: str) -> str:
    """A title as text: its disambiguating "(...)" dropped, normalised as answers are."""
    return normalize_answer(re.sub(r"\s*\([^()]*\)$", "", title), lenient=True)


def names_target(entity: Entity, link: KindLink, statement: str) -> bool:
    """Whether the entity names the link's target: it is the anchor (articles and punctuation aside), or it lies
    inside the anchor and reads as the target's title ("Abraham Lincoln" in "President Abraham Lincoln"; not
    "Alabama" in "University of Alabama", nor "1848" in "Revolutions of 1848")."""
    text, _, start, end = entity
    a, b, _, title = link
    said = normalize_answer(text, lenient=True)
    if said and said == normalize_answer(statement[a:b], lenient=True):
        return True
    return a <= start and end <= b and said == _title(title)


def wiki_typed(entities: Sequence[Entity], links: Sequence[KindLink],
               statement: str) -> tuple[list[Entity], dict[tuple[int, int], tuple[str, str]]]:
    """The entities with the type of their linked article's kind where it disagrees with spaCy, and, for each
    entity naming an article with a kind, keyed by its span: (kind, spaCy's label)."""
    typed, kinds = [], {}
    for entity in entities:
        text, label, start, end = entity
        link = next((link for link in links if names_target(entity, link, statement)), None)
        if link is not None and link[2] in KINDS:
            kind = KINDS[link[2]]
            kinds[(start, end)] = (kind.name, label)
            if label not in kind.agrees:
                entity = (text, kind.entity_type, start, end)
        typed.append(entity)
    return typed, kinds


def parse_links(value: str | None) -> list[KindLink]:
    """The links of a statement as the qac rows carry them (see :func:`pretriever.mine.methods.qac.QAC`):
    records joined by ``\\x1e``, fields (start, end, kind, title) by ``\\x1f``."""
    if not value:
        return []
    out = []
    for record in value.split("\x1e"):
        start, end, kind, title = record.split("\x1f", 3)
        out.append((int(start), int(end), kind, title))
    return sorted(out)
