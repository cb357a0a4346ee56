"""``references import`` on inputs that are cut off, garbage or fail half-way: never taken as complete."""

from __future__ import annotations

import io
import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner
from warcio.archiveiterator import ArchiveIterator

from pretriever.cli import app
from helpers import warc_bytes
from references_server import article


def pages(n: int) -> list[tuple[str, int, str, bytes]]:
    return [(f"http://site{i}.example/", 200, "text/html",
             article(f"Page {i}", f"Site number {i} was founded in {1900 + i} by a river. " * 20).encode())
            for i in range(n)]


def run(*args) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["references", "import", *map(str, args)])
    return result.exit_code, " ".join(result.output.split())


def urls(out) -> list[str]:
    return pq.read_table(out / "references.parquet", columns=["url"]).column("url").to_pylist()


@pytest.mark.parametrize("cut", ["body", "gzip trailer"])
def test_a_truncated_warc_gz_is_an_error_naming_file_and_record(tmp_path, cut):
    whole = warc_bytes(pages(3))
    archive = ArchiveIterator(io.BytesIO(whole))
    third = [archive.get_record_offset() for _ in archive][2]  # where record 3's gzip member starts
    warc = tmp_path / "crawl.warc.gz"
    warc.write_bytes(whole[:third + 300] if cut == "body" else whole[:-4])
    out = tmp_path / "refs"
    code, text = run(warc, "--out", out)
    assert code == 4, text
    assert "crawl.warc.gz" in text and "record 3" in text and f"byte {third:,}" in text
    assert "--allow-truncated" in text and "--resume" in text
    assert not (out / "references.parquet").exists()  # a cut input is never taken as complete

    code, text = run(warc, "--out", out, "--resume", "--allow-truncated")
    assert code == 0, text
    assert urls(out) == ["http://site0.example/", "http://site1.example/"]  # the cut record is left out
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["truncated"] == [{"file": str(warc), "record": 3, "byte": third}]
    assert "truncated" in text and "record 3" in text


@pytest.mark.parametrize("off_by", [500, -500])
def test_a_record_whose_content_length_is_wrong_is_reported_as_truncated(tmp_path, off_by):
    # Content-Length 500 bytes too long swallowed the next record: exit 0, `truncated: []`, a warning on stderr only
    whole = warc_bytes(pages(3), gzip=False)
    archive = ArchiveIterator(io.BytesIO(whole))
    second = [archive.get_record_offset() for _ in archive][1]
    header = whole.index(b"Content-Length: ", second) + len(b"Content-Length: ")  # the WARC header's, first
    length = whole[header:whole.index(b"\r\n", header)]
    warc = tmp_path / "crawl.warc"
    warc.write_bytes(whole[:header] + str(int(length) + off_by).encode() + whole[header + len(length):])
    out = tmp_path / "refs"
    code, text = run(warc, "--out", out)
    assert code == 4, text
    assert "crawl.warc" in text and "record 2" in text and f"byte {second:,}" in text

    code, text = run(warc, "--out", out, "--resume", "--allow-truncated")
    assert code == 0, text
    assert urls(out) == ["http://site0.example/"]
    assert json.loads((out / "manifest.json").read_text())["truncated"] == [
        {"file": str(warc), "record": 2, "byte": second}]


def test_a_garbage_warc_gz_gets_a_one_line_message(tmp_path):
    garbage = tmp_path / "garbage.warc.gz"
    garbage.write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4)
    code, text = run(garbage, "--out", tmp_path / "refs")
    assert code == 2
    assert "garbage.warc.gz" in text and "not a WARC file" in text
    assert text.isprintable() and "\\x" not in text and len(text) < 300  # no raw bytes echoed back


def test_a_failed_import_can_be_resumed_and_a_failure_that_imported_nothing_leaves_nothing(tmp_path):
    out = tmp_path / "refs"
    garbage = tmp_path / "garbage.warc.gz"
    garbage.write_bytes(b"not a warc file at all\n" * 10)
    assert run(garbage, "--out", out)[0] == 2
    good = tmp_path / "good.warc.gz"
    good.write_bytes(warc_bytes(pages(2)))
    code, text = run(good, "--out", out)  # nothing was imported: nothing blocks a new run
    assert code == 0, text

    out = tmp_path / "refs2"
    bad = tmp_path / "more.jsonl"
    bad.write_text(json.dumps({"url": "http://site9.example/", "text": "A page about site nine. " * 20}) + "\n"
                   + '{"url": "http://site8.example/"}\n')
    code, text = run(good, bad, "--out", out)
    assert code == 2 and "more.jsonl:2" in text
    assert "--resume" in text and "3 references" in text
    code, text = run(good, bad, "--out", out)  # the same command again is told what to do
    assert code == 2 and "--resume" in text and "--overwrite" in text
    bad.write_text(bad.read_text().splitlines()[0] + "\n" + json.dumps({"url": "http://site8.example/",
                                                                      "text": "Site eight. " * 20}) + "\n")
    code, text = run(good, bad, "--out", out, "--resume")
    assert code == 0, text
    assert urls(out) == [f"http://site{i}.example/" for i in (0, 1, 8, 9)]
    records = json.loads((out / "manifest.json").read_text())["records"]
    assert records == {"records": 4, "imported_before": 3}
