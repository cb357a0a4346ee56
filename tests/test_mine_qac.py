"""qac (C-MORE triplets) on the real enwiki sample, with canned pages for 34 URLs it really cites.

tests/data/cmore_pages/ holds pages written for this test (navigation, cookie banner, sidebar,
footer around an article that states the cited facts) and index.json (url -> file); one of them
is a script-only shell with no extractable text. ``make_refs`` (tests/qac_fixtures.py) turns them into a
REFS_DIR the way `pretriever references fetch` does (trafilatura main text), so mining does not need the
fetcher.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qac_fixtures import PAGES, REFERENCES, make_refs
from references_server import LoopbackServer, fake_dns, send

pytest.importorskip("spacy")

from pretriever.data import has_answer  # noqa: E402
from pretriever.data.reading import ReadingFileError, load_reading_file  # noqa: E402
from pretriever.data.references import ReferencesError, load_references  # noqa: E402
from pretriever.metrics import normalize_answer  # noqa: E402
from pretriever.mine.config import MineConfig  # noqa: E402
from pretriever.mine.export import DPR_N_DOCS, PairsDir, PairsError, export_pairs  # noqa: E402
from pretriever import mine  # noqa: E402
from pretriever.mine.phrases import OURS, WH_PHRASES, alternatives, is_country  # noqa: E402
from pretriever.mine.triplets import (ModelError, answer_of, asks_a_member, balance, bare_definites,  # noqa: E402
                                 build_triplet, content_words, cut_blocks, entity_start, find_span, find_spans,
                                 fit_phrase, governing_noun, leaks, load_ner, make_question, names_a_class, others_held,
                                 shared_words, supports, unresolved_definite, unresolved_pronoun)
from pretriever.mine.schema import PAIRS  # noqa: E402
from pretriever.references.config import FetchConfig  # noqa: E402
from pretriever.reader.negatives import PairsContexts  # noqa: E402
from pretriever.references import fetch  # noqa: E402
from pretriever.train.pair_sampling import scan_pairs  # noqa: E402


@pytest.fixture(scope="module")
def refs(enwiki_store, tmp_path_factory) -> Path:
    return make_refs(enwiki_store, tmp_path_factory.mktemp("refs") / "refs")


@pytest.fixture(scope="module")
def mined(enwiki_store, refs, tmp_path_factory):
    out = tmp_path_factory.mktemp("qac") / "pairs"
    result = mine.run(MineConfig(corpus=enwiki_store.path, out=out, methods=["qac"], references=refs, seed=0))
    rows = pq.read_table(out / "qac.parquet").to_pylist()
    return result, out, {r["query_doc_id"] + "|" + str(r["query_sentence_idx"]) + "|" + r["reference_url"]: r
                         for r in rows}, rows


# -- pure steps ---------------------------------------------------------------------------------
def test_table5_covers_the_18_ontonotes_types_of_the_model():
    nlp = load_ner("en_core_web_sm")
    assert set(WH_PHRASES) == set(nlp.get_pipe("ner").labels) and len(WH_PHRASES) == 18
    # spot checks against the paper's Table 5 (rows whose continuation lines the PDF text scrambled)
    assert WH_PHRASES["EVENT"] == ("what event", "what", "which event")
    assert WH_PHRASES["LOC"] == ("where", "what location", "which place", "what place")
    assert WH_PHRASES["ORG"] == ("which organization", "what organization", "what")
    assert WH_PHRASES["PERSON"] == ("who", "which person") and WH_PHRASES["DATE"][0] == "when"
    # Table 5 as written: CARDINAL gets "what"; "how many" (the paper's Figure 1) is ours, behind --phrases ours
    assert WH_PHRASES["CARDINAL"] == ("what",) and OURS["CARDINAL"] == ("how many", "what")
    assert {k: v for k, v in OURS.items() if k not in ("CARDINAL", "FAC")} == {
        k: v for k, v in WH_PHRASES.items() if k not in ("CARDINAL", "FAC")}


def test_blocks_have_n_words_and_stride_m_and_end_at_the_text_end():
    text = " ".join(f"w{i}" for i in range(300))
    blocks = cut_blocks(text, 128, 64)
    assert [b.split()[0] for b in blocks] == ["w0", "w64", "w128", "w192"]
    assert [len(b.split()) for b in blocks] == [128, 128, 128, 108] and blocks[-1].endswith("w299")
    assert cut_blocks("a  b\n c", 128, 64) == ["a b c"] and cut_blocks("   ", 128, 64) == []


def test_span_is_word_bounded_and_question_replaces_the_entity():
    assert find_span("14", "in 2014 they freed 14 men") == (19, 21)
    assert find_span("14", "in 2014") is None
    assert find_span("Sergei  Krikalev", "by SERGEI\nKRIKALEV.") == (3, 18)
    assert find_span("Kojo\u2019s", "Kojo's book") == (0, 6)
    assert make_question("Patrick Baudry flew in 1985.", 0, 14, "who") == "Who flew in 1985?"
    assert make_question("(It was in the works of Aristotle.)", 24, 33, "what") == "(It was in the works of what)?"
    assert make_question("It is in the Alps (near Bern.", 9, 17, "where", WH_PHRASES["LOC"]) == "It is where near Bern?"
    # "14" occurs only inside "2014" in the block: kept by string matching, then no word-bounded span
    assert build_triplet("They freed 14.", [("14", "CARDINAL", 11, 13)], ["It was 2014."], 0, "k") \
        == "answer_span_not_found"
    assert build_triplet("Nothing here.", [], ["x"], 0, "k") == "no_entity"


def test_missing_model_is_a_clear_error():
    with pytest.raises(ModelError, match="pip install en-core-web-xl"):
        load_ner("en_core_web_xl")


def test_references_folder_is_checked(tmp_path):
    with pytest.raises(ReferencesError, match="references.parquet is missing"):
        load_references(tmp_path)
    pq.write_table(pa.table({"url": ["u"]}), tmp_path / "references.parquet")
    with pytest.raises(ReferencesError, match="lacks column"):
        load_references(tmp_path)


def test_qac_needs_references_or_links(enwiki_store, tmp_path):
    with pytest.raises(ValueError, match="needs references"):
        MineConfig(corpus=enwiki_store.path, out=tmp_path, methods=["qac"])


def test_how_many_only_behind_the_option(enwiki_store, tmp_path):
    def questions(statement, entity, phrases):
        start = statement.index(entity[0])
        ents = [(entity[0], entity[1], start, start + len(entity[0]))]
        return {t.question if not isinstance(t := build_triplet(statement, ents, [statement], seed, "k",
                                                                phrases=phrases), str) else t for seed in range(12)}

    # Table 5's "what" would ask which men: the count is not asked (the statement's other entities are tried)
    assert questions("They freed 14 men.", ("14", "CARDINAL"), "table5") == {"no_fitting_phrase"}
    assert questions("They freed 14 men.", ("14", "CARDINAL"), "ours") == {"They freed how many men?"}
    # a number that ends its clause reads with Table 5's "what"; ours draws "how many" too
    assert questions("The figure is closer to 500,000.", ("500,000", "CARDINAL"), "table5") == {
        "The figure is closer to what?"}
    assert questions("The figure is closer to 500,000.", ("500,000", "CARDINAL"), "ours") == {
        "The figure is closer to what?", "The figure is closer to how many?"}
    with pytest.raises(ValueError, match="phrases"):
        build_triplet("They freed 14 men.", [("14", "CARDINAL", 11, 13)], ["x 14"], 0, "k", phrases="how-many")
    # --how-many is a deprecated alias of --phrases ours
    config = dict(corpus=enwiki_store.path, out=tmp_path, methods=["qac"], context="links")
    assert MineConfig(**config).phrases == "table5" and MineConfig(**config, how_many=True).phrases == "ours"
    with pytest.raises(ValueError, match="phrases must be one of table5, ours"):
        MineConfig(**config, phrases="paper")


def test_brackets_and_quotes_are_balanced():
    assert balance('He said "it (was) here) and (there') == "He said it (was) here and there"
    assert balance("a [b (c] d)") == "a b (c d)"  # "]" does not close "(": it goes, then "[" is left open
    assert balance("\u201cQuoted\u201d and \u201copen") == "\u201cQuoted\u201d and open"
    assert balance("Kojo's book, 'so-called' (x)") == "Kojo's book, 'so-called' (x)"  # apostrophes stay


def test_answer_leaks_by_any_token_of_three_characters():
    s = "In 1990, he appeared in a commercial for Canon Inc., promoting the Canon EOS Rebel camera."
    start = s.index("Canon Inc.")
    assert leaks("Canon Inc.", s, start, start + 10)  # "canon" is still in the question
    assert not leaks("1990", s, 3, 7)
    assert not leaks("the United States", "The clinic in the United States", 14, 31)  # "the" is not a token
    assert not leaks("Marks and Spencer", "Marks and Spencer and Tesco", 0, 17)  # nor is "and"
    # the sampled entity leaks: the statement's other entity answers instead
    entities = [("Canon Inc.", "ORG", start, start + 10), ("1990", "DATE", 3, 7)]
    block = "Canon Inc. hired Agassi in 1990 for its EOS Rebel camera."
    got = build_triplet(s, entities, [block], 0, "k")
    assert got.answer == "1990" and got.tries == 2
    assert got.question == "When he appeared in a commercial for Canon Inc., promoting the Canon EOS Rebel camera?"
    assert build_triplet(s, entities[:1], [block], 0, "k") == "answer_in_question"


def test_the_question_picks_the_block_and_the_statement_only_when_asked():
    statement = "Patrick Baudry flew on the shuttle Discovery in 1985."
    entities = [("Patrick Baudry", "PERSON", 0, 14)]
    # the question's best block (2) lacks the answer: the next in BM25's order that holds it is taken
    blocks = ["Patrick Baudry, Patrick Baudry: a biography of Patrick Baudry, born in Africa.",
              "The shuttle Discovery flew in 1985 with Patrick Baudry aboard.",
              "Shuttle Discovery flew in 1985 on a mission."]
    got = build_triplet(statement, entities, blocks, 0, "k")
    assert (got.question_block, got.block_idx, got.statement_block) == (2, 1, 1)
    assert got.question == "Which person flew on the shuttle Discovery in 1985?" and got.answer_start == 40
    # the statement's words pick block 0 first, which holds no entity; the question finds the answer in 1
    blocks = ["Discovery flew in 1985 on the shuttle mission.", "Patrick Baudry was born in Africa."]
    assert build_triplet(statement, entities, blocks, 0, "k", block_query="statement") == "no_entity_in_block"
    got = build_triplet(statement, entities, blocks, 0, "k")
    assert (got.question_block, got.block_idx, got.statement_block, got.answer_start) == (0, 1, 0, 0)
    with pytest.raises(ValueError, match="block_query"):
        build_triplet(statement, entities, blocks, 0, "k", block_query="title")


def test_blocks_option_is_checked(enwiki_store, tmp_path):
    def config(**kw):
        return MineConfig(corpus=enwiki_store.path, out=tmp_path, methods=["qac"], context="links", **kw)

    assert config(blocks="128:64,256:128,512:256").granularities() == [(128, 64), (256, 128), (512, 256)]
    assert config().granularities() == [(128, 64)]
    for bad in ("128-64", "64:128", "128:64,128:64", "0:0"):
        with pytest.raises(ValueError, match="blocks"):
            config(blocks=bad)
    with pytest.raises(ValueError, match="block_query"):
        config(block_query="title")


@pytest.mark.parametrize("block_query, counts", [
    # measured on the canned pages (52-155 words) cut small, so that most have several blocks: 43 citations x 2
    # sizes; the question's first block differs from the statement's for 2 triplets and lacks the answer for 5
    ("question", {"unresolved_pronoun": 12, "no_entity": 2, "no_entity_in_block": 4, "no_fitting_phrase": 28,
                  "answer_in_question": 4, "answer_span_not_found": 0, "answer_in_other_role": 0,
                  "context_unsupported": 4, "triplets": 30, "other_entity": 12, "block_choice_differs": 2,
                  "question_block_lacks_answer": 5}),
    # the statement's block first: more citations have no entity in it
    ("statement", {"unresolved_pronoun": 12, "no_entity": 2, "no_entity_in_block": 8, "no_fitting_phrase": 23,
                   "answer_in_question": 5, "answer_span_not_found": 0, "answer_in_other_role": 0,
                   "context_unsupported": 6, "triplets": 27, "other_entity": 11, "block_choice_differs": 2,
                   "question_block_lacks_answer": 2}),
])
def test_several_block_sizes_in_one_run_and_the_block_choice_counted(enwiki_store, refs, tmp_path, block_query,
                                                                      counts):
    result = mine.run(MineConfig(corpus=enwiki_store.path, out=tmp_path, methods=["qac"], references=refs,
                                 blocks="32:16,64:32", block_query=block_query))
    report = result.manifest.methods["qac"]
    got = {**report["funnel"], **{k: report[k] for k in ("other_entity", "block_choice_differs",
                                                         "question_block_lacks_answer")}}
    assert {k: got[k] for k in counts} == counts and report["blocks"] == ["32:16", "64:32"]
    assert report["block_query"] == block_query
    rows = pq.read_table(tmp_path / "qac.parquet").to_pylist()
    assert len(rows) == counts["triplets"] and len({r["pair_id"] for r in rows}) == len(rows)
    assert {(r["block_words"], r["block_stride"]) for r in rows} == {(32, 16), (64, 32)}
    for r in rows:
        assert len(r["positive_text"].split()) <= r["block_words"]
        assert r["positive_text"][r["answer_start"]:r["answer_end"]] == r["answer"]


# Real statements of the enwiki sample (its citations; checked below), the entity spaCy finds in each, the
# Table 5 phrase drawn, and the question as it must read: determiner before the phrase dropped, the
# preposition of "when"/"where" dropped, a possessive kept ("whose", "what country's"), "when"/"where"
# replaced by the type's noun phrase where the entity qualifies a noun, brackets and quotes balanced.
GRAMMAR_CASES = [
    ("The regime of Prince of Wied collapsed and he left the country on 3 September 1914.",
     "3 September 1914", "DATE", "when",  # in the second of two clauses: a question is one clause, not asked
     None),
    ("The correspondence between Huxley and the society are kept at the Cambridge University Library.",
     "the Cambridge University Library", "ORG", "which organization",
     "The correspondence between Huxley and the society are kept at which organization?"),
    ("Angola joined the Organization of the Petroleum Exporting Countries on January 1, 2007.",
     "January 1, 2007", "DATE", "when",  # an adjunct of the main verb: fronted
     "When did Angola join the Organization of the Petroleum Exporting Countries?"),
    ("Caesium was also thought to be radioactive in the early 20th century, although it has no naturally "
     "occurring radioisotopes.",
     "the early 20th century", "DATE", "when",
     "Caesium was also thought to be radioactive in what century, although it has no naturally occurring "
     "radioisotopes?"),
    ("Such was the case with the Black Sea invasion of the natural hybrid Pelophylax esculentus reported in 2010.",
     "Black Sea", "LOC", "where",
     "Such was the case with what location invasion of the natural hybrid Pelophylax esculentus reported in 2010?"),
    ("Such was the case with the Black Sea invasion of the natural hybrid Pelophylax esculentus reported in 2010.",
     "2010", "DATE", "when",
     "Such was the case with the Black Sea invasion of the natural hybrid Pelophylax esculentus reported in what "
     "year?"),
    ("The U.S. Department of State estimates the Muslim population at 80,000\u201390,000, while the Islamic "
     "Community of Angola puts the figure closer to 500,000.",
     "Muslim", "NORP", "what",
     "The U.S. Department of State estimates what population at 80,000\u201390,000, while the Islamic Community "
     "of Angola puts the figure closer to 500,000?"),
    ("During the late 1970s her activities within the Objectivist movement declined, especially after the death "
     "of her husband on November 9, 1979.",
     "the late 1970s", "DATE", "when",
     "When did her activities within the Objectivist movement decline, especially after the death of her husband "
     "on November 9, 1979?"),
    ("In 2009, the graduating class had 100 percent graduation rate and expected a 100 percent college "
     "acceptance rate.",
     "100 percent", "PERCENT", "what percent",  # the second "100 percent", after "a": in the second of two
     None),                                     # coordinated verbs, not asked
    ("In 2011, 46.6% of Alabama's population younger than age 1 were minorities.",
     "Alabama", "GPE", "where",  # no country: Table 5's "what country's" would be wrong, and "where's" reads wrong
     None),
    ("Borman started the first sleep shift, but between the constant radio chatter and mechanical noises, he "
     "found sleep difficult.",
     "first", "ORDINAL", "what rank",  # "Borman started what rank sleep shift": not asked
     None),
    ("Pakistan's Chief of Army Staff, Pervez Musharraf, began sending thousands of Pakistanis to help the "
     "Taliban defeat the Northern Alliance.",
     "Pakistan", "GPE", "where",
     "What country's Chief of Army Staff, Pervez Musharraf, began sending thousands of Pakistanis to help the "
     "Taliban defeat the Northern Alliance?"),
    ("Pakistan's Chief of Army Staff, Pervez Musharraf, began sending thousands of Pakistanis to help the "
     "Taliban defeat the Northern Alliance.",
     "Taliban", "ORG", "which organization",
     None),  # in a purpose clause, mid-question: "... to help which organization defeat the Northern Alliance?"
    ("Construction began in 2013, with plans for it to become operable by 2015 and produce up to 50 aircraft per "
     "year by 2017.",
     "2013", "DATE", "when",
     "When did construction begin, with plans for it to become operable by 2015 and produce up to 50 aircraft per "
     "year by 2017?"),
    ("The United States blamed rogue elements within the Pakistani government for the increased attacks.",
     "Pakistani", "NORP", "what",
     "The United States blamed rogue elements within what government for the increased attacks?"),
    ('Historian Barry Schwartz wrote in 2009 that Lincoln\'s image suffered "erosion, fading prestige, benign '
     'ridicule" in the late 20th century.',
     "2009", "DATE", "when",  # spaCy reads "Historian" as part of the name: its capital stays
     'When did Historian Barry Schwartz write that Lincoln\'s image suffered "erosion, fading prestige, benign '
     'ridicule" in the late 20th century?'),
    ("He argued in Political Justice (1793) that government has an inherently malevolent influence on society, "
     "and that it perpetuates dependency and ignorance.",
     "1793", "DATE", "when",
     "He argued in Political Justice (what year) that government has an inherently malevolent influence on "
     "society, and that it perpetuates dependency and ignorance?"),
    ("The category's original name was Best Art Direction, but was changed to its current name in 2012 for the "
     "85th Academy Awards.",
     "2012", "DATE", "when",  # in the second of two coordinated verbs: not asked
     None),
    ("Patriots in New Hampshire had seized powder, muskets and cannons from Fort William and Mary in Portsmouth "
     "Harbor in late 1774.",
     "late 1774", "DATE", "when",
     "When had patriots in New Hampshire seized powder, muskets and cannons from Fort William and Mary in "
     "Portsmouth Harbor?"),
    ('In each of these models, Einstein discarded the cosmological constant, claiming that it was "in any case '
     'theoretically unsatisfactory".',
     "Einstein", "PERSON", "who",
     'In each of these models, who discarded the cosmological constant, claiming that it was "in any case '
     'theoretically unsatisfactory"?'),
    ("Bakunin characterised Marx's ideas as centralist and predicted that, if a Marxist party came to power, its "
     "leaders would simply take the place of the ruling class they had fought against.",
     "Marx", "PERSON", "who",  # in the first of two coordinated verbs: not asked
     None),
    ("During this time Howe's army, comfortable in Philadelphia, made no effort to exploit the weakness of the "
     "American army.",
     "Howe", "PERSON", "who",
     "During this time whose army, comfortable in Philadelphia, made no effort to exploit the weakness of the "
     "American army?"),
    ("In 1990, he appeared in a television commercial for Canon Inc., promoting the Canon EOS Rebel camera.",
     "1990", "DATE", "when",  # no comma after an opening wh-phrase
     "When did he appear in a television commercial for Canon Inc., promoting the Canon EOS Rebel camera?"),
    ("In 2002, the Kodak Theatre (now known as the Dolby Theatre) became the current venue of the presentation.",
     "2002", "DATE", "what time",  # not "In what time, the Kodak Theatre"
     "When did the Kodak Theatre (now known as the Dolby Theatre) become the current venue of the presentation?"),
    ("In July 1627 two pirate ships from Algiers sailed as far as Iceland, raiding and capturing slaves.",
     "July 1627", "DATE", "what date",
     "When did two pirate ships from Algiers sail as far as Iceland, raiding and capturing slaves?"),
    ("However, it was shown in the time of Pausanias in the 2nd century AD.",
     "the 2nd century AD", "DATE", "when",  # the connective goes (the pronoun is build_triplet's to refuse)
     "It was shown in the time of Pausanias in what century?"),
    ('Most of them were clearly directed against Bakunin and his followers."',  # the quote's opener is in the
     "Bakunin", "ORG", "which organization",                                    # sentence before
     None),  # one of two coordinated nouns: "against which organization and his followers" is not asked
    ('Clouds keep Earth cool by reflecting sunlight, but they can also serve as blankets to trap warmth."',
     "Earth", "LOC", "where",  # the coordinated clause with its own subject goes
     "Clouds keep what location cool by reflecting sunlight?"),
    # A wh-phrase before the main clause's subject takes the auxiliary after it, or "do" in the verb's tense (the
    # coordinator's judgement of 2026-11-27: "When Einstein applied ...?" reads as a subordinate clause); where the
    # parse gives no safe inversion the entity is not asked (None); in a subordinate clause it stays in place.
    ("In 1917, Einstein applied the general theory of relativity to model the large-scale structure of the "
     "universe.", "1917", "DATE", "when",
     "When did Einstein apply the general theory of relativity to model the large-scale structure of the "
     "universe?"),
    ("In 1866, August Wilhelm von Hofmann suggested systematizing nomenclature by using the whole sequence of "
     "vowels a, e, i, o and u to create suffixes -ane, -ene, -ine (or -yne), -one, -une, for the hydrocarbons "
     "CnH2n+2, CnH2n, CnH2n\u22122, CnH2n\u22124, CnH2n\u22126.", "1866", "DATE", "when",
     "When did August Wilhelm von Hofmann suggest systematizing nomenclature by using the whole sequence of "
     "vowels a, e, i, o and u to create suffixes -ane, -ene, -ine (or -yne), -one, -une, for the hydrocarbons "
     "CnH2n+2, CnH2n, CnH2n\u22122, CnH2n\u22124, CnH2n\u22126?"),
    ("Between 1999 and 2013, in the U.S., the CDC recorded 531 such deaths for newborns, approximately 4 per "
     "100,000 abortions.", "U.S.", "GPE", "what country",
     "Between 1999 and 2013, in what country did the CDC record 531 such deaths for newborns, approximately 4 per "
     "100,000 abortions?"),
    ("In China, a historical preference for a male child has been exacerbated by the one-child policy, which was "
     "enacted in 1979.", "China", "GPE", "what country",
     "In what country has a historical preference for a male child been exacerbated by the one-child policy, "
     "which was enacted in 1979?"),
    # a phrase between the subject and the verb would strand the predicate after the inversion (the blind
    # judgement of 2026-11-28c: "When were 46.6% of Alabama's population younger than age 1 minorities?")
    ("In 2011, 46.6% of Alabama's population younger than age 1 were minorities.", "2011", "DATE", "when", None),
    # the source of an "according to" is no fact of the statement (three judges of 2026-11-29 failed "According to
    # what data were ... literate in 1970?")
    ("According to Soviet data, 100 percent of males and females (ages nine to forty-nine) were literate in 1970.",
     "Soviet", "NORP", "what", None),
    # a passive's agent takes no comma: the statement's stray one goes (2026-11-28c: "..., by Lonely Planet?" read
    # as a phrase tacked on)
    ("In 2011, Albania was recommended as a top travel destination, by Lonely Planet.", "2011", "DATE", "when",
     "When was Albania recommended as a top travel destination by Lonely Planet?"),
    ("In 2011, Albania was recommended as a top travel destination, by Lonely Planet.", "Albania", "GPE",
     "what country",  # the subject: no inversion
     "In 2011, what country was recommended as a top travel destination by Lonely Planet?"),
    ("In 1844 in Germany the post-hegelian philosopher Max Stirner published the book, The Ego and Its Own, which "
     "would later be considered an influential early text of individualist anarchism.", "Germany", "GPE",
     "what country",
     "In 1844 in what country did the post-hegelian philosopher Max Stirner publish the book, The Ego and Its Own, "
     "which would later be considered an influential early text of individualist anarchism?"),
    ("Between 1940 and 1943, more than 89,000 people moved into the city to work for war-related industries.",
     "Between 1940 and 1943", "DATE", "what time",  # the DATE holds its preposition: "when"
     "When did more than 89,000 people move into the city to work for war-related industries?"),
    ("Before 1095, Andorra did not have any type of military protection and the Bishop of Urgell, who knew that "
     "the Count of Urgell wanted to reclaim the Andorran valleys, asked the Lord of Caboet for help and "
     "protection.", "1095", "DATE", "when",  # a coordinated clause with its own verb: no safe inversion
     None),
    ("After gaining independence in 1991, Azerbaijan became a member of the International Monetary Fund, the World "
     "Bank, the European Bank for Reconstruction and Development, the Islamic Development Bank and the Asian "
     "Development Bank.", "1991", "DATE", "when",  # in a subordinate clause: in place, as a noun phrase
     "After gaining independence in what year, Azerbaijan became a member of the International Monetary Fund, the "
     "World Bank, the European Bank for Reconstruction and Development, the Islamic Development Bank and the Asian "
     "Development Bank?"),
    # the predicate of "be" is asked in front ("was who, in 1985" is no English), or not at all; a phrase on a
    # preposition after it stays after the subject, a bracket ending the question goes (2026-11-28c: "was how much
    # money in Alberta (compared to ...)?"); after a "first" or a superlative a phrase left at the end would bound
    # it ("the first person ... to fly in space in 1985" is the first of that year): not asked
    ("The first person born in Africa to fly in space was Patrick Baudry (France), in 1985.", "Patrick Baudry",
     "PERSON", "who", None),
    ("According to the 2006 census, the median annual family income after taxes was $70,986 in Alberta (compared "
     "to $60,270 in Canada as a whole).", "$70,986", "MONEY", "how much money",  # fronted before "be": "what"
     "According to the 2006 census, what was the median annual family income after taxes in Alberta?"),
    # English cannot ask into a relative clause (2026-11-28c: "..., which entered into liquidation in what year?")
    ("However, the First World War impacted financially on the Clarmac Company, which entered into liquidation in "
     "1915.", "1915", "DATE", "when", None),
    ("In China, a historical preference for a male child has been exacerbated by the one-child policy, which was "
     "enacted in 1979.", "1979", "DATE", "when", None),
    # a date in a list of elliptical "NAME in YEAR" items is not asked, nor one in one of coordinated verbs (the
    # blind judgement of round 1: "underwent a major revision during what year, and experienced ..." is no English)
    ("They both endorsed Deutsche Telekom in 2002, Genworth Financial and Canon Inc. in 2004, LVMH in 2007, and "
     "Nintendo Wii and Wii Fit U and Longines in 2013.", "2002", "DATE", "when", None),
    ("The first edition of the standard was published during 1963, underwent a major revision during 1967, and "
     "experienced its most recent update during 1986.", "1967", "DATE", "when", None),
    ("The first edition of the standard was published during 1963, underwent a major revision during 1967, and "
     "experienced its most recent update during 1986.", "1963", "DATE", "when", None),
    # an item of a list (spaCy: appositions and conjuncts) or a name coordinated with another is not asked
    ("French anarchists active in the 1848 Revolution included Anselme Bellegarrigue, Ernest Coeurderoy, Joseph "
     "D\u00e9jacque and Pierre Joseph Proudhon.", "Anselme Bellegarrigue", "PERSON", "which person", None),
    ("French anarchists active in the 1848 Revolution included Anselme Bellegarrigue, Ernest Coeurderoy, Joseph "
     "D\u00e9jacque and Pierre Joseph Proudhon.", "Ernest Coeurderoy", "PERSON", "who", None),
    ("Alberta is named after Princess Louise Caroline Alberta (1848\u20131939), the fourth daughter of Victoria, "
     "Queen of Canada, and Albert, Prince Consort.", "Prince Consort", "PERSON", "which person", None),
    # a question is one clause: an independent clause after ";" or a coordinated one with its own subject goes; a
    # subject the coordinated verbs share is asked
    ("ABC once again took over broadcast duties in 1976, and has broadcast the Oscars ever since; its current "
     "contract with the Academy runs through 2020.", "ABC", "ORG", "which organization",
     "Which organization once again took over broadcast duties in 1976, and has broadcast the Oscars ever since?"),
    ("ABC once again took over broadcast duties in 1976, and has broadcast the Oscars ever since; its current "
     "contract with the Academy runs through 2020.", "2020", "DATE", "when", None),  # the later clause
    ("According to a 2010 survey, religion today plays an important role in the lives of only 39% of Albanians, and "
     "Albania is ranked among the least religious countries in the world.", "only 39%", "PERCENT", "what percent",
     "According to a 2010 survey, religion today plays an important role in the lives of what percent of "
     "Albanians?"),
    # issue 39, the blind judgement of the canned pages' triplets: "when"/"where" in place mid-clause is no English
    # ("was discovered when by"). An adjunct of the main verb is fronted with the auxiliary; elsewhere the
    # preposition keeps a noun phrase (above: "during what year").
    ("Petalite (LiAlSi4O10) was discovered in 1800 by the Brazilian chemist José Bonifácio de Andrada in a mine on "
     "the island of Utö, Sweden.", "1800", "DATE", "when",
     "When was Petalite (LiAlSi4O10) discovered by the Brazilian chemist José Bonifácio de Andrada in a mine on the "
     "island of Utö, Sweden?"),
    ("From 1983 to 2015, approximately 50 Oscars were made each year in Chicago by Illinois manufacturer R.S. Owens "
     "& Company.", "Chicago", "GPE", "where",
     "From 1983 to 2015, where were approximately 50 Oscars made each year by Illinois manufacturer R.S. Owens & "
     "Company?"),
    # a name in apposition to a common noun is asked for by the noun, whatever spaCy's type ("Sayonara" is NORP:
    # "The 2015 Japanese film what")
    ('The 2015 Japanese film Sayonara, starring Geminoid F, was promoted as "the first movie to feature an android '
     'performing opposite a human actor".', "Sayonara", "NORP", "what",
     'Which 2015 Japanese film, starring Geminoid F, was promoted as "the first movie to feature an android '
     'performing opposite a human actor"?'),
    ("From 1983 to 2015, approximately 50 Oscars were made each year in Chicago by Illinois manufacturer R.S. Owens "
     "& Company.", "R.S. Owens & Company", "ORG", "which organization",
     "From 1983 to 2015, approximately 50 Oscars were made each year in Chicago by which Illinois manufacturer?"),
    # a leading connective goes: the question stands alone; a non-restrictive relative clause or apposition of the
    # entity would hang off the wh-phrase ("on what organization, which entered ..."): it goes where it ends the
    # clause, else the entity is not asked (the blind judgement of 2026-11-28b)
    ("However, the First World War impacted financially on the Clarmac Company, which entered into liquidation in "
     "1915.", "the Clarmac Company", "ORG", "what organization",
     "The First World War impacted financially on what organization?"),
    ('"These are the times that try men\'s souls," wrote Thomas Paine, who was with the army on the retreat.',
     "Thomas Paine", "PERSON", "which person", '"These are the times that try men\'s souls," wrote which person?'),
    ("According to a modern etymology, the name of Azerbaijan derives from that of Atropates, a Persian satrap under "
     "the Achaemenid Empire, who was later reinstated as the satrap of Media under Alexander the Great.",
     "Atropates", "PERSON", "which person",
     "According to a modern etymology, the name of Azerbaijan derives from that of which person?"),
    ('"Congo and Angola have agreed to suspend expulsions from both sides of the border," said Lambert Mende, DR '
     'Congo information minister, in October 2009.', "Lambert Mende", "PERSON", "which person", None),  # mid-clause
]


# Real statements of the enwiki sample whose triplets (on the canned pages) failed the judgement of 2026-11-27
# (bench/README.md, "Triplets judged by hand"), each failure class with the question it gets now, per phrase set
# (ours: --phrases ours); None: no phrase fits there, so the entity is not asked (no_fitting_phrase). The phrase
# is the one drawn; the question shows the one that reads there.
PHRASE_CASES = [
    # a CARDINAL counting a noun: Table 5's "what" asks which
    ("Kenji Tomiki toured with a delegation of various martial arts through 15 continental states of the United "
     "States in 1953.", "15", "CARDINAL", "table5", None, None),
    ("Kenji Tomiki toured with a delegation of various martial arts through 15 continental states of the United "
     "States in 1953.", "15", "CARDINAL", "ours", "how many",
     "Kenji Tomiki toured with a delegation of various martial arts through how many continental states of the "
     "United States in 1953?"),
    ("From 1983 to 2015, approximately 50 Oscars were made each year in Chicago by Illinois manufacturer R.S. Owens "
     "& Company.", "approximately 50", "CARDINAL", "ours", "how many",
     "From 1983 to 2015, how many Oscars were made each year in Chicago by Illinois manufacturer R.S. Owens & "
     "Company?"),
    # a duration tagged DATE: when/what time/what date ask for a moment
    ("As of 2008, the man with the longest cumulative time in space is Sergei K. Krikalev, who has spent 803 days, "
     "9 hours and 39 minutes, or 2.2 years, in space.", "2.2 years", "DATE", "table5", None, None),
    ("As of 2008, the man with the longest cumulative time in space is Sergei K. Krikalev, who has spent 803 days, "
     "9 hours and 39 minutes, or 2.2 years, in space.", "2.2 years", "DATE", "ours", "how many years",
     None),  # "803 days, ..., or how many years": a conjunct, not asked
    ("In 2008, the 80th Academy Awards telecast was watched by 31.76 million viewers on average with an 18.66% "
     "household rating, the lowest rated and least watched ceremony to date, in spite of celebrating 80 years of "
     "the Academy Awards.", "80 years", "DATE", "ours", "how many years",
     "In 2008, the 80th Academy Awards telecast was watched by 31.76 million viewers on average with an 18.66% "
     "household rating, the lowest rated and least watched ceremony to date, in spite of celebrating how many "
     "years of the Academy Awards?"),
    # a year modifying a noun: "what date census"
    ("According to the 2006 census, the median annual family income after taxes was $70,986 in Alberta (compared "
     "to $60,270 in Canada as a whole).", "2006", "DATE", "table5", None, None),
    ("According to the 2006 census, the median annual family income after taxes was $70,986 in Alberta (compared "
     "to $60,270 in Canada as a whole).", "2006", "DATE", "ours", "which year's",
     None),  # "was the median ... income after taxes $70,986": the subject's modifier would run into the predicate
    ("It was also shown at the 1997 Stockholm International Film Festival.", "1997", "DATE", "ours",
     "which year's", "It was also shown at which year's Stockholm International Film Festival?"),
    ("The Children's Book Council of Australia designated Animalia a 1987 Picture Book of the Year: Honour Book.",
     "1987", "DATE", "ours", "which year's",
     "The Children's Book Council of Australia designated Animalia which year's Picture Book of the Year: Honour "
     "Book?"),
    ("In December 2011, Orson Welles' 1941 Oscar for Citizen Kane (Best Original Screenplay) was put up for auction, "
     "after his heirs won a 2004 court decision contending that Welles did not sign any agreement to return the "
     "statue to the Academy.", "1941", "DATE", "ours", None, None),  # after a possessive no phrase reads
    # one end of a range is not asked: "for the period from what year to 2010?" (three judges, 2026-11-29)
    ("The Economy of Angola is one of the fastest-growing economies in the world, with reported annual average GDP "
     "growth of 11.1 percent for the period from 2001 to 2010.", "2001", "DATE", "ours", "when", None),
    # a date a reader cannot give
    ("According to a 2010 survey, religion today plays an important role in the lives of only 39% of Albanians, and "
     "Albania is ranked among the least religious countries in the world.", "today", "DATE", "ours", None, None),
    # a GPE that is no country (a US state, an island): "what country" is wrong
    ("In the 1980 census, 41% of the people in Alabama identified as being of English ancestry, making them the "
     "largest ethnic group at the time.", "Alabama", "GPE", "table5", "where", None),  # "the people where identified"
    ("In the 1980 census, 41% of the people in Alabama identified as being of English ancestry, making them the "
     "largest ethnic group at the time.", "Alabama", "GPE", "ours", "where",
     None),  # inside the subject, not opening it: "41% of the people in what place identified" reads as an echo
    ("Petalite (LiAlSi4O10) was discovered in 1800 by the Brazilian chemist José Bonifácio de Andrada in a mine on "
     "the island of Utö, Sweden.", "Utö", "GPE", "ours", "what place",
     "Petalite (LiAlSi4O10) was discovered in 1800 by the Brazilian chemist José Bonifácio de Andrada in a mine on "
     "the island of what place?"),  # ", Sweden", an apposition of the entity, would hang off the wh-phrase
    ("In 2011, 46.6% of Alabama's population younger than age 1 were minorities.", "Alabama", "GPE", "ours", "where",
     None),
    # a person's title goes with the name; a name spaCy cut is not asked; a relative clause on "which" after a
    # person says something of the clause, not of the person: it goes ("led by which person, which resulted in")
    ("In 1993, democratically elected president Abulfaz Elchibey was overthrown by a military insurrection led by "
     "Colonel Surat Huseynov, which resulted in the rise to power of the former leader of Soviet Azerbaijan, Heydar "
     "Aliyev.", "Surat Huseynov", "PERSON", "table5", "which person",
     "In 1993, democratically elected president Abulfaz Elchibey was overthrown by a military insurrection led by "
     "which person?"),
    ("In order to prepare herself to play a role commemorating the life of legendary actress Empar Ribera, young "
     "actress (Mercè Pons) interviews three established actresses who had been the Ribera's pupils: the "
     "international diva Glòria Marc (Núria Espert), the television star Assumpta Roca (Rosa Maria Sardà), and "
     "dubbing director Maria Caminal (Anna Lizaran).", "Pons", "PERSON", "table5", None, None),
    # a determiner and a year before the name: "It was also shown at the 1997 what?"
    ("It was also shown at the 1997 Stockholm International Film Festival.", "Stockholm International Film Festival",
     "EVENT", "table5", None, None),
    # an ordinal before its noun: "what rank movie"
    ('The 2015 Japanese film Sayonara, starring Geminoid F, was promoted as "the first movie to feature an android '
     'performing opposite a human actor".', "first", "ORDINAL", "table5", None, None),
    # a nationality modifying a noun: Table 5's "what", not "what groups"; a participle's clause after it goes, so
    # the wh-phrase ends the question
    ("In the 1980 census, 41% of the people in Alabama identified as being of English ancestry, making them the "
     "largest ethnic group at the time.", "English", "NORP", "table5", "what",
     "In the 1980 census, 41% of the people in Alabama identified as being of what ancestry?"),
    ('The 2015 Japanese film Sayonara, starring Geminoid F, was promoted as "the first movie to feature an android '
     'performing opposite a human actor".', "Japanese", "NORP", "table5", None, None),  # not "The 2015 what film"
    # a facility: ours "which building" (Table 5's plural "what buildings" in the name's number: test_fit_phrase);
    # here in the first of two coordinated verbs ("invested ... and sold"): not asked
    ("They invested in PURE, a nightclub at Caesars Palace, which opened in 2004, and sold it to Angel Management "
     "Group in 2010.", "Caesars Palace", "FAC", "ours", "which building", None),
    # money: the currency sign goes with the entity (spaCy's MONEY is "70,986": build_triplet adds it)
    ("According to the 2006 census, the median annual family income after taxes was $70,986 in Alberta (compared "
     "to $60,270 in Canada as a whole).", "$70,986", "MONEY", "table5", "how much money",
     "According to the 2006 census, what was the median annual family income after taxes in Alberta?"),
]


def _question(statement: str, entity: str, label: str, phrases: str, phrase: str | None):
    """The question as mining makes it: with spaCy's parse of the statement (the word order)."""
    start = statement.rindex(entity) if label == "PERCENT" else statement.index(entity)
    fitting = alternatives(entity, label, statement[:start], statement[start + len(entity):], phrases)
    if phrase is None or phrase not in fitting:
        return fitting, None
    doc = load_ner("en_core_web_sm")(statement)
    return fitting, make_question(statement, start, start + len(entity), phrase, fitting, doc)


@pytest.mark.parametrize("statement, entity, label, phrase, question", GRAMMAR_CASES)
def test_questions_read_well_on_real_statements(statement, entity, label, phrase, question):
    fitting, got = _question(statement, entity, label, "table5", phrase)
    assert got == question and set(fitting) <= set(WH_PHRASES[label])


@pytest.mark.parametrize("statement, entity, label, phrases, phrase, question", PHRASE_CASES)
def test_phrases_fit_the_entity_where_it_stands(statement, entity, label, phrases, phrase, question):
    fitting, got = _question(statement, entity, label, phrases, phrase)
    assert got == question
    if phrase is None:
        assert fitting == ()
    if phrases == "table5":
        assert set(fitting) <= set(WH_PHRASES[label])  # Table 5's own phrases, less those that do not fit


def test_a_counted_noun_is_not_asked():
    """spaCy tags the counted "Oscars" ORG: "approximately 50 which organization were made" (table5), asked never."""
    statement = ("From 1983 to 2015, approximately 50 Oscars were made each year in Chicago by Illinois manufacturer "
                 "R.S. Owens & Company.")
    ents = [(t, label, statement.index(t), statement.index(t) + len(t)) for t, label in
            (("approximately 50", "CARDINAL"), ("Oscars", "ORG"))]
    block = "The company has made the statuettes since 1983, casting approximately 50 Oscars each year."
    assert build_triplet(statement, ents, [block], 0, "k") == "no_fitting_phrase"  # nor the count, with Table 5
    assert build_triplet(statement, ents, [block], 0, "k", phrases="ours").question.startswith(
        "From 1983 to 2015, how many Oscars were made")


def test_a_fronted_entity_with_no_safe_inversion_is_not_asked_and_counted():
    """With the parse, "Before 1095, Andorra did not have ... and the Bishop ... asked ..." has no safe inversion
    (a coordinated clause keeps its own verb): 1095 is not asked, Andorra is; without it, the old order."""
    statement = ("Before 1095, Andorra did not have any type of military protection and the Bishop of Urgell, who "
                 "knew that the Count of Urgell wanted to reclaim the Andorran valleys, asked the Lord of Caboet for "
                 "help and protection.")
    doc = load_ner("en_core_web_sm")(statement)
    year = [(e.text, e.label_, e.start_char, e.end_char) for e in doc.ents if e.text == "1095"]
    block = ("Before 1095 Andorra had no military protection, and the Bishop of Urgell asked the Lord of Caboet for "
             "help.")
    assert build_triplet(statement, year, [block], 0, "k", doc=doc) == "no_fitting_phrase"
    assert build_triplet(statement, year, [block], 0, "k").question.startswith("Before what year, Andorra did not")
    both = [(e.text, e.label_, e.start_char, e.end_char) for e in doc.ents if e.text in ("1095", "Andorra")]
    triplet = build_triplet(statement, both, [block], 0, "k", doc=doc)
    assert triplet.answer == "Andorra" and triplet.tries == 2  # the subject: asked in place (spaCy says ORG)
    assert triplet.question == f"Before 1095, {triplet.phrase} did not" + statement[28:-1] + "?"


@pytest.mark.parametrize("statement, question", [
    ("In 2002, he did not live in Paris.", "When did he not live in Paris?"),
    ("In 2002, they can live in Paris.", "When can they live in Paris?"),
    ("In 2002, he didn't live in Paris.", None),  # "did" cannot leave its "n't"
    ("In 2002, he's been living in Paris.", None),  # nor "'s" its subject
])
def test_inversion_moves_whole_auxiliaries_only(statement, question):
    start = statement.index("2002")
    doc = load_ner("en_core_web_sm")(statement)
    assert make_question(statement, start, start + 4, "when", ("when",), doc) == question


def test_countries_are_cldrs_and_common_names():
    assert all(is_country(n) for n in ("the United States", "U.S.", "Sweden", "Canada", "Burma", "the Soviet Union"))
    assert not any(is_country(n) for n in ("Alabama", "Utö", "Alberta", "European Union", "Antarctica"))


def test_a_context_must_name_another_entity_of_the_statement():
    """The Alabama page for a statement on Alaska (tests/data/cmore_pages): it holds the year, nothing else."""
    statement = ("As of 2011, 50.7% of Alaska's population younger than one year of age belonged to minority groups "
                 "(i.e., did not have two parents of non-Hispanic white ancestry).")
    block = ("In Alabama, 46.6 percent of the population younger than age 1 were minorities in 2011, compared with "
             "26.9 percent in Ohio.")
    ents = [(t, label, statement.index(t), statement.index(t) + len(t)) for t, label in
            (("2011", "DATE"), ("50.7%", "PERCENT"), ("Alaska", "GPE"), ("non-Hispanic", "NORP"))]
    assert others_held(ents[1:], "2011", block) == (0, 3)
    assert build_triplet(statement, ents[:1] + ents[2:3], [block], 0, "k", min_other=1) == "context_unsupported"
    assert build_triplet(statement, ents[:1] + ents[2:3], [block], 0, "k", min_other=0).answer == "2011"
    # the ASA statement and its ANSI passage: articles and punctuation aside, the passage names the USASI
    statement = ("The ASA became the United States of America Standards Institute or USASI and ultimately the "
                 "American National Standards Institute.")
    usasi = "the United States of America Standards Institute"
    ents = [("ASA", "ORG", 4, 7), (usasi, "ORG", statement.index(usasi), statement.index(usasi) + len(usasi))]
    block = "In 1966, the ASA was reorganized and became United States of America Standards Institute (USASI)."
    assert others_held(ents[1:], "ASA", block) == (1, 1)
    assert build_triplet(statement, ents, [block], 0, "k", min_other=1).answer == "ASA"


def _entities(doc, *texts: str) -> list[tuple[str, str, int, int]]:
    return [(e.text, e.label_, e.start_char, e.end_char) for e in doc.ents if e.text in texts]


# the Alberta page (tests/data/cmore_pages/30-history-of-alberta.html), its first two sentences
ALBERTA_PAGE = ("The province is named after Princess Louise Caroline Alberta (1848-1939), the fourth daughter of "
                "Queen Victoria and Albert, Prince Consort. Princess Louise was the wife of the Marquess of Lorne, "
                "Governor General of Canada from 1878 to 1883.")


def test_an_answer_named_in_another_role_does_not_answer():
    """Issue 39: "Queen of what country" -> Canada, where the page's only "Canada" is the Governor General's. The
    noun the answer complements in the statement must be in the answer's sentence of the context; without the
    parse, string matching takes it, as the paper does."""
    statement = ("Alberta is named after Princess Louise Caroline Alberta (1848\u20131939), the fourth daughter of "
                 "Victoria, Queen of Canada, and Albert, Prince Consort.")
    doc = load_ner("en_core_web_sm")(statement)
    canada = _entities(doc, "Canada")
    assert governing_noun(doc, canada[0][2], canada[0][3]) == ("queen",)
    # in the first of the coordinated names it is not asked now; the statement less Albert keeps the role
    assert build_triplet(statement, canada, [ALBERTA_PAGE], 0, "k", doc=doc) == "no_fitting_phrase"
    statement = statement.replace(", and Albert, Prince Consort.", ".")
    doc = load_ner("en_core_web_sm")(statement)
    canada = _entities(doc, "Canada")
    assert governing_noun(doc, canada[0][2], canada[0][3]) == ("queen",)
    assert build_triplet(statement, canada, [ALBERTA_PAGE], 0, "k", doc=doc) == "answer_in_other_role"
    assert build_triplet(statement, canada, [ALBERTA_PAGE], 0, "k").answer == "Canada"
    queen = ALBERTA_PAGE.replace("Queen Victoria", "Victoria, Queen of Canada,")
    assert build_triplet(statement, canada, [queen], 0, "k", doc=doc).answer == "Canada"
    # the noun may come after the answer in its sentence (the Gallup page); a verb's object has no such noun
    statement = ("According to a 2010 survey, religion today plays an important role in the lives of only 39% of "
                 "Albanians, and Albania is ranked among the least religious countries in the world.")
    doc = load_ner("en_core_web_sm")(statement)
    share = _entities(doc, "only 39%")
    block = ("A Gallup survey conducted in 2009 and 2010 asked adults in more than 100 countries whether religion is "
             "an important part of their daily lives. Only 39% of Albanians said religion plays an important role in "
             "their lives, placing Albania among the least religious countries in the world.")
    assert governing_noun(doc, share[0][2], share[0][3]) == ("lives", "life")
    assert build_triplet(statement, share, [block], 0, "k", doc=doc).answer == "39%"
    assert governing_noun(doc, *_entities(doc, "2010")[0][2:]) == ()  # "a 2010 survey": a modifier, no role


def test_the_answer_is_the_thing_asked_for():
    """Issue 39: "The Clarmac Company" (the article kept), "70,986" (the "$" dropped), "Only 39%" (the focus word
    kept). The question replaces the whole entity; the answer and its span in the context are the thing itself."""
    assert answer_of("the Clarmac Company", "ORG") == "Clarmac Company" and answer_of("only 39%", "PERCENT") == "39%"
    assert answer_of("approximately 50", "CARDINAL") == "50" and answer_of("about two", "CARDINAL") == "about two"
    assert answer_of("Only Fools and Horses", "WORK_OF_ART") == "Only Fools and Horses"  # a number's hedge only
    nlp = load_ner("en_core_web_sm")
    statement = ("However, the First World War impacted financially on the Clarmac Company, which entered into "
                 "liquidation in 1915.")
    block = ("Companies (Consolidation) Act, 1908: The Clarmac Company Limited Notice is hereby given that at an "
             "Extraordinary General Meeting of the Clarmac Company Limited, held on the 21st day of October, 1915, the "
             "following Extraordinary Resolution was duly passed")
    doc = nlp(statement)
    got = build_triplet(statement, _entities(doc, "the Clarmac Company"), [block], 0, "k", doc=doc)
    assert (got.answer, got.answer_start) == ("Clarmac Company", block.index("Clarmac"))
    assert got.question == "The First World War impacted financially on what organization?"
    statement = ("According to the 2006 census, the median annual family income after taxes was $70,986 in Alberta "
                 "(compared to $60,270 in Canada as a whole).")
    block = "Canada: $60,270. Alberta: $70,986. Ontario: $64,216."
    doc = nlp(statement)
    money = _entities(doc, "70,986")
    assert money and entity_start(statement, money[0][2], "MONEY") == statement.index("$70,986")
    got = build_triplet(statement, money, [block], 0, "k", doc=doc)
    assert (got.answer, got.answer_start, got.entity_span) == ("$70,986", block.index("$70,986"), money[0][2:])
    assert got.question == ("According to the 2006 census, what was the median annual family income after taxes "
                            "in Alberta?")
    assert find_spans("$70,986", block) == [(26, 33)] and find_spans("1915", "1915 and 1915") == [(0, 4), (9, 13)]


def test_a_nationality_before_a_noun_is_the_answer_alone_and_the_question_names_its_topic():
    """The blind judgement of 2026-11-29 (three judges, bench/records/qac_rubric.md): "of what ancestry" is
    answered "English", not "English ancestry", which repeats the noun the question asks with. "According to what
    data were 100 percent ... literate in 1970?" asks for a statement's source, and with the percentage asked
    instead the question never names whose literacy (the page is Azerbaijan's): neither is asked."""
    nlp = load_ner("en_core_web_sm")
    statement = ("In the 1980 census, 41% of the people in Alabama identified as being of English ancestry, making "
                 "them the largest ethnic group at the time.")
    block = ("Alabama - Ancestry. In the 1980 census, 41% of the people in Alabama identified as being of English "
             "ancestry, the largest group in the state.")
    doc = nlp(statement)
    got = build_triplet(statement, _entities(doc, "English"), [block], 0, "k", doc=doc)
    assert (got.question, got.answer) == ("In the 1980 census, 41% of the people in Alabama identified as being of "
                                          "what ancestry?", "English")
    assert got.answer_start == block.index("English")
    statement = ("According to Soviet data, 100 percent of males and females (ages nine to forty-nine) were literate "
                 "in 1970.")
    block = ("Azerbaijan - Education In the Soviet period, Azerbaijan achieved a high rate of literacy. According to "
             "Soviet data, 100 percent of males and females between the ages of nine and forty-nine were literate in "
             "1970.")
    doc = nlp(statement)
    assert build_triplet(statement, _entities(doc, "Soviet"), [block], 0, "k", doc=doc) == "no_fitting_phrase"
    assert build_triplet(statement, _entities(doc, "100 percent"), [block], 0, "k", doc=doc) == "unnamed_topic"
    # the same percentage of a named country's people is asked
    named = statement.replace("of males and females", "of Azerbaijanis")
    doc = nlp(named)
    assert build_triplet(named, _entities(doc, "100 percent"), [block.replace("of males and females", "of "
                         "Azerbaijanis")], 0, "k", doc=doc).answer == "100 percent"


def test_fit_phrase_puts_what_buildings_in_the_number_of_the_name():
    assert fit_phrase("a nightclub at ", "what buildings", ", which opened", ("what buildings",),
                      "Caesars Palace")[1] == "what building"
    assert fit_phrase("at ", "what buildings", ".", ("what buildings",), "the Twin Towers")[1] == "what buildings"


# real statements of the sample and the pronoun none of their words resolves (None: resolved or none)
PRONOUN_CASES = [
    ("In 1990, he appeared in a television commercial for Canon Inc., promoting the Canon EOS Rebel camera.", "he"),
    ("They both endorsed Deutsche Telekom in 2002, Genworth Financial and Canon Inc. in 2004, LVMH in 2007, and "
     "Nintendo Wii and Wii Fit U and Longines in 2013.", "They"),
    ("It was also shown at the 1997 Stockholm International Film Festival.", "It"),
    ("In politics, she condemned the initiation of force as immoral, and opposed collectivism and statism as well as "
     "anarchism, and instead supported laissez-faire capitalism, which she defined as the system based on "
     "recognizing individual rights.", "she"),  # "politics" names no one
    ("(Its adjectival form appeared in the works of Aristotle.)", "Its"),
    ("Those who have cited his influence include Friedrich Nietzsche, Richard Wagner, Leo Tolstoy, Ludwig "
     "Wittgenstein, Erwin Schrödinger, Sigmund Freud, Gustav Mahler, Joseph Campbell, Albert Einstein, Carl Jung, "
     "Thomas Mann, Jorge Luis Borges, and Samuel Beckett, among others.", "Those"),
    # resolved: by a noun before it, or by the subject after the phrase it stands in; an "it" that announces a clause
    ("ABC once again took over broadcast duties in 1976, and has broadcast the Oscars ever since; its current "
     "contract with the Academy runs through 2020.", None),
    ('During his 20-plus year tour career, Agassi was known by the nickname "The Punisher".', None),
    ("In December 2011, Orson Welles' 1941 Oscar for Citizen Kane (Best Original Screenplay) was put up for auction, "
     "after his heirs won a 2004 court decision contending that Welles did not sign any agreement to return the "
     "statue to the Academy.", None),
    ("It is estimated that a quarter of the people alive at the time saw\u2014either live or delayed\u2014the "
     "Christmas Eve transmission during the ninth orbit of the Moon.", None),
    ("It is possible to greatly reduce exposure to radiation with abdominal shielding, depending on how far the area "
     "to be irradiated is from the fetus.", None),
    # an anaphoric "such" before a noun: deaths of which kind, the sentence before said; "such as" is none
    ("Between 1999 and 2013, in the U.S., the CDC recorded 531 such deaths for newborns, approximately 4 per 100,000 "
     "abortions.", "such"),
    ("Bob Bemer introduced features such as the escape sequence.", None),
]


@pytest.mark.parametrize("statement, pronoun", PRONOUN_CASES)
def test_a_statement_with_an_unresolved_pronoun_is_not_asked(statement, pronoun):
    """Issue 39: "When did he appear in a television commercial ...?" does not stand alone. Such a statement is not
    asked (unresolved_pronoun); with no parse, as the paper, it is."""
    doc = load_ner("en_core_web_sm")(statement)
    assert unresolved_pronoun(doc) == pronoun
    ents = [(e.text, e.label_, e.start_char, e.end_char) for e in doc.ents]
    got = build_triplet(statement, ents, [statement], 0, "k", doc=doc)
    assert (got == "unresolved_pronoun") == (pronoun is not None)
    assert build_triplet(statement, ents, [statement], 0, "k") != "unresolved_pronoun"


# the canned pages' blocks of the three failures of the blind judgement of 2026-11-28b
CLARMAC_BLOCK = ("Companies (Consolidation) Act, 1908: The Clarmac Company Limited Notice is hereby given that at an "
                 "Extraordinary General Meeting of the Clarmac Company Limited, held on the 21st day of October, 1915, "
                 "the following Extraordinary Resolution was duly passed: That ... the Company be wound up "
                 "voluntarily.")
KODAK_BLOCK = ("Oscars' home renamed Dolby Theatre The Hollywood theater that has hosted the Academy Awards since 2002 "
               "will now be called the Dolby Theatre. Dolby Laboratories signed a 20-year naming rights deal for the "
               "venue formerly known as the Kodak Theatre, after Eastman Kodak filed for bankruptcy in January.")
ALBANIA_BLOCK = ("Best in Travel 2011: top 10 countries Every year our authors and editors pick the destinations that "
                 "we think deserve the spotlight. For 2011 the number one country on the list is Albania, a "
                 "Mediterranean gem that has long been hidden behind the mountains of the Balkans. Go now, before "
                 "everyone else does. Also on this year's list are Brazil, Canada, Greece and Morocco.")
ALGERIA_BLOCK = ("Countries are placed within one of four types of regime: full democracies, flawed democracies, "
                 "hybrid regimes and authoritarian regimes. In the Middle East and North Africa, Algeria is classified "
                 "as an authoritarian regime, ranking 117th with an overall score of 3.83. Tunisia was the only "
                 "country in the region to improve enough to be classified as a flawed democracy in the 2014 edition.")


def test_an_aside_the_question_cut_ties_it_to_no_context():
    """Round 2 of the blind judgement: "The First World War impacted financially on what organization, which entered
    into liquidation in 1915?". The relative clause goes (above); what it said is no longer in the question, so the
    context must name an entity the question still holds: the canned page names the company and 1915, not the war.
    The year, in the relative clause, is not asked either (round 3: "..., which entered into liquidation in what
    year?")."""
    statement = ("However, the First World War impacted financially on the Clarmac Company, which entered into "
                 "liquidation in 1915.")
    doc = load_ner("en_core_web_sm")(statement)
    company = _entities(doc, "the First World War", "the Clarmac Company")
    assert build_triplet(statement, company, [CLARMAC_BLOCK], 0, "k", min_other=1, doc=doc) == "context_unsupported"
    war = "Shipping and the First World War ruined the Clarmac Company."
    got = build_triplet(statement, company, [war], 0, "e", min_other=1, doc=doc)  # key "e": the company drawn
    assert got.tries == 1 and (got.answer, got.question) == ("Clarmac Company",
                                          "The First World War impacted financially on which organization?")
    got = build_triplet(statement, _entities(doc, "the First World War", "the Clarmac Company", "1915"),
                        [CLARMAC_BLOCK], 0, "k", min_other=1, doc=doc)
    assert got == "context_unsupported"


@pytest.mark.parametrize("statement, definites", [
    ("In 2002, the Kodak Theatre (now known as the Dolby Theatre) became the current venue of the presentation.",
     ["presentation"]),  # the presentation of the Academy Awards, the page's sentence before said
    ("However, the First World War impacted financially on the Clarmac Company, which entered into liquidation in "
     "1915.", []),  # "the Clarmac Company" is a name
    ("The Economy of Angola is one of the fastest-growing economies in the world, with reported annual average GDP "
     "growth of 11.1 percent for the period from 2001 to 2010.", []),  # one world; "the period from ..." is modified
    ("In the 1980 census, 41% of the people in Alabama identified as being of English ancestry, making them the "
     "largest ethnic group at the time.", []),  # "the time" after a date
    ("In December 2011, Orson Welles' 1941 Oscar for Citizen Kane (Best Original Screenplay) was put up for auction, "
     "after his heirs won a 2004 court decision contending that Welles did not sign any agreement to return the "
     "statue to the Academy.", ["statue"]),
])
def test_bare_definites_are_those_the_statement_does_not_resolve(statement, definites):
    assert [t.text for t in bare_definites(load_ner("en_core_web_sm")(statement))] == definites


def test_a_bare_definite_no_context_names_is_not_asked():
    """Round 2 of the blind judgement: "When did the Kodak Theatre (now known as the Dolby Theatre) become the current
    venue of the presentation?": which presentation, neither the question nor its context says (the Academy Awards,
    the page's sentence before). A block that names it answers; without the parse, as the paper, it is asked."""
    statement = ("In 2002, the Kodak Theatre (now known as the Dolby Theatre) became the current venue of the "
                 "presentation.")
    doc = load_ner("en_core_web_sm")(statement)
    year = _entities(doc, "2002")
    assert unresolved_definite("When did ... the presentation?", bare_definites(doc), KODAK_BLOCK) == "the presentation"
    assert build_triplet(statement, year, [KODAK_BLOCK], 0, "k", doc=doc) == "unresolved_definite"
    named = KODAK_BLOCK + " The presentation of the Oscars moved there in 2002."
    assert build_triplet(statement, year, [named], 0, "k", doc=doc).question == (
        "When did the Kodak Theatre (now known as the Dolby Theatre) become the current venue of the presentation?")
    assert build_triplet(statement, year, [KODAK_BLOCK], 0, "k").answer == "2002"


def test_a_member_of_a_class_the_context_lists_others_of_is_not_asked():
    """Round 2 of the blind judgement: "In 2011, what country was recommended as a top travel destination, by Lonely
    Planet?": Albania, and the page's Brazil, Canada, Greece and Morocco. A question asking for one member of a class
    ("a top travel destination") has no one answer where the context lists others of the answer's type; a context
    naming one apart ("Tunisia was the only country ...") keeps it. Without the pipeline (nlp) the blocks are not
    read for it. The subject of a "be" whose predicate is one of a kind is never asked: "What country is an
    authoritarian regime, according to the Democracy Index 2014?" has many true answers, whatever the context
    (three judges under the rubric of 2026-11-29 failed it; an earlier judge had passed it)."""
    nlp = load_ner("en_core_web_sm")
    statement = "In 2011, Albania was recommended as a top travel destination, by Lonely Planet."
    doc = nlp(statement)
    albania, year = _entities(doc, "Albania"), _entities(doc, "2011")
    assert asks_a_member(doc, *albania[0][2:]) and not asks_a_member(doc, *year[0][2:])
    assert not names_a_class(doc, *albania[0][2:])  # recommended as one: a list's member, asked where none is listed
    assert build_triplet(statement, albania, [ALBANIA_BLOCK], 0, "k", doc=doc, nlp=nlp) == "answer_not_unique"
    assert build_triplet(statement, albania, [ALBANIA_BLOCK], 0, "k", doc=doc).answer == "Albania"
    alone = ALBANIA_BLOCK.replace("Brazil, Canada, Greece and Morocco", "four others")
    assert build_triplet(statement, albania, [alone], 0, "k", doc=doc, nlp=nlp).answer == "Albania"
    algeria = "Algeria is an authoritarian regime, according to the Democracy Index 2014."
    doc = nlp(algeria)
    assert asks_a_member(doc, 0, 7) and names_a_class(doc, 0, 7)
    for pipeline in (nlp, None):
        assert build_triplet(algeria, _entities(doc, "Algeria"), [ALGERIA_BLOCK], 0, "k", doc=doc,
                             nlp=pipeline) == "answer_not_unique"


def test_grammar_cases_are_real_statements_of_the_sample(enwiki_store):
    statements = set(pq.read_table(enwiki_store.path / "citations", columns=["statement"]).column(0).to_pylist())
    assert len(GRAMMAR_CASES) >= 20
    assert [c[0] for c in GRAMMAR_CASES + PRONOUN_CASES if c[0] not in statements] == []


# -- on the real sample -----------------------------------------------------------------------
def test_funnel_counts_are_exact(mined, refs):
    result, out, _, rows = mined
    funnel = result.manifest.methods["qac"]["funnel"]
    assert load_references(refs).with_text() == 34 and load_references(refs).rows == 36  # 35 pages, the script-only shell has no text
    # 7,833 citations, one of them on a disambiguation page; 10 support a sentence with a hole;
    # 43 cite one of the 34 pages with text (the Sports Business Daily page by two statements, the Aikido
    # Journal page by five)
    assert funnel["citations"] == 7833 and funnel["disambiguation_page"] == 1  # "Aa River" cites one page
    assert funnel["no_statement"] == 0 and funnel["flagged_statement"] == 10
    assert funnel["no_reference_text"] == 7833 - 1 - 10 - 43
    # every citation is accounted for: each leaves at exactly one step or becomes a triplet
    assert sum(v for k, v in funnel.items() if k not in ("citations", "duplicate", "candidates")) == 7833
    assert funnel == EXPECTED_FUNNEL and result.manifest.methods["qac"]["other_entity"] == 7
    assert funnel["triplets"] - funnel["duplicate"] == funnel["candidates"] == len(rows)
    assert json.loads((out / "stats.json").read_text())["methods"]["qac"]["funnel"] == funnel


# 44 citations cite one of the 35 pages (the 45th, citationtechnologies.com, is cited in a list item of ANSI, and list
# lines leave the text); the script-only page (Angola, paris21.org) gives no text: 43 left. Checked by hand: a pronoun
# nothing in the statement resolves in 5 ("In 1990, he appeared ...", "They both endorsed ...", "They invested in PURE
# ...", "It was also shown at the 1997 Stockholm ...", "He named the metal ..."), an anaphoric "such" in 1 ("the CDC
# recorded 531 such deaths"); no entity in "Several of these students would found their own styles of aikido."; no
# entity in the block for the Alaska sentence (50.7%, Alaska, two, non-Hispanic: none on the Plain Dealer page) and
# "Morihei Ueshiba's" (the page: "Morihei Ueshiba, later"); answer in the question: "Shodokan aikido, however, was
# controversial, ... contrary to the spirit of aikido" (its only entity), and "In 2002, the Kodak Theatre (now known
# as the Dolby Theatre) became ..." (the theatres name each other; its year is no question: no block names "the
# presentation", unresolved_definite). No Table 5 phrase fits (table5, the
# default) any entity of 4: "Animalia a 1987 Picture Book", "or 2.2 years, in space", "celebrating 80 years", "(Mercè
# Pons)"; "the 2006 census" gives its "$70,986" instead; and no question reads for any of 4 whose entities are items
# of a list or stand in one of coordinated phrases: "included Anselme Bellegarrigue, Ernest Coeurderoy, ...",
# "Victoria, Queen of Canada, and Albert, Prince Consort", "was published during 1963, underwent a major revision
# during 1967, and ...", "have their own headquarters ... in Japan, and have ..."; nor for "In 2011, 46.6% of
# Alabama's population younger than age 1 were minorities." (a phrase between subject and verb, inside the subject).
# Context unsupported: the Alabama page for "As of 2011, 50.7% of Alaska's population ..." names none of its other
# entities, nor the London Gazette page the First World War (its "1915" is in a relative clause). The other 21 give
# triplets, no two the same; 8 of them by another entity than the sampled one, which had no fitting phrase ("15
# continental states": Kenji Tomiki is asked), or whose page lists others of its kind (Albania, answer_not_unique:
# its year is asked).
EXPECTED_FUNNEL = {"citations": 7833, "disambiguation_page": 1, "no_statement": 0, "flagged_statement": 10,
                   "no_reference_text": 7779, "unresolved_pronoun": 6, "no_entity": 1, "no_entity_in_block": 2,
                   "no_fitting_phrase": 14, "answer_in_question": 2, "unnamed_topic": 0, "answer_span_not_found": 0,
                   "answer_in_other_role": 0, "context_unsupported": 2, "unresolved_definite": 0,
                   "answer_not_unique": 1, "triplets": 15, "duplicate": 0, "candidates": 15}


def test_questions_carry_the_phrase_not_the_answer_and_offsets_hold(mined):
    _, _, _, rows = mined
    assert rows
    for r in rows:
        assert r["positive_text"][r["answer_start"]:r["answer_end"]] == r["answer"]
        # Table 5's, "what building" (in the name's number), a time's or place's noun phrase where "when"/"where" would
        # sit mid-clause, "what" for an amount fronted before "be" ("what was the median income"), "which" and the
        # noun a name stands in apposition to ("which 2015 Japanese film")
        assert (r["answer_phrase"] in WH_PHRASES[r["answer_type"]] + ("whose", "what building", "what year",
                                                                       "what date", "what place", "what")
                or r["answer_phrase"].startswith("which "))
        assert r["answer_phrase"].lower() in r["query"].lower() and r["query"].endswith("?")
        assert not leaks(r["answer"], r["query"], 0, 0) and r["answer_phrase"] != "how many"
        assert r["context_source"] == "reference" and r["positive_title"] == r["reference_title"]
        assert len(r["positive_text"].split()) <= 128 and (r["block_words"], r["block_stride"]) == (128, 64)
        assert r["negative_kind"] == "random" and r["negative_doc_id"] != r["query_doc_id"]


def test_specific_triplets_checked_by_hand(mined):
    _, _, by_key, _ = mined
    checks = HAND_CHECKED
    assert checks
    for key, (answer, answer_type, question) in checks.items():
        r = by_key[key]
        assert (r["answer"], r["answer_type"], r["query"]) == (answer, answer_type, question)


# (doc_id|sentence_idx|url) -> (answer, type, question), each read against its page and Table 5
HAND_CHECKED: dict[str, tuple[str, str, str]] = {
    '324|107|http://www.oscars.org/press/pressreleases/2011/20110224b.html':
        ('ABC', 'ORG',  # the clause after ";" goes
         'Which organization once again took over broadcast duties in 1976, and has broadcast the Oscars ever '
         'since?'),
    '303|238|https://books.google.com/books?id=SVoAXh-dNuYC&pg=PA57&dq=Sharing+the+dream:+white+males+in+multicultural+America++english+ancestry&cd=1#v=onepage&q=&f=false':
        ('English', 'NORP',  # "Alabama" (no country), "41%" (not on the page as such) are not asked; the
         # answer is the nationality alone, and the participle's clause after it goes
         'In the 1980 census, 41% of the people in Alabama identified as being of what ancestry?'),
    '738|336|http://www.lonelyplanet.com/albania/travel-tips-and-articles/76164':
        ('2011', 'DATE',  # not "what country": the page also lists Brazil, Canada, Greece and Morocco
         'When was Albania recommended as a top travel destination by Lonely Planet?'),  # the stray comma goes
    '738|450|http://www.gallup.com/poll/128210/Gallup-Global-Reports.aspx':
        ('39%', 'PERCENT',  # the question replaces "only 39%"; the answer is the number; the second clause goes
         'According to a 2010 survey, religion today plays an important role in the lives of what percent of '
         'Albanians?'),
    '746|109|http://www.nationsencyclopedia.com/World-Leaders-2003/Azerbaijan-RISE-TO-POWER.html':
        ('Surat Huseynov', 'PERSON',  # ", which resulted in ..." said nothing of the person: it goes
         'In 1993, democratically elected president Abulfaz Elchibey was overthrown by a military insurrection '
         'led by which person?'),
    # issue 39's failures, as they read now
    '666|309|http://www.webelements.com/lithium/history.html':
        ('1800', 'DATE',  # "was discovered when by": fronted
         'When was Petalite (LiAlSi4O10) discovered by the Brazilian chemist José Bonifácio de Andrada in a mine on '
         'the island of Utö, Sweden?'),
    '324|36|http://www.foxnews.com/printer_friendly_wires/2009Jan26/0,4675,OscarGoldplatedJourney,00.html':
        ('Chicago', 'GPE',  # "were made each year where by": fronted after the opening phrase
         'From 1983 to 2015, where were approximately 50 Oscars made each year by Illinois manufacturer R.S. Owens & '
         'Company?'),
    '713|89|http://variety.com/2015/film/asia/sayonara-filmmakers-debate-future-of-robot-actors-1201626092/':
        ('Sayonara', 'NORP',  # "The 2015 Japanese film what": asked for by its noun
         'Which 2015 Japanese film, starring Geminoid F, was promoted as "the first movie to feature an android '
         'performing opposite a human actor"?'),
    '717|194|http://www12.statcan.ca/english/census06/data/highlights/income/pages/Page.cfm?Lang=E&Geo=PR&Code=01&Table=5&Data1=1&Data2=1&StartRec=1&Sort=2&Display=Page':
        ('$70,986', 'MONEY',  # the "$" was dropped; the predicate of "be" asked in front ("what", not "how much
         # money"), the bracket at the end goes
         'According to the 2006 census, what was the median annual family income after taxes in Alberta?'),
    '751|42|http://www.aikidojournal.com/article.php?articleID=626':
        ('Kenji Tomiki', 'PERSON',  # "15 continental states": Table 5's "what" would ask which states
         'Which person toured with a delegation of various martial arts through 15 continental states of the '
         'United States in 1953?'),
}


def test_same_seed_same_triplets_other_seed_other_choices(enwiki_store, refs, mined, tmp_path):
    _, _, _, rows = mined
    again = mine.run(MineConfig(corpus=enwiki_store.path, out=tmp_path / "a", methods=["qac"], references=refs, seed=0))
    assert pq.read_table(tmp_path / "a" / "qac.parquet").to_pylist() == rows
    assert again.manifest.methods["qac"]["funnel"]["candidates"] == len(rows)
    other = mine.run(MineConfig(corpus=enwiki_store.path, out=tmp_path / "b", methods=["qac"], references=refs, seed=1))
    questions = {r["query"] for r in pq.read_table(tmp_path / "b" / "qac.parquet").to_pylist()}
    assert other.methods["qac"].candidates > 0 and questions != {r["query"] for r in rows}


def test_other_methods_have_null_qac_columns(enwiki_store, refs, tmp_path):
    mine.run(MineConfig(corpus=enwiki_store.path, out=tmp_path, methods=["ict", "qac"], references=refs, max_pairs=60))
    ict = pq.read_table(tmp_path / "ict.parquet")
    assert ict.schema.equals(PAIRS) and pq.read_table(tmp_path / "qac.parquet").schema.equals(PAIRS)
    for name in ("answer", "answer_start", "answer_type", "statement", "reference_url", "context_source"):
        assert ict.column(name).null_count == ict.num_rows


def test_dpr_and_squad_exports_and_training_read_qac(mined, tmp_path):
    _, out, _, rows = mined
    pairs = PairsDir(out)
    n = export_pairs(pairs, "dpr", tmp_path / "dpr.json", ["qac"])
    dpr = json.loads((tmp_path / "dpr.json").read_text())
    assert n == len(rows) == len(dpr)
    first = dpr[0]
    assert set(first) >= {"question", "answers", "positive_ctxs", "negative_ctxs", "hard_negative_ctxs"}
    assert first["question"] == rows[0]["query"] and first["answers"] == [rows[0]["answer"]]
    assert first["positive_ctxs"][0]["text"] == rows[0]["positive_text"]
    assert first["positive_ctxs"][0]["title"] == rows[0]["reference_title"]
    assert (first["context_source"], first["block_words"], first["block_stride"]) == ("reference", 128, 64)
    assert first["source_passage_id"] == rows[0]["query_passage_id"]  # what `reader prepare` leaves out
    export_pairs(pairs, "tevatron", tmp_path / "t.jsonl", ["qac"])
    tevatron = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert {t["context_source"] for t in tevatron} == {"reference"} and len(tevatron) == len(rows)
    manifest = json.loads((out / "pairs.json").read_text())["methods"]["qac"]
    assert "cited page (reference)" in manifest["definition"] and "--context links" in manifest["definition"]
    assert export_pairs(pairs, "squad", tmp_path / "squad.json", ["qac"]) == len(rows)
    squad = json.loads((tmp_path / "squad.json").read_text())
    assert squad["version"] == "v1.1"
    for article in squad["data"]:
        for para in article["paragraphs"]:
            for qa in para["qas"]:
                assert qa["context_source"] == "reference"
                a = qa["answers"][0]
                assert para["context"][a["answer_start"]:a["answer_start"] + len(a["text"])] == a["text"]
    scan = scan_pairs(out)
    assert scan.methods == ["qac"] and scan.available["qac"] == len(rows) and scan.with_negatives
    # the reader reads the pairs folder itself as it reads the SQuAD export
    from_folder, from_squad = load_reading_file(out), load_reading_file(tmp_path / "squad.json")
    assert from_folder == from_squad and len(from_folder) == len(rows)
    with pytest.raises(ReadingFileError, match="no qac.parquet"):
        load_reading_file(tmp_path)


def test_unanswered_statements_become_retriever_pairs_only_when_asked(enwiki_store, refs, mined, tmp_path):
    _, _, _, triplets = mined
    result = mine.run(MineConfig(corpus=enwiki_store.path, out=tmp_path, methods=["qac"], references=refs, seed=0,
                                 include_unanswered=True))
    report = result.manifest.methods["qac"]
    # the statement without an entity and the 2 whose entities are not on the cited page (EXPECTED_FUNNEL); not
    # those with an unresolved pronoun ("He named the metal inside the material "lithium"."), which ask nothing
    assert report["unanswered"] == 3 and report["funnel"] == EXPECTED_FUNNEL | {"candidates": 18}
    rows = pq.read_table(tmp_path / "qac.parquet").to_pylist()
    unanswered = [r for r in rows if r["answer"] is None]
    assert len(unanswered) == 3 and len(rows) == len(triplets) + 3
    for r in unanswered:
        assert r["query"] == r["statement"] and r["answer_type"] is None and r["context_source"] == "reference"
    assert "Several of these students would found their own styles of aikido." in {r["query"] for r in unanswered}
    # readers read the triplets only
    assert export_pairs(PairsDir(tmp_path), "squad", tmp_path / "s.json", ["qac"]) == len(triplets)
    assert len(load_reading_file(tmp_path)) == len(triplets)


@pytest.fixture(scope="module")
def reader_export(mined, tmp_path_factory):
    """The qac pairs exported as DPR reader input with the default --negatives (DPR's n_docs, 100)."""
    _, out, _, rows = mined
    path = tmp_path_factory.mktemp("dpr-reader") / "r.json"
    contexts = PairsContexts(PairsDir(out))
    assert export_pairs(PairsDir(out), "dpr-reader", path, ["qac"], contexts=contexts) == len(rows)
    yield json.loads(path.read_text()), contexts, path
    contexts.close()


def test_dpr_reader_export_is_what_dprs_preprocess_retriever_data_reads(mined, reader_export):
    """Every context has DPR's ReaderPassage fields, a float BM25 score (best first) and has_answer by DPR's rule;
    with 100 BM25 negatives beside the positive, DPR's reader fills its 24 passages a question without an empty
    row; the question's own source passage is never among them."""
    _, _, _, rows = mined
    data, contexts, path = reader_export

    def reader_passage(id=None, text=None, title=None, score=None, has_answer=None):  # noqa: A002
        """DPR's ReaderPassage.__init__ (dpr/data/reader_data.py): `ReaderPassage(**ctx)` for each ctx."""
        return {"id": id, "text": text, "title": title, "score": score, "has_answer": has_answer}

    by_id = {r["pair_id"]: r for r in rows}
    for sample in data:
        row = by_id[sample["pair_id"]]
        assert isinstance(sample["question"], str) and sample["answers"] == [row["answer"]]
        ctxs = [reader_passage(**c) for c in sample["ctxs"]]  # no key DPR does not take
        ids = [c["id"] for c in ctxs]
        assert len(ids) == len(set(ids)) == 1 + bool(row["negative_passage_id"]) + DPR_N_DOCS
        assert row["query_passage_id"] not in ids  # the statement's own passage holds the question's words
        [positive] = [c for c in ctxs if c["id"] == row["positive_passage_id"]]
        assert positive["has_answer"] is True and positive["text"] == row["positive_text"]
        assert positive["score"] == pytest.approx(contexts.scores_of(row["query"], [positive["id"]])[0])
        scores = [c["score"] for c in ctxs]
        assert all(isinstance(x, float) for x in scores) and scores == sorted(scores, reverse=True)
        for c in ctxs:  # has_answer by DPR's tokenized string match, the positive's included
            assert isinstance(c["text"], str) and c["has_answer"] == has_answer(sample["answers"], c["text"])
        negatives = [c for c in ctxs if not c["has_answer"]]
        assert len(negatives) >= 23  # DPR: passages_per_question 24 = one positive + 23 negatives, no empty row
        assert sample["context_source"] == "reference"
    examples = load_reading_file(path)  # and our reader reads it: the has_answer ctxs are positives
    assert len(examples) == len(rows) and all(any(p.positive for p in e.passages) for e in examples)


def test_the_dpr_reader_export_needs_its_contexts_and_takes_fewer_negatives(mined, reader_export, tmp_path):
    _, out, _, rows = mined
    _, contexts, _ = reader_export
    with pytest.raises(PairsError, match="BM25"):
        export_pairs(PairsDir(out), "dpr-reader", tmp_path / "r.json", ["qac"])
    export_pairs(PairsDir(out), "dpr-reader", tmp_path / "r0.json", ["qac"], contexts=contexts, negatives=0)
    for sample in json.loads((tmp_path / "r0.json").read_text()):
        assert len(sample["ctxs"]) <= 2 and all(isinstance(c["score"], float) for c in sample["ctxs"])


def test_pairs_export_dpr_reader_takes_negatives_on_the_command_line(mined, tmp_path):
    from typer.testing import CliRunner

    from pretriever.cli import app

    _, out, _, rows = mined
    done = CliRunner().invoke(app, ["pairs", "export", str(out), "--format", "dpr-reader", "--negatives", "5",
                                    "--out", str(tmp_path / "r.json")])
    assert done.exit_code == 0, done.output
    data = json.loads((tmp_path / "r.json").read_text())
    assert len(data) == len(rows) and all(len(s["ctxs"]) == 2 + 5 for s in data)


@pytest.mark.skipif(not os.environ.get("DPR_SRC"), reason="set DPR_SRC to a checkout of facebookresearch/DPR")
def test_dprs_own_reader_code_reads_the_export(reader_export):
    """DPR's own preprocess_retriever_data and create_reader_input (a checkout named by DPR_SRC; hydra, omegaconf
    and jsonlines, which these two never call, stubbed when absent) on the export: every question keeps its
    positive, and its 24 passages hold no empty row."""
    import sys
    import types

    import torch
    from transformers import AutoTokenizer

    for name in ("hydra", "omegaconf", "jsonlines"):
        if name not in sys.modules:
            try:
                __import__(name)
            except ImportError:
                stub = sys.modules[name] = types.ModuleType(name)
                stub.DictConfig = dict
    sys.path.insert(0, os.environ["DPR_SRC"])
    from dpr.data.reader_data import preprocess_retriever_data
    from dpr.models.reader import create_reader_input

    from pretriever.models import resolve_model

    class Tensorizer:
        """DPR's BertTensorizer (dpr/models/hf_models.py) as its reader preprocessing uses it (no padding); its
        module imports transformers 3 names, so it is written out here, less the `pad_to_max_length` keyword."""

        def __init__(self, tokenizer, max_length: int):
            self.tokenizer, self.max_length = tokenizer, max_length

        def text_to_tensor(self, text, title=None, add_special_tokens=True, apply_max_len=True):
            pair = (title, text.strip()) if title else (text.strip(),)
            ids = self.tokenizer.encode(*pair, add_special_tokens=add_special_tokens, truncation=True,
                                        max_length=self.max_length if apply_max_len else 10000)
            if len(ids) >= self.max_length:
                ids = ids[0:self.max_length] if apply_max_len else ids
                ids[-1] = self.tokenizer.sep_token_id
            return torch.tensor(ids)

        def get_pair_separator_ids(self):
            return torch.tensor([self.tokenizer.sep_token_id])

    data, _, _ = reader_export
    tokenizer = AutoTokenizer.from_pretrained(str(resolve_model(None)))
    tensorizer = Tensorizer(tokenizer, max_length=256)
    samples = list(preprocess_retriever_data(data, None, tensorizer))
    assert len(samples) == len(data)
    for sample in samples:
        assert sample.positive_passages and len(sample.negative_passages) >= 23
    batch = create_reader_input(tokenizer.pad_token_id, samples, 24, 256, 10, True, False, tokenizer.sep_token_id)
    assert batch.input_ids.shape == (len(samples), 24, 256)
    assert bool((batch.input_ids != tokenizer.pad_token_id).any(dim=2).all())  # no slot left empty
    assert torch.all(batch.answers_mask[:, 0].sum(dim=1) > 0)  # each question's positive holds its answer


def test_squad_refuses_pairs_without_answers(enwiki_store, tmp_path):
    mine.run(MineConfig(corpus=enwiki_store.path, out=tmp_path / "p", methods=["ict"], max_pairs=20))
    with pytest.raises(PairsError, match="no answers"):
        export_pairs(PairsDir(tmp_path / "p"), "squad", tmp_path / "s.json", ["ict"])


def test_context_links_gives_offline_triplets(enwiki_store, tmp_path):
    result = mine.run(MineConfig(corpus=enwiki_store.path, out=tmp_path, methods=["qac"], context="links"))
    funnel = result.manifest.methods["qac"]["funnel"]
    assert funnel == LINKS_FUNNEL
    # types from Wikipedia (ours): 28 entities of the statements name a linked article with a kind, 11 of them
    # retyped (Aristotle GPE/ORG -> PERSON, Apollo ORG -> PERSON, Azerbaijan PERSON -> LOC); the one answer kept
    # ("ASA") names no article of the sample. The answers with a kind and the overrides are tested in
    # test_mine_qac_kinds.py
    kinds = {k: result.manifest.methods["qac"][k] for k in ("answer_wiki_kind", "kind_overrides",
                                                             "entities_wiki_kind", "entities_kind_overrides")}
    assert kinds == {"answer_wiki_kind": 0, "kind_overrides": 0, "entities_wiki_kind": 28,
                     "entities_kind_overrides": 11}
    rows = pq.read_table(tmp_path / "qac.parquet").to_pylist()
    export_pairs(PairsDir(tmp_path), "dpr", tmp_path / "dpr.json", ["qac"])
    assert {d["context_source"] for d in json.loads((tmp_path / "dpr.json").read_text())} == {"link"}
    assert sum(v for k, v in funnel.items()
               if k not in ("citations", "no_reference_text", "duplicate", "candidates")) == 7833
    for r in rows:
        assert r["context_source"] == "link" and r["reference_url"] is None and r["block_words"] is None
        assert normalize_answer(r["answer"]) != normalize_answer(r["positive_title"])  # not the article's own name
        assert supports(r["statement"], r["answer"], r["positive_text"], 2, 0.4)
        assert r["positive_text"][r["answer_start"]:r["answer_end"]] == r["answer"]
        assert r["positive_doc_id"] != r["query_doc_id"] and r["positive_title"]
    assert [r["answer"] for r in rows] == ["ASA"]


# the 47 citations whose sentence links to an article of the sample. A context must share 2 content words
# with the statement besides the answer (--min-shared-words) and 40% of them (--min-shared-share): with 2
# words alone there were 23 triplets (14 candidates); judged by hand, 12 of the 13 whose context shared 30%
# or less of the statement's words did not answer their question ("Israel" from a list of Azerbaijan's
# partners for "Outside of what country there are ... Jewish communities"). Only the ASA/ANSI one is left,
# its context shares 80%. 3 answered with the title of the context's own article ("Aristotle" from the
# article Aristotle); 13 open with a pronoun nothing before it resolves ("In politics, she condemned ...", "Those
# who have cited his influence ..."); 2 name the answer in another role than the statement's ("the current
# ambassador of Angola to China": the passage's "Angola" is not the ambassador's). 10 have no entity that a
# question asks for where it stands, most of them in a list or a coordination ("of Aristotle and Plato").
LINKS_FUNNEL = {"citations": 7833, "disambiguation_page": 1, "no_statement": 0, "flagged_statement": 10,
                "no_reference_text": 7822, "no_linked_passage": 7775, "unresolved_pronoun": 13, "no_entity": 2,
                "no_entity_in_block": 9, "no_fitting_phrase": 12, "answer_in_question": 2, "unnamed_topic": 0,
                "answer_span_not_found": 0, "answer_in_other_role": 1, "context_unsupported": 3,
                "unresolved_definite": 0, "answer_not_unique": 1,
                "answer_is_context_title": 3, "triplets": 1,
                "duplicate": 0, "candidates": 1}


def test_cli_prints_the_funnel_shows_answers_and_names_a_missing_model(enwiki_store, refs, tmp_path):
    from typer.testing import CliRunner

    from pretriever.cli import app

    def run(*args):
        result = CliRunner().invoke(app, [str(a) for a in args])
        return result.exit_code, " ".join(result.output.split())

    code, text = run("mine", enwiki_store.path, "--method", "qac", "--references", refs, "--out", tmp_path / "p",
                     "--block-words", "256", "--block-stride", "128")
    assert code == 0 and "qac funnel: citations 7,833" in text and "no reference text 7,779" in text
    assert "qac: other entity" in text and "block choice differs" in text
    assert json.loads((tmp_path / "p" / "pairs.json").read_text())["options"]["block_words"] == 256
    code, text = run("pairs", "show", tmp_path / "p", "-n", "1")
    assert code == 0 and "answer " in text and "statement: " in text
    code, text = run("mine", enwiki_store.path, "--method", "qac", "--references", refs, "--out", tmp_path / "q",
                     "--ner-model", "en_core_web_trf")
    assert code == 2 and "pip install en-core-web-trf" in text and not (tmp_path / "q").exists()
    code, text = run("mine", enwiki_store.path, "--method", "qac", "--out", tmp_path / "r")
    assert code == 2 and "needs references" in text


def test_no_fetched_text_says_why(enwiki_store, tmp_path):
    refs = tmp_path / "refs"
    refs.mkdir()
    gone = {"url": "http://www.paris21.org/node/1176", "final_url": None, "status": 404, "content_type": None,
            "fetched_at": "2026-01-01T00:00:00Z", "bytes": 0, "title": None, "text": None, "error": "status 404",
            "source": "test", "via_archive": False}
    pq.write_table(pa.Table.from_pylist([gone], schema=REFERENCES), refs / "references.parquet")
    result = mine.run(MineConfig(corpus=enwiki_store.path, out=tmp_path / "p", methods=["qac"], references=refs))
    assert result.total == 0 and result.manifest.methods["qac"]["funnel"]["no_reference_text"] == 7822
    assert "no reference text (7,822 of 7,833)" in result.methods["qac"].reason
    assert "pretriever references fetch" in result.methods["qac"].reason


@pytest.mark.slow
def test_spark_gives_the_same_triplets(enwiki_store, refs, mined, tmp_path):
    import shutil

    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("PySpark needs a Java runtime")
    _, _, _, rows = mined
    result = mine.run(MineConfig(corpus=enwiki_store.path, out=tmp_path, methods=["qac"], references=refs, seed=0,
                                 engine="spark", threads=2))
    assert result.manifest.methods["qac"]["funnel"] == EXPECTED_FUNNEL
    spark_rows = pq.read_table(tmp_path / "qac.parquet").to_pylist()
    strip = ("negative_passage_id", "negative_doc_id", "negative_title", "negative_text")
    assert sorted(({k: v for k, v in r.items() if k not in strip} for r in spark_rows), key=lambda r: r["pair_id"]) \
        == sorted(({k: v for k, v in r.items() if k not in strip} for r in rows), key=lambda r: r["pair_id"])


def test_interrupted_run_resumes_without_redoing_finished_batches(enwiki_store, refs, mined, tmp_path, monkeypatch):
    from pretriever.mine.methods import qac

    _, _, _, rows = mined
    monkeypatch.setattr(qac, "BATCH", 10)  # 43 citations with text: batches of 10, 10, 10, 10, 3
    calls = []
    real = qac.build_triplet

    def interrupted(*args, **kwargs):
        calls.append(args[0])
        if len(calls) > 25:  # dies in the third batch
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(qac, "build_triplet", interrupted)
    config = dict(corpus=enwiki_store.path, out=tmp_path, methods=["qac"], references=refs, seed=0)
    with pytest.raises(KeyboardInterrupt):
        mine.run(MineConfig(**config))
    parts = tmp_path / ".checkpoints" / "qac"
    assert json.loads((parts / "_checkpoint.json").read_text())["batches"] == 2
    calls.clear()
    monkeypatch.setattr(qac, "build_triplet", lambda *a, **k: (calls.append(a[0]), real(*a, **k))[1])
    result = mine.run(MineConfig(**config, resume=True))
    assert len(calls) == 43 - 20  # the two finished batches were not redone
    assert result.manifest.methods["qac"]["funnel"] == EXPECTED_FUNNEL
    assert pq.read_table(tmp_path / "qac.parquet").to_pylist() == rows
    with pytest.raises(Exception, match="other options"):
        mine.run(MineConfig(**{**config, "seed": 5}, resume=True))


# -- the whole route: the real fetcher, then qac --------------------------------------------------
LIST_ONLY = "http://www.citationtechnologies.com/alliances/ansi"  # ANSI's "Other initiatives" list

@pytest.mark.slow
def test_pages_fetched_through_a_loopback_proxy_give_the_same_triplets(enwiki_store, mined, tmp_path,
                                                                       monkeypatch):
    """``references fetch`` on the whole sample through a proxy on 127.0.0.1 that serves the canned pages
    at their real (http) URLs, answers every other http URL with 404 and refuses tunnels (https); then
    qac on what was fetched gives exactly the triplets of the canned http pages."""
    import trafilatura

    index = json.loads((PAGES / "index.json").read_text(encoding="utf-8"))
    canned = {url: (PAGES / name).read_bytes() for url, name in index.items() if url.startswith("http://")}
    assert len(canned) >= 30
    routes = {url: (lambda body: lambda h: send(h, 200, body, "text/html; charset=utf-8"))(body)
              for url, body in canned.items()}
    routes["*"] = lambda h: send(h, 404, b"not found", "text/plain")
    refs = tmp_path / "fetched"
    fake_dns(monkeypatch, {}, default="93.184.216.34")  # behind a proxy every host is still resolved and checked
    with LoopbackServer(routes) as proxy:
        manifest = fetch.run(FetchConfig(corpus=enwiki_store.path, out=refs, proxy=proxy.url(""), retries=0,
                                         host_delay=0.0, archive_fallback=False, concurrency=64)).manifest
    assert manifest.funnel["with_url"] == 4063
    fetched = pq.read_table(refs / "references.parquet").to_pylist()
    ok = {r["url"]: r for r in fetched if r["status"] == 200}
    canned.pop(LIST_ONLY)  # cited only in a list item, which is not in the text: not fetched
    assert set(ok) == set(canned)
    texts = {url: r["text"] for url, r in ok.items()}  # the main text, as trafilatura finds it on the page itself
    assert texts == {url: trafilatura.extract(body.decode("utf-8")) for url, body in canned.items()}
    with_text = sum(text is not None for text in texts.values())
    assert with_text >= 30 and manifest.funnel["fetched"] == len(canned)
    assert manifest.funnel["text_extracted"] == with_text
    out = tmp_path / "pairs"
    mine.run(MineConfig(corpus=enwiki_store.path, out=out, methods=["qac"], references=refs, seed=0))
    got = sorted((r["query"], r["answer"], r["reference_url"]) for r in pq.read_table(out / "qac.parquet").to_pylist())
    expected = sorted((r["query"], r["answer"], r["reference_url"]) for r in mined[3] if r["reference_url"] in canned)
    assert got == expected and len(got) >= 12  # 14 of the 15 triplets cite a page fetched here


def test_a_linked_passage_supports_a_statement_only_with_a_share_of_its_words():
    statement = "Azerbaijan has deployed 151 of its Peacekeeping Forces in Iraq and another 184 in Afghanistan."
    passing = "Afghanistan hosts troops of many countries; Iraq too, where the UAE and Egypt keep embassies."
    words = content_words(statement) - content_words("Iraq")  # 10: azerbaijan, deployed, 151, ..., afghanistan
    assert len(words) == 10 and shared_words(statement, "Iraq", passing) == 1
    assert not supports(statement, "Iraq", passing, 1, 0.4)  # 1 of 10 words: named in passing
    echo = "Azerbaijan deployed 151 peacekeeping forces to Iraq and 184 to Afghanistan in 2008."
    assert shared_words(statement, "Iraq", echo) == 7
    assert supports(statement, "Iraq", echo, 2, 0.4) and not supports(statement, "Iraq", echo, 2, 0.8)
