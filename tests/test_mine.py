"""Mining on the real enwiki sample (and, for co-mention, a hand-written wiki whose articles co-mention
each other): every pair re-checked against the store in plain Python."""

from __future__ import annotations

import json
from collections import Counter

import pyarrow.parquet as pq
import pytest

from conftest import ENWIKI, build, shared
from mine_fixtures import (ALL, co_mentions, crossing_passage_size, load_store, pairs_of, percentile_threshold, read,
                           run)
from pretriever.mine.pipeline import allocate
from pretriever.mine.schema import PAIRS

MINED = ("dl", "ict", "wlp", "bfs")  # the methods of ALL that find pairs on the sample (cm finds none)


def sentence_of(store, row):
    return store.sentences[(row["query_doc_id"], row["query_sentence_idx"])]


def check_query_is_sentence(store, row):
    sentence = sentence_of(store, row)
    assert row["query"] == sentence["text"], row["pair_id"]
    return sentence


def check_anchor_in_query(store, row, target_ok):
    """The query holds the evidential anchor, and that anchor is a link (of the query's sentence)
    whose target satisfies ``target_ok``."""
    q, a, b = row["query"], row["query_anchor_start"], row["query_anchor_end"]
    assert q[a:b] == row["query_anchor"], row["pair_id"]
    sentence = sentence_of(store, row)
    matches = [l for l in store.links_by_sentence[(row["query_doc_id"], row["query_sentence_idx"])]
               if l["passage_id"] == row["query_passage_id"] and l["start"] - sentence["start"] == a
               and l["end"] - sentence["start"] == b and target_ok(l)]
    assert matches, f"{row['pair_id']}: no link {row['query_anchor']!r} in the query sentence"


def check_positive_is_passage(store, row):
    passage = store.passages[row["positive_passage_id"]]
    assert passage["doc_id"] == row["positive_doc_id"]
    assert row["positive_text"] == passage["text"], f"{row['pair_id']}: positive is not the bare passage text"
    return passage


def check_positive_anchor(row, text_field="positive_text"):
    text = row[text_field]
    assert text[row["positive_anchor_start"]:row["positive_anchor_end"]] == row["positive_anchor"]


def held_link(store, row, prefix, target_ok):
    """The link of the positive passage that ``prefix``_anchor names (by its offsets in the passage); it lies
    wholly inside the passage (a crossing anchor is no evidence) and its target satisfies ``target_ok``."""
    start, end = row[f"{prefix}_anchor_start"], row[f"{prefix}_anchor_end"]
    [link] = [l for l in store.links_by_passage[row["positive_passage_id"]]
              if (l["passage_start"], l["passage_end"]) == (start, end) and target_ok(l)]
    assert store.inside(link), f"{row['pair_id']}: {prefix} anchor {link['anchor']!r} crosses the passage boundary"
    return link


# --- DL --------------------------------------------------------------------------------

def test_dl_pairs_satisfy_dual_link(mined_all, py_store):
    out, _ = mined_all
    rows = pairs_of(out, "dl")
    assert len(rows) >= 10
    for row in rows:
        Q, P, q, p = row["query_doc_id"], row["positive_doc_id"], row["query_passage_id"], row["positive_passage_id"]
        assert Q != P
        assert py_store.passages[q]["doc_id"] == Q and py_store.passages[p]["doc_id"] == P
        assert P in py_store.M_docs(q), f"{row['pair_id']}: q does not link to P"  # t_P in M(q)
        assert Q in py_store.M_docs(p, inside=True), f"{row['pair_id']}: p does not link to Q"  # t_Q in M(p)
        check_query_is_sentence(py_store, row)
        check_anchor_in_query(py_store, row, lambda l: l["target_doc_id"] == P)
        check_positive_is_passage(py_store, row)
        check_positive_anchor(row)
        held_link(py_store, row, "positive", lambda l: l["target_doc_id"] == Q)
        assert row["query_title"] == py_store.docs[Q]["title"]
        assert row["positive_title"] == py_store.docs[P]["title"]


def test_dl_gives_both_directions(mined_all):
    out, _ = mined_all
    doc_pairs = {(r["query_doc_id"], r["positive_doc_id"]) for r in pairs_of(out, "dl")}
    both = {pair for pair in doc_pairs if pair[::-1] in doc_pairs}
    assert len(both) >= 10  # e.g. Ayn Rand <-> Aristotle, Apollo 8 <-> Apollo 11


def test_dl_known_pair_by_content(mined_all, py_store):
    """Ayn Rand's "Early life" says she read Aristotle (a link), and Aristotle's
    "Post-Enlightenment thinkers" section links to Ayn Rand: a dual-link pair."""
    out, _ = mined_all
    rows = [r for r in pairs_of(out, "dl") if r["query_title"] == "Ayn Rand" and r["positive_title"] == "Aristotle"]
    assert rows
    row = next(r for r in rows if r["query"].startswith("At the university she was introduced"))
    assert row["query"] == ("At the university she was introduced to the writings of Aristotle and Plato, "
                            "who would be her greatest influence and counter-influence, respectively.")
    assert row["query_anchor"] == "Aristotle"
    assert row["positive_anchor"] == "Ayn Rand"
    assert 'Ayn Rand accredited Aristotle as "the greatest philosopher in history"' in row["positive_text"]
    # no title prepended: the passage happens to start with the word ("... Aristotle. However debatable")
    assert row["positive_text"].startswith("Aristotle. However debatable this is, Aristotle rigid")
    assert row["positive_text"] == py_store.passages[row["positive_passage_id"]]["text"]
    back = [r for r in pairs_of(out, "dl") if r["query_title"] == "Aristotle" and r["positive_title"] == "Ayn Rand"]
    assert back and back[0]["query_anchor"] == "Ayn Rand" and back[0]["positive_anchor"] == "Aristotle"


# --- CM --------------------------------------------------------------------------------
# The enwiki sample's 105 articles link mostly outside the sample: no article of it is co-mentioned,
# so CM is checked on the hand-written wiki (tests/data/cowiki.xml), and on the sample for what it lacks.

def check_co_mention(store, row, k):
    Q, P, q, p, E, E_doc = (row["query_doc_id"], row["positive_doc_id"], row["query_passage_id"],
                            row["positive_passage_id"], row["entity"], row["entity_doc_id"])
    assert Q != P
    assert store.is_article(E_doc) and store.docs[E_doc]["title"] == E, f"{row['pair_id']}: E={E!r} is no article"
    assert E not in (store.docs[Q]["title"], store.docs[P]["title"])
    assert E in store.M(q), f"{row['pair_id']}: q does not link to E={E!r}"
    assert E in store.M(p, inside=True), f"{row['pair_id']}: p does not link to E={E!r}"
    assert Q in store.M_docs(p, inside=True), f"{row['pair_id']}: p does not link to Q"
    assert store.indegree[E_doc] < k and row["entity_indegree"] == store.indegree[E_doc]
    check_query_is_sentence(store, row)
    check_anchor_in_query(store, row, lambda l: l["target_title"] == E)
    check_positive_is_passage(store, row)
    check_positive_anchor(row)
    held_link(store, row, "positive", lambda l: l["target_doc_id"] == Q)
    held_link(store, row, "entity", lambda l: l["target_doc_id"] == E_doc)
    text = row["positive_text"]
    assert text[row["entity_anchor_start"]:row["entity_anchor_end"]] == row["entity_anchor"]


def test_cm_pairs_satisfy_co_mention(mined_co, co_store):
    out, result = mined_co
    rows = pairs_of(out, "cm")
    assert len(rows) == 22
    k = result.manifest.cm_indegree_threshold["k"]
    assert k == percentile_threshold(co_store.indegree, 90.0) == 6  # Sun (6 linking documents) is the top 10%
    for row in rows:
        check_co_mention(co_store, row, k)
    allowed = co_mentions(co_store, lambda l: co_store.is_article(l["target_doc_id"])
                          and co_store.indegree[l["target_doc_id"]] < k)
    assert {(r["query_passage_id"], r["positive_passage_id"], r["entity"]) for r in rows} <= allowed
    # 49 co-mentions give 40 passage pairs (q, p); each of the 11 one-passage documents gives queries to at
    # most 2 of them (max_per_query_passage): 22 pairs
    assert len(allowed) == 49 and len({(q, p) for q, p, _ in allowed}) == 40
    assert Counter(r["query_passage_id"] for r in rows) == Counter({q: 2 for q, _, _ in allowed})


def test_cm_known_pair_by_content(mined_co):
    """Galileo "argued that the Earth moves around the Sun"; Jupiter's passage says its Great Red Spot is "larger
    than the Earth" and that Galileo Galilei saw its moons: E = Earth, linked from both, and p links back to
    Galileo. (Telescope is co-mentioned too; the seeded hash over the link ids picks Earth.)"""
    out, _ = mined_co
    [row] = [r for r in pairs_of(out, "cm") if r["query_title"] == "Galileo Galilei" and r["positive_title"] == "Jupiter"]
    assert row["query"] == ("He argued that the Earth moves around the Sun, and he was tried for it by the Inquisition "
                            "in 1633.")
    assert (row["entity"], row["query_anchor"], row["entity_anchor"]) == ("Earth", "Earth", "Earth")
    assert row["positive_anchor"] == "Galileo Galilei" and row["entity_indegree"] == 5
    assert "larger than the Earth" in row["positive_text"]


def test_cm_entity_is_never_a_red_link_or_a_disambiguation_page(mined_co, co_store, cowiki_store, tmp_path):
    """Phobos and Deimos both link to Mars, to the red link [[Asaph Hall]] and to the disambiguation page
    [[Greek mythology (disambiguation)]]: only Mars (an article) can be their co-mentioned entity."""
    red, dab = "Asaph Hall", "Greek mythology (disambiguation)"
    every_target = co_mentions(co_store, lambda l: True)  # the old rule: E any link target
    assert {e for _, _, e in every_target} >= {red, dab}
    dab_doc = next(d for d in co_store.docs.values() if d["title"] == dab)
    assert dab_doc["is_disambiguation"] and not any(d["title"] == red for d in co_store.docs.values())
    out, _ = mined_co
    entities = {r["entity"] for r in pairs_of(out, "cm")}
    assert entities.isdisjoint({red, dab}) and "Mars" in entities
    # with disambiguation pages kept as documents, links to one get a target_doc_id: still no entity
    result = run(cowiki_store, tmp_path / "dab", methods="cm", skip_disambiguation=False, negatives="none")
    rows = pairs_of(tmp_path / "dab", "cm")
    assert rows and all(co_store.is_article(r["entity_doc_id"]) for r in rows) and dab not in {r["entity"] for r in rows}
    assert result.manifest.cm_indegree_threshold["entities"] == 11  # articles; the disambiguation page is none


def test_cm_hub_entity_excluded_by_default_allowed_at_100(mined_co, cowiki_store, co_store, tmp_path):
    out, _ = mined_co
    assert "Sun" not in {r["entity"] for r in pairs_of(out, "cm")}
    result = run(cowiki_store, tmp_path / "all", methods="cm", cm_indegree_percentile=100.0, negatives="none")
    rows = pairs_of(tmp_path / "all", "cm")
    assert result.manifest.cm_indegree_threshold == {"k": 7, "rule": "top 0% of in-degree", "entities": 11,
                                                        "excluded": 0}
    sun = [r["entity_indegree"] for r in rows if r["entity"] == "Sun"]  # how many: the seeded choice among E's
    assert sun and set(sun) == {6}
    for row in rows:
        check_co_mention(co_store, row, 7)


def test_cm_absolute_threshold(cowiki_store, tmp_path, co_store):
    result = run(cowiki_store, tmp_path / "p", methods="cm", cm_indegree_threshold=3, negatives="none")
    rows = pairs_of(tmp_path / "p", "cm")
    assert result.manifest.cm_indegree_threshold["k"] == 3
    assert len(rows) == 5 and all(co_store.indegree[r["entity_doc_id"]] == 2 for r in rows)
    assert {r["entity"] for r in rows} == {"Phobos (moon)", "Deimos (moon)", "Jupiter"}


def test_cm_k_is_ranked_among_articles(enwiki_store, py_store, tmp_path):
    """The paper's top 10% "among the Wikipedia entities": the sample's 96 articles (8 of its 104 documents
    are disambiguation pages), those no document links to included, not its 13,939 link targets."""
    result = run(enwiki_store, tmp_path / "p", methods="cm", negatives="none")
    t = result.manifest.cm_indegree_threshold
    assert t["entities"] == len(py_store.indegree) == 96
    assert t["k"] == percentile_threshold(py_store.indegree, 90.0) == 3  # Aristotle 7, Angola 5, six at 3
    assert t["excluded"] == sum(v >= 3 for v in py_store.indegree.values()) == 8
    # over every link target K would be 2: 91% of them are linked from one document
    assert len(py_store.target_indegree) == 13939 and percentile_threshold(py_store.target_indegree, 90.0) == 2


def test_cm_sample_has_no_article_to_co_mention(enwiki_store, py_store, tmp_path):
    """On the sample every co-mention is of a link target outside the store (157 (q, p, E) triples, e.g.
    E = "Politics (Aristotle)", a red link here), none of an article: no CM pair even with nothing excluded,
    and the command says why."""
    every_target = co_mentions(py_store, lambda l: True)
    assert len(every_target) == 157 and "Politics (Aristotle)" in {e for _, _, e in every_target}
    assert not co_mentions(py_store, lambda l: py_store.is_article(l["target_doc_id"]))
    result = run(enwiki_store, tmp_path / "p", methods="dl,cm", cm_indegree_percentile=100.0)
    assert result.methods["cm"].pairs == 0 and result.methods["dl"].pairs > 0
    reason = result.methods["cm"].reason
    assert "article of the store" in reason and "links point to a document of the store" in reason
    manifest = json.loads((tmp_path / "p" / "pairs.json").read_text())
    assert manifest["methods"]["cm"]["why_no_pairs"] == reason


def test_cm_threshold_of_two_explains_zero_pairs(cowiki_store, tmp_path):
    """K=2 lets through only entities linked from one document, never a co-mentioned one: mining says so."""
    result = run(cowiki_store, tmp_path / "p", methods="cm", cm_indegree_threshold=2)
    assert result.methods["cm"].pairs == 0
    assert "K=2" in result.methods["cm"].reason and "--cm-indegree-percentile" in result.methods["cm"].reason


# --- anchors crossing a passage boundary ------------------------------------------------------

@pytest.mark.slow
def test_an_anchor_crossing_a_passage_boundary_is_no_evidence(py_store, tmp_path):
    """Cut the real sample into short passages until a link between two articles crosses a boundary (20
    words: Alkali metal's "atomic number", its only link to Atomic number, and Alabama's "American
    Revolutionary War", whose passage ends "... victory in the American Revolutionary"). The first would make
    its passage a WLP positive for Atomic number's lead sentences; cut in two, it is the evidence of no pair."""
    words, crossing = crossing_passage_size(py_store)
    assert (words, crossing) == (20, [("303", "American Revolutionary War"), ("666", "Atomic number")]), \
        "the sample's text changed: re-check by hand"
    store = build(shared(ENWIKI), tmp_path / "store", words=words, workers=2)
    s = load_store(store.path)
    links = [l for ls in s.links_by_passage.values() for l in ls if (l["doc_id"], l["target_title"]) in crossing]
    assert links and not any(s.inside(l) for l in links)  # the built store agrees: the anchor crosses
    out = tmp_path / "pairs"
    run(store, out, methods="dl,cm,wlp", cm_indegree_percentile=100.0, negatives="none")
    rows = {m: pairs_of(out, m) for m in ("dl", "cm", "wlp")}
    assert rows["dl"] and rows["wlp"]
    for method, method_rows in rows.items():
        for row in method_rows:
            held_link(s, row, "positive", lambda l: l["target_doc_id"] == row["query_doc_id"])
            if method == "cm":
                held_link(s, row, "entity", lambda l: l["target_doc_id"] == row["entity_doc_id"])
    # an article whose every in-link crosses a boundary (Atomic number) is no WLP query document at all
    only_crossing = {l["target_doc_id"] for l in links} - {
        l["target_doc_id"] for ls in s.links_by_passage.values() for l in ls if s.inside(l)}
    assert only_crossing and not [r for r in rows["wlp"] if r["query_doc_id"] in only_crossing]


# --- ICT, WLP, BFS --------------------------------------------------------------------

def test_ict_pairs(mined_all, py_store):
    out, _ = mined_all
    rows = pairs_of(out, "ict")
    assert len(rows) > 1000
    kept = 0
    for row in rows:
        assert row["query_passage_id"] == row["positive_passage_id"]
        passage = py_store.passages[row["positive_passage_id"]]
        sentence = check_query_is_sentence(py_store, row)
        start, end = sentence["start"] - passage["start"], sentence["end"] - passage["start"]
        assert 0 <= start and end <= len(passage["text"])  # the sentence lies wholly inside the passage
        assert passage["text"][start:end] == row["query"]
        if row["query_sentence_kept"]:
            kept += 1
            assert row["positive_text"] == passage["text"]
        else:
            expected = (passage["text"][:start] + passage["text"][end:].lstrip(" \t\r\n")).strip(" \t\r\n")
            assert row["positive_text"] == expected
            assert row["query"] not in row["positive_text"] or passage["text"].count(row["query"]) > 1
    assert 0.06 < kept / len(rows) < 0.14  # 10% kept by default


def test_wlp_pairs(mined_all, py_store):
    out, _ = mined_all
    rows = pairs_of(out, "wlp")
    assert len(rows) >= 20
    for row in rows:
        A, B = row["query_doc_id"], row["positive_doc_id"]
        assert A != B
        assert check_query_is_sentence(py_store, row)["section_idx"] == 0  # lead section of A
        check_positive_is_passage(py_store, row)
        assert A in py_store.M_docs(row["positive_passage_id"], inside=True)  # the positive links to A
        check_positive_anchor(row)
        held_link(py_store, row, "positive", lambda l: l["target_doc_id"] == A)


def test_bfs_pairs(mined_all, py_store):
    out, _ = mined_all
    rows = pairs_of(out, "bfs")
    assert len(rows) >= 100
    for row in rows:
        assert row["query_doc_id"] == row["positive_doc_id"]
        assert check_query_is_sentence(py_store, row)["section_idx"] == 0
        assert check_positive_is_passage(py_store, row)["section_idx"] > 0  # outside the lead


def test_queries_hold_min_words_and_positives_min_length(mined_all):
    out, _ = mined_all
    for method in MINED:
        for row in pairs_of(out, method):
            assert len(row["query"].split()) >= 5
            assert row["query"].count("\n") == 0


# --- shared machinery --------------------------------------------------------------------

@pytest.mark.parametrize("mined, methods", [("mined_all", MINED), ("mined_co", ("dl", "cm", "wlp"))])
def test_caps_and_dedup(mined, methods, request):
    out, result = request.getfixturevalue(mined)
    cfg = result.config
    for method in methods:
        rows = pairs_of(out, method)
        assert rows, method
        per_query_passage = Counter(r["query_passage_id"] for r in rows)
        assert max(per_query_passage.values()) <= cfg.max_per_query_passage
        if method in ("dl", "cm", "wlp"):
            per_doc_pair = Counter((r["query_doc_id"], r["positive_doc_id"]) for r in rows)
            assert max(per_doc_pair.values()) <= cfg.max_per_doc_pair
        assert len({(r["query"], r["positive_text"]) for r in rows}) == len(rows)
        assert len({r["pair_id"] for r in rows}) == len(rows)


def test_random_negatives(mined_all, py_store):
    out, _ = mined_all
    for method in MINED:
        for row in pairs_of(out, method):
            assert row["negative_kind"] == "random"
            n = py_store.passages[row["negative_passage_id"]]
            assert row["negative_passage_id"] != row["positive_passage_id"]
            assert n["doc_id"] not in (row["query_doc_id"], row["positive_doc_id"])
            assert row["negative_text"] == n["text"]
            assert row["negative_title"] == py_store.docs[n["doc_id"]]["title"]


def test_overlap_negatives(enwiki_store, tmp_path, py_store):
    out = tmp_path / "ovl"
    run(enwiki_store, out, methods="dl,ict", negatives="overlap")
    kinds = Counter()
    for method in ("dl", "ict"):
        for row in pairs_of(out, method):
            kinds[row["negative_kind"]] += 1
            n_pid, Q = row["negative_passage_id"], row["query_doc_id"]
            n_doc = py_store.passages[n_pid]["doc_id"]
            assert n_pid != row["positive_passage_id"] and n_doc not in (Q, row["positive_doc_id"])
            if row["negative_kind"] != "overlap":
                continue
            query_entities = {l["target_title"] for l in py_store.links_by_sentence[(Q, row["query_sentence_idx"])]}
            assert query_entities & py_store.M(n_pid, inside=True), "an overlap negative shares a linked entity"
            q = row["query_passage_id"]
            is_dl = n_doc in py_store.M_docs(q) and Q in py_store.M_docs(n_pid)
            is_cm = Q in py_store.M_docs(n_pid) and bool(py_store.M(q) & py_store.M(n_pid))
            assert not is_dl and not is_cm
    assert kinds["overlap"] > 100


def test_no_negatives(enwiki_store, tmp_path):
    run(enwiki_store, tmp_path / "p", methods="dl", negatives="none")
    rows = pairs_of(tmp_path / "p", "dl")
    assert rows and all(r["negative_passage_id"] is None and r["negative_kind"] is None for r in rows)


def test_prepend_title_is_an_option(enwiki_store, tmp_path, py_store):
    run(enwiki_store, tmp_path / "p", methods="dl", prepend_title=True)
    for row in pairs_of(tmp_path / "p", "dl"):
        passage = py_store.passages[row["positive_passage_id"]]
        assert row["positive_text"] == f"{row['positive_title']}. {passage['text']}"
        check_positive_anchor(row)


def test_same_seed_same_pairs_other_seed_other_sample(enwiki_store, tmp_path, mined_all):
    out, _ = mined_all
    again = tmp_path / "again"
    run(enwiki_store, again, methods=ALL, cm_indegree_percentile=99.0, seed=0)
    for method in MINED:
        assert pq.read_table(again / f"{method}.parquet").equals(pq.read_table(out / f"{method}.parquet"))
    other = tmp_path / "other"
    run(enwiki_store, other, methods="ict,dl", seed=1)
    a = {(r["positive_passage_id"], r["query"]) for r in pairs_of(out, "ict")}
    b = {(r["positive_passage_id"], r["query"]) for r in pairs_of(other, "ict")}
    assert len(a & b) < 0.5 * len(a)  # ICT picked other sentences
    neg0 = {(r["query_passage_id"], r["positive_passage_id"]): r["negative_passage_id"] for r in pairs_of(out, "dl")}
    neg1 = {(r["query_passage_id"], r["positive_passage_id"]): r["negative_passage_id"] for r in pairs_of(other, "dl")}
    common = neg0.keys() & neg1.keys()
    assert common and sum(neg0[k] != neg1[k] for k in common) > len(common) / 2  # other random negatives


def test_max_pairs_budget_is_split_and_a_prefix(enwiki_store, tmp_path, mined_all):
    out, full = mined_all
    result = run(enwiki_store, tmp_path / "b", methods="dl,ict,wlp", max_pairs=150, seed=0)
    counts = {m: r.pairs for m, r in result.methods.items()}
    assert sum(counts.values()) == 150
    assert counts["dl"] == full.methods["dl"].pairs  # fewer than its share: all of them, the rest to others
    assert counts["ict"] - counts["wlp"] in (0, 1)
    for method in ("ict", "wlp"):  # the budgeted sample is the first rows of the full run (same hash order)
        budgeted = [r["pair_id"] for r in pairs_of(tmp_path / "b", method)]
        assert budgeted == [r["pair_id"] for r in pairs_of(out, method)][:len(budgeted)]


def test_allocate():
    assert allocate(None, {"a": 3, "b": 5}) == {"a": 3, "b": 5}
    assert allocate(10, {"a": 100, "b": 100, "c": 100}) == {"a": 4, "b": 3, "c": 3}
    assert allocate(10, {"a": 1, "b": 100, "c": 0}) == {"a": 1, "b": 9, "c": 0}
    assert allocate(1000, {"a": 1, "b": 2}) == {"a": 1, "b": 2}


def test_output_files_manifest_and_stats(mined_all):
    out, result = mined_all
    manifest = json.loads((out / "pairs.json").read_text())
    assert manifest["total_pairs"] == sum(m["pairs"] for m in manifest["methods"].values())
    assert manifest["options"]["seed"] == 0 and manifest["columns"] == PAIRS.names
    for method in MINED:
        table = pq.read_table(out / f"{method}.parquet")
        assert table.schema.equals(PAIRS)
        assert manifest["methods"][method]["pairs"] == table.num_rows
    assert manifest["methods"]["cm"]["pairs"] == 0 and not (out / "cm.parquet").exists()
    assert "article of the store" in manifest["methods"]["cm"]["why_no_pairs"]
    assert not (out / ".work").exists()
    stats = json.loads((out / "stats.json").read_text())
    for method in MINED:
        s = stats["methods"][method]
        assert s["pairs"] == manifest["methods"][method]["pairs"]
        assert 0 < s["mean_overlap"] < 1 and s["distinct_queries"] <= s["pairs"]
    # ICT keeps the sentence sometimes and shares the passage's words: more overlap than WLP
    assert stats["methods"]["ict"]["mean_overlap"] > stats["methods"]["wlp"]["mean_overlap"]
    assert (out / "overlap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_lexical_overlap_matches_wordpiece():
    from pretriever.mine.stats import lexical_overlap, load_tokenizer

    tok = load_tokenizer()
    assert tok.encode("Anarchism", add_special_tokens=False).tokens == ["ana", "##rch", "##ism"]
    got = lexical_overlap(tok, ["Anarchism is old", "zebra"], ["anarchism is a philosophy", "nothing here"])
    assert got == [pytest.approx(4 / 5), 0.0]  # ana ##rch ##ism is | old -> 4 of 5 tokens


# --- sentence hygiene --------------------------------------------------------------------


def test_flagged_sentences_are_never_queries(mined_all, py_store):
    """A sentence with a hole where markup stood ("was $5 ($ in dollars)") is no query of any method."""
    out, result = mined_all
    flagged = {(d, i) for (d, i), s in py_store.sentences.items() if s["has_hole"]}
    assert len(flagged) == 23
    for method in ALL.split(","):
        for row in pairs_of(out, method):
            assert (row["query_doc_id"], row["query_sentence_idx"]) not in flagged, (method, row["query"])
    # of the usable documents (disambiguation pages are not): none of the 23 is on one
    counts = {"sentences": 18066, "with_hole": 23, "list_items": 0, "excluded": 23}
    assert result.manifest.flagged_sentences == counts
    assert json.loads((out / "stats.json").read_text())["flagged_sentences"] == counts


def test_list_items_kept_with_keep_lists_are_never_queries(tmp_path):
    from conftest import ENWIKI, build

    store = build(ENWIKI, tmp_path / "lists", workers=2, keep_lists=True)
    result = run(store, tmp_path / "p", methods="ict,wlp", negatives="none", seed=0)
    usable = {d["doc_id"] for d in read(store.path / "documents.parquet") if not d["is_disambiguation"]}
    items = {(r["doc_id"], r["sentence_idx"]) for r in read(store.path / "sentences")
             if r["is_list_item"] and r["doc_id"] in usable}
    assert result.manifest.flagged_sentences["list_items"] == len(items) == 2842
    for method in ("ict", "wlp"):
        rows = pairs_of(tmp_path / "p", method)
        assert rows and not any((r["query_doc_id"], r["query_sentence_idx"]) in items for r in rows)
