"""Input formats for plain collections (BEIR, JSONL, DPR TSV) and WikiExtractor output."""

from __future__ import annotations

import bz2
import gzip
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ENWIKI, SCIFACT
from pretriever.corpus.formats import detect_format
from pretriever.corpus.formats.base import read_head
from pretriever.corpus.formats.plain import BeirFormat, DprTsvFormat, JsonlFormat
from pretriever.corpus.formats.wikiextractor import WikiExtractorFormat
from pretriever.corpus.model import GivenPassage, InputError, PageError, ParsedPage

SCIFACT_CORPUS = SCIFACT / "corpus.jsonl"
MINE = (BeirFormat, JsonlFormat, DprTsvFormat, WikiExtractorFormat)


def parse_all(fmt) -> list:
    """Every parse result of an input, through chunks as the builder does it."""
    context = fmt.context()
    return [result for chunk in fmt.iter_chunks(7) for result in type(fmt).parse_chunk(chunk, context)]


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(*objects) -> str:
    return "".join(json.dumps(obj) + "\n" for obj in objects)


# --- BEIR ---------------------------------------------------------------------------


@pytest.mark.skipif(not SCIFACT_CORPUS.exists(), reason="shared/data/beir/scifact not present")
def test_beir_scifact_real():
    cls = detect_format(SCIFACT_CORPUS)
    assert cls is BeirFormat
    results = parse_all(cls(SCIFACT_CORPUS))
    assert len(results) == 5183
    assert all(isinstance(r, ParsedPage) for r in results)
    assert len({r.doc_id for r in results}) == 5183
    by_id = {r.doc_id: r for r in results}
    doc = by_id["4983"]
    assert doc.title == (
        "Microstructural development of human newborn cerebral white matter assessed in vivo "
        "by diffusion tensor magnetic resonance imaging."
    )
    assert doc.document.text.startswith("Alterations of the architecture of cerebral white matter")
    assert doc.namespace == 0 and doc.redirect_to is None
    assert BeirFormat.default_words == 0


@pytest.mark.skipif(not SCIFACT_CORPUS.exists(), reason="shared/data/beir/scifact not present")
def test_beir_scifact_dataset_folder():
    assert detect_format(SCIFACT_CORPUS.parent) is BeirFormat
    fmt = BeirFormat(SCIFACT_CORPUS.parent)
    assert fmt.path == SCIFACT_CORPUS
    assert sum(1 for _ in fmt.iter_items()) == 5183


def test_beir_folder_input_and_fields(tmp_path):
    folder = tmp_path / "mini"
    folder.mkdir()
    write(folder / "queries.jsonl", jsonl({"_id": "q1", "text": "a query"}))
    write(
        folder / "corpus.jsonl",
        jsonl(
            {"_id": "d1", "title": "  Padded title ", "text": "First text.", "metadata": {"x": 1}},
            {"_id": 42, "text": "No title here."},
            {"_id": "d3", "title": "lower_case_title", "text": ""},
        ),
    )
    cls = detect_format(folder)
    assert cls is BeirFormat
    pages = parse_all(cls(folder))
    assert [(p.doc_id, p.title, p.document.text) for p in pages] == [
        ("d1", "Padded title", "First text."),
        ("42", "", "No title here."),
        ("d3", "lower_case_title", ""),  # plain titles are not wiki-normalised; empty text is no error
    ]
    assert pages[0].document.sections[0].start == 0 and pages[0].document.sections[0].title == ""
    assert pages[0].document.links == [] and pages[0].document.given_passages is None


def test_beir_missing_field_names_line_and_field(tmp_path):
    path = write(
        tmp_path / "corpus.jsonl",
        jsonl({"_id": "a", "title": "A", "text": "x"}) + "\n" + jsonl({"_id": "b", "title": "B"}),
    )
    items = list(BeirFormat(path).iter_items())
    assert [item[1] for item in items] == [1, 3]  # the blank line 2 is skipped but counted
    with pytest.raises(PageError) as err:
        BeirFormat.parse_item(items[1], None)
    assert err.value.where == "corpus.jsonl line 3"
    assert str(err.value) == 'corpus.jsonl line 3: missing field "text" (expected "_id", "title", "text")'
    # through parse_chunk the failure keeps what identify could tell
    results = parse_all(BeirFormat(path))
    assert isinstance(results[0], ParsedPage)
    failure = results[1]
    assert (failure.doc_id, failure.title, failure.where) == ("b", "B", "corpus.jsonl line 3")
    assert 'missing field "text"' in failure.reason


# --- generic JSONL ----------------------------------------------------------------


def test_generic_jsonl(tmp_path):
    path = write(
        tmp_path / "docs.jsonl",
        jsonl(
            {"id": "x1", "title": "Alpha", "text": "Alpha text.", "extra": [1, 2]},
            {"id": 7, "text": "Untitled."},
        ),
    )
    cls = detect_format(path)
    assert cls is JsonlFormat
    assert cls.default_words == 100
    pages = parse_all(cls(path))
    assert [(p.doc_id, p.title, p.document.text) for p in pages] == [
        ("x1", "Alpha", "Alpha text."),
        ("7", "", "Untitled."),
    ]


def test_gzip_jsonl(tmp_path):
    path = tmp_path / "docs.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.write(jsonl({"id": "g1", "title": "Gz", "text": "zipped"}, {"id": "g2", "text": "two"}))
    assert detect_format(path) is JsonlFormat
    pages = parse_all(JsonlFormat(path))
    assert [(p.doc_id, p.document.text) for p in pages] == [("g1", "zipped"), ("g2", "two")]


def test_invalid_json_line(tmp_path):
    path = write(tmp_path / "docs.jsonl", jsonl({"id": "1", "text": "ok"}) + '{"id": "2", "text": oops}\n')
    results = parse_all(JsonlFormat(path))
    assert isinstance(results[0], ParsedPage)
    failure = results[1]
    assert failure.where == "docs.jsonl line 2"
    assert failure.reason.startswith("invalid JSON (Expecting value")
    assert failure.doc_id == "2"


def test_json_line_not_an_object_and_bad_id(tmp_path):
    path = write(tmp_path / "docs.jsonl", jsonl({"id": "1", "text": "ok"}, [1, 2], {"id": None, "text": "t"}))
    results = parse_all(JsonlFormat(path))
    assert results[1].where == "docs.jsonl line 2" and "found a JSON list" in results[1].reason
    assert results[2].where == "docs.jsonl line 3" and 'field "id" must be a string or an integer' in results[2].reason


def test_invalid_utf8_line(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_bytes(b'{"id": "1", "text": "ok"}\n{"id": "2", "text": "bad \xff byte"}\n')
    results = parse_all(JsonlFormat(path))
    assert isinstance(results[0], ParsedPage)
    assert results[1].where == "docs.jsonl line 2"
    assert results[1].reason.startswith("invalid UTF-8")


def test_truncated_gzip_is_input_error(tmp_path):
    data = gzip.compress(jsonl(*({"id": str(i), "text": "w " * 50} for i in range(200))).encode())
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="unreadable after line"):
        list(JsonlFormat(path).iter_items())


def test_undetectable_input(tmp_path):
    text = write(tmp_path / "notes.txt", "just some prose\nover two lines\n")
    with pytest.raises(InputError, match="cannot tell the input format"):
        detect_format(text)
    no_text = write(tmp_path / "other.jsonl", jsonl({"id": "1", "contents": "pyserini style"}))
    with pytest.raises(InputError, match="cannot tell the input format"):
        detect_format(no_text)
    empty_folder = tmp_path / "empty"
    empty_folder.mkdir()
    with pytest.raises(InputError, match="no input files"):
        detect_format(empty_folder)


def test_sniffs_are_mutually_exclusive(tmp_path):
    samples = {
        "beir": jsonl({"_id": "1", "title": "t", "text": "x", "url": "u"}),
        "jsonl": jsonl({"id": "1", "title": "t", "text": "x", "url": "https://example.org/doc"}),
        "wikiextractor": jsonl(
            {"id": "12", "revid": "1", "url": "https://en.wikipedia.org/wiki?curid=12", "title": "T", "text": "x"}
        ),
        "dpr-tsv": 'id\ttext\ttitle\n1\t"Aaron Aaron"\tAaron\n',
    }
    for expected, content in samples.items():
        path = write(tmp_path / f"{expected}.data", content)
        head = read_head(path)
        assert [cls.name for cls in MINE if cls.sniff(path, head)] == [expected]
    # a line longer than the sniffed head is still recognised by its leading keys
    long = write(tmp_path / "long.jsonl", jsonl({"_id": "1", "title": "t", "text": "word " * 5000}))
    assert [cls.name for cls in MINE if cls.sniff(long, read_head(long))] == ["beir"]


# --- DPR TSV ------------------------------------------------------------------------

DPR_SAMPLE = (
    "id\ttext\ttitle\n"
    '1\t"Aaron Aaron ( or ; ""Ahärôn"") is a prophet"\tAaron\n'
    "2\tsecond passage of Aaron\tAaron\n"
    '3\t"Text with a tab\tinside"\tAbel\n'
)


def test_dpr_tsv_groups_and_given_passages(tmp_path):
    path = write(tmp_path / "psgs_w100.tsv", DPR_SAMPLE)
    cls = detect_format(path)
    assert cls is DprTsvFormat
    fmt = cls(path)
    groups = list(fmt.iter_items())
    assert [[row[1] for row in group] for group in groups] == [[2, 3], [4]]  # line numbers
    # a chunk of one item holds a whole document: chunks never split the Aaron rows
    assert [len(chunk.items[0]) for chunk in fmt.iter_chunks(1)] == [2, 1]

    aaron, abel = parse_all(fmt)
    first = 'Aaron Aaron ( or ; "Ahärôn") is a prophet'
    assert aaron.doc_id == "1" and aaron.title == "Aaron"
    assert aaron.document.text == first + "\nsecond passage of Aaron"
    assert aaron.document.given_passages == [
        GivenPassage("1", 0, len(first)),
        GivenPassage("2", len(first) + 1, len(aaron.document.text)),
    ]
    for given, expected in zip(aaron.document.given_passages, [first, "second passage of Aaron"]):
        assert aaron.document.text[given.start:given.end] == expected
    assert abel.doc_id == "3" and abel.document.text == "Text with a tab\tinside"
    assert abel.document.given_passages == [GivenPassage("3", 0, 22)]
    assert DprTsvFormat.default_words == 0


def test_dpr_tsv_rows_without_a_title_are_documents_of_their_own(tmp_path):
    """A passages-only TSV (the title column empty, as MS MARCO passages have none) is not one document of every
    row: each untitled row is its own, so judgments and pseudo-queries name one passage."""
    path = write(tmp_path / "psgs.tsv", "id\ttext\ttitle\n1\tfirst\t\n2\tsecond\t\n3\tthird\tT\n4\tfourth\tT\n")
    pages = parse_all(DprTsvFormat(path))
    assert [(p.doc_id, p.title, p.document.text) for p in pages] == [
        ("1", "", "first"), ("2", "", "second"), ("3", "T", "third\nfourth")]


def test_dpr_tsv_bz2_and_malformed_row(tmp_path):
    path = tmp_path / "psgs.tsv.bz2"
    path.write_bytes(bz2.compress((DPR_SAMPLE + "4\tonly two fields\n\n5\tfine\tCain\n").encode()))
    assert detect_format(path) is DprTsvFormat
    results = parse_all(DprTsvFormat(path))
    assert [type(r).__name__ for r in results] == ["ParsedPage", "ParsedPage", "PageFailure", "ParsedPage"]
    failure = results[2]
    assert failure.where == "psgs.tsv.bz2 line 5"
    assert failure.reason == "expected 3 tab-separated fields (id, text, title), found 2"
    assert failure.doc_id == "4"
    assert (results[3].doc_id, results[3].title, results[3].document.text) == ("5", "Cain", "fine")


def test_dpr_tsv_invalid_utf8(tmp_path):
    path = tmp_path / "psgs.tsv"
    path.write_bytes(b"id\ttext\ttitle\n1\tgood\tA\n2\tbad \xfe\tB\n")
    ok, bad = parse_all(DprTsvFormat(path))
    assert ok.document.text == "good"
    assert bad.where == "psgs.tsv line 3" and bad.reason == "invalid UTF-8 in the row"


# --- WikiExtractor --------------------------------------------------------------------


def test_wikiextractor_handwritten(tmp_path):
    text = (
        'The &lt;a href="political%20philosophy"&gt;political philosophy&lt;/a&gt; of AT&amp;T '
        '(&lt;a href="wikt%3Aanarchism"&gt;anarchism&lt;/a&gt;, '
        '&lt;a href="%23History"&gt;history&lt;/a&gt;, '
        '&lt;a href="http%3A//example.org/x"&gt;site&lt;/a&gt;, '
        '&lt;a href="Category%3AThings"&gt;things&lt;/a&gt;).\n'
        'Second paragraph: &lt;a href="Ba%C3%B1o%23Section"&gt;ba&lt;/a&gt;ños x &lt;10.'
    )
    line = {"id": "12", "revid": "9", "url": "https://en.wikipedia.org/wiki?curid=12",
            "title": "some_page", "text": text}
    path = write(tmp_path / "wiki_00", jsonl(line))
    assert detect_format(path) is WikiExtractorFormat
    (page,) = parse_all(WikiExtractorFormat(path))
    assert page.doc_id == "12" and page.title == "Some page" and page.namespace == 0
    doc = page.document
    assert doc.text == (
        "The political philosophy of AT&T (anarchism, history, site, things).\n"
        "Second paragraph: baños x <10."
    )
    assert [(doc.text[link.start:link.end], link.target) for link in doc.links] == [
        ("political philosophy", "Political philosophy"),
        ("ba", "Baño"),
    ]
    assert dict(doc.dropped_links) == {"interwiki": 1, "section": 1, "external": 1, "namespace": 1}
    assert WikiExtractorFormat.has_links is True and WikiExtractorFormat.default_words == 100


def test_wikiextractor_title_line_dropped(tmp_path):
    line = {"id": "5", "revid": "1", "url": "u?curid=5", "title": "Cats & dogs",
            "text": "Cats &amp; dogs\n\nBody &lt;a href=\"pet\"&gt;pets&lt;/a&gt;."}
    path = write(tmp_path / "wiki_00", jsonl(line))
    (page,) = parse_all(WikiExtractorFormat(path))
    assert page.document.text == "Body pets."
    assert [(l.start, l.end, l.target) for l in page.document.links] == [(5, 9, "Pet")]


@pytest.mark.skipif(importlib.util.find_spec("wikiextractor") is None, reason="wikiextractor not installed")
@pytest.mark.skipif(not ENWIKI.exists(), reason="shared enwiki sample not present")
def test_wikiextractor_real_output(tmp_path):
    out = tmp_path / "wx"
    subprocess.run(
        [sys.executable, "-m", "wikiextractor.WikiExtractor", "--links", "--json", "--processes", "2",
         "-q", "-o", str(out), str(ENWIKI)],
        check=True, capture_output=True, timeout=300,
    )
    assert detect_format(out) is WikiExtractorFormat
    assert detect_format(out / "AA" / "wiki_00") is WikiExtractorFormat
    results = parse_all(WikiExtractorFormat(out))
    assert len(results) == 106
    assert all(isinstance(r, ParsedPage) for r in results)
    anarchism = next(r for r in results if r.title == "Anarchism")
    assert anarchism.doc_id == "12"
    text = anarchism.document.text
    assert text.startswith("Anarchism is a political philosophy that advocates self-governed societies")
    assert "&lt;" not in text and "<a href" not in text
    link = next(l for l in anarchism.document.links if text[l.start:l.end] == "political philosophy")
    assert link.target == "Political philosophy"
    assert (link.start, link.end) == (15, 35)
    # headings stay in the text as lines; wikt: links are dropped as interwiki
    assert "\nEtymology and terminology.\n" in text
    assert anarchism.document.dropped_links["interwiki"] >= 1
    for page in results:
        for l in page.document.links:
            assert page.document.text[l.start:l.end].strip() == page.document.text[l.start:l.end] != ""
    assert sum(len(r.document.links) for r in results) > 15000
