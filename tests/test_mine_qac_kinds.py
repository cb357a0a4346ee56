"""qac's types from Wikipedia (ours): the store keeps each page's infoboxes and categories, a registered mapping
gives its kind, and the kind of the article an answer links to overrides spaCy's type where they disagree."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pretriever.corpus.titles import Namespaces
from pretriever.corpus.wikitext import clean_wikitext
from pretriever.mine.config import MineConfig
from pretriever.mine.engine import open_engine
from pretriever.mine.kinds import KINDS, kind_of, names_target, parse_links, wiki_typed

pytest.importorskip("spacy")

from pretriever.mine.methods.qac import QAC  # noqa: E402
from pretriever.mine.triplets import WH_PHRASES, load_ner  # noqa: E402


def test_the_build_keeps_infobox_names_and_categories_not_their_text():
    doc = clean_wikitext("{{Infobox Officeholder\n| name = A {{nowrap|B}}\n}}{{Use dmy dates}}"
                         "'''A B''' was a [[judge]].\n[[Category:1809 births]]\n[[Category:Judges|B, A]]\n"
                         "[[:Category:Shown]] [[Category:1809 births]]", Namespaces())
    assert doc.text == "A B was a judge.\nCategory:Shown"
    assert doc.infoboxes == ["infobox officeholder"]
    assert doc.categories == ["1809 births", "Judges"]  # once each, in page order; a ":Category:" link is shown


@pytest.mark.parametrize("infoboxes, categories, kind", [
    (["infobox person"], [], "person"),
    (["infobox officeholder", "infobox u.s. cabinet"], [], "person"),
    (["infobox tennis biography"], [], "person"),
    ([], ["1809 births", "Presidents of the United States"], "person"),
    (["infobox settlement"], [], "place"),
    (["infobox country"], ["1990 births"], "place"),  # the infobox decides before the categories
    (["infobox company"], [], "organisation"),
    (["infobox organization"], [], "organisation"),
    (["infobox film"], [], "work"),
    (["infobox album"], [], "work"),
    (["infobox book"], [], "work"),
    ([], ["1997 films"], "work"),
    (["infobox military conflict"], [], "event"),
    (["infobox election"], [], "event"),
    (["infobox language family"], [], "language"),
    (["infobox disease"], ["Neurological disorders"], None),
    (["infobox spaceflight/ip", "infobox spaceflight"], [], "event"),  # the first infobox with a kind
    ([], ["384 BC", "Greek philosophers"], None),  # a year category is no date kind
])
def test_infoboxes_and_categories_give_a_kind(infoboxes, categories, kind):
    assert kind_of(infoboxes, categories) == kind


def test_kinds_ask_with_table5_phrases_and_norp_always_agrees():
    assert {k: v.entity_type for k, v in KINDS.items() if k in ("person", "place", "organisation", "work", "event",
                                                                 "date")} == {
        "person": "PERSON", "place": "LOC", "organisation": "ORG", "work": "WORK_OF_ART", "event": "EVENT",
        "date": "DATE"}
    assert all(k.entity_type in WH_PHRASES and "NORP" in k.agrees for k in KINDS.values())
    assert "GPE" in KINDS["place"].agrees and "GPE" not in KINDS["person"].agrees


def test_an_entity_names_its_link_as_the_anchor_or_as_the_title_inside_it():
    s = "President Abraham Lincoln spoke at the University of Alabama about the Revolutions of 1848."
    lincoln = (10, 25, "person", "Abraham Lincoln")
    alabama = (s.index("University"), s.index(" about"), "organisation", "University of Alabama")
    revolution = (s.index("Revolutions"), len(s) - 1, "event", "Revolutions of 1848")
    assert names_target(("Abraham Lincoln", "PERSON", 10, 25), (0, 25, *lincoln[2:]), s)  # inside, the title
    assert names_target(("the University of Alabama", "ORG", s.index("the Univ"), alabama[1]), alabama, s)
    assert not names_target(("Alabama", "GPE", s.index("Alabama"), alabama[1]), alabama, s)
    assert not names_target(("1848", "DATE", len(s) - 5, len(s) - 1), revolution, s)
    typed, kinds = wiki_typed([("Alabama", "GPE", s.index("Alabama"), alabama[1]),
                               ("Abraham Lincoln", "ORG", 10, 25)], [alabama, lincoln], s)
    assert typed == [("Alabama", "GPE", s.index("Alabama"), alabama[1]), ("Abraham Lincoln", "PERSON", 10, 25)]
    assert kinds == {(10, 25): ("person", "ORG")}
    assert parse_links("9\x1f12\x1fplace\x1fX\x1e1\x1f4\x1fperson\x1fY (Z)") == [(1, 4, "person", "Y (Z)"),
                                                                            (9, 12, "place", "X")]


KINDS_OF_SAMPLE = {"Aristotle": "person", "Apollo": "person", "Abraham Lincoln": "person", "Alabama": "place",
                   "Algeria": "place", "Actrius": "work", "American Revolutionary War": "event",
                   "American National Standards Institute": "organisation", "Anarchism": None, "Autism": None}


def test_the_store_keeps_real_pages_infoboxes_and_categories(enwiki_store):
    tags = enwiki_store.read_table("page_tags", sort_by=["doc_id", "tag_idx"]).to_pylist()
    titles = {d["doc_id"]: d["title"] for d in enwiki_store.read_table("documents", ["doc_id", "title"]).to_pylist()}
    pages: dict[str, tuple[list[str], list[str]]] = {}
    for t in tags:
        pages.setdefault(titles[t["doc_id"]], ([], []))[t["source"] == "category"].append(t["name"])
    # checked in the dump: Aristotle's {{Infobox philosopher}}, [[Category:384 BC]], Lincoln's 36 categories
    assert pages["Aristotle"][0] == ["infobox philosopher"] and "384 BC" in pages["Aristotle"][1]
    assert pages["Abraham Lincoln"][0] == ["infobox officeholder", "infobox u.s. cabinet"]
    assert pages["Abraham Lincoln"][1][:2] == ["1809 births", "1865 deaths"] and len(pages["Abraham Lincoln"][1]) == 36
    assert {t: kind_of(*pages.get(t, ([], []))) for t in KINDS_OF_SAMPLE} == KINDS_OF_SAMPLE


# Ayn Rand, citation 19: spaCy (en_core_web_sm 3.8.0) tags the linked "Aristotle" GPE, so Table 5 asked "where" or
# "what country" (now neither: Aristotle is no country, and "the writings of where" does not read; nor is one of two
# coordinated names asked); the article Aristotle has {{Infobox philosopher}}: a person, asked "who" or "which
# person".
RAND = "At the university she was introduced to the writings of Aristotle and Plato"


def test_a_linked_persons_kind_makes_the_question_ask_who(enwiki_store, tmp_path):
    # the block names no other entity of the statement (Plato): --min-other-entities 0 keeps it
    cfg = MineConfig(corpus=enwiki_store.path, out=tmp_path, methods=["qac"], context="links", min_other_entities=0)
    engine = open_engine("duckdb", enwiki_store, tmp_path / "work")
    try:
        c = engine.table("citations")
        rows = engine.to_arrow(QAC()._with_statement_links(SimpleNamespace(engine=engine), c)).to_pylist()
    finally:
        engine.close()
    rand = [r for r in rows if r["statement"].startswith(RAND)]
    assert [r["citation_idx"] for r in rand] == [19, 20]
    assert parse_links(rand[0]["statement_links"]) == [(56, 65, "person", "Aristotle")]
    # "she", which nothing in the statement resolves, would not be asked (unresolved_pronoun): named here, the link
    # one character on
    statement = rand[0]["statement"].replace(" she ", " Rand ", 1)
    links = "57\x1f66\x1fperson\x1fAristotle"
    assert statement[57:66] == "Aristotle"
    nlp = load_ner("en_core_web_sm")
    doc = nlp(statement)
    assert [(e.text, e.label_) for e in doc.ents if e.text == "Aristotle"] == [("Aristotle", "GPE")]
    block = ("Aristotle was a Greek philosopher and polymath, a student of the Academy and teacher of Alexander "
             "the Great; the writings of Aristotle cover many subjects.")
    group = [{**rand[0], "statement": statement, "statement_links": links, "source": "reference",
              "ctx_id": "http://example.org/a", "ctx_doc": None, "ctx_title": "Aristotle", "ctx_text": block}]
    # "of Aristotle and Plato": one of two coordinated names is not asked, whatever its kind
    qac = QAC()
    assert qac._candidate(SimpleNamespace(config=cfg, seed=0), group, doc) == []
    assert qac.counts["no_fitting_phrase"] == 1
    # alone (spaCy: ORG), the linked article's kind asks for a person
    alone = statement.replace(" and Plato,", ",")
    doc = nlp(alone)
    assert [(e.text, e.label_) for e in doc.ents if e.text == "Aristotle"] == [("Aristotle", "ORG")]
    group = [{**group[0], "statement": alone}]
    qac = QAC()
    [triplet] = qac._candidate(SimpleNamespace(config=cfg, seed=0), group, doc)
    assert triplet["answer"] == "Aristotle" and triplet["answer_type"] == "PERSON"
    assert triplet["answer_phrase"] in WH_PHRASES["PERSON"]
    assert (qac.counts["answer_wiki_kind"], qac.counts["kind_overrides"]) == (1, 1)
    assert (qac.counts["entities_wiki_kind"], qac.counts["entities_kind_overrides"]) == (1, 1)
    tail = "?"  # ", who would be her greatest influence ...", a relative clause of the answer, goes with it
    assert triplet["query"] == f"{RAND[:-20].replace(' she ', ' Rand ')} {triplet['answer_phrase']}{tail}"
    # spaCy's type alone: an organisation
    qac = QAC()
    [triplet] = qac._candidate(SimpleNamespace(config=cfg, seed=0), [{**group[0], "statement_links": None}], doc)
    assert triplet["answer_type"] == "ORG" and qac.counts["kind_overrides"] == 0


def test_a_store_built_before_page_tags_still_opens_and_mines_with_spacys_types(enwiki_store, tmp_path):
    import json
    import shutil

    from pretriever.data.store import CorpusStore
    from pretriever.mine import pipeline

    old = tmp_path / "store"
    shutil.copytree(enwiki_store.path, old)
    shutil.rmtree(old / "page_tags")
    store = CorpusStore(old)
    assert not store.has_table("page_tags") and store.has_table("links")
    assert store.connect().execute("SELECT count(*) FROM citations").fetchone()[0] == 7833
    pipeline.run(MineConfig(corpus=old, out=tmp_path / "p", methods=["qac"], context="links"))
    qac = json.loads((tmp_path / "p" / "pairs.json").read_text())["methods"]["qac"]
    assert qac["wiki_kinds"] is False and qac["answer_wiki_kind"] == 0 and qac["funnel"]["citations"] == 7833
