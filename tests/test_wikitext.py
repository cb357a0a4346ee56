"""Tests for pretriever.corpus.wikitext.clean_wikitext."""

from __future__ import annotations

import bz2
import random
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import BGWIKI, ENWIKI, TABLE_WIKI as TABLES
from pretriever.corpus.model import CleanDocument, Section
from pretriever.corpus.titles import Namespaces
from pretriever.corpus.wikitext import clean_wikitext

NS = Namespaces()


def clean(wikitext: str, namespaces: Namespaces = NS) -> CleanDocument:
    doc = clean_wikitext(wikitext, namespaces)
    check_invariants(doc)
    return doc


def check_invariants(doc: CleanDocument) -> None:
    text = doc.text
    assert text == text.strip()
    assert not re.search("[\U000f0000-\U0010ffff]", text), "marker characters leaked"
    assert doc.sections and doc.sections[0] == Section(0, "")
    starts = [s.start for s in doc.sections]
    assert starts == sorted(starts) and all(0 <= s <= len(text) for s in starts)
    for link in doc.links:
        assert 0 <= link.start < link.end <= len(text)
        anchor = text[link.start : link.end]
        assert anchor == anchor.strip()
        assert link.target
    for cit in doc.citations:
        assert 0 <= cit.position <= len(text)
        assert len(cit.raw) <= 1000


def anchors(doc: CleanDocument) -> list[tuple[str, str]]:
    return [(doc.text[lk.start : lk.end], lk.target) for lk in doc.links]


# --------------------------------------------------------------------------- markup removal


def test_nested_templates_and_params_are_removed():
    doc = clean("Alpha {{outer|a={{inner|{{deep}}}}|b}} beta {{{param|x}}} gamma.")
    assert doc.text == "Alpha beta gamma."


def test_table_inside_template_is_removed():
    wt = "{{Infobox thing\n| data =\n{| class=\"wikitable\"\n| cell one || cell two\n|}\n}}\nReal text."
    assert clean(wt).text == "Real text."


def test_nested_tables_are_removed():
    wt = "Before.\n{| class=x\n|-\n| outer\n{|\n! inner head\n| inner cell\n|}\n| after inner\n|}\nAfter."
    assert clean(wt).text == "Before.\nAfter."


def test_file_link_with_nested_link_in_caption():
    wt = "[[File:Map.png|thumb|left|A map of [[Paris|the city]] in 1900]]The [[Seine]] flows."
    doc = clean(wt)
    assert doc.text == "The Seine flows."
    assert anchors(doc) == [("Seine", "Seine")]
    assert doc.dropped_links["namespace"] == 1


def test_image_alias_and_local_file_namespace():
    bg = Namespaces()
    bg.add("Файл", 6)
    bg.add("Категория", 14)
    wt = "[[Файл:Карта.jpg|мини|Надпис с [[Град]]]]Текст за [[София|столицата]].\n[[Категория:Градове]]"
    doc = clean(wt, bg)
    assert doc.text == "Текст за столицата."
    assert anchors(doc) == [("столицата", "София")]
    assert doc.dropped_links["namespace"] == 2
    # an unlisted local alias of File: is recognised by the media extension
    assert clean("[[Картинка:Smile.png|:-)]] Здравей.", bg).text == "Здравей."
    assert clean("[[Image:Foo.jpg|thumb|Caption]]Body.").text == "Body."


def test_category_and_interlanguage_links_vanish():
    doc = clean("Some text.\n[[Category:Philosophy]]\n[[fr:Texte]]\n[[de:Text]]")
    assert doc.text == "Some text."
    assert doc.links == []
    assert doc.dropped_links == {"namespace": 1, "interlanguage": 2}


def test_visible_non_article_links_keep_their_text():
    doc = clean("See [[:Category:Philosophy|the category]], [[wikt:word|word]] and [[Wikipedia:Help]].")
    assert doc.text == "See the category, word and Wikipedia:Help."
    assert doc.links == []
    assert doc.dropped_links == {"namespace": 2, "interwiki": 1}


def test_comment_containing_link_is_removed():
    doc = clean("Alpha <!-- [[Hidden]] {{tpl}} --> beta.")
    assert doc.text == "Alpha beta."
    assert doc.links == []


def test_unclosed_comment_hides_the_rest():
    assert clean("Visible.\n<!-- never closed [[Foo]]\nmore").text == "Visible."


def test_bold_and_italic_are_stripped():
    doc = clean("'''Bold''' and ''italic'' and '''''both''''' and ''[[Link]]''.")
    assert doc.text == "Bold and italic and both and Link."
    assert anchors(doc) == [("Link", "Link")]


def test_html_tags_and_entities():
    wt = "H<sub>2</sub>O is <span style=\"x\">water</span><br/>next&nbsp;word 1&ndash;2 &amp; <small>tiny</small>."
    assert clean(wt).text == "H2O is water next word 1–2 & tiny."


def test_drop_blocks_and_magic_words():
    wt = (
        "__NOTOC__\nStart <math>x^2 + [[y]]</math> end.\n<gallery>\nFile:A.jpg|cap\n</gallery>\n"
        "<syntaxhighlight lang=python>print(1)</syntaxhighlight>Code.\n<pre>pre {{x}}</pre>Done.\n__TOC__"
    )
    doc = clean(wt)
    assert doc.text == "Start end.\nCode.\nDone."
    assert doc.links == []


def test_nowiki_content_is_literal():
    doc = clean("Write <nowiki>[[not a link]] or {{not a template}}</nowiki> here.")
    assert doc.text == "Write [[not a link]] or {{not a template}} here."
    assert doc.links == []


def test_external_links():
    doc = clean("Visit [http://example.org the site] or [https://example.com] now, http://bare.org stays.")
    assert doc.text == "Visit the site or now, http://bare.org stays."


def test_lists_and_indentation_are_marked_for_the_segmenter():
    """The cleaner strips list markup and says where each list line is; the build drops them unless --keep-lists."""
    wt = "Intro:\n* first item\n** nested [[Item]]\n# numbered\n: indented\n; term : definition\n----\nEnd."
    doc = clean(wt)
    assert doc.text == "Intro:\nfirst item\nnested Item\nnumbered\nindented\nterm: definition\nEnd."
    assert anchors(doc) == [("Item", "Item")]
    assert [doc.text[a:b] for a, b in doc.list_lines] == [
        "first item", "nested Item", "numbered", "indented", "term: definition"]


def test_list_lines_leave_with_their_links_citations_and_line_breaks():
    from pretriever.corpus.segment import without_lines

    wt = ("Intro [[A]].<ref>x</ref>\n* first [[Item]]<ref>y</ref>\n** nested\nMiddle [[B]].\n== S ==\n"
          "* only a list\nAfter [[C]].<ref>z</ref>\n== T ==\n# last")
    doc = without_lines(clean(wt))
    check_invariants(doc)
    assert doc.text == "Intro A.\nMiddle B.\nAfter C."
    assert anchors(doc) == [("A", "A"), ("B", "B"), ("C", "C")] and doc.dropped_links["list"] == 1
    assert [(c.position, c.raw) for c in doc.citations] == [(8, "x"), (27, "z")]
    assert doc.sections == [Section(0, ""), Section(19, "S"), Section(27, "T")]
    assert without_lines(clean("* a\n* b")).text == ""


@pytest.mark.parametrize("title", ["Bibliography", "Etymological bibliography", "Works", "Selected works",
                                   "Discography", "Filmography", "Partial filmography as director", "Publications",
                                   "List of works", "Primary sources", "References and further reading"])
def test_bibliography_like_sections_are_dropped_like_references(title):
    doc = clean(f"Lead.\n== {title} ==\nSome book, 1990.\n=== Sub ===\nMore.\n== Life ==\nProse.")
    assert doc.text == "Lead.\nProse."
    assert [s.title for s in doc.sections] == ["", title, "Life"]


@pytest.mark.parametrize("title", ["Loss and preservation of his works", "Work", "Publication", "Biography"])
def test_prose_sections_named_like_works_stay(title):
    assert clean(f"Lead.\n== {title} ==\nProse.").text == "Lead.\nProse."


def test_whitespace_folding_and_empty_lines():
    doc = clean("  First   line \t here.  \n\n\n   \nSecond\u00a0 line.\n\n")
    assert doc.text == "First line here.\nSecond line."


# --------------------------------------------------------------------------- links


def test_piped_link_and_plain_link():
    doc = clean("The [[United_States|US]] and [[france]] and [[ Rome#History | old Rome ]].")
    assert doc.text == "The US and france and old Rome."
    assert anchors(doc) == [("US", "United States"), ("france", "France"), ("old Rome", "Rome")]


def test_link_trail_is_part_of_the_anchor():
    doc = clean("Many [[dog]]s and [[cat]]'s and [[bus]]es2.")
    assert doc.text == "Many dogs and cat's and buses2."
    assert anchors(doc) == [("dogs", "Dog"), ("cat", "Cat"), ("buses", "Bus")]


def test_section_link_keeps_text_but_not_link():
    doc = clean("As [[#History|shown below]], it is old.")
    assert doc.text == "As shown below, it is old."
    assert doc.links == []
    assert doc.dropped_links["section"] == 1


def test_pipe_trick():
    doc = clean("In [[Paris (France)|]] and [[Springfield, Illinois|]].")
    assert doc.text == "In Paris and Springfield."
    assert anchors(doc) == [("Paris", "Paris (France)"), ("Springfield", "Springfield, Illinois")]


def test_link_offsets_match_anchors_in_long_text():
    wt = "\n".join(
        f"== Part {i} ==\nLine {i} has [[Target {i}|anchor {i}]] and '''[[Other]]s'''.<ref>r{i}</ref>"
        for i in range(50)
    )
    doc = clean(wt)
    assert len(doc.links) == 100
    for i in range(50):
        assert anchors(doc)[2 * i] == (f"anchor {i}", f"Target {i}")
        assert anchors(doc)[2 * i + 1] == ("Others", "Other")
    assert [s.title for s in doc.sections[1:]] == [f"Part {i}" for i in range(50)]
    assert all(doc.text[s.start :].startswith(f"Line {i} ") for i, s in enumerate(doc.sections[1:]))


# --------------------------------------------------------------------------- sections


def test_headings_become_sections_with_offsets():
    wt = "Lead text.\n== History ==\nThe past.\n=== Early years ===\nOld times.\n==Empty==\n== Later ==\nNow."
    doc = clean(wt)
    assert doc.text == "Lead text.\nThe past.\nOld times.\nNow."
    assert doc.sections == [
        Section(0, ""),
        Section(11, "History"),
        Section(21, "Early years"),
        Section(32, "Empty"),
        Section(32, "Later"),
    ]
    assert doc.text[21:31] == "Old times."


def test_reference_sections_keep_heading_but_drop_content():
    wt = (
        "Body.<ref>{{cite web|url=http://a.org|title=A}}</ref>\n== See also ==\n* [[Other]]\n"
        "== References ==\n{{reflist}}\n=== Sources ===\n* {{cite book|title=B}}\n* Smith, J. A book.\n"
        "== External links ==\n* [http://x.org Official site]\n"
    )
    doc = clean(wt)
    assert doc.text == "Body."
    assert [s.title for s in doc.sections] == ["", "See also", "References", "External links"]
    assert doc.links == []
    assert [c.url for c in doc.citations] == ["http://a.org"]


# --------------------------------------------------------------------------- citations


def test_ref_with_cite_web():
    wt = (
        "Foo is a bar.<ref name=\"w\">{{Cite_Web |url= http://ex.org/a |title=The ''Real'' [[Title]] "
        "|archive-url=https://web.archive.org/x |access-date=2020}}</ref> Next sentence."
    )
    doc = clean(wt)
    assert doc.text == "Foo is a bar. Next sentence."
    [cit] = doc.citations
    assert cit.position == len("Foo is a bar.")
    assert cit.template == "cite web"
    assert cit.url == "http://ex.org/a"
    assert cit.title == "The Real Title"
    assert cit.archive_url == "https://web.archive.org/x"
    assert cit.name == "w"
    assert cit.raw.startswith("{{Cite_Web |url=")


def test_other_cite_templates_and_fallbacks():
    wt = (
        "A.<ref>{{cite book|title=Book|chapter-url=http://b.org|archiveurl=http://arch}}</ref>"
        " B.<ref>{{citation|title=Cit}}</ref>"
        " C.<ref>{{sfn|Smith|2000|p=4}}</ref>"
        " D.<ref>{{harvnb|Jones|1999}}</ref>"
        " E.<ref>Smith, J. ''A book''. 1999.</ref>"
        " F.<ref>[http://x.y/z Some ''title'']</ref>"
        " G.<ref>See http://plain.org/page.</ref>"
        " H.<ref>{{cite journal|title=J|url=http://j.org}}</ref>"
    )
    got = [(c.template, c.url, c.title, c.archive_url) for c in clean(wt).citations]
    assert got == [
        ("cite book", "http://b.org", "Book", "http://arch"),
        ("citation", None, "Cit", None),
        ("sfn", None, None, None),
        ("sfn", None, None, None),
        ("text", None, None, None),
        ("bare url", "http://x.y/z", "Some title", None),
        ("bare url", "http://plain.org/page", None, None),
        ("cite journal", "http://j.org", "J", None),
    ]


def test_named_ref_reuse_resolves_earlier_and_later_definitions():
    wt = (
        "First.<ref name=\"a\" /> Second.<ref name=a>{{cite news|url=http://n.org|title=N}}</ref>"
        " Third.<ref name='a'/><ref group=note name=\"b\">[http://b.org B]</ref> Fourth.<ref name=b group=note />"
    )
    doc = clean(wt)
    assert doc.text == "First. Second. Third. Fourth."
    got = [(c.position, c.template, c.url, c.name) for c in doc.citations]
    assert got == [
        (6, "cite news", "http://n.org", "a"),
        (14, "cite news", "http://n.org", "a"),
        (21, "cite news", "http://n.org", "a"),
        (21, "bare url", "http://b.org", "b"),
        (29, "bare url", "http://b.org", "b"),
    ]


def test_list_defined_references_are_definitions_not_citations():
    wt = (
        "Claim.<ref name=\"x\"/>\n== Notes ==\n<references>\n<ref name=\"x\">{{cite web|url=http://x.org|title=X}}</ref>\n"
        "</references>\n{{reflist|refs=<ref name=\"y\">http://y.org</ref>}}"
    )
    doc = clean(wt)
    assert doc.text == "Claim."
    assert [(c.position, c.url) for c in doc.citations] == [(6, "http://x.org")]


def test_citation_position_clamps_before_whitespace_and_groups():
    wt = "One two. <ref>a</ref> <ref>b</ref>\nNew paragraph,<ref>c</ref> more.\n<ref>d</ref>\nLast."
    doc = clean(wt)
    assert doc.text == "One two.\nNew paragraph, more.\nLast."
    assert [c.position for c in doc.citations] == [8, 8, 23, 29]
    assert [c.raw for c in doc.citations] == ["a", "b", "c", "d"]


def test_cite_templates_outside_refs_are_not_citations_but_sfn_is():
    wt = "Claim one.{{sfn|Smith|2001|p=3}} Claim two.\n* {{cite book|title=Listed|url=http://l.org}}"
    doc = clean(wt)
    assert doc.text == "Claim one. Claim two."
    assert [(c.position, c.template, c.raw) for c in doc.citations] == [(10, "sfn", "{{sfn|Smith|2001|p=3}}")]


def test_raw_is_capped():
    doc = clean("X.<ref>" + "word " * 1000 + "</ref>")
    assert len(doc.citations[0].raw) == 1000


def test_refs_inside_templates_are_dropped_with_them():
    doc = clean("{{Infobox|pop=5<ref>{{cite web|url=http://i.org}}</ref>}}Text.<ref>t</ref>")
    assert doc.text == "Text."
    assert [c.raw for c in doc.citations] == ["t"]


# --------------------------------------------------------------------------- disambiguation


@pytest.mark.parametrize(
    "wikitext,expected",
    [
        ("'''X''' may refer to:\n* [[X (band)]]\n{{disambiguation}}", True),
        ("X\n{{Disambig|geo}}", True),
        ("X\n{{dab}}", True),
        ("X\n{{hndis|Smith, John}}", True),
        ("X\n{{Place_name disambiguation}}", True),
        ("X\n{{Template:Geodis}}", True),
        ("X[[Y]]{{disambiguation needed|date=May 2020}}", False),
        ("X {{surname}}", False),
        ("Plain article about [[disambiguation]].", False),
    ],
)
def test_is_disambiguation(wikitext, expected):
    assert clean(wikitext).is_disambiguation is expected


# --------------------------------------------------------------------------- robustness


@pytest.mark.parametrize(
    "wikitext",
    [
        "{{unclosed template [[Link]] and text",
        "text }} stray }}} closers ]] and [[ openers",
        "{{{{{{{{ deep",
        "[[File:x.jpg|thumb|[[unclosed caption",
        "{| table never closed\n| cell\n! head\nProse after.",
        "<ref>never closed ref",
        "<ref name=\"x\"/> only a reuse without definition",
        "== heading without end\n=\n===\n======",
        "[http://unclosed.org label",
        "<math>unclosed math",
        "&#983040; &#1114109; &#xF0000; fake markers",
        "\U000f0001\U0010fffd raw marker chars \U00100000",
        "",
        "''''''''",
    ],
)
def test_unbalanced_markup_never_raises(wikitext):
    doc = clean(wikitext)
    for token in ("{{", "}}", "[[", "]]"):
        assert token not in doc.text


def test_unclosed_template_keeps_following_text():
    doc = clean("{{Infobox broken\nReal [[prose]] here.")
    assert doc.text == "Infobox broken\nReal prose here."
    assert anchors(doc) == [("prose", "Prose")]


def test_unclosed_table_drops_only_table_rows():
    assert clean("Start.\n{| class=x\n|-\n| cell || cell2\n! head\nProse after.").text == "Start.\nProse after."


def test_random_markup_soup_is_total():
    rng = random.Random(1234)
    pieces = [
        "{{", "}}", "{{{", "}}}", "[[", "]]", "|", "{|", "|}", "\n", "<ref>", "</ref>", "<ref name=a/>",
        "<ref name=a>", "''", "'''", "=", "==", "*", "#", ":", ";", "<!--", "-->", "http://x.y", "[", "]",
        "foo", "Bar", " ", "File:", "Category:", "fr:", "#", "&amp;", "&nbsp;", "<math>", "</math>",
        "<nowiki>", "</nowiki>", "s", "<br>", "{{sfn|a}}", "__TOC__", "\t", "é",
    ]
    for _ in range(400):
        wt = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 80)))
        check_invariants(clean_wikitext(wt, NS))


def test_non_string_input_does_not_raise():
    assert clean_wikitext(None, NS).text == ""  # type: ignore[arg-type]


# --------------------------------------------------------------------------- real dumps


def read_dump(path: Path) -> tuple[Namespaces, list[dict]]:
    if not path.exists():
        pytest.skip(f"{path} is not available")
    namespaces = Namespaces()
    pages = []
    with bz2.open(path) as f:
        for _event, el in ET.iterparse(f, events=("end",)):
            tag = el.tag.rsplit("}", 1)[-1]
            if tag == "namespace":
                namespaces.add(el.text or "", int(el.get("key")))
            elif tag == "page":
                page = {"redirect": None}
                for child in el.iter():
                    name = child.tag.rsplit("}", 1)[-1]
                    if name in ("title", "ns", "text") and name not in page:
                        page[name] = child.text or ""
                    elif name == "redirect":
                        page["redirect"] = child.get("title")
                pages.append(page)
                el.clear()
    return namespaces, pages


@pytest.fixture(scope="module")
def enwiki():
    namespaces, pages = read_dump(ENWIKI)
    articles = {p["title"]: p["text"] for p in pages if p["redirect"] is None and p["ns"] == "0"}
    docs = {title: clean_wikitext(text, namespaces) for title, text in articles.items()}
    return articles, docs


def test_enwiki_sample_has_106_articles_without_markup_left(enwiki):
    articles, docs = enwiki
    assert len(docs) == 106
    leftover = re.compile(r"\{\{|\}\}|\[\[|\]\]|<ref|\|\}|\{\||^[|!]|\|\||thumb\|", re.M | re.I)
    for title, doc in docs.items():
        check_invariants(doc)
        assert not leftover.search(doc.text), (title, leftover.search(doc.text))
        assert len(doc.text) > 300, title


def test_enwiki_anarchism(enwiki):
    _articles, docs = enwiki
    doc = docs["Anarchism"]
    assert doc.text.startswith("Anarchism is a political philosophy that advocates self-governed societies")
    got = anchors(doc)
    # from [[self-governance|self-governed]], [[state (polity)|state]] and the trail in [[strikebreaker]]s
    assert ("self-governed", "Self-governance") in got
    assert ("state", "State (polity)") in got
    assert ("strikebreakers", "Strikebreaker") in got
    titles = [s.title for s in doc.sections]
    assert titles[:4] == ["", "Etymology and terminology", "History", "Origins"]
    history = doc.sections[titles.index("History")]
    assert doc.text[history.start :].startswith("The earliest anarchist themes can be found in the 6th century BC")
    # 303 <ref>...</ref> definitions (166 with a URL) and 56 reuses in the raw wikitext
    assert 340 <= len(doc.citations) <= 359
    assert sum(c.url is not None for c in doc.citations) >= 180
    iaf = [c for c in doc.citations if c.name == "iaf-ifa.org"]
    assert len(iaf) >= 2 and all(c.url == "http://www.iaf-ifa.org/principles/english.html" for c in iaf)
    assert all(c.template == "cite web" for c in iaf)
    # "...based on non-[[Hierarchy|hierarchical]] [[Free association ...|free associations]].<ref>"
    first = doc.text.index("free associations.") + len("free associations.")
    assert iaf[0].position == first
    assert not doc.is_disambiguation


def test_enwiki_disambiguation_pages(enwiki):
    _articles, docs = enwiki
    dabs = sorted(t for t, d in docs.items() if d.is_disambiguation)
    assert dabs == [
        "Aa River", "Aberdeen (disambiguation)", "Ada", "Alien", "Animal (disambiguation)",
        "Argument (disambiguation)", "Asia Minor (disambiguation)", "Austin (disambiguation)",
    ]


def test_table_markup_sample_has_no_cell_content():
    namespaces, pages = read_dump(TABLES)
    docs = {p["title"]: clean_wikitext(p["text"], namespaces) for p in pages}
    assert len(docs) == 5
    for title, doc in docs.items():
        check_invariants(doc)
        for line in doc.text.split("\n"):
            assert not line.startswith(("|", "!")) and "||" not in line, (title, line)
        for cell in ("wikitable", "style=", "FFF8DC", "1,213.4", "align=left"):
            assert cell not in doc.text, (title, cell)
    estonia = docs["Economy of Estonia"].text
    assert "In 2016, the 10 largest companies by revenue were Ericsson Eesti, Tallink" in estonia


def test_bulgarian_sample():
    namespaces, pages = read_dump(BGWIKI)
    docs = {p["title"]: clean_wikitext(p["text"], namespaces) for p in pages}
    assert len(docs) == 3
    for doc in docs.values():
        check_invariants(doc)
        assert not re.search(r"File:|Файл:|Картинка:|thumb\||мини\|", doc.text)
    doc = docs["Григориански календар"]
    assert doc.text.startswith("Григорианският календар (понякога наричан и Грегориански календар")
    assert ("светски", "Светски") in anchors(doc)
    # caption of [[File:Christopher Clavius.jpg|thumb|Йезуитът [[Христофор Клавий]] ...]]
    assert "Йезуитът" not in doc.text
    assert "Христофор Клавий" not in [t for _a, t in anchors(doc)]
    assert doc.dropped_links["namespace"] >= 5
    assert doc.citations and doc.citations[0].template == "cite web"
    assert doc.citations[0].url.startswith("http://www.usno.navy.mil/")


def test_citation_on_its_own_line():
    doc = clean("Para one.\n<ref>a</ref>\n== Head ==\n<ref>b</ref>\nBody text.")
    assert doc.text == "Para one.\nBody text."
    assert doc.sections == [Section(0, ""), Section(10, "Head")]
    assert [(c.position, c.raw) for c in doc.citations] == [(9, "a"), (10, "b")]


def test_punctuation_stranded_by_removed_templates():
    wt = ("Phoebus ({{IPAc-en|x}}; {{respell|y}}, Phoibos) is from Greek {{unknown|z}}, i.e. ( {{unknown}} 292). "
          "Call <code>f()</code>.")
    assert clean(wt).text == "Phoebus (Phoibos) is from Greek, i.e. (292). Call f()."
    assert clean("Foo ({{unknown|3|km}}) bar.").text == "Foo bar."
    # several dropped pronunciations and a citation in the brackets: the citation stays
    wt = "Andorra ({{IPAc-en|æ|n}}; {{IPA-ca|ənˈdorə|lang}}, {{IPA-ca|anˈdɔra|local}}<ref>r</ref>), officially"
    doc = clean(wt)
    assert doc.text == "Andorra, officially" and [c.position for c in doc.citations] == [7]
    wt = "Adobe ({{IPAc-en|US|ə}}, {{IPAc-en|UK|ə}};<ref>r</ref> {{IPA-es|aˈðoβe|lang}}, from Spanish) is"
    doc = clean(wt)
    assert doc.text == "Adobe (from Spanish) is" and [c.position for c in doc.citations] == [7]


# --------------------------------------------------------------------------- templates with visible text


@pytest.mark.parametrize("wikitext, expected", [
    ("At {{convert|52|mi|km}}, Alabama", "At 52 miles, Alabama"),
    ("an area of {{convert|2381741|km2|sqmi}}", "an area of 2,381,741 square kilometres"),
    ("{{convert|1|mi|km}} long", "1 mile long"),
    ("{{convert|52|mi|km|abbr=on}}", "52 mi"),
    ("a {{convert|52|mi|km|adj=on}} road", "a 52-mile road"),
    ("{{convert|10|to|20|km}}", "10 to 20 kilometres"),
    ("{{convert|10|-|20|km|abbr=on}}", "10–20 km"),
    ("{{convert|10|and|20|m}}", "10 and 20 metres"),
    ("{{cvt|5|ft|6|in|m}}", "5 feet 6 inches"),
    ("{{convert|100|koilbbl/d|m3/d}}", "100 thousand barrels per day"),
    ("{{convert|70|F|C|abbr=on}}", "70°F"),
    ("{{convert|3|qux}}", "3 qux"),
    ("{{convert|5|m|sp=us}}", "5 meters"),
    ("{{convert|5|ST|t}} or {{convert|5|st|kg}}", "5 short tons or 5 stone"),  # unit codes are case-sensitive
    ("{{convert|3|e6acre|ha}}", "3 million acres"),
])
def test_convert_gives_value_and_unit(wikitext, expected):
    assert clean(wikitext).text == expected


@pytest.mark.parametrize("wikitext, expected", [
    ("from {{lang|grc|ἄναρχος}}, anarchos", "from ἄναρχος, anarchos"),
    ("({{lang-fr|République française}})", "(République française)"),
    ("{{lang-grc-gre|Ἀριστοτέλης}}", "Ἀριστοτέλης"),
    ("''{{transl|ar|ALA|Allāh}}''", "Allāh"),
    ("{{Nihongo|'''Aikido'''|合気道|Aikidō}} is", "Aikido (合気道, Aikidō) is"),
    ("the vowel {{IPA|/a/}}, and", "the vowel /a/, and"),
    ("{{nowrap|Alisa Rosenbaum}} {{nobr|x y}} {{small|(1832)}}", "Alisa Rosenbaum x y (1832)"),
    ("{{as of|2014}}, the", "As of 2014, the"),
    ("diagnosed {{as of|2014|lc=y}}", "diagnosed as of 2014"),
    ("{{as of|2010|5|3}}", "As of 3 May 2010"),
    ("({{circa|3000}} BC)", "(c. 3000 BC)"),
    ("cost {{US$|5}}, {{£|5}}, {{€|7}} or {{currency|9|GBP}}", "cost US$5, £5, €7 or £9"),
    ("born {{birth date|1809|2|12}}", "born February 12, 1809"),
    ("born {{birth date|df=yes|1894|7|26}}", "born 26 July 1894"),
    ("on {{start date|1990|5}}", "on May 1990"),
    ("died {{death date and age|1865|4|15|1809|2|12}}", "died April 15, 1865 (aged 56)"),
    ("5.98{{e|24}} kg", "5.98×10^24 kg"),
    ("{{chem|H|2|O}} and {{frac|3|2}}", "H2O and 3/2"),
    ("the letter {{angbr|a}}", "the letter ⟨a⟩"),
    ("on 15{{nbsp}}September", "on 15 September"),
    ("1775{{ndash}}1783", "1775–1783"),
    ("{{nowrap|{{convert|5|km}} from [[Paris]]}}", "5 kilometres from Paris"),
    ("the {{USS|Enterprise|CV-6}}", "the USS Enterprise (CV-6)"),
    ("{{SimpleNuclide2|lithium|7}}", "lithium-7"),
])
def test_templates_that_carry_words_are_rendered(wikitext, expected):
    assert clean(wikitext).text == expected


def test_rendered_templates_keep_links_and_citations():
    doc = clean("From {{lang|fr|[[Paris|la ville]]}} at {{convert|5|km}}{{sfn|Smith|2000}}.")
    assert doc.text == "From la ville at 5 kilometres."
    assert anchors(doc) == [("la ville", "Paris")]
    assert [(c.position, c.template) for c in doc.citations] == [(len("From la ville at 5 kilometres"), "sfn")]


def test_a_renderer_is_one_line_to_register(monkeypatch):
    from pretriever.corpus import templates

    assert clean("Say {{shout|hi}}.").text == "Say."
    monkeypatch.setitem(templates.RENDERERS, "shout", lambda a: a.get(1).upper())
    assert clean("Say {{shout|hi}}.").text == "Say HI."


@pytest.mark.parametrize("wikitext, ours", [
    ("At {{convert|52|mi|km}}, Alabama.", "At 52 miles, Alabama."),
    ("From {{lang|fr|mot}}.", "From mot."),
    ("{{as of|2014}}, yes.", "As of 2014, yes."),
    ("{{nowrap|a b}} c.", "a b c."),
])
def test_wikiextractor_leaves_the_holes_we_fill(wikitext, ours):
    """WikiExtractor 3.1, given no template pages (as with the sample dump), drops these words."""
    extract = pytest.importorskip("wikiextractor.extract")
    theirs = " ".join(extract.Extractor(1, 1, "", "Page", [wikitext]).clean_text(wikitext)).strip()
    assert clean(wikitext).text == ours
    assert theirs != ours and len(theirs) < len(ours)
