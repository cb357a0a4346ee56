"""The page at / in headless Chromium (Debian's `chromium`, driven by Playwright): search side by side,
the pair browser with its method filter and highlights (anchors, QAC answers), the judged-query view,
the answer box with a reader, and the page's hardening (issue 24): a malformed address, the histogram at
400 px, the Pairs tab clicked twice, pagers with nothing to page, ids holding "/"; Swagger UI at /docs
(issue 37). No page may throw an uncaught error or break its Content-Security-Policy. Screenshots go to docs/img/ when PRETRIEVER_SCREENSHOTS=1:

    PRETRIEVER_SCREENSHOTS=1 pytest tests/test_serve_browser.py
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import pytest

from serve_fixtures import running
from pretriever.data import CorpusStore
from pretriever.index import BM25Index, IndexConfig, encode
from pretriever.serve import ServeConfig

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SHOTS = Path(__file__).resolve().parents[1] / "docs" / "img"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip("Debian chromium is not installed (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def base_url(served):
    with running(served.config(), served.engine) as url:
        yield url


@contextmanager
def tab(browser, url: str, width: int, height: int = 1000):
    """A page opened at ``url``; when the test is done with it, no script error went uncaught and nothing
    broke the Content-Security-Policy."""
    page = browser.new_page(viewport={"width": width, "height": height})
    problems: list[str] = []
    page.on("pageerror", lambda err: problems.append(f"uncaught: {err}"))
    page.on("console", lambda msg: problems.append(msg.text) if "Content Security Policy" in msg.text else None)
    try:
        page.goto(url)
        yield page
    finally:
        page.close()
    assert problems == []


def shot(page, name: str) -> None:
    if os.environ.get("PRETRIEVER_SCREENSHOTS"):
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / name), full_page=False)


@pytest.mark.parametrize("width", [1280, 400])
def test_search_shows_three_systems_side_by_side(browser, base_url, width):
    with tab(browser, base_url + "/", width, 900) as page:
        _search_side_by_side(page, width)


def _search_side_by_side(page, width: int) -> None:
    page.wait_for_function("() => document.querySelector('#info').textContent.includes('passages')")
    page.keyboard.press("/")  # the keyboard reaches the search box
    page.keyboard.type("Albendazole is used to treat lymphatic filariasis.")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelectorAll('#results .column .hit').length >= 3", timeout=60000)
    columns = page.locator("#results .column")
    assert columns.count() == 3
    assert [columns.nth(i).locator("h2").inner_text().split()[0].lower() for i in range(3)] == ["dense", "bm25", "hybrid"]
    for i in range(3):  # the judged document is first in every system
        assert "#1 · 1215116" in columns.nth(i).locator(".hit").first.inner_text()
    boxes = [columns.nth(i).bounding_box() for i in range(3)]
    if width == 1280:
        assert boxes[0]["y"] == boxes[1]["y"] == boxes[2]["y"] and boxes[0]["x"] < boxes[1]["x"] < boxes[2]["x"]
    else:  # stacked, each as wide as the screen allows
        assert boxes[0]["y"] < boxes[1]["y"] < boxes[2]["y"] and all(b["width"] <= width for b in boxes)
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # no sideways scrolling
    shot(page, f"serve-search-{width}.png")


@pytest.mark.parametrize("width", [1280, 400])
def test_pairs_filter_by_method_with_highlights(browser, base_url, width):
    with tab(browser, base_url + "/#pairs", width) as page:
        _pairs_by_method(page, width)


def _pairs_by_method(page, width: int) -> None:
    page.wait_for_selector("#pair-list .pair")
    assert page.locator("#histogram svg rect").count() > 20  # the overlap histogram is drawn
    fit = page.evaluate("""() => {
        const card = document.querySelector('#histogram'), svg = card.querySelector('svg');
        const c = card.getBoundingClientRect(), s = svg.getBoundingClientRect();
        return {inside: s.left >= c.left - 0.5 && s.right <= c.right + 0.5,
                scrolls: card.scrollWidth > card.clientWidth, scale: s.width / svg.viewBox.baseVal.width}; }""")
    assert fit["inside"] and not fit["scrolls"]  # the histogram fits its card, at 400 px too
    assert fit["scale"] >= 0.9  # and its text is not shrunk to fit
    page.select_option("#method", "cm")
    page.wait_for_function("() => document.querySelector('#pair-list .pair h3').textContent.startsWith('CM')")
    first = page.locator("#pair-list .pair").first
    assert first.locator(".reason").inner_text().startswith("co-mention")
    assert first.locator("mark.query_anchor").count() == 1
    assert first.locator("mark.back_anchor").count() == 1 and first.locator("mark.entity_anchor").count() == 1
    assert "of 5" in page.locator("#pageinfo").inner_text()  # 22 CM pairs, 5 a page
    page.click("#next")
    page.wait_for_function("() => document.querySelector('#pageinfo').textContent.startsWith('page 2')")
    page.locator("#pair-list .pair .side a").first.click()  # a link to the query's passage opens it
    page.wait_for_selector("#passage[open]")
    assert page.locator("#passage-text").inner_text()
    page.keyboard.press("Escape")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    shot(page, f"serve-pairs-{width}.png")


def test_judged_query_view_marks_relevant_hits(browser, base_url):
    with tab(browser, base_url + "/#judged", 1280) as page:
        _judged_compare(page)


def _judged_compare(page) -> None:
    page.wait_for_selector("#judged-list li button")
    assert page.locator("#qprev").is_disabled() and page.locator("#qnext").is_enabled()  # page 1 of 15
    button = page.locator("#judged-list li button", has_text="94: Albendazole")
    if button.count() == 0:  # query 94 is on a later page of the 300 judged queries
        while page.locator("#judged-list li button", has_text="94: Albendazole").count() == 0:
            page.click("#qnext")
            page.wait_for_timeout(100)
        button = page.locator("#judged-list li button", has_text="94: Albendazole")
    button.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#compare .hit.relevant")
    assert page.locator("#compare .column").count() == 2
    assert page.locator("#compare .hit.relevant").count() == 2  # document 1215116 in both systems
    assert "1 of 1 relevant" in page.locator("#judged-status").inner_text()
    shot(page, "serve-judged-1280.png")


def test_qac_pairs_highlight_the_answer_and_the_question_word(browser, served):
    with running(served.config(pairs=served.evidence_pairs), served.engine) as url, \
            tab(browser, url + "/#pairs", 1280) as page:
        page.wait_for_selector("#pair-list .pair")
        page.select_option("#method", "qac")
        page.wait_for_function("() => document.querySelector('#pair-list .pair h3').textContent.startsWith('QAC')")
        for i in range(page.locator("#pair-list .pair").count()):
            pair = page.locator("#pair-list .pair").nth(i)
            assert pair.locator(".reason").first.inner_text().startswith("question-answer-context")
            answer = pair.locator("mark.answer")
            assert answer.count() == 1 and answer.inner_text() in pair.locator(".reason").first.inner_text()
            assert pair.locator("mark.answer_phrase").count() == 1
            assert pair.locator(".reason", has_text="Statement:").count() == 1
        shot(page, "serve-pairs-qac-1280.png")


def test_the_answer_box_shows_the_readers_span(browser, tiny, trained, tmp_path):
    root, _ = tiny
    index = tmp_path / "tiny-index"
    encode.run(IndexConfig(corpus=root / "store", out=index))
    BM25Index.build(CorpusStore(root / "store")).save(index / "bm25")
    with running(ServeConfig(index=index, reader=trained.out)) as url, tab(browser, url + "/", 1280, 900) as page:
        page.wait_for_function("() => document.querySelector('#info').textContent.includes('reader')")
        assert page.locator("#answer").is_hidden()  # until a question is asked
        page.keyboard.press("/")
        page.keyboard.type("Who wrote Hamlet?")
        page.keyboard.press("Enter")
        page.wait_for_selector("#answer .the-answer", timeout=60000)
        assert page.locator("#answer .the-answer").inner_text() == "William Shakespeare"
        assert page.locator("#answer mark.answer").inner_text() == "William Shakespeare"
        assert "hybrid, top 10 read" in page.locator("#answer h2").text_content()  # shown in capitals (CSS)
        page.wait_for_function("() => document.querySelectorAll('#results .column').length == 3")
        shot(page, "serve-answer-1280.png")


# ---------------------------------------------------------------- hardening (issue 24)

@pytest.mark.parametrize("width", [1280, 400])
def test_a_malformed_search_address_shows_a_message(browser, base_url, width):
    with tab(browser, base_url + "/#search=%E0%A4%A", width) as page:  # cut-off percent-encoding
        status = "() => document.querySelector('#search-status').textContent.includes('percent-encoding')"
        page.wait_for_function(status, timeout=10000)
        assert page.locator("#view-search").is_visible()


@pytest.mark.parametrize("width", [1280, 400])
def test_the_pairs_tab_clicked_again_stays_at_the_filters(browser, base_url, width):
    with tab(browser, base_url + "/", width, 700) as page:
        page.click("#tab-pairs")
        page.wait_for_selector("#view-pairs .pair")
        assert page.evaluate("document.documentElement.scrollHeight") > 1000  # there is room to scroll past them
        page.click("#tab-pairs")
        page.wait_for_timeout(300)  # a jump to an anchor would have happened by now
        assert page.evaluate("window.scrollY") == 0 and page.locator("#pairs-form").bounding_box()["y"] >= 0


@pytest.mark.parametrize("width", [1280, 400])
def test_pagers_are_disabled_with_nothing_to_page(browser, served, width):
    cfg = served.config(pairs=None, qrels={}, queries=None)
    with running(cfg, served.engine) as url, tab(browser, url + "/#judged", width) as page:
        page.wait_for_function("() => document.querySelector('#judged-status').textContent.includes('No judgments')")
        assert page.locator("#qprev").is_disabled() and page.locator("#qnext").is_disabled()
        page.click("#tab-pairs")
        page.wait_for_function("() => document.querySelector('#view-pairs').textContent.includes('No pairs folder')")
        assert page.locator("#prev").is_disabled() and page.locator("#next").is_disabled()


@pytest.mark.parametrize("width", [1280, 400])
def test_the_passage_dialog_opens_an_id_with_a_slash(browser, slashed, width):
    with running(ServeConfig(index=slashed)) as url, \
            tab(browser, url + "/#search=digital%20object%20identifier", width) as page:
        page.wait_for_selector("#results .hit")
        link = page.locator("#results .hit .meta a").first
        assert link.inner_text().startswith("10.1000/xyz/123")
        link.click()
        page.wait_for_selector("#passage[open]")
        assert "digital object identifier" in page.locator("#passage-text").inner_text()
        assert "10.1000/xyz/123" in page.locator("#passage-title").inner_text()


def test_the_docs_render_from_this_server_only(browser, slashed):
    """/docs draws every operation with Swagger UI, from files this server serves, within its CSP (no violation,
    no uncaught error), and can send a request; nothing is loaded from another site."""
    with running(ServeConfig(index=slashed)) as url, tab(browser, url + "/docs", 1280) as page:
        page.wait_for_selector(".opblock")
        paths = page.locator(".opblock-summary-path").all_inner_texts()
        assert {"/search", "/search/batch", "/health", "/info"} <= {p.replace("\u200b", "") for p in paths}, paths
        page.locator(".opblock-summary", has_text="/health").first.click()
        page.get_by_role("button", name="Try it out").click()
        page.get_by_role("button", name="Execute").click()
        status = page.locator(".live-responses-table tr.response td.response-col_status").first
        status.wait_for()
        assert status.inner_text().strip() == "200"
        loaded = page.evaluate("performance.getEntriesByType('resource').map((e) => e.name)")
        assert loaded and all(name.startswith((url + "/", "data:")) for name in loaded), loaded
