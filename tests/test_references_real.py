"""References of the real enwiki sample: the funnel, and a few cited pages through a loopback proxy."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
from typer.testing import CliRunner

from pretriever.cli import app
from pretriever.references.citations import cited_urls, load_citation_urls
from helpers import warc_bytes
from references_server import LoopbackServer, article, fake_dns, send

# checked by hand on the store built from the shortened dump: 7,833 <ref>s (8,262 before list lines and
# bibliography sections left the text), 4,063 with a url, 8 of them not http(s) (template calls such as
# {{Google books|...}} in url=), 3,186 unique after normalisation, on 1,734 hosts
FUNNEL = {"citations": 7833, "with_url": 4063, "fetchable_url": 4055, "unique_urls": 3186, "hosts": 1734}
PLATO = "http://plato.stanford.edu/entries/taoism/"


def test_funnel_of_the_real_sample(enwiki_store):
    cited = cited_urls(load_citation_urls(enwiki_store))
    assert cited.funnel == FUNNEL
    assert cited.mapping.num_rows == 4055 and len(cited.targets) == 3186
    assert PLATO in {url for url, _ in cited.targets}


def canned(handler) -> None:
    """The proxy: an absolute-form request gets a canned article naming the URL it stands for."""
    if not handler.path.startswith("http://"):
        return send(handler, 400, b"proxy only", "text/plain")
    if handler.path.endswith("/robots.txt"):
        return send(handler, 404, b"", "text/plain")
    send(handler, 200, article("Cited source", f"This canned page stands for {handler.path} and says that "
                                               "the Tao is the source of all things.").encode())


def test_cli_fetches_real_cited_urls_through_a_loopback_proxy(enwiki_store, tmp_path, monkeypatch):
    fake_dns(monkeypatch, {}, default="93.184.216.34")  # behind a proxy every host is still resolved and checked
    with LoopbackServer({"*": canned}) as proxy:
        result = CliRunner().invoke(app, [
            "references", "fetch", str(enwiki_store.path), "--out", str(tmp_path / "refs"), "--limit", "12",
            "--proxy", f"http://127.0.0.1:{proxy.port}", "--host-delay", "0", "--retries", "0"])
        assert result.exit_code == 0, result.output
    rows = pq.read_table(tmp_path / "refs" / "references.parquet").to_pylist()
    assert len(rows) == 12
    for row in rows:  # http URLs come from the proxy; https ones need a CONNECT tunnel it refuses
        if row["url"].startswith("http://"):
            assert row["error"] is None and f"stands for {row['url']}" in row["text"], row
        else:
            assert row["error"] == "connection", row
    manifest = json.loads((tmp_path / "refs" / "manifest.json").read_text())
    assert {k: manifest["funnel"][k] for k in FUNNEL} == FUNNEL
    assert manifest["funnel"]["fetched"] == sum(r["url"].startswith("http://") for r in rows)
    assert pq.read_table(tmp_path / "refs" / "citations.parquet").num_rows == 4055


def test_import_warc_and_jsonl_keeps_cited_urls_only(enwiki_store, tmp_path):
    page = article("Taoism", "Taoism is a philosophical and religious tradition of Chinese origin.").encode()
    warc = tmp_path / "crawl.warc.gz"
    warc.write_bytes(warc_bytes([(PLATO, 200, "text/html; charset=utf-8", page),
                                 ("http://not-cited.example/", 200, "text/html", page),
                                 (PLATO, 200, "text/html", b"<html>second copy</html>"),
                                 ("http://www.merriam-webster.com/dictionary/anarchy", 200, "image/png", b"x")]))
    jsonl = tmp_path / "pages.jsonl"
    jsonl.write_text(json.dumps({"url": "http://www.iep.utm.edu/zhuangzi/", "text": "Zhuangzi was a Chinese "
                                 "philosopher of the Warring States period."}) + "\n")
    result = CliRunner().invoke(app, ["references", "import", str(warc), str(jsonl), "--corpus",
                                      str(enwiki_store.path), "--out", str(tmp_path / "refs")])
    assert result.exit_code == 0, result.output
    rows = {r["url"]: r for r in pq.read_table(tmp_path / "refs" / "references.parquet").to_pylist()}
    assert set(rows) == {PLATO, "http://www.merriam-webster.com/dictionary/anarchy", "http://www.iep.utm.edu/zhuangzi/"}
    assert rows[PLATO]["source"] == "warc" and "philosophical and religious" in rows[PLATO]["text"]
    assert rows["http://www.merriam-webster.com/dictionary/anarchy"]["error"] == "content_type"
    assert rows["http://www.iep.utm.edu/zhuangzi/"]["source"] == "jsonl"
    manifest = json.loads((tmp_path / "refs" / "manifest.json").read_text())
    assert manifest["records"] == {"records": 5, "not_cited": 1, "duplicates": 1}
    assert manifest["funnel"]["text_extracted"] == 2


def test_import_names_the_bad_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"url": "http://a.example/", "html": "<p>x</p>"}\n{"url": "http://b.example/"}\n')
    result = CliRunner().invoke(app, ["references", "import", str(bad), "--out", str(tmp_path / "refs")])
    assert result.exit_code == 2 and "bad.jsonl:2" in result.output
