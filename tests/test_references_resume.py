"""kill -9 in the middle of a fetch, then --resume: nothing finished is fetched again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

from pretriever.references.citations import cited_urls
from pretriever.references.config import FetchConfig
from pretriever.references.fetch import fetch_cited
from helpers import citations
from references_server import LoopbackServer, article, send

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import json, sys
import pyarrow as pa
from pretriever.references.citations import cited_urls
from pretriever.references.config import FetchConfig
from pretriever.references.fetch import fetch_cited
from pretriever.references.table import CITATIONS_SCHEMA
urls = json.loads(sys.argv[2])
table = pa.Table.from_pylist([{"doc_id": "d", "citation_idx": i, "url": u, "archive_url": None}
                              for i, u in enumerate(urls)], schema=CITATIONS_SCHEMA)
cfg = FetchConfig(corpus=sys.argv[1], out=sys.argv[1], **json.loads(sys.argv[3]))
fetch_cited(cfg, cited_urls(table))
"""
OPTIONS = dict(allow_private=True, host_delay=0.0, concurrency=2, per_host=2, checkpoint_rows=4, retries=0)


def slow_page(handler) -> None:
    time.sleep(0.05)
    number = handler.path.strip("/p")
    send(handler, 200, article(f"Page {number}", f"Page number {number} reports that the bridge opened in "
                                                 f"{1900 + int(number)} after four years of work.").encode())


def finished_urls(out: Path) -> set[str]:
    """URLs whose rows the killed run had written (journal lines and checkpoint parts)."""
    done: set[str] = set()
    if not (out / "_work").exists():
        return done
    for part in (out / "_work").glob("part-*.parquet"):
        done.update(pq.read_table(part).column("url").to_pylist())
    for journal in (out / "_work").glob("journal-*.jsonl"):
        for line in journal.read_text().splitlines():
            try:
                done.add(json.loads(line)["url"])
            except json.JSONDecodeError:
                pass
    return done


def test_kill_9_then_resume_fetches_nothing_twice_and_equals_an_uninterrupted_run(tmp_path):
    with LoopbackServer({"*": slow_page, "/robots.txt": lambda h: send(h, 404)}) as server:
        urls = [server.url(f"/p{i}") for i in range(40)]
        killed = tmp_path / "killed"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(killed), json.dumps(urls), json.dumps(OPTIONS)],
                                 env=env)
        deadline = time.monotonic() + 60
        while len(finished_urls(killed)) < 8 and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        child.wait()
        done = finished_urls(killed)
        assert 5 <= len(done) < 40
        before = dict(server.hits)

        cfg = FetchConfig(corpus=killed, out=killed, resume=True, **OPTIONS)
        fetch_cited(cfg, cited_urls(citations(urls)))
        again = {path: server.hits[path] - before.get(path, 0) for path in server.hits if path != "/robots.txt"}
        assert all(again.get(u.split(str(server.port))[1], 0) == 0 for u in done)
        assert sum(again.values()) == 40 - len(done)  # the rest once each, pages in flight included

        whole = tmp_path / "whole"
        fetch_cited(FetchConfig(corpus=whole, out=whole, **OPTIONS), cited_urls(citations(urls)))
    resumed = pq.read_table(killed / "references.parquet").drop(["fetched_at"])
    uninterrupted = pq.read_table(whole / "references.parquet").drop(["fetched_at"])
    assert resumed.num_rows == 40 and resumed.equals(uninterrupted)
    assert not (killed / "_work").exists()


def test_resume_leaves_failures_alone_unless_retry_failed_and_the_retry_replaces_the_row(tmp_path):
    """A redirect to data: and a 503 fail; --resume fetches neither again, --resume --retry-failed fetches both
    (and only them) again, and the 503 that now answers keeps its new row."""
    answers = {"/flaky": 503}

    def flaky(handler):
        status = answers["/flaky"]
        send(handler, status, article("Back", "The page is back after an outage that lasted four days.").encode()
             if status == 200 else b"down")

    routes = {"/robots.txt": lambda h: send(h, 404), "/flaky": flaky,
              "/to-data": lambda h: send(h, 302, headers={"Location": "data:text/html,x"}),
              "/good": lambda h: send(h, 200, article("Good", "The bridge opened in 1932.").encode())}
    with LoopbackServer(routes) as server:
        urls = [server.url(p) for p in ("/good", "/flaky", "/to-data")]
        out = tmp_path / "refs"

        def run(**options) -> dict[str, dict]:
            fetch_cited(FetchConfig(corpus=tmp_path, out=out, **{**OPTIONS, **options}), cited_urls(citations(urls)))
            return {r["url"]: r for r in pq.read_table(out / "references.parquet").to_pylist()}

        first = run()
        assert [first[u]["error"] for u in urls] == [None, "status", "redirects"]
        before = dict(server.hits)
        run(resume=True)
        assert server.hits == before  # nothing fetched again, failures included
        answers["/flaky"] = 200
        rows = run(resume=True, retry_failed=True)
        again = {path: server.hits[path] - before.get(path, 0) for path in ("/good", "/flaky", "/to-data")}
        assert again == {"/good": 0, "/flaky": 1, "/to-data": 1}
    assert [rows[u]["error"] for u in urls] == [None, None, "redirects"] and len(rows) == 3
    assert "outage" in rows[server.url("/flaky")]["text"]


def test_a_url_written_again_after_a_kill_keeps_its_newest_row(tmp_path):
    """A killed run's checkpoint part holds a failure; the resumed run retries it into a later part: the
    compacted table keeps the later row."""
    from pretriever.references.table import ReferenceWriter

    row = {"url": "http://a.example/", "final_url": None, "status": None, "content_type": None,
           "fetched_at": "2024-01-01T00:00:00+00:00", "bytes": 0, "title": None, "text": None,
           "error": "timeout", "error_detail": "timed out", "source": "fetch", "via_archive": False}
    killed = ReferenceWriter(tmp_path, resume=False, overwrite=False, part_rows=1)
    killed.add(row)  # a part is written, and the run dies before close()
    resumed = ReferenceWriter(tmp_path, resume=True, overwrite=False, part_rows=1)
    assert resumed.failed == {"http://a.example/"}
    resumed.add({**row, "status": 200, "text": "Back.", "error": None, "error_detail": None})
    assert resumed.close().to_pylist() == [{**row, "status": 200, "text": "Back.", "error": None,
                                            "error_detail": None}]
