"""The hand judgements of 2026-11-27c (bench/README.md, "Triplets judged by hand, after the word-order fix"):
every triplet of the default run (--phrases table5) and of --phrases ours, judged under the strict reading, written
with its judgement to a JSON-lines file; prints the rates.

Strict reading (the coordinator's of 2026-11-27 08:20): a wh-phrase left in place ("underwent a major revision
when") is grammatical; a fronted wh-phrase without subject-auxiliary inversion ("When Einstein applied ...?") is
not. ``grammar_doubtful`` marks the in-place wh-words a stricter reader may still fail ("was discovered when by").
Run in a folder holding the mined outputs (store and refs as bench/exp_reader_qac.sh builds them;
`pretriever mine store --method qac --references refs --context links --out qac-table5`, and with
--phrases ours --out qac-ours):

    python bench/records/judge_qac_2026-11-27c.py bench/records/qac_judged_2026-11-27c.jsonl
"""
import sys
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from qac_judging import print_rates, record, write  # noqa: E402

OK = (True, True, True, "")
# (answer, start of question) -> (answerable, type fits, grammatical, why)
J = {
 ("English", "In the 1980 census"): (True, True, True, "'of what ancestry'; the page: 41 percent ... English ancestry"),
 ("1967", "The first edition"): (True, True, True, "in place: 'underwent a major revision when,'"),
 ("ABC", "Which organization once"): (True, True, True, "the page: ABC broadcasts the Oscars, agreement through 2020"),
 ("Albania", "In 2011, what country"): OK,
 ("Chicago", "From 1983 to 2015"): (True, True, True, "in place: 'made each year where by'; the page: a Chicago factory"),
 ("2002", "When did the Kodak Theatre"): (True, True, True, "the page: hosted the Academy Awards since 2002"),
 ("1800", "Petalite (LiAlSi4O10) was discovered when"): (True, True, True, "in place: 'was discovered when by'"),
 ("The Clarmac Company", "However, the First World War"): (True, True, True, "the page: the company wound up, 1915"),
 ("2001", "The Economy of Angola"): (True, True, True, "'from what date/what year to 2010'"),
 ("1917", "When did Einstein apply"): OK,
 ("July 1627", "When did two pirate ships"): (True, True, True, "the page: 'In July 1627 two pirate ships from Algiers'"),
 ("Patrick Baudry", "The first person born in Africa"): (True, True, True, "'was who, in 1985' (the parenthetical went)"),
 ("the United States", "The Edmonton Clinic"): OK,
 ("1866", "When did August Wilhelm"): OK,
 ("Kenji Tomiki", "Which person toured"): OK,
 ("Deutsche Telekom", "They both endorsed which organization"):
     (True, True, True, "in place in the list: 'endorsed which organization in 2002, Genworth Financial ... in 2004'"),
 ("Soviet", "According to what data were"): OK,
 ("U.S.", "Between 1999 and 2013, in what country did"):
     (False, True, True, "the page describes a mortality database (U.S. counties, 1999-2013); no 531 deaths"),
 ("Anselme Bellegarrigue", "French anarchists active in the 1848"): (True, True, True, "the page lists him"),
 ("Caesars Palace", "They invested in PURE, a nightclub at what building,"): OK,
 ("Caesars Palace", "They invested in PURE, a nightclub at which building,"): OK,
 ("70,986", "According to the 2006 census"): (True, True, True, "'was how much money in Alberta' (the '$' goes)"),
 ("Canada", "Alberta is named after"): (False, True, True, "the page says Queen Victoria; its 'Canada' is the Governor General's"),
 ("Surat Huseynov", "In 1993, democratically"): (True, True, True, "'led by which person' (the title goes)"),
 ("Algeria", "What country is an"): OK,
 ("Bob Bemer", "Which person introduced"): OK,
 ("Academy", "In December 2011"): (True, True, True, "the page: no agreement to return the statue to the Academy"),
 ("Sayonara", "The 2015 Japanese film what"): (True, True, True, "in place: 'film what,'; the page gives the title"),
 ("China", "In what country has a historical"): OK,
 ("Only 39%", "According to a 2010 survey"): OK,
 ("1990", "When did he appear"): OK,
 ("2011", "When were 46.6% of Alabama's"): (True, True, True, "the page: 46.6 percent ... in 2011"),
 ("ASA", "What became the United States"): (True, True, True, "the ANSI passage: the ASA became the USASI in 1966"),
 # --phrases ours only
 ("15", "Kenji Tomiki toured"): OK,
 ("1848", "French anarchists active in which year's"): OK,
 ("1987", "The Children's Book Council"): (True, True, True, "the page: 1987 honour books include Animalia"),
 ("1997", "It was also shown at which year's"): OK,
 ("2.2 years", "As of 2008"): (True, True, True, "'or how many years, in space'; the page: about 2.2 years"),
 ("2006", "According to which year's census was"): OK,
 ("2015", "Which year's Japanese film"): (True, True, True, "the subject: 'Which year's Japanese film Sayonara ... was promoted'"),
 ("80 years", "In 2008, the 80th"): (True, True, True, "'celebrating how many years of the Academy Awards'"),
 ("Alabama", "In the 1980 census, 41% of the people in what place"): OK,
 ("Utö", "Petalite (LiAlSi4O10) was discovered in 1800"): (True, True, True, "'on the island of what place, Sweden'"),
 ("approximately 50", "From 1983 to 2015, how many"): OK,
 ("three", "In order to prepare herself"): (True, True, True, "the page: interviews three actresses"),
}
DOUBTFUL = ("Petalite (LiAlSi4O10) was discovered when by", "From 1983 to 2015, approximately 50 Oscars were made each year where",
            "The 2015 Japanese film what,")


def judge(r):
    hits = [v for (a, start), v in J.items() if a == r["answer"] and r["query"].startswith(start)]
    if len(hits) != 1:
        raise SystemExit(f"{len(hits)} judgements for {r['answer']!r}: {r['query']}")
    return hits[0]


out = []
for run, folder in [("after the word-order fix, --phrases table5 (the default)", "qac-table5"),
                    ("after the word-order fix, --phrases ours", "qac-ours")]:
    rows = sorted(pq.read_table(folder + "/qac.parquet").to_pylist(), key=lambda r: r["pair_id"])
    out += [record(r, run, judge(r), DOUBTFUL, with_statement=True) for r in rows]
write(sys.argv[1], out)
print_rates(out, lambda o: [(o["run"], o["route"]), (o["run"], "all")], digits=1)
