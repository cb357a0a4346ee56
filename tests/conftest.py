"""Shared fixtures: real data from ../shared/data (skipped cleanly when absent) and built stores.

Fixtures more than one module uses live here or in the plugins below, never imported into a test module: an
imported fixture is a new definition there, so a session-scoped one would be built again for each importer.
Plain helpers are in helpers.py."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # as the command line does (the library never sets it): no hub, ever
# `pytest -n N` (the README's command): N worker processes share the cores, so each gets its share of OpenMP threads
# (torch, FAISS; set before either is imported, and inherited by the commands tests start). Two workers with two
# threads each on two cores made small torch steps several times slower: OpenMP threads wait by spinning.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
if _WORKERS > 1:
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // _WORKERS)))
    for _name in ("COLUMNS", "LINES"):  # a worker is handed its controller's terminal size, which rich would then
        os.environ.pop(_name, None)  # fix at import: each test sets its own (_wide_console)

import pretriever.corpus.build  # noqa: E402
from pretriever.backends import spark_session  # noqa: E402
from pretriever.corpus.config import CorpusConfig  # noqa: E402
from pretriever.data.store import CorpusStore  # noqa: E402

pytest_plugins = ["mine_fixtures", "reader_fixtures", "refine_fixtures", "serve_fixtures"]

# ../shared/data beside the checkout; PRETRIEVER_SHARED_DATA points elsewhere (a GPU machine gets a copy carried in
# the checkout: bench/gpu_wheels.py --data)
SHARED_DATA = Path(os.environ.get("PRETRIEVER_SHARED_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
ENWIKI = SHARED_DATA / "wiki" / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
BGWIKI = SHARED_DATA / "wiki" / "bgwiki-latest-pages-articles-shortened.xml.bz2"
TABLE_WIKI = SHARED_DATA / "wiki" / "enwiki-table-markup.xml.bz2"
SCIFACT = SHARED_DATA / "beir" / "scifact"
QA = SHARED_DATA / "qa"  # NQ-open, CuratedTREC and other question files
COWIKI = Path(__file__).resolve().parent / "data" / "cowiki.xml"  # hand-written: co-mentions of articles


# The modules that take longest (`pytest -n 2 --durations=0` on 2 cores, 2026-11-29: test_cli_examples 384 s; the
# Spark modules 327 s together; test_evaluate_scifact about 200 s on its judged slice; the two web modules 208 s
# together), run first. Under `pytest -n 2 --dist loadfile` (the README's command) each worker takes whole modules
# (or SAME_WORKER's units) in this order, so the longest start at once and the hundreds of short tests fill in behind
# them, instead of one of them starting last and running alone.
LONGEST_FIRST = ("test_cli_examples.py", "test_mine_spark.py", "test_mine_qac.py", "test_build_spark.py",
                 "test_evaluate_scifact.py", "test_serve_api.py", "test_serve_browser.py", "test_distributed.py",
                 "test_readme_commands.py", "test_train.py", "test_tune.py", "test_mine.py", "test_reader.py",
                 "test_pretrain.py")


# Modules that share an expensive session fixture go to one worker as one unit of work, so it is built once there:
# the web app's index and pairs (`served`, about 50 s of one core) and the Spark session (a JVM, about 20 s with its
# first query).
SAME_WORKER = {"tests/test_serve_browser.py": "tests/test_serve_api.py",
               "tests/test_build_spark.py": "tests/test_mine_spark.py",
               "tests/test_mine_qac.py": "tests/test_mine_spark.py"}


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` (the default here), with each module of SAME_WORKER in the unit of the module it names."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedFixtureScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return SAME_WORKER.get(scope, scope)

    return SharedFixtureScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    if "reference" not in (config.getoption("markexpr") or ""):  # whole-corpus figures only when asked for
        skip = pytest.mark.skip(reason="a whole-corpus reference figure (minutes of encoding): pytest -m reference")
        for item in items:
            if item.get_closest_marker("reference"):
                item.add_marker(skip)
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: every module keeps its own order


def shared(path: Path) -> Path:
    """The path, or a clean skip when ../shared/data is not beside this checkout."""
    if not path.exists():
        pytest.skip(f"real test data not found: {path}")
    return path


def build(input: Path, out: Path, **options) -> CorpusStore:
    result = pretriever.corpus.build.run(CorpusConfig(input=input, out=out, **options))
    assert result.manifest is not None
    return CorpusStore(out)


@pytest.fixture(scope="session")
def enwiki_store(tmp_path_factory) -> CorpusStore:
    """The real shortened enwiki dump, built once with the default options and 2 workers."""
    return build(shared(ENWIKI), tmp_path_factory.mktemp("enwiki") / "store", workers=2)


@pytest.fixture(scope="session")
def scifact_store(tmp_path_factory) -> Path:
    """The whole SciFact corpus (5,183 abstracts, BEIR folder) built once with the default options and 2
    workers; its folder."""
    return build(shared(SCIFACT), tmp_path_factory.mktemp("scifact") / "store", workers=2).path


@pytest.fixture(scope="session")
def scifact_pairs(tmp_path_factory) -> Path:
    """40 real (claim, cited abstract, other abstract) pairs in the layout `pretriever mine` writes (dl + cm)."""
    from pretriever.data import load_corpus, load_qrels, load_queries, qrels_path, relevant

    shared(SCIFACT)
    queries, qrels, corpus = load_queries(SCIFACT), relevant(load_qrels(qrels_path(SCIFACT, "train"))), load_corpus(SCIFACT)
    qids = [q for q in qrels if qrels[q][0] in corpus][:40]
    docs = list(corpus)
    folder = tmp_path_factory.mktemp("pairs")
    rows = []
    for i, q in enumerate(qids):
        pos = qrels[q][0]
        neg = docs[(i * 97 + 13) % len(docs)]
        rows.append({"pair_id": f"p{i}", "method": "dl" if i % 2 == 0 else "cm", "query": queries[q],
                     "positive_passage_id": pos, "positive_text": corpus[pos][1][:700],
                     "negative_passage_id": neg, "negative_text": corpus[neg][1][:700], "negative_kind": "random"})
    for method in ("dl", "cm"):
        part = [r for r in rows if r["method"] == method]
        pq.write_table(pa.Table.from_pylist(part), folder / f"{method}.parquet")
    (folder / "pairs.json").write_text(json.dumps({"methods": {"dl": {"file": "dl.parquet"},
                                                               "cm": {"file": "cm.parquet"}}}))
    return folder


@pytest.fixture(scope="session")
def cowiki_store(tmp_path_factory) -> CorpusStore:
    """A hand-written 12-page wiki (tests/data/cowiki.xml) whose articles co-mention each other: the enwiki
    sample links mostly outside itself and has no co-mention pair whose entity is one of its articles."""
    return build(COWIKI, tmp_path_factory.mktemp("cowiki") / "store", workers=1)


@pytest.fixture(scope="session")
def enwiki_con(enwiki_store):
    con = enwiki_store.connect()
    yield con
    con.close()


@pytest.fixture(scope="session")
def spark():
    """One local Spark session (this worker's share of the cores, as for OpenMP above; a failed task is tried
    twice, as a cluster retries it) for every Spark test; skipped cleanly without PySpark or Java."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("PySpark needs a Java runtime")
    threads = max(1, (os.cpu_count() or 2) // _WORKERS)
    session = spark_session(threads=threads, master=f"local[{threads},2]")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _wide_console(monkeypatch):
    """Rich wraps and cuts what commands print at the terminal's width (80 columns when output is not a terminal),
    so a message naming a long temporary path (a pytest-xdist worker's, a deep $TMPDIR) broke where a test looks
    for it; a test that wants another width passes its own COLUMNS."""
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture(autouse=True)
def _no_proxy_from_the_environment(monkeypatch):
    """Network tests talk to servers on 127.0.0.1 directly; a proxy set for the machine must not reroute them."""
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
