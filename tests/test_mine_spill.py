"""Mining out of core: a memory limit far below what the joins want makes DuckDB spill to OUT/.work/spill, and
the pairs are identical to a run with room to spare.

The store is a synthetic one of 2x10^5 links (``bench/synthetic_corpus.py``, a few seconds): the enwiki sample
is too small to need more memory than DuckDB's fixed overhead. One thread, so the memory a thread needs is the
same on every machine. At 150MB the run must spill (checked two ways: spill files appear while it runs, and
the same limit with spilling forbidden fails with a clear out-of-memory message).
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pretriever.mine import MineConfig, mine
from pretriever.mine.engine import MineError, default_memory_limit, machine_memory

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
    return mine(MineConfig(corpus=store, out=out, methods="dl,cm", threads=1, stats_sample=0,
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


def test_default_memory_limit_is_half_the_machine(tmp_path, enwiki_store):
    limit = default_memory_limit()
    assert limit.endswith("GiB") and abs(float(limit[:-3]) - machine_memory() / 2 / 2**30) < 0.06
    result = mine(MineConfig(corpus=enwiki_store.path, out=tmp_path / "pairs", methods="dl", stats_sample=0))
    assert result.memory_limit == limit and result.manifest["duckdb_memory_limit"] == limit


def test_bad_sizes_are_clear_errors(tmp_path, enwiki_store):
    for option, value in (("memory_limit", "lots"), ("max_spill", "big")):
        with pytest.raises(MineError, match=f"--{option.replace('_', '-')} '{value}' is not a size DuckDB understands"):
            mine(MineConfig(corpus=enwiki_store.path, out=tmp_path / option, methods="dl", **{option: value}))
