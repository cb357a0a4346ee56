"""One definition, two engines: local PySpark mines exactly the pairs DuckDB mines."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from mine_fixtures import ALL
from pretriever.mine import MineConfig, mine

pytestmark = pytest.mark.slow


def test_spark_and_duckdb_give_identical_pairs(enwiki_store, tmp_path, spark):
    options = dict(corpus=enwiki_store.path, methods=ALL, cm_indegree_percentile=99.0, negatives="overlap", seed=7)
    duck = mine(MineConfig(out=tmp_path / "duckdb", engine="duckdb", **options))
    sprk = mine(MineConfig(out=tmp_path / "spark", engine="spark", **options), spark_session=spark)
    for method in ALL.split(","):
        a, b = duck.methods[method], sprk.methods[method]
        assert a.pairs > 0 and (a.candidates, a.pairs) == (b.candidates, b.pairs), method
        left = pq.read_table(tmp_path / "duckdb" / f"{method}.parquet")
        right = pq.read_table(tmp_path / "spark" / f"{method}.parquet")
        assert left.equals(right), f"{method}: the engines disagree"
    assert duck.manifest["cm_indegree_threshold"] == sprk.manifest["cm_indegree_threshold"]
