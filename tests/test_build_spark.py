"""``corpus build --engine spark``: the same store as a local build, byte for byte, and the same errors."""

from __future__ import annotations

import bz2

import ibis
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from conftest import ENWIKI, build, shared
import pretriever.corpus.build
from pretriever.cli import app
from pretriever.corpus.config import CorpusConfig
from pretriever.corpus.finalize import redirect_chains
from pretriever.corpus.formats.mediawiki import multistream_ranges
from pretriever.corpus.model import InputError
from helpers import make_multistream, table_bytes

runner = CliRunner()

# chunk_pages=100 with Wikipedia's 100 pages per stream: one stream per chunk, so the 206 pages are 3 tasks
OPTIONS = dict(workers=2, chunk_pages=100)


@pytest.fixture(scope="module")
def multistream(tmp_path_factory):
    """The real enwiki sample rewritten as Wikipedia writes a multistream dump: streams of 100 pages + index."""
    xml = bz2.decompress(shared(ENWIKI).read_bytes())
    return make_multistream(xml, tmp_path_factory.mktemp("multistream"), pages_per_stream=100)


@pytest.fixture(scope="module")
def local_store(multistream, tmp_path_factory):
    dump, _ = multistream
    return build(dump, tmp_path_factory.mktemp("local") / "store", **OPTIONS)


@pytest.mark.slow
def test_spark_build_is_byte_identical_to_the_local_build(multistream, local_store, spark, tmp_path):
    dump, index = multistream
    assert len(multistream_ranges(dump, index)) == 3
    result = pretriever.corpus.build.run(CorpusConfig(input=dump, out=tmp_path / "spark", engine="spark", **OPTIONS),
                                          spark_session=spark)
    assert result.chunks_done == 3
    spark_files, local_files = table_bytes(tmp_path / "spark"), table_bytes(local_store.path)
    assert sorted(spark_files) == sorted(local_files)
    assert "links/part-000002.parquet" in spark_files and "redirects.parquet" in spark_files
    assert [name for name in local_files if spark_files[name] != local_files[name]] == []
    assert result.manifest.counts == local_store.counts
    assert local_store.counts["pages"] == 206 and local_store.counts["documents"] == 104


@pytest.mark.slow
def test_a_corrupt_stream_is_reported_as_locally_and_resume_finishes(multistream, local_store, spark, tmp_path):
    dump, index = multistream
    start, end = multistream_ranges(dump, index)[1]
    data = bytearray(dump.read_bytes())
    data[(start + end) // 2] ^= 0xFF
    broken = tmp_path / "broken-multistream.xml.bz2"
    broken.write_bytes(bytes(data))
    errors = {}
    for engine, session in [("local", None), ("spark", spark)]:
        cfg = CorpusConfig(input=broken, out=tmp_path / engine, multistream_index=index, engine=engine, **OPTIONS)
        with pytest.raises(InputError) as err:
            pretriever.corpus.build.run(cfg, spark_session=session)
        errors[engine] = str(err.value).replace(str(tmp_path / engine), "OUT")
    assert f"the bz2 streams at bytes {start:,}-{end:,} are corrupt" in errors["spark"]
    assert "1 chunk(s) before the error are saved in OUT/_work" in errors["spark"]
    assert errors["spark"] == errors["local"]

    broken.write_bytes(dump.read_bytes())  # a good copy of the dump arrives
    cfg = CorpusConfig(input=broken, out=tmp_path / "spark", multistream_index=index, engine="spark", resume=True,
                       **OPTIONS)
    assert pretriever.corpus.build.run(cfg, spark_session=spark).chunks_done == 3
    assert table_bytes(tmp_path / "spark") == table_bytes(local_store.path)


def test_spark_refuses_a_dump_without_a_multistream_index(tmp_path):
    result = runner.invoke(app, ["corpus", "build", str(shared(ENWIKI)), "--out", str(tmp_path / "s"),
                                 "--engine", "spark"])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "multistream-index.txt.bz2" in text and "--engine local" in text
    assert not (tmp_path / "s").exists()  # refused before anything was written


def test_the_corpus_toml_table_sets_the_engine(tmp_path):
    config = tmp_path / "run.toml"
    config.write_text('[corpus]\nengine = "spark"\nspark_master = "spark://nowhere:7077"\n')
    result = runner.invoke(app, ["corpus", "build", str(shared(ENWIKI)), "--out", str(tmp_path / "s"),
                                 "--config", str(config)])
    assert result.exit_code == 2 and "--engine spark reads a multistream" in " ".join(result.output.split())
    config.write_text('[corpus]\nengine = "dask"\n')
    result = runner.invoke(app, ["corpus", "build", str(shared(ENWIKI)), "--out", str(tmp_path / "s"),
                                 "--config", str(config)])
    assert result.exit_code == 2 and "engine must be one of local, spark" in result.output
    result = runner.invoke(app, ["corpus", "build", str(shared(ENWIKI)), "--out", str(tmp_path / "s"),
                                 "--spark-master", "spark://head:7077"])
    assert result.exit_code == 2 and "only used with engine spark" in result.output


# Redirects chosen to hit every rule: a 6-long chain (A..F then X), a 2-cycle (Q, R), a self-redirect (S), a
# title redirected twice (P to Q and to X: the smaller, Q, is followed), a chain into a cycle (T -> Z <-> Y).
REDIRECTS = [("A", "B"), ("B", "C"), ("C", "D"), ("D", "E"), ("E", "F"), ("F", "X"), ("Y", "Z"), ("Z", "Y"),
             ("S", "S"), ("P", "X"), ("P", "Q"), ("Q", "R"), ("R", "Q"), ("T", "Z")]
# worked out by hand from the rules in redirect_chains' docstring (the recursive SQL the build used to run
# gives the same)
CHAINS = [("A", "F", 5), ("B", "X", 5), ("C", "X", 4), ("D", "X", 3), ("E", "X", 2), ("F", "X", 1), ("P", "Q", 5),
          ("Q", "R", 1), ("R", "Q", 1), ("S", "S", 1), ("T", "Z", 5), ("Y", "Z", 1), ("Z", "Y", 1)]


def pages_table() -> pa.Table:
    titles, targets = zip(*REDIRECTS)
    return pa.table({"title": [*titles, "X"], "status": ["redirect"] * len(titles) + ["kept"],
                     "redirect_to": [*targets, None]})


@pytest.mark.parametrize("backend", ["duckdb", pytest.param("spark", marks=pytest.mark.slow)])
def test_redirect_chains_on_both_engines(backend, request):
    con = ibis.duckdb.connect() if backend == "duckdb" else ibis.pyspark.connect(request.getfixturevalue("spark"))
    rows = con.to_pyarrow(redirect_chains(ibis.memtable(pages_table())).order_by("title")).to_pylist()
    assert [(r["title"], r["target_title"], r["hops"]) for r in rows] == CHAINS
