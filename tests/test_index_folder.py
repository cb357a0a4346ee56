"""IndexFolder and IndexMeta: index.json and bm25.json parsed once into typed fields and written back as read;
folders in the layout pretriever 0.1.0 wrote (tests/data/index_layout_0.1, copied from what that code wrote) open,
search and take a tuned setting; the index kinds come from a registry that refine fills when imported, so the
command line opens a refined index without entry points, and a library caller that never imports the command
line still gets the refined retriever. Hand-made vectors and a fake query encoder: nothing loads a model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pretriever.index import (BM25Index, EncoderInfo, HybridOptions, IndexFolder, IndexMeta, NotAnIndexError,
                              TunedSetting, encoder_info, register_retriever, save_dense_index)

LAYOUT = Path(__file__).parent / "data" / "index_layout_0.1"
ROOT = Path(__file__).parent.parent


class _Model:
    """A query encoder: "first" points at p1, "second" at p2."""

    max_seq_length = 256

    def encode_query(self, texts, **kwargs):
        return np.array([[1.0, 0.0, 0.0] if t == "first" else [0.0, 1.0, 0.0] for t in texts], dtype=np.float32)


def _layout(name: str) -> dict:
    return json.loads((LAYOUT / name).read_text(encoding="utf-8"))


def _folder(root: Path, index_json: dict | None = None) -> Path:
    """A two-passage dense index folder (p1, p2; dimension 3) whose index.json is ``index_json`` when given."""
    save_dense_index(root, ["p1", "p2"], np.eye(2, 3, dtype=np.float32), encoder_info(None, 256, True, True))
    if index_json is not None:
        (root / "index.json").write_text(json.dumps(index_json), encoding="utf-8")
    return root


def test_the_old_layouts_json_reads_typed_and_writes_back_as_it_was():
    data = _layout("index.json")
    meta = IndexMeta.from_json(data)
    assert meta.kind == "dense" and meta.name == "all-MiniLM-L6-v2" and (meta.count, meta.dim) == (2, 3)
    assert meta.encoder == EncoderInfo("all-MiniLM-L6-v2", "all-MiniLM-L6-v2", 256, True, True, "", "query: ")
    assert (meta.store, meta.n_passages, meta.index_type) == ("/data/scifact-store", 2, "flat")
    assert meta.tuned_setting == TunedSetting("hybrid convex 0.3", "hybrid", HybridOptions(fusion="convex", alpha=0.3))
    assert meta.tuned.source == "tune.json" and meta.recorded["encode"]["passages_per_second"] == 12.5
    assert meta.to_json() == data  # every key kept: a rewrite (a tune recorded) loses nothing

    lexical = _layout("bm25.json")
    bm25 = IndexMeta.from_json(lexical)
    assert bm25.kind == "bm25" and bm25.encoder is None and bm25.index_type is None
    assert (bm25.options["k1"], bm25.vocabulary, bm25.store) == (1.5, 5, "/data/scifact-store")
    assert bm25.to_json() == lexical

    # a refined folder written before index.json recorded its kind: the refine record says it
    assert IndexMeta.from_json({**data, "refine": {"method": "aopt-passage"}}).kind == "refined"


def test_a_folder_in_the_old_layout_opens_searches_and_takes_its_tuned_setting(tmp_path):
    folder = _folder(tmp_path / "old", _layout("index.json"))
    BM25Index.build_from_texts(["p1", "p2"], ["alpha beta", "gamma delta"]).save(folder / "bm25")
    (folder / "bm25" / "bm25.json").write_text(json.dumps(_layout("bm25.json")), encoding="utf-8")
    index = IndexFolder(folder)
    assert index.kind == "dense" and index.store() is None  # the recorded store is not on this machine
    with index.open(model=_Model()) as dense:
        assert dense.search(["second"], 1)[0][0].passage_id == "p2" and dense.meta is index.meta
    with index.open("tuned", model=_Model()) as tuned:
        assert tuned.name == "tuned: hybrid convex 0.3"
        assert tuned.search(["gamma"], 1)[0][0].passage_id == "p2"  # BM25 from beside it, fused as tuned
    with IndexFolder(folder / "bm25").open() as lexical:
        assert lexical.meta.kind == "bm25" and lexical.search(["alpha"], 1)[0][0].passage_id == "p1"


def test_recording_a_tuned_setting_keeps_every_other_key(tmp_path):
    before = _layout("index.json")
    folder = IndexFolder(_folder(tmp_path / "old", before))
    record = folder.record_tuned(TunedSetting("bm25", "bm25"), "tune.json")
    after = json.loads((folder.path / "index.json").read_text(encoding="utf-8"))
    assert after["tuned"] == record.to_json() and after["tuned"]["mode"] == "bm25"
    assert {k: v for k, v in after.items() if k != "tuned"} == {k: v for k, v in before.items() if k != "tuned"}
    assert IndexFolder(folder.path).meta.tuned == record == folder.meta.tuned


def test_a_broken_record_is_refused_naming_the_file_and_the_key(tmp_path):
    data = _layout("index.json")
    broken = _folder(tmp_path / "tuned", {**data, "tuned": {"label": "x", "mode": "sparse"}})
    with pytest.raises(NotAnIndexError, match=r"tuned/index.json: the 'tuned' entry .* run `pretriever tune` again"):
        IndexFolder(broken)
    no_count = _folder(tmp_path / "count", {k: v for k, v in data.items() if k != "count"})
    with pytest.raises(NotAnIndexError, match=r"count/index.json: the key 'count' is missing or malformed"):
        IndexFolder(no_count)
    with pytest.raises(NotAnIndexError, match="is not a dense index: index.json is missing; it is a corpus store"):
        (tmp_path / "store").mkdir()
        (tmp_path / "store" / "manifest.json").write_text("{}", encoding="utf-8")
        IndexFolder(tmp_path / "store")


def test_an_unknown_kind_names_the_known_ones_and_a_kind_registers_once(tmp_path):
    folder = IndexFolder(_folder(tmp_path / "x", {**_layout("index.json"), "retriever": "colbert"}))
    with pytest.raises(NotAnIndexError, match=r"kind 'colbert' is not installed \(known: bm25, dense, refined"):
        folder.retriever()
    with pytest.raises(ValueError, match="'dense' registered twice"):
        register_retriever("dense")(lambda folder, **kw: None)


_OPEN_REFINED = """
import sys
from pretriever.index import IndexFolder
assert "pretriever.cli" not in sys.modules and "pretriever.refine" not in sys.modules
retriever = IndexFolder(sys.argv[1]).retriever()
print(type(retriever).__module__, type(retriever).__name__, "pretriever.cli" in sys.modules)
"""

_CLI_WITHOUT_ENTRY_POINTS = """
import sys
from pretriever.index import IndexFolder, folder
folder.entry_points = lambda **kw: ()  # no installed entry point, as in a source checkout never installed
import pretriever.cli
print(type(IndexFolder(sys.argv[1]).retriever()).__name__)
"""


def _python(script: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_a_refined_folder_opens_refined_from_the_library_and_from_the_command_line(tmp_path):
    refined = _folder(tmp_path / "refined")
    meta = json.loads((refined / "index.json").read_text(encoding="utf-8"))
    (refined / "index.json").write_text(json.dumps({**meta, "retriever": "refined", "refine": {}}), encoding="utf-8")
    # a library caller: only pretriever.index imported; the entry point brings the refine layer's opener
    assert _python(_OPEN_REFINED, str(refined)) == "pretriever.refine.retriever RefinedIndex False"
    # the command line's composition root registers it itself: no installed entry point needed
    assert _python(_CLI_WITHOUT_ENTRY_POINTS, str(refined)) == "RefinedIndex"
