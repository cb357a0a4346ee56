"""The corpus store built from the real shortened enwiki dump: facts checked by reading the dump."""

from __future__ import annotations

import bz2
import re

import pytest

import pretriever.corpus.build
from pretriever.corpus.config import CorpusConfig
from pretriever.corpus.model import InputError

from conftest import BGWIKI, COWIKI, ENWIKI, TABLE_WIKI, build, shared
from helpers import make_multistream, table_bytes


def test_articles_redirects_and_the_short_title_filter(enwiki_store, enwiki_con):
    counts = enwiki_store.counts
    assert counts["pages"] == 206
    assert counts["redirects"] == 100
    # 106 articles; "A" has a one-letter title and is dropped as in HLP; "List of anthropologists" is
    # nothing but list lines, which leave the text by default, so it is blank
    assert counts["dropped_short_title"] == 1 and counts["dropped_blank"] == 1 and counts["documents"] == 104
    assert enwiki_store.manifest.dropped_documents == [
        {"title": "A", "status": "dropped_short_title"}, {"title": "List of anthropologists", "status": "dropped_blank"}]
    titles = {t for t, in enwiki_con.execute("SELECT title FROM documents").fetchall()}
    assert len(titles) == 104 and "Anarchism" in titles and "A" not in titles
    assert "AccessibleComputing" not in titles  # redirect pages are not documents


def test_redirect_pages_resolve(enwiki_con):
    target, hops = enwiki_con.execute(
        "SELECT target_title, hops FROM redirects WHERE title = 'AccessibleComputing'").fetchone()
    assert (target, hops) == ("Computer accessibility", 1)


def test_known_link_from_anarchism(enwiki_con):
    row = enwiki_con.execute("""
        SELECT l.anchor, l.target_title, l.target_doc_id, p.text, l.passage_start, l.passage_end, s.text
        FROM links l JOIN documents d ON d.doc_id = l.doc_id
        JOIN passages p ON p.passage_id = l.passage_id
        JOIN sentences s ON s.doc_id = l.doc_id AND s.sentence_idx = l.sentence_idx
        WHERE d.title = 'Anarchism' AND l.anchor = 'political philosophy' ORDER BY l.link_idx LIMIT 1""").fetchone()
    anchor, target, target_id, passage, start, end, sentence = row
    assert target == "Political philosophy" and target_id is None  # not among the 106 articles
    assert passage[start:end] == anchor
    assert sentence.startswith("Anarchism is a political philosophy that advocates self-governed societies")


def test_link_to_a_redirect_resolves_to_the_final_title(enwiki_con):
    # "Affirming the consequent" links [[argument form]]; "Argument form" redirects to "Logical form"
    rows = enwiki_con.execute("""
        SELECT l.written_target, l.target_title, l.via_redirect FROM links l
        JOIN documents d ON d.doc_id = l.doc_id
        WHERE d.title = 'Affirming the consequent' AND l.written_target = 'Argument form'""").fetchall()
    assert rows and all(r == ("Argument form", "Logical form", True) for r in rows)


def test_links_between_articles_in_the_dump_get_their_document_id(enwiki_con):
    row = enwiki_con.execute("""
        SELECT count(*), count(DISTINCT l.target_doc_id) FROM links l JOIN documents t ON t.doc_id = l.target_doc_id
        WHERE t.title = l.target_title""").fetchone()
    assert row[0] == 100 and row[1] > 20  # 106 with the list lines (--keep-lists)
    # a target id is set exactly when the target title is a document of the store
    bad = enwiki_con.execute("""
        SELECT count(*) FROM links l LEFT JOIN documents t ON t.title = l.target_title
        WHERE (t.doc_id IS NULL) <> (l.target_doc_id IS NULL)""").fetchone()[0]
    assert bad == 0


def test_every_anchor_is_where_its_offsets_say(enwiki_con):
    mismatched = enwiki_con.execute("""
        SELECT count(*) FROM links l JOIN passages p ON p.passage_id = l.passage_id
        WHERE l.passage_end <= length(p.text)
          AND substr(p.text, l.passage_start + 1, l.passage_end - l.passage_start) <> l.anchor""").fetchone()[0]
    assert mismatched == 0
    in_sentence = enwiki_con.execute("""
        SELECT count(*) FILTER (WHERE l.start >= s.start AND l.start < s."end"), count(*)
        FROM links l JOIN sentences s ON s.doc_id = l.doc_id AND s.sentence_idx = l.sentence_idx""").fetchone()
    assert in_sentence[0] == in_sentence[1]


def test_passages_are_disjoint_100_word_chunks(enwiki_store, enwiki_con):
    sizes = enwiki_con.execute("""
        SELECT count(*), max(n_words), count(*) FILTER (WHERE n_words < 100) FROM passages""").fetchone()
    assert sizes[0] == enwiki_store.counts["passages"] == PASSAGES
    assert sizes[1] == 100 and sizes[2] <= 104  # only each document's last passage is short
    assert enwiki_con.execute("""SELECT count(*) FROM documents d
        WHERE d.n_passages <> (SELECT count(*) FROM passages p WHERE p.doc_id = d.doc_id)""").fetchone()[0] == 0


def test_citations_with_urls(enwiki_store, enwiki_con):
    assert enwiki_store.counts["citations_with_url"] > 2000
    row = enwiki_con.execute("""
        SELECT c.template, c.title, c.statement FROM citations c JOIN documents d ON d.doc_id = c.doc_id
        WHERE d.title = 'Albedo' AND c.url = ?""", [ALBEDO_CITATION_URL]).fetchone()
    assert row == ("cite web", "Albedo – from Eric Weisstein's World of Physics",
                   "Most land areas are in an albedo range of 0.1 to 0.4.")


@pytest.mark.parametrize("title, sentence", [
    # {{convert|1300|mi|km}}, {{convert|2381741|km2|sqmi|0}}, {{convert|47.5|lb|kg}}: holes before templates rendered
    ("Alabama", "At 1,300 miles, Alabama has one of the longest navigable inland waterways in the nation."),
    ("Algeria", "With an area of 2,381,741 square kilometres, Algeria is the tenth-largest country in the world, "
                "and the largest in Africa and the Arab world."),
    ("Apollo 11", "They spent about two and a quarter hours together outside the spacecraft, and collected "
                  "47.5 pounds of lunar material for return to Earth."),
    # {{IPAc-en}}, {{IPA-ca}} x2 and a ref dropped, the brackets with them; {{lang|ca|...}} rendered
    ("Andorra", "Andorra, officially the Principality of Andorra (Principat d'Andorra), also called the Principality "
                "of the Valleys of Andorra (Principat de les Valls d'Andorra), is a sovereign landlocked microstate "
                "in Southwestern Europe, located in the eastern Pyrenees mountains and bordered by Spain and France."),
    ("Aristotle", "Aristotle (Ἀριστοτέλης, Aristotélēs; 384–322 BC) was a Greek philosopher and scientist born in the "
                  "city of Stagira, Chalkidice, on the northern periphery of Classical Greece."),
])
def test_templates_with_visible_words_are_rendered(enwiki_con, title, sentence):
    row = enwiki_con.execute("""SELECT s.has_hole FROM sentences s JOIN documents d USING (doc_id)
                                WHERE d.title = ? AND s.text = ?""", [title, sentence]).fetchone()
    assert row == (False,)


def test_sentences_with_holes_are_flagged(enwiki_con):
    flagged = enwiki_con.execute("SELECT count(*) FILTER (WHERE has_hole), count(*) FROM sentences").fetchone()
    assert flagged == (23, 18080)
    # {{Inflation|US|5|1929}} needs data we do not have; its sentence is kept but flagged
    row = enwiki_con.execute("""SELECT s.has_hole FROM sentences s JOIN documents d USING (doc_id)
        WHERE d.title = 'Academy Awards' AND s.text LIKE 'The cost of guest tickets%'""").fetchone()
    assert row == (True,)


def test_list_lines_are_out_of_passages_by_default(enwiki_store, enwiki_con):
    assert enwiki_con.execute("SELECT count(*) FILTER (WHERE is_list_item) FROM sentences").fetchone() == (0,)
    # Aldous Huxley's "Awards" section is a list: "* 1939 [[James Tait Black Memorial Prize]] {{smaller|...}}"
    assert enwiki_con.execute("SELECT count(*) FROM passages WHERE text LIKE '%1939 James Tait Black Memorial Prize (for%'"
                              ).fetchone() == (0,)
    assert enwiki_store.counts["links_dropped"]["list"] == 2760


def test_keep_lists_keeps_them_flagged(tmp_path, enwiki_store):
    store = build(ENWIKI, tmp_path / "lists", workers=2, keep_lists=True)
    con = store.connect()
    row = con.execute("""SELECT s.is_list_item FROM sentences s JOIN documents d USING (doc_id)
        WHERE d.title = 'Aldous Huxley' AND s.text LIKE '1939 James Tait Black Memorial Prize (for%'""").fetchone()
    assert row == (True,)
    assert store.counts["documents"] == 105 and store.counts["passages"] > enwiki_store.counts["passages"]
    assert "list" not in store.counts["links_dropped"]
    assert store.manifest.options["keep_lists"] is True


def test_bibliography_sections_are_dropped(enwiki_con):
    # Afroasiatic languages' "Etymological bibliography", Ayn Rand's and Aldous Huxley's "Selected works":
    # the headings are kept, their content is not (the next section starts where they start)
    rows = enwiki_con.execute("""SELECT d.title, s.title, s.start, lead(s.start) OVER w FROM sections s
        JOIN documents d USING (doc_id) WINDOW w AS (PARTITION BY s.doc_id ORDER BY s.section_idx)""").fetchall()
    bib = {(doc, title): (start, nxt) for doc, title, start, nxt in rows
           if title in ("Etymological bibliography", "Selected works")}
    assert bib and all(nxt is None or nxt == start for start, nxt in bib.values())


def test_clean_text_has_no_markup(enwiki_con):
    leftovers = enwiki_con.execute(r"""
        SELECT count(*) FROM passages WHERE regexp_matches(text, '\{\{|\}\}|\[\[|\]\]|<ref|\{\|')""").fetchone()[0]
    assert leftovers == 0


@pytest.mark.parametrize("dump", [BGWIKI, TABLE_WIKI], ids=["bgwiki", "table-markup"])
def test_other_samples_parse_without_errors(tmp_path, dump):
    store = build(shared(dump), tmp_path / "s", workers=1)
    assert store.counts["errors"] == 0 and store.counts["documents"] > 0
    table_rows = store.connect().execute(r"""
        SELECT count(*) FROM passages WHERE regexp_matches(text, '(^|\n)\s*[|!]|\|\||\{\|')""").fetchone()[0]
    assert table_rows == 0


def test_build_is_byte_identical_when_repeated(tmp_path, enwiki_store):
    again = build(ENWIKI, tmp_path / "again", workers=1)
    assert table_bytes(again.path) == table_bytes(enwiki_store.path)


# --- bad input ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def enwiki_xml() -> bytes:
    return bz2.decompress(shared(ENWIKI).read_bytes())


def test_truncated_bz2_names_the_offset_and_resume_finishes(tmp_path, enwiki_store):
    data = shared(ENWIKI).read_bytes()
    dump = tmp_path / "dump.xml.bz2"
    dump.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(InputError, match=r"(?s)compressed byte [\d,]+.*--resume") as err:
        pretriever.corpus.build.run(CorpusConfig(input=dump, out=tmp_path / "s", workers=2, chunk_pages=20))
    assert "chunk(s) before the error are saved" in str(err.value)
    dump.write_bytes(data)  # the complete download arrives
    resumed = build(dump, tmp_path / "s", workers=2, chunk_pages=20, resume=True)
    fresh = build(dump, tmp_path / "fresh", workers=2, chunk_pages=20)
    assert table_bytes(resumed.path) == table_bytes(fresh.path)
    assert resumed.counts == enwiki_store.counts


def test_malformed_page_xml_is_listed_by_title(tmp_path, enwiki_xml):
    broken = enwiki_xml.replace(b"<title>Albedo</title>\n    <ns>0</ns>", b"<title>Albedo</title>\n    <ns>0</nss>", 1)
    assert broken != enwiki_xml
    dump = tmp_path / "broken.xml"
    dump.write_bytes(broken)
    store = build(dump, tmp_path / "s", workers=2)
    assert store.counts["errors"] == 1 and store.counts["documents"] == 103
    error = store.manifest.errors[0]
    assert error["title"] == "Albedo" and "invalid XML" in error["reason"] and "Albedo" in error["where"]


def test_invalid_utf8_is_listed_with_its_byte_offset(tmp_path, enwiki_xml):
    at = enwiki_xml.index(b"Autism is a")
    dump = tmp_path / "bad-utf8.xml"
    dump.write_bytes(enwiki_xml[:at] + b"\xff\xfe" + enwiki_xml[at:])
    store = build(dump, tmp_path / "s", workers=1)
    error = store.manifest.errors[0]
    assert error["title"] == "Autism" and f"invalid UTF-8 at byte {at:,}" in error["reason"]


def test_xml_ending_inside_a_page_is_an_input_error(tmp_path, enwiki_xml):
    dump = tmp_path / "cut.xml"
    dump.write_bytes(enwiki_xml[: enwiki_xml.index(b"<title>Albedo</title>") + 200])
    with pytest.raises(InputError, match="ends inside page 'Albedo'"):
        pretriever.corpus.build.run(CorpusConfig(input=dump, out=tmp_path / "s", workers=1))


def pack(xml: bytes) -> bytes:
    """The dump with the page-level tags pulled onto the line before them (the text is untouched)."""
    return re.sub(rb"\n\s*<(/?)(page|title|ns|id|redirect|revision|siteinfo)([ />])", rb"<\1\2\3", xml)


def test_page_tags_sharing_lines_with_other_tags_give_the_same_tables(tmp_path, enwiki_xml, enwiki_store):
    """XML is not line-based: <page> right after </siteinfo> or </page>, a page's tags on one line."""
    packed = pack(enwiki_xml)
    assert b"</siteinfo><page><title>" in packed and b"</revision></page><page><title>" in packed
    assert packed.count(b"\n") < enwiki_xml.count(b"\n") - 3 * packed.count(b"<page>")
    dump = tmp_path / "packed.xml.bz2"
    dump.write_bytes(bz2.compress(packed))
    store = build(dump, tmp_path / "s", workers=2)
    assert table_bytes(store.path) == table_bytes(enwiki_store.path)
    assert store.counts == enwiki_store.counts


def test_pages_are_cut_the_same_whatever_the_block_boundaries(tmp_path, monkeypatch):
    from pretriever.corpus.formats import mediawiki

    packed = pack(COWIKI.read_bytes())
    dump = tmp_path / "packed.xml"
    dump.write_bytes(packed)
    pages = [(p.data, p.offset) for p in mediawiki.MediaWikiDump(dump).iter_items()]
    assert len(pages) == 12 and all(packed[at:at + len(data)] == data for data, at in pages)
    assert all(data.startswith(b"<page>") and data.endswith(b"</page>") for data, _ in pages[:-1])
    monkeypatch.setattr(mediawiki, "_BLOCK", 7)  # every tag is cut by some block boundary
    assert [(p.data, p.offset) for p in mediawiki.MediaWikiDump(dump).iter_items()] == pages


def test_multistream_dump_with_index_gives_the_same_tables(tmp_path, enwiki_xml, enwiki_con):
    dump, index = make_multistream(enwiki_xml, tmp_path, pages_per_stream=25)
    store = build(dump, tmp_path / "ms", workers=2, chunk_pages=100, multistream_index=index)
    con = store.connect()
    for table, key in [("documents", "doc_id"), ("passages", "passage_id"), ("links", "doc_id, link_idx"),
                       ("citations", "doc_id, citation_idx"), ("redirects", "title")]:
        query = f"SELECT * FROM {table} ORDER BY {key}"
        assert con.execute(query).fetchall() == enwiki_con.execute(query).fetchall(), table


# ceil(words / 100) summed over the 104 documents (clean text as described in docs/architecture.md)
PASSAGES = 4055
ALBEDO_CITATION_URL = "http://scienceworld.wolfram.com/physics/Albedo.html"
