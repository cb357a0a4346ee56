"""The hand judgements of 2026-11-27b (bench/README.md, "Triplets judged by hand, after the phrase and context
fixes"), applied to the drawn triplets: writes each with its judgement to a JSON-lines file and prints the rates.

Per route and run, the rows sorted by pair_id and 30 drawn with random.Random(0).sample; the first 20 are the
judged sample, 20-29 were judged too. The judgements are keyed by answer and question (the same triplet in two
runs is judged once). Run in a folder holding the mined outputs (store and refs as bench/exp_reader_qac.sh builds
them; `pretriever mine store --method qac --references refs --context links` with --out qac-table5, with
--phrases ours --out qac-ours, with --min-shared-share 0 --out links0-table5 / links0-ours, and on commit 4d15036
--out qac-before):

    python bench/records/judge_qac_2026-11-27b.py bench/records/qac_judged_2026-11-27b.jsonl
"""
import random
import sys
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from qac_judging import print_rates, record, write  # noqa: E402

# (answer, start of question) -> (answerable, type fits, grammatical, why)
OK = (True, True, True, "")
J = {
 ("Algeria", "What country is an"): OK,
 ("1997", "It was also shown at what time"): (True, False, False, "a year modifying a noun: 'at what time Stockholm International Film Festival'"),
 ("1997", "It was also shown at which year's"): OK,
 ("ABC", "Which organization once"): (True, True, True, "the page: ABC has broadcast the Academy Awards since 1976, agreement through 2020"),
 ("Soviet", "According to what data"): OK,
 ("three", "In order to prepare herself") : None,  # by phrase below
 ("China", "In what country, a historical"): (True, True, True, "declarative question in C-MORE's style"),
 ("the United States", "The Edmonton Clinic"): OK,
 ("first", "The 2015 Japanese film Sayonara"): (True, True, False, "'promoted as \"what rank movie to feature ...\"': an ordinal before its noun"),
 ("Bob Bemer", "Which person introduced"): OK,
 ("2011", "When 46.6% of Alabama's"): (True, True, True, "declarative 'When ...?' in C-MORE's style"),
 ("1917", "When Einstein applied"): OK,
 ("2002", "They both endorsed Deutsche Telekom when"): (True, True, True, "in-situ 'when' inside a list: reads oddly but parallel to the list's 'X in YEAR'"),
 ("Patrick Baudry", "The first person born in Africa"): (True, True, True, "in-situ 'was who (France)'"),
 ("1848", "French anarchists active in what time"): (True, False, False, "a year modifying a noun: 'in what time Revolution'"),
 ("1848", "French anarchists active in which year's"): OK,
 ("Utö", "Petalite (LiAlSi4O10) was discovered in 1800"): None,
 ("Only 39%", "According to a 2010 survey"): OK,
 ("approximately 50", "From 1983 to 2015, what Oscars"): (True, False, True, "'what Oscars' asks which Oscars, not how many"),
 ("approximately 50", "From 1983 to 2015, how many Oscars"): OK,
 ("80 years", "In 2008, the 80th"): None,
 ("2006", "According to what date census"): (True, False, False, "a year modifying a noun: 'what date census'"),
 ("2006", "According to which year's census"): OK,
 ("Albania", "In 2011, what country"): OK,
 ("2001", "The Economy of Angola"): (True, True, True, "'from what date/what year to 2010'"),
 ("2.2 years", "As of 2008"): None,
 ("Academy", "In December 2011"): (True, True, True, "the page: 'did not sign any agreement to return the statue to the Academy'"),
 ("1967", "The first edition of the standard"): (True, True, True, "in-situ 'underwent a major revision when,'"),
 ("2011", "As of what time, 50.7% of Alaska's"): (False, True, True, "the page is about Alabama (46.6%), not Alaska (50.7%)"),
 ("1866", "When August Wilhelm"): OK,
 ("1990", "When he appeared"): OK,
 ("Only 39%", "According to a 2010 survey"): OK,
 ("July 1627", "When two pirate ships"): OK,
 ("2002", "When the Kodak Theatre"): OK,
 ("The Clarmac Company", "However, the First World War"): (True, True, True, "the page: the Clarmac Company Limited resolved to wind up, October 1915"),
 ("1987", "The Children's Book Council"): None,
 ("Canada", "Alberta is named after"): (False, True, True, "the page says Queen Victoria; its 'Canada' is the Governor General's"),
 ("U.S.", "Between 1999 and 2013"): (True, True, True, "the page: 531 newborn deaths 1999-2013, a database of U.S. counties"),
 ("Kenji Tomiki", "Which person toured"): OK,
 ("English", "In the 1980 census"): (True, True, True, "'being of what ancestry' (NORP before its noun: Table 5's 'what')"),
 ("Caesars Palace", "They invested in PURE, a nightclub at what buildings"): (True, True, False, "Table 5's plural 'at what buildings' for one building"),
 ("Caesars Palace", "They invested in PURE, a nightclub at which building"): OK,
 ("70,986", "According to the 2006 census"): (True, True, True, "'was how much money in Alberta' (the '$' goes)"),
 ("Anselme Bellegarrigue", "French anarchists active in the 1848"): (True, True, True, "the page lists Bellegarrigue, Coeurderoy, Déjacque"),
 ("1800", "Petalite (LiAlSi4O10) was discovered when"): (True, True, True, "in-situ 'was discovered when by ...'"),
 ("Stockholm International Film Festival", "It was also shown at the 1997 what"): (True, True, False, "'at the 1997 what': determiner and year stranded before the wh-word (the 'the what country' class)"),
 ("Chicago", "From 1983 to 2015, approximately 50 Oscars"): (True, True, True, "in-situ 'made each year where by ...'; the page: a Chicago factory"),
 ("Surat Huseynov", "In 1993, democratically elected"): None,
 ("Sayonara", "The 2015 Japanese film what"): (True, True, True, "spaCy says NORP, but 'film what' asks for the film's title, which the page gives"),
 ("2015", "Which year's Japanese film Sayonara"): OK,
 ("ASA", "What became the United States"): (True, True, True, "the ANSI passage: the ASA became the USASI in 1966"),
}
BY_PHRASE = {
 ("three", "what"): (True, False, True, "'interviews what established actresses' asks which, not how many"),
 ("three", "how many"): OK,
 ("Utö", "what country"): (True, False, True, "Utö is an island, not a country"),
 ("Utö", "what place"): OK,
 ("80 years", "what time"): (True, False, False, "a duration: 'celebrating what time of the Academy Awards'"),
 ("80 years", "how many years"): OK,
 ("2.2 years", "what time"): (True, False, False, "a duration: 'or what time, in space'"),
 ("2.2 years", "how many years"): OK,
 ("1987", "what time"): (True, False, False, "a year modifying a noun: 'designated Animalia what time Picture Book'"),
 ("1987", "which year's"): (True, True, True, "the page: 1987 honour books include Animalia"),
 ("Surat Huseynov", "which person"): None,
}
LINKS = {  # the links route at --min-shared-share 0: the passage names the answer in passing
 "Latin": "an Apollo passage on his Latin names, not Dares Phrygius", "Plato": "a passage on Plato's method, not Rand's studies",
 "Aquinas": "a passage on Aristotle's influence, not Rand's 'three A's'", "China": "China's Eximbank credit to Angola, no ambassador",
 "Erwin Schrödinger": "Schrödinger in Einstein's article, not among those citing Schopenhauer",
 "England": "Charles II of England in Alberta's history, no area comparison", "Afghan": "Afghan refugees, not Mohmand's spaceflight",
 "Iraq": "a list of Azerbaijan's partners, no peacekeepers", "Maghreb": "the Fatimids in the Maghreb, not Albanians; and no organization",
 "Namibia": "Angola's borders, no defence pact", "Israel": "Azerbaijan's diplomatic partners, not Jewish communities",
 "Achilles": "Apollo and Achilles' death, not Dares Phrygius; and no place", "three": "Aristotle's three sorts of relationships, not Rand's 'three A's'",
}


# grammatical as C-MORE's in-place questions go, but doubtful to a stricter reader: a wh-word dropped mid-clause
DOUBTFUL = ("They both endorsed Deutsche Telekom when", "Petalite (LiAlSi4O10) was discovered when by",
            "From 1983 to 2015, approximately 50 Oscars were made each year where", "The 2015 Japanese film what,")


def judge(r):
    a, q, ph = r["answer"], r["query"], r["answer_phrase"]
    if r["context_source"] == "link" and a in LINKS:
        typ = not (a in ("Maghreb", "Achilles", "Latin") or (a == "Afghan"))
        return False, typ, a != "Afghan", LINKS[a]
    hits = [v for (ans, start), v in J.items() if ans == a and q.startswith(start)]
    v = hits[0] if hits else None
    if v is None:
        v = BY_PHRASE.get((a, ph))
    if v is None and a == "Surat Huseynov":
        v = (True, True, "Colonel which" not in q, "'led by Colonel which person'" if "Colonel which" in q else "the title goes with the name: 'led by which person'")
    if v is None:
        raise SystemExit(f"no judgement for {a!r}: {q}")
    return v


out = []
for run, folder, route in [("before (4d15036, table5 as first written)", "qac-before", "reference"),
                           ("after, --phrases table5 (the default)", "qac-table5", "reference"),
                           ("after, --phrases ours", "qac-ours", "reference"),
                           ("before (4d15036), default --min-shared-share 0.4", "qac-before", "link"),
                           ("after, --phrases table5, default --min-shared-share 0.4", "qac-table5", "link"),
                           ("after, --phrases table5, --min-shared-share 0", "links0-table5", "link"),
                           ("after, --phrases ours, --min-shared-share 0", "links0-ours", "link")]:
    rows = [r for r in pq.read_table(folder + "/qac.parquet").to_pylist() if r["context_source"] == route]
    rows.sort(key=lambda r: r["pair_id"])
    draw = random.Random(0).sample(rows, min(30, len(rows)))
    out += [record(r, run, judge(r), DOUBTFUL, draw=i, judged_sample=i < 20) for i, r in enumerate(draw)]
write(sys.argv[1], out)
print_rates(out, lambda o: [(o["run"], o["route"], "all")] + ([(o["run"], o["route"], "20")] if o["judged_sample"] else []))
