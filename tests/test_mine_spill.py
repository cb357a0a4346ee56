"""Mining out of core: a memory limit far below what the joins want makes DuckDB spill to OUT/.work/spill, and
the pairs are identical to a run with room to spare.

The store is a synthetic one of 2x10^5 links (``bench/synthetic_corpus.py``, a few seconds): the enwiki sample
is too small to need more memory than DuckDB's fixed overhead. One thread, so the memory a thread needs is the
same on every machine. At 150MB the run must spill (checked two ways: spill files appear while it runs, and
the same limit with spilling forbidden fails with a clear out-of-memory message).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import ibis
import pyarrow.parquet as pq
import pytest

from pretriever import mine
from pretriever.mine import MineConfig
from pretriever.mine.engine import MineError, Part, default_memory_limit, machine_memory, open_engine, size_bytes

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from synthetic_corpus import generate  # noqa: E402

LINKS = 200_000
TIGHT = "150MB"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("synthetic") / "store"
    generate(out, LINKS)
    return out


def run(store: Path, out: Path, **options):
    return mine.run(MineConfig(corpus=store, out=out, methods="dl,cm", threads=1, stats_sample=0,
                               cm_indegree_percentile=99, **options))


class SpillWatch(threading.Thread):
    """Names of the files seen in a spill folder while a run goes on (DuckDB removes them when done)."""

    def __init__(self, folder: Path):
        super().__init__(daemon=True)
        self.folder, self.seen, self.done = folder, set(), threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.002):
            try:
                self.seen.update(os.listdir(self.folder))
            except FileNotFoundError:
                pass


@pytest.mark.slow
def test_tiny_memory_limit_spills_and_gives_identical_pairs(store, tmp_path):
    roomy = run(store, tmp_path / "roomy", memory_limit="4GB")
    assert roomy.memory_limit == "4GB" and roomy.methods["dl"].pairs > 30_000 and roomy.methods["cm"].pairs > 10_000

    watch = SpillWatch(tmp_path / "tight" / ".work" / "spill")
    watch.start()
    tight = run(store, tmp_path / "tight", memory_limit=TIGHT)
    watch.done.set()
    watch.join()
    assert watch.seen, "no spill file was written: the limit did not bind"
    assert not (tmp_path / "tight" / ".work").exists()  # the spill goes with the work folder
    for method in ("dl", "cm"):
        assert pq.read_table(tmp_path / "tight" / f"{method}.parquet").equals(
            pq.read_table(tmp_path / "roomy" / f"{method}.parquet")), method

    with pytest.raises(MineError, match=f"ran out of memory within --memory-limit {TIGHT}"):
        run(store, tmp_path / "no-spill", memory_limit=TIGHT, max_spill="0B")

    # the joins in three passes over the documents' hash: the same pairs, and the manifest says how many passes
    split = run(store, tmp_path / "split", memory_limit="4GB", parts=3)
    assert json.loads((tmp_path / "split" / "pairs.json").read_text())["join_parts"] == 3
    assert json.loads((tmp_path / "roomy" / "pairs.json").read_text())["join_parts"] == 1
    for method in ("dl", "cm"):
        assert pq.read_table(tmp_path / "split" / f"{method}.parquet").equals(
            pq.read_table(tmp_path / "roomy" / f"{method}.parquet")), method
    assert split.total == roomy.total


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_parts_split_every_key_once_in_order(count):
    keys = ibis.memtable({"k": [f"{i:04x}" for i in range(65536)]})
    con = ibis.duckdb.connect()
    owner = [con.to_pyarrow(keys.filter(Part(index, count).holds(keys.k)))["k"].to_pylist() for index in range(count)]
    assert sorted(k for part in owner for k in part) == keys.k.to_pyarrow().to_pylist()  # each key once
    assert all(max(a) < min(b) for a, b in zip(owner, owner[1:]))  # part i's keys come before part i+1's
    assert max(len(part) for part in owner) - min(len(part) for part in owner) <= 1  # equal shares


def test_parts_for_follows_the_memory_limit(tmp_path, enwiki_store):
    from pretriever.data.store import CorpusStore
    engine = open_engine("duckdb", CorpusStore(enwiki_store.path), tmp_path / "work", memory_limit="1GiB")
    try:
        assert engine.parts_for(1000) == 1
        # 1 GiB x BUILD_SHARE holds 2**28 bytes: 10^8 rows of 100 bytes need ceil(10^10 / 2**28) = 38 parts
        assert engine.parts_for(10**8, 100) == 38
        assert size_bytes("1.5 GiB") == 3 * 2**29 and size_bytes("500MB") == 500 * 10**6
    finally:
        engine.close()


def test_default_memory_limit_is_half_the_machine(tmp_path, enwiki_store):
    limit = default_memory_limit()
    assert limit.endswith("GiB") and abs(float(limit[:-3]) - machine_memory() / 2 / 2**30) < 0.06
    result = mine.run(MineConfig(corpus=enwiki_store.path, out=tmp_path / "pairs", methods="dl", stats_sample=0))
    assert result.memory_limit == limit and result.manifest.duckdb_memory_limit == limit


def test_bad_sizes_are_clear_errors(tmp_path, enwiki_store):
    for option, value in (("memory_limit", "lots"), ("max_spill", "big")):
        with pytest.raises(MineError, match=f"--{option.replace('_', '-')} '{value}' is not a size DuckDB understands"):
            mine.run(MineConfig(corpus=enwiki_store.path, out=tmp_path / option, methods="dl", **{option: value}))
