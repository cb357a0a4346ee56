"""One definition, two engines: local PySpark mines exactly the pairs DuckDB mines."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from mine_fixtures import ALL
from pretriever import mine
from pretriever.mine import MineConfig

pytestmark = pytest.mark.slow


def same_pairs(store, out, spark, methods: str, **options):
    """Mine with both engines; the results, and every pairs file, are identical. Returns DuckDB's result."""
    options = dict(corpus=store.path, methods=methods, negatives="overlap", seed=7, **options)
    duck = mine.run(MineConfig(out=out / "duckdb", engine="duckdb", **options))
    sprk = mine.run(MineConfig(out=out / "spark", engine="spark", **options), spark_session=spark)
    for method in methods.split(","):
        a, b = duck.methods[method], sprk.methods[method]
        assert (a.candidates, a.pairs, a.reason) == (b.candidates, b.pairs, b.reason), method
        if a.pairs:
            left = pq.read_table(out / "duckdb" / f"{method}.parquet")
            right = pq.read_table(out / "spark" / f"{method}.parquet")
            assert left.equals(right), f"{method}: the engines disagree"
    assert duck.manifest.cm_indegree_threshold == sprk.manifest.cm_indegree_threshold
    return duck


def test_spark_and_duckdb_give_identical_pairs(enwiki_store, tmp_path, spark):
    duck = same_pairs(enwiki_store, tmp_path, spark, ALL, cm_indegree_percentile=99.0)
    assert all(duck.methods[m].pairs > 0 for m in ("dl", "ict", "wlp", "bfs"))
    assert duck.methods["cm"].pairs == 0  # no article of the sample is co-mentioned


def test_spark_and_duckdb_agree_on_co_mention(cowiki_store, tmp_path, spark):
    # in three passes (DuckDB: one join per part of the documents' hash; Spark: their union): the 22 pairs of one
    duck = same_pairs(cowiki_store, tmp_path, spark, "dl,cm,wlp", parts=3)
    assert duck.methods["cm"].pairs == 22 and duck.manifest.cm_indegree_threshold["k"] == 6
    assert duck.manifest.join_parts == 3


def test_spark_and_duckdb_agree_on_sentence_passages(cowiki_store, tmp_path, spark):
    duck = same_pairs(cowiki_store, tmp_path, spark, "cc", cc_max_tokens=24, min_passage_words=5)
    assert duck.methods["cc"].pairs > 0
