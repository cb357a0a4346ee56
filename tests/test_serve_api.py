"""The HTTP API of `pretriever serve` on a real 300-document SciFact index and pairs mined from a small wiki."""

from __future__ import annotations

import asyncio
import json

import httpx
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from serve_fixtures import served  # noqa: F401 - a fixture
from pretriever.cli import app as cli_app
from pretriever.retrieval import Hit
from pretriever.serve import ServeError, create_app
from pretriever.index.hybrid import HybridOptions, fuse

ALBENDAZOLE = "Albendazole is used to treat lymphatic filariasis."  # SciFact test query 94, judged doc 1215116
COLD = "Cold exposure increases BAT recruitment."  # query 268, judged doc 970012


@pytest.fixture(scope="module")
def client(served):  # noqa: F811
    with TestClient(create_app(served.config(), engine=served.engine)) as c:
        yield c


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_search_finds_the_judged_document_first(client, mode):
    r = client.get("/search", params={"q": ALBENDAZOLE, "k": 5, "mode": mode})
    assert r.status_code == 200
    body = r.json()
    assert body["mode"] == mode and len(body["hits"]) == 5 and body["took_ms"] >= 0
    first = body["hits"][0]
    assert first["id"] == "1215116" and first["rank"] == 1
    assert first["title"].startswith("\u201cRapid-Impact Interventions\u201d: How a Policy of Integrated Control")
    assert [h["rank"] for h in body["hits"]] == [1, 2, 3, 4, 5]


def test_post_search_equals_get_and_hybrid_is_the_fusion_search_uses(client):
    got = client.get("/search", params={"q": COLD, "k": 10, "mode": "hybrid"}).json()
    posted = client.post("/search", json={"q": COLD, "k": 10, "mode": "hybrid"}).json()
    assert [h["id"] for h in got["hits"]] == [h["id"] for h in posted["hits"]]
    runs = [[Hit(h["id"], h["score"]) for h in client.get("/search", params={"q": COLD, "k": 100, "mode": m}).json()["hits"]]
            for m in ("dense", "bm25")]
    assert [h["id"] for h in got["hits"]] == [h.passage_id for h in fuse(*runs, HybridOptions(), 10)]
    assert [h["id"] for h in got["hits"][:2]] == ["970012", "1568684"]  # first and second in both systems


def test_batch_returns_each_query_in_order(client):
    r = client.post("/search/batch", json={"queries": [COLD, ALBENDAZOLE], "k": 3, "mode": "dense"})
    assert r.status_code == 200
    results = r.json()["results"]
    assert [x["query"] for x in results] == [COLD, ALBENDAZOLE]
    assert results[0]["hits"][0]["id"] == "970012" and results[1]["hits"][0]["id"] == "1215116"


def test_concurrent_queries_are_encoded_in_shared_batches(served):  # noqa: F811
    app = create_app(served.config(), engine=served.engine)
    before = served.engine.batcher.batches, served.engine.batcher.texts

    async def fire():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            return await asyncio.gather(*(c.get("/search", params={"q": f"vitamin {i}", "k": 2}) for i in range(16)))

    responses = asyncio.run(fire())
    assert all(r.status_code == 200 for r in responses)
    batches = served.engine.batcher.batches - before[0]
    assert served.engine.batcher.texts - before[1] == 16
    assert batches < 16  # at least two queries shared an encoder call


def test_compare_marks_judged_and_answer_bearing_hits(client):
    r = client.post("/compare", json={"q": ALBENDAZOLE, "k": 5, "systems": ["dense", "bm25"], "qrels": "test",
                                      "answers": ["neglected tropical diseases"]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["query_id"] == "94" and body["judged"] == 1
    assert [s["mode"] for s in body["systems"]] == ["dense", "bm25"]
    for system in body["systems"]:
        marked = [h["id"] for h in system["hits"] if h["relevance"]]
        assert marked == ["1215116"]
        assert system["hits"][0]["has_answer"] is True
        assert all(h["has_answer"] == ("neglected tropical diseases" in (h["text"] or "").lower())
                   for h in system["hits"])


def test_compare_with_unknown_sets_is_a_clear_404(client):
    r = client.post("/compare", json={"q": ALBENDAZOLE, "qrels": "dev"})
    assert r.status_code == 404 and "no qrels set named 'dev'" in r.json()["error"]
    r = client.post("/compare", json={"q": "not a judged query", "qrels": "test"})
    assert r.status_code == 404 and "query_id" in r.json()["error"]
    r = client.post("/compare", json={"q": ALBENDAZOLE, "answer_set": "nq"})
    assert r.status_code == 404 and "answers" in r.json()["error"]


def test_queries_lists_judged_queries_with_texts(client):
    body = client.get("/queries", params={"set": "test", "page_size": 5}).json()
    assert body["total"] == 300 and body["queries"][0] == {"id": "1", "text": "0-dimensional biomaterials show "
                                                           "inductive properties.", "judged": 1}
    assert client.get("/queries", params={"set": "test", "page": 999}).status_code == 404


def test_pairs_page_has_spans_reason_and_negative(client, served):  # noqa: F811
    rows = pq.read_table(served.pairs / "cm.parquet").to_pylist()
    body = client.get("/pairs", params={"method": "cm", "page": 1, "page_size": 3}).json()
    assert body["total"] == len(rows) and body["pages"] == -(-len(rows) // 3)
    for pair, row in zip(body["pairs"], rows):
        assert pair["pair_id"] == row["pair_id"] and pair["method"] == "cm"
        [span] = pair["query"]["spans"]
        assert span["text"] == row["query_anchor"] and pair["query"]["text"][span["start"]:span["end"]] == row["query_anchor"]
        kinds = {s["kind"]: s["text"] for s in pair["positive"]["spans"]}
        assert kinds["back_anchor"] == row["positive_anchor"] and kinds["entity_anchor"] == row["entity_anchor"]
        assert row["entity"] in pair["reason"] and pair["reason"].startswith("co-mention")
        assert pair["negative"]["passage_id"] == row["negative_passage_id"]
        assert pair["query"]["title"] == row["query_title"] and pair["positive"]["title"] == row["positive_title"]


def test_pairs_filters_by_query_words_and_title(client, served):  # noqa: F811
    rows = pq.read_table(served.pairs / "ict.parquet").to_pylist()
    word = rows[0]["query"].split()[-1].lower().strip(".,")
    expect = [r for r in rows if word in r["query"].lower()]
    body = client.get("/pairs", params={"method": "ict", "q": word.upper(), "page_size": 100}).json()
    assert body["total"] == len(expect) and all(word in p["query"]["text"].lower() for p in body["pairs"])
    title = rows[0]["query_title"]
    expect = [r for r in rows if title.lower() in (r["query_title"] or "").lower()
              or title.lower() in (r["positive_title"] or "").lower()]
    assert client.get("/pairs", params={"method": "ict", "title": title}).json()["total"] == len(expect)


def test_pairs_unknown_method_and_page_out_of_range(client):
    r = client.get("/pairs", params={"method": "wlp"})
    assert r.status_code == 404 and "'wlp' was not mined" in r.json()["error"]
    r = client.get("/pairs", params={"method": "dl", "page": 10_000})
    assert r.status_code == 404 and "past the last page" in r.json()["error"]
    assert client.get("/pairs", params={"method": "dl", "page": 0}).status_code == 422


def test_pairs_stats_are_the_stats_file(client, served):  # noqa: F811
    body = client.get("/pairs/stats").json()
    stats = json.loads((served.pairs / "stats.json").read_text())
    assert body["methods"] == stats["methods"] and body["mined"] == ["dl", "cm", "ict"]
    assert body["definitions"]["dl"]["title"] == "dual-link"


def test_passages_health_info_and_page(client):
    p = client.get("/passages/1215116").json()
    assert "neglected tropical diseases" in p["text"].lower() and p["source"] == "index"
    assert client.get("/passages/nope").status_code == 404
    assert client.get("/health").json() == {"status": "ok"}
    info = client.get("/info").json()
    assert info["passages"] == 300 and info["kind"] == "dense" and info["model"] == "all-MiniLM-L6-v2"
    assert info["index_type"] == "flat" and info["modes"] == ["dense", "bm25", "hybrid"]
    assert info["bm25"]["source"].endswith("bm25") and info["sets"]["qrels"] == {"test": 300}
    assert "pretriever" in client.get("/").text and client.get("/static/app.js").status_code == 200
    assert "/search/batch" in client.get("/openapi.json").json()["paths"]
    assert client.get("/docs").status_code == 200


def test_limits_give_clear_4xx(served):  # noqa: F811
    with TestClient(create_app(served.config(max_batch=4, max_body_bytes=2000), engine=served.engine)) as c:
        r = c.get("/search", params={"q": "x" * 1001})
        assert r.status_code == 422 and r.json()["error"] == "q: String should have at most 1000 characters"
        r = c.get("/search", params={"q": "x", "k": 1001})
        assert r.status_code == 422 and "k: Input should be less than or equal to 1000" in r.json()["error"]
        r = c.post("/search/batch", json={"queries": ["a"] * 5})
        assert r.status_code == 422 and "queries: List should have at most 4 items" in r.json()["error"]
        r = c.post("/search", json={"q": "a", "mode": "sparse"})
        assert r.status_code == 422 and r.json()["error"].startswith("mode:")
        r = c.post("/search", content=json.dumps({"q": "a" * 3000}), headers={"content-type": "application/json"})
        assert r.status_code == 413 and "limit is 2,000 bytes" in r.json()["error"]
        r = c.post("/search", json={"q": "a", "path": "/etc/passwd"})
        assert r.status_code == 422 and "path: Extra inputs are not permitted" in r.json()["error"]


def test_api_key_required_off_loopback(served):  # noqa: F811
    with pytest.raises(ServeError, match="--api-key"):
        served.config(host="0.0.0.0")
    with TestClient(create_app(served.config(host="0.0.0.0", api_key="s3cret"), engine=served.engine)) as c:
        assert c.get("/search", params={"q": "cancer"}).status_code == 401
        r = c.get("/search", params={"q": "cancer"}, headers={"x-api-key": "wrong"})
        assert r.status_code == 401 and "API key" in r.json()["error"]
        assert c.get("/search", params={"q": "cancer"}, headers={"x-api-key": "s3cret"}).status_code == 200
        assert c.get("/info", headers={"authorization": "Bearer s3cret"}).status_code == 200
        assert c.get("/health").status_code == 200  # liveness probes need no key


def test_api_key_from_environment(served, monkeypatch):  # noqa: F811
    monkeypatch.setenv("PRETRIEVER_API_KEY", "from-env")
    cfg = served.config(host="10.1.2.3")
    assert cfg.api_key == "from-env"


def test_cli_refuses_off_loopback_without_key(served, monkeypatch):  # noqa: F811
    monkeypatch.delenv("PRETRIEVER_API_KEY", raising=False)
    result = CliRunner().invoke(cli_app, ["serve", str(served.index), "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "--api-key" in result.output
    help_text = CliRunner().invoke(cli_app, ["serve", "--help"]).output
    assert "--pairs" in help_text and "Default: 127.0.0.1" in help_text


@pytest.mark.slow
def test_generated_requests_never_get_a_5xx(served):  # noqa: F811
    """Schemathesis draws requests from the app's own OpenAPI schema (valid and invalid)."""
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, given, settings, strategies as st

    app = create_app(served.config(), engine=served.engine)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 9
    statuses: list[int] = []

    @settings(max_examples=550, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case=st.one_of([op.as_strategy() for op in operations]))
    def check(case):
        response = case.call()
        statuses.append(response.status_code)
        assert response.status_code < 500, f"{case.method} {case.formatted_path}: {response.text[:300]}"

    check()
    assert len(statuses) >= 500
    assert any(s == 200 for s in statuses) and any(400 <= s < 500 for s in statuses)
