"""The manifest types: each stage folder's JSON report is one dataclass that writes the file and reads it back.

tests/data/stage_layout_0.1 holds the JSON files pretriever 0.1.0 wrote before these types existed (a cowiki
store, the pairs mined from it, a tiny model trained and pre-trained on them; paths shortened to /data): each
reads typed, writes back byte for byte, and a folder holding it still opens. A file that lacks a key its readers
need, or holds a value of another type, is refused with the file and the key named."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import MISSING, fields
from pathlib import Path

import pytest

from pretriever import mine
from pretriever.corpus.manifest import StoreError, StoreManifest
from pretriever.data.pairs import PairsDir, PairsError, PairsManifest, find_pair_files
from pretriever.data.store import CorpusStore
from pretriever.evaluate import EvaluateConfig
from pretriever.evaluate.pipeline import run
from pretriever.evaluate.manifest import EvaluationManifest
from pretriever.generate import GenerateConfig, import_queries
from pretriever.generate.manifest import GenerateManifest
from pretriever.mine.config import MineConfig
from pretriever.pretrain.manifest import PretrainManifest
from pretriever.reader.manifest import ReaderManifest
from pretriever.references.manifest import ReferencesManifest
from pretriever.train.manifest import TrainManifest
from pretriever.tune.manifest import TuneManifest
from pretriever.stage import MARKER, FolderError, FolderMarker, OutputFolder

LAYOUT = Path(__file__).parent / "data" / "stage_layout_0.1"

# (manifest type, the file in LAYOUT that pretriever 0.1.0 wrote)
OLD_FILES = [(FolderMarker, "store/" + MARKER), (FolderMarker, "pairs/" + MARKER), (FolderMarker, "model/" + MARKER),
             (StoreManifest, "store/manifest.json"), (PairsManifest, "pairs/pairs.json"),
             (FolderMarker, "eval/" + MARKER), (TrainManifest, "model/train.json"),
             (PretrainManifest, "pretrain/pretrain.json"), (EvaluationManifest, "eval/results.json"),
             (GenerateManifest, "generate/manifest.json"), (TuneManifest, "index/tune.json"),
             (ReferencesManifest, "references/manifest.json"), (ReaderManifest, "reader/reader.json")]


def _old(name: str) -> dict:
    return json.loads((LAYOUT / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize(("kind", "name"), OLD_FILES, ids=[name for _, name in OLD_FILES])
def test_an_old_file_reads_typed_and_writes_back_byte_for_byte(kind, name, tmp_path):
    manifest = kind.read(LAYOUT / Path(name).parent)
    assert kind.FILE == Path(name).name and manifest.to_json() == _old(name)
    assert kind.from_json(manifest.to_json()) == manifest
    manifest.write(tmp_path)
    assert (tmp_path / kind.FILE).read_bytes() == (LAYOUT / name).read_bytes()


@pytest.mark.parametrize(("kind", "name"), OLD_FILES, ids=[name for _, name in OLD_FILES])
def test_a_file_without_a_required_key_is_refused_naming_the_file_and_the_key(kind, name, tmp_path):
    required = [f.name for f in fields(kind)
                if f.name != "recorded" and f.default is MISSING and f.default_factory is MISSING]
    assert required
    for key in required:
        (tmp_path / kind.FILE).write_text(json.dumps({k: v for k, v in _old(name).items() if k != key}))
        with pytest.raises(kind.ERROR, match=re.escape(f"{tmp_path / kind.FILE}: the key {key!r} is missing; ")):
            kind.read(tmp_path)
    (tmp_path / kind.FILE).write_text("[]")
    with pytest.raises(kind.ERROR, match=re.escape(f"{tmp_path / kind.FILE}: not a JSON object")):
        kind.read(tmp_path)


def test_the_old_train_and_pretrain_reports_read_typed():
    train = TrainManifest.read(LAYOUT / "model")
    assert train.data["per_method"] == {"dl": 22, "cm": 19} and train.training["steps"] == 2
    assert train.seconds["total"] > 0 and train.heldout is None and train.pairs_trained == 8
    assert train.config == train.to_json()["config"] and train.recorded == {"pretriever_version": "0.1.0"}
    pretrain = PretrainManifest.read(LAYOUT / "pretrain")
    assert (pretrain.objective, pretrain.steps, pretrain.planned_steps, pretrain.stopped) == ("cocondenser", 2, 2, None)
    assert pretrain.pairs["unlisted_files"] is None and pretrain.held_out is None
    assert pretrain.recorded["device"] == "cpu"


def test_the_marker_types_what_ownership_needs_and_an_old_folder_is_still_ours(tmp_path):
    marker = FolderMarker.read(LAYOUT / "store")
    assert (marker.stage, marker.holds, marker.pretriever_version) == ("corpus", "a corpus store", "0.1.0")
    assert "manifest.json" in marker.written and marker.foreign == [] and marker.recorded == {
        "marker": "pretriever output folder"}
    store = tmp_path / "store"
    store.mkdir()
    (store / "manifest.json").write_text("{}")
    (store / "notes.txt").write_text("mine")
    shutil.copy(LAYOUT / "store" / MARKER, store / MARKER)
    folder = OutputFolder(store, stage="corpus", holds="a corpus store", owns=("manifest.json",))
    assert folder.ours() and folder.marker() == marker
    folder.prepare(overwrite=True)  # the old marker lists manifest.json as written: it goes, notes.txt stays
    assert sorted(p.name for p in store.iterdir()) == [MARKER, "notes.txt"]
    assert FolderMarker.read(store).foreign == ["notes.txt"]


def test_a_fresh_marker_has_the_keys_and_order_the_old_one_has(tmp_path):
    OutputFolder(tmp_path / "out", stage="corpus", holds="a corpus store", owns=("manifest.json",)).prepare()
    assert list(json.loads((tmp_path / "out" / MARKER).read_text())) == list(_old("store/" + MARKER))


def test_a_marker_that_does_not_fit_is_no_proof_of_ownership(tmp_path):
    (tmp_path / "x").write_text("someone's")
    for broken in ({"holds": "a model"}, {"stage": 3}, {"stage": "train", "written": "x"}, []):
        (tmp_path / MARKER).write_text(json.dumps(broken))
        folder = OutputFolder(tmp_path, stage="train", holds="a model", owns=("x",))
        assert folder.marker() is None and not folder.ours()
        with pytest.raises(FolderError, match=f"no {MARKER}"):
            folder.prepare(overwrite=True)
    with pytest.raises(FolderError, match=rf"{MARKER}: the key 'stage' is missing"):
        FolderMarker.from_json({"holds": "a model"}, MARKER)


def test_an_old_store_opens_and_a_new_build_writes_the_same_keys_in_the_same_order(cowiki_store, tmp_path):
    assert list(json.loads((cowiki_store.path / "manifest.json").read_text())) == list(_old("store/manifest.json"))
    old = tmp_path / "store"
    shutil.copytree(cowiki_store.path, old)
    shutil.copy(LAYOUT / "store" / "manifest.json", old / "manifest.json")
    store = CorpusStore(old)
    assert store.manifest == StoreManifest.read(LAYOUT / "store") and store.manifest.format == "mediawiki"
    assert store.counts["documents"] == 12 and store.manifest.options["words"] == 100
    assert store.manifest.errors == [] and store.manifest.sample is None and store.manifest.build_seconds > 0
    assert store.manifest.recorded["pretriever_version"] == "0.1.0"


@pytest.mark.parametrize(("change", "message"), [
    (lambda m: m.pop("counts"), r"manifest.json: the key 'counts' is missing; rebuild the store"),
    (lambda m: m.update(input="cowiki.xml"), r"manifest.json: the key 'input' holds \"cowiki.xml\", not a dict"),
    (lambda m: m.update(build_seconds="fast"), r"the key 'build_seconds' holds \"fast\", not a float or NoneType"),
])
def test_a_store_manifest_that_does_not_fit_names_the_file_and_the_key(cowiki_store, tmp_path, change, message):
    broken = tmp_path / "store"
    shutil.copytree(cowiki_store.path, broken)
    data = _old("store/manifest.json")
    change(data)
    (broken / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(StoreError, match=str(broken / "manifest.json").replace(".", r"\.") + ": ") as err:
        CorpusStore(broken)
    assert err.value.exit_code == 2
    assert re.search(message, str(err.value)), str(err.value)


def test_old_pairs_open_and_a_new_mine_writes_the_same_keys_in_the_same_order(cowiki_store, tmp_path):
    result = mine.run(MineConfig(corpus=cowiki_store.path, out=tmp_path / "new"))
    assert result.manifest == PairsManifest.read(tmp_path / "new")
    assert list(json.loads((tmp_path / "new" / "pairs.json").read_text())) == list(_old("pairs/pairs.json"))
    old = tmp_path / "old"
    shutil.copytree(tmp_path / "new", old)
    shutil.copy(LAYOUT / "pairs" / "pairs.json", old / "pairs.json")
    pairs = PairsDir(old)
    assert pairs.methods == ["dl", "cm"] and pairs.manifest.files == {"dl": "dl.parquet", "cm": "cm.parquet"}
    assert pairs.manifest.corpus_path == "/data/store" and pairs.manifest.option("negatives") == "random"
    assert pairs.manifest.cm_indegree_threshold["k"] > 0 and pairs.manifest.stats == "stats.json"
    assert next(pairs.rows(["dl"]))["method"] == "dl"
    assert find_pair_files(old) == ([old / "dl.parquet", old / "cm.parquet"], None)


def test_a_hand_made_pairs_json_needs_only_its_methods_and_a_broken_one_is_named(tmp_path):
    (tmp_path / "pairs.json").write_text(json.dumps({"methods": {"dl": {"file": "dl.parquet"}}}))
    manifest = PairsManifest.read(tmp_path)
    assert manifest.files == {"dl": "dl.parquet"} and manifest.corpus_path is None and manifest.option("x", 1) == 1
    assert manifest.to_json() == {"methods": {"dl": {"file": "dl.parquet"}}}
    for broken, key in (({"total_pairs": 3}, "the key 'methods' is missing"),
                        ({"methods": ["dl"]}, "the key 'methods' holds"),
                        ({"methods": {}, "join_parts": "3"}, "the key 'join_parts' holds")):
        (tmp_path / "pairs.json").write_text(json.dumps(broken))
        for read in (PairsDir, find_pair_files):
            with pytest.raises(PairsError, match=re.escape(f"{tmp_path / 'pairs.json'}: {key}")):
                read(tmp_path)


def test_an_evaluation_writes_results_json_as_before_and_its_manifest_reads_an_old_one(cowiki_store, tmp_path):
    """BM25 over the cowiki store, two judged questions: the setting that wrote eval/results.json."""
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "the Moon orbits Earth"}\n'
                                            '{"_id": "q2", "text": "Mars the red planet"}\n')
    (tmp_path / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\t3\t1\nq2\t4\t1\n")
    result = run(EvaluateConfig(out=tmp_path / "eval", bm25=True, corpus=cowiki_store.path,
                                queries=tmp_path / "queries.jsonl", qrels=tmp_path / "test.tsv"))
    old = EvaluationManifest.read(LAYOUT / "eval")
    assert result.manifest == EvaluationManifest.read(tmp_path / "eval")
    assert list(result.manifest.to_json()) == list(old.to_json())
    for key in ("systems", "per_query", "overlap", "curves", "plots"):
        assert getattr(result.manifest, key) == getattr(old, key), key
    assert old.systems["bm25"]["queries"] == 2 and old.plots == {"curve": "recall_at_k.png", "overlap": "overlap.png"}
    assert old.reader is None and old.runs is None and old.dataset["queries"] == 2


def test_an_import_of_queries_writes_its_manifest_as_before(cowiki_store, tmp_path):
    """The setting that wrote generate/manifest.json: three queries of documents 1 and 3 imported from a TSV."""
    (tmp_path / "gen.tsv").write_text("1\twhat is the sun\n3\twhat orbits the earth\tthe moon\n")
    result = import_queries(GenerateConfig(corpus=cowiki_store.path, out=tmp_path / "gen", from_file=tmp_path / "gen.tsv"))
    old = GenerateManifest.read(LAYOUT / "generate")
    assert result.manifest == GenerateManifest.read(tmp_path / "gen")
    assert list(result.manifest.to_json()) == list(old.to_json())
    assert (result.manifest.passages, result.manifest.queries, result.manifest.key, result.manifest.skipped) == (
        old.passages, old.queries, old.key, old.skipped) == (12, 3, "doc", {"bad_lines": 0, "unknown_id": 0,
                                                                           "empty_query": 0})


def test_the_old_tune_report_reads_typed():
    tuned = TuneManifest.read(LAYOUT / "index")
    assert tuned.label == "dense" and tuned.pseudo_scores()["dense"] == 0.7448 and tuned.compare is None
    assert set(tuned.generators) == {"masked-ict", "titles"} and tuned.left_out == {}
    assert tuned.recorded["validation"] is None and tuned.recorded["config"]["n"] == 10


def test_an_import_of_references_writes_its_manifest_as_before(tmp_path):
    """The setting that wrote references/manifest.json: one page imported from JSONL."""
    from pretriever.references import warc
    from pretriever.references.config import ImportConfig

    (tmp_path / "pages.jsonl").write_text(json.dumps({"url": "http://site0.example/", "html": (
        "<html><head><title>Zero</title></head><body><p>Some text of page zero, long enough.</p></body></html>")}))
    result = warc.run(ImportConfig(files=[tmp_path / "pages.jsonl"], out=tmp_path / "refs"))
    old = ReferencesManifest.read(LAYOUT / "references")
    assert result.manifest == ReferencesManifest.read(tmp_path / "refs")
    assert list(result.manifest.to_json()) == list(old.to_json())
    assert (result.manifest.funnel, result.manifest.records, result.manifest.truncated) == (
        old.funnel, old.records, old.truncated) == ({"fetched": 1, "text_extracted": 1}, {"records": 1}, [])


def test_the_old_reader_report_reads_typed():
    reader = ReaderManifest.read(LAYOUT / "reader")
    assert (reader.base_model, reader.steps, reader.dev["EM"]) == ("all-MiniLM-L6-v2", 2, 0.125)
    assert reader.recorded["match"] == "string" and reader.data["kept"] == 8
