"""``pretriever mine`` and ``pretriever pairs ...`` through the command line, on the real sample:
exports that load, the pair viewer, TOML settings and bad input with clear messages."""

from __future__ import annotations

import json
import re
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from mine_fixtures import distinct_pairs_of, pairs_of
from pretriever.cli.mine import mine_command, pairs_app
from pretriever.corpus.schema import LINKS
from pretriever.data.pairs import PairsManifest
from pretriever.mine.show import stats_table


@pytest.fixture(scope="module")
def cli():
    app = typer.Typer(pretty_exceptions_enable=False)
    app.command("mine")(mine_command)
    app.add_typer(pairs_app, name="pairs")
    runner = CliRunner()

    def invoke(*args):
        result = runner.invoke(app, [str(a) for a in args])
        result.text = " ".join(result.output.split())  # rich wraps long lines
        return result

    return invoke


@pytest.fixture(scope="module")
def pairs_dir(enwiki_store, tmp_path_factory, cli):
    out = tmp_path_factory.mktemp("cli") / "pairs"
    result = cli("mine", enwiki_store.path, "--out", out, "--method", "dl,cm,ict,wlp,bfs",
                 "--cm-indegree-percentile", "99", "--negatives", "overlap", "--seed", "0")
    assert result.exit_code == 0, result.output
    return out, result


def test_mine_prints_stats_table(pairs_dir):
    out, result = pairs_dir
    for word in ("mined pairs", "distinct", "queries", "positives", "overlap", "dl", "cm", "ict", "wlp", "bfs"):
        assert word in result.text
    manifest = json.loads((out / "pairs.json").read_text())
    assert f"{manifest['methods']['ict']['pairs']:,}" in result.text
    assert "cm: no pairs - no passage p links back to a document Q and to an entity E" in result.text
    assert manifest["options"]["negatives"] == "overlap"


def test_stats_table_shows_a_method_that_mined_nothing_but_reported_why():
    stats = {"methods": {"qac": {"citations": 12, "with_text": 0}}}  # a report, no pair statistics
    console = Console(width=120, record=True)
    console.print(stats_table(stats, PairsManifest(methods={"qac": {}})))
    row = [line for line in console.export_text().splitlines() if "qac" in line]
    assert row and row[0].split("│")[2].strip() == "0"


def test_export_dpr(pairs_dir, cli, tmp_path):
    out, _ = pairs_dir
    target = tmp_path / "train.json"
    result = cli("pairs", "export", out, "--format", "dpr", "--method", "dl,wlp", "--out", target)
    assert result.exit_code == 0, result.output
    records = json.loads(target.read_text())
    expected = distinct_pairs_of(out, ["dl", "wlp"])
    assert len(expected) < len(pairs_of(out, "dl")) + len(pairs_of(out, "wlp"))  # the sample has pairs both found
    assert [r["question"] for r in records] == [r["query"] for r in expected]
    assert "found by two methods written once" in result.text
    for rec in records:
        assert {"question", "answers", "positive_ctxs", "negative_ctxs", "hard_negative_ctxs"} <= rec.keys()
        for ctx in rec["positive_ctxs"] + rec["negative_ctxs"] + rec["hard_negative_ctxs"]:
            assert set(ctx) == {"title", "text", "passage_id"}
        assert len(rec["positive_ctxs"]) == 1 and len(rec["negative_ctxs"]) + len(rec["hard_negative_ctxs"]) == 1
        assert rec["answers"] and rec["answers"][0]  # t_Q: the positive links to the query's document
    assert any(rec["hard_negative_ctxs"] for rec in records)  # overlap negatives go to hard_negative_ctxs


def test_export_sentence_transformers_loads_with_datasets(pairs_dir, cli, tmp_path):
    datasets = pytest.importorskip("datasets")
    out, _ = pairs_dir
    folder = tmp_path / "st"
    result = cli("pairs", "export", out, "--format", "sentence-transformers", "--out", folder)
    assert result.exit_code == 0, result.output
    ds = datasets.load_from_disk(str(folder))
    assert ds.column_names == ["anchor", "positive", "negative"]
    expected = distinct_pairs_of(out, ["dl", "cm", "ict", "wlp", "bfs"])
    assert ds["anchor"] == [r["query"] for r in expected]
    first = pairs_of(out, "dl")[0]
    assert ds[0] == {"anchor": first["query"], "positive": first["positive_text"], "negative": first["negative_text"]}

    parquet = tmp_path / "st.parquet"
    assert cli("pairs", "export", out, "--format", "sentence-transformers", "--method", "ict", "--out", parquet).exit_code == 0
    ds2 = datasets.load_dataset("parquet", data_files=str(parquet), split="train")
    assert ds2.column_names == ["anchor", "positive", "negative"] and len(ds2) == len(pairs_of(out, "ict"))


def test_export_jsonl(pairs_dir, cli, tmp_path):
    out, _ = pairs_dir
    target = tmp_path / "pairs.jsonl"
    assert cli("pairs", "export", out, "--format", "jsonl", "--method", "wlp", "--out", target).exit_code == 0
    lines = target.read_text().splitlines()
    assert len(lines) == len(pairs_of(out, "wlp"))
    assert json.loads(lines[0]) == pairs_of(out, "wlp")[0]


def test_export_tevatron_one_pair_a_line_loads_with_datasets(pairs_dir, cli, tmp_path):
    import datasets

    out, _ = pairs_dir
    target = tmp_path / "tevatron.jsonl"
    result = cli("pairs", "export", out, "--format", "tevatron", "--method", "dl,wlp", "--out", target)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in target.read_text().splitlines()]
    expected = distinct_pairs_of(out, ["dl", "wlp"])
    assert len(records) == len(expected)
    for rec, pair in zip(records, expected):
        assert list(rec) == ["query_id", "query", "answers", "positive_passages", "negative_passages"]
        assert (rec["query_id"], rec["query"]) == (pair["pair_id"], pair["query"])
        assert rec["positive_passages"] == [{"docid": pair["positive_passage_id"], "title": "",
                                             "text": pair["positive_text"]}]
        assert rec["negative_passages"] == [{"docid": pair["negative_passage_id"], "title": "",
                                             "text": pair["negative_text"]}]
        assert rec["answers"] == [pair["query_title"]]  # DL/WLP positives link to the query's document
    assert ("--train_group_size 1" in result.output) == any(not r["negative_passages"] for r in records)
    # Tevatron reads its training files with datasets' json loader: every record must fit one schema
    ds = datasets.load_dataset("json", data_files=str(target), split="train")
    assert len(ds) == len(records) and ds[0]["positive_passages"][0]["docid"] == expected[0]["positive_passage_id"]


def test_export_tevatron_without_negatives_says_train_group_size_1(enwiki_store, cli, tmp_path):
    out = tmp_path / "pairs"
    assert cli("mine", enwiki_store.path, "--out", out, "--method", "wlp", "--negatives", "none").exit_code == 0
    result = cli("pairs", "export", out, "--format", "tevatron", "--out", tmp_path / "t.jsonl")
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert records and not any(r["negative_passages"] for r in records)
    assert "--train_group_size 1" in " ".join(result.output.split())


def test_pairs_show_highlights_evidence(cowiki_store, cli, tmp_path):
    out = tmp_path / "co"
    assert cli("mine", cowiki_store.path, "--out", out, "--method", "dl,cm").exit_code == 0
    result = cli("pairs", "show", out, "--method", "cm", "-n", "3")
    assert result.exit_code == 0, result.output
    rows = pairs_of(out, "cm")[:3]
    for row in rows:
        assert row["pair_id"] in result.text
        assert f"co-mentioned entity {row['entity']}" in result.text
    assert result.output.count("Positive") == 3
    info = cli("pairs", "info", out)
    assert info.exit_code == 0 and "mined pairs" in info.text


def test_export_errors(pairs_dir, cli, tmp_path, enwiki_store):
    out, _ = pairs_dir
    bad = cli("pairs", "export", enwiki_store.path, "--format", "dpr", "--out", tmp_path / "x.json")
    assert bad.exit_code == 2 and "is not a pairs folder" in bad.text
    bad = cli("pairs", "export", out, "--format", "csv", "--out", tmp_path / "x.csv")
    assert bad.exit_code == 2 and "unknown format" in bad.text
    bad = cli("pairs", "show", out, "--method", "xyz")
    assert bad.exit_code == 2 and "was not mined" in bad.text


def test_export_to_a_folder_names_out_and_keeps_the_folder(pairs_dir, cli, tmp_path):
    out, _ = pairs_dir
    folder = tmp_path / "my-notes"
    folder.mkdir()
    (folder / "keep.txt").write_text("not pairs")
    for fmt in ("dpr", "jsonl", "squad", "tevatron"):
        bad = cli("pairs", "export", out, "--format", fmt, "--method", "dl", "--out", folder)
        assert bad.exit_code == 2 and f"--out {folder} is a folder" in bad.text, (fmt, bad.text)
        assert ".tmp" not in bad.text
    bad = cli("pairs", "export", out, "--format", "sentence-transformers", "--method", "dl", "--out", folder)
    assert bad.exit_code == 2 and f"--out {folder}" in bad.text and "not a saved dataset" in bad.text
    assert (folder / "keep.txt").read_text() == "not pairs"  # never replaced by the export


def test_toml_config_and_cli_override(enwiki_store, cli, tmp_path):
    config = tmp_path / "run.toml"
    config.write_text('[mine]\nmethods = ["dl", "wlp"]\nseed = 3\nnegatives = "none"\nmax_per_doc_pair = 1\n')
    out = tmp_path / "p"
    result = cli("mine", enwiki_store.path, "--out", out, "--config", config, "--seed", "5")
    assert result.exit_code == 0, result.output
    options = json.loads((out / "pairs.json").read_text())["options"]
    assert options["methods"] == ["dl", "wlp"] and options["seed"] == 5 and options["negatives"] == "none"
    rows = pairs_of(out, "dl")
    assert len({(r["query_doc_id"], r["positive_doc_id"]) for r in rows}) == len(rows)  # cap of 1
    config.write_text("[mine]\nmethod = 'dl'\n")
    bad = cli("mine", enwiki_store.path, "--out", tmp_path / "q", "--config", config)
    assert bad.exit_code == 2 and "unknown key(s) in [mine]: method" in bad.text


# --- bad input ---------------------------------------------------------------------------

def copy_store(store, tmp_path):
    target = tmp_path / "store"
    shutil.copytree(store.path, target)
    return target


def test_max_pairs_zero(enwiki_store, cli, tmp_path):
    result = cli("mine", enwiki_store.path, "--out", tmp_path / "p", "--max-pairs", "0")
    assert result.exit_code == 2
    assert "max_pairs must be a positive number of pairs" in result.text and "nothing to mine" in result.text
    assert not (tmp_path / "p").exists()


def test_unknown_method_and_engine(enwiki_store, cli, tmp_path):
    result = cli("mine", enwiki_store.path, "--out", tmp_path / "p", "--method", "dl,xyz")
    assert result.exit_code == 2 and "unknown mining method(s) xyz" in result.text
    result = cli("mine", enwiki_store.path, "--out", tmp_path / "p", "--engine", "polars")
    assert result.exit_code == 2 and "engine must be one of duckdb, spark" in result.text


def test_not_a_store(cli, tmp_path):
    (tmp_path / "empty").mkdir()
    result = cli("mine", tmp_path / "empty", "--out", tmp_path / "p")
    assert result.exit_code == 2 and "is not a corpus store: manifest.json is missing" in result.text


def test_store_missing_a_table(enwiki_store, cli, tmp_path):
    store = copy_store(enwiki_store, tmp_path)
    shutil.rmtree(store / "sentences")
    result = cli("mine", store, "--out", tmp_path / "p")
    assert result.exit_code == 2 and "table 'sentences' is missing" in result.text


def test_store_with_foreign_schema(enwiki_store, cli, tmp_path):
    store = copy_store(enwiki_store, tmp_path)
    for part in (store / "links").glob("*.parquet"):
        table = pq.read_table(part)
        pq.write_table(table.drop_columns(["target_doc_id"]), part)
    result = cli("mine", store, "--out", tmp_path / "p")
    assert result.exit_code == 2 and "lacks column(s) target_doc_id" in result.text


def test_empty_links_table(enwiki_store, cli, tmp_path):
    store = copy_store(enwiki_store, tmp_path)
    for part in (store / "links").glob("*.parquet"):
        part.unlink()
    pq.write_table(pa.Table.from_pylist([], schema=LINKS), store / "links" / "part-000000.parquet")
    out = tmp_path / "p"
    result = cli("mine", store, "--out", out, "--method", "dl,cm,ict,bfs")
    assert result.exit_code == 0, result.output
    assert "dl: no pairs - the store's links table is empty" in result.text
    assert "cm: no pairs - the store's links table is empty" in result.text
    manifest = json.loads((out / "pairs.json").read_text())
    assert manifest["methods"]["dl"]["pairs"] == manifest["methods"]["cm"]["pairs"] == 0
    assert "links table is empty" in manifest["methods"]["cm"]["why_no_pairs"]
    assert manifest["methods"]["ict"]["pairs"] > 1000 and manifest["methods"]["bfs"]["pairs"] > 100
    show = cli("pairs", "show", out, "--method", "dl")
    assert show.exit_code == 2 and "gave no pairs" in show.text and "links table is empty" in show.text


def test_existing_output_needs_overwrite(enwiki_store, cli, tmp_path):
    out = tmp_path / "p"
    assert cli("mine", enwiki_store.path, "--out", out, "--method", "dl").exit_code == 0
    again = cli("mine", enwiki_store.path, "--out", out, "--method", "dl")
    assert again.exit_code == 2 and "pass --overwrite" in again.text
    assert cli("mine", enwiki_store.path, "--out", out, "--method", "wlp", "--overwrite").exit_code == 0
    assert not (out / "dl.parquet").exists() and (out / "wlp.parquet").exists()
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    result = cli("mine", enwiki_store.path, "--out", other, "--overwrite")
    assert result.exit_code == 2 and "pretriever did not write" in result.text and (other / "notes.txt").exists()


def test_a_pair_two_methods_found_is_exported_and_trained_once(pairs_dir, cli, tmp_path):
    from pretriever.train.pair_sampling import scan_pairs

    out, _ = pairs_dir
    dl, wlp = pq.read_table(out / "dl.parquet"), pq.read_table(out / "wlp.parquet")
    assert dl.num_rows >= 5 and wlp.num_rows >= 3
    shared = dl.slice(0, 5).set_column(dl.schema.get_field_index("method"), "method", pa.array(["wlp"] * 5))
    both = tmp_path / "both"
    both.mkdir()
    pq.write_table(dl, both / "dl.parquet")
    pq.write_table(pa.concat_tables([shared, wlp.slice(0, 3)]), both / "wlp.parquet")
    (both / "pairs.json").write_text(json.dumps({"methods": {"dl": {"file": "dl.parquet"},
                                                             "wlp": {"file": "wlp.parquet"}}}))
    result = cli("pairs", "export", both, "--format", "jsonl", "--out", tmp_path / "both.jsonl")
    assert result.exit_code == 0, result.output
    assert len((tmp_path / "both.jsonl").read_text().splitlines()) == dl.num_rows + 3
    assert "5 found by two methods written once" in result.text
    scan = scan_pairs(both, use_negatives=False)
    assert scan.duplicate_across == {"dl": 0, "wlp": 5} and scan.available == {"dl": dl.num_rows, "wlp": 3}


@pytest.mark.parametrize("entry", ["../elsewhere/*.parquet", "../elsewhere/dl.parquet", "/tmp/dl.parquet", "..",
                                   "*.parquet", "sub/dl.parquet", 7])
def test_pairs_json_file_entries_must_be_plain_names_inside_the_folder(cli, tmp_path, entry):
    # serve paged "../elsewhere/*.parquet" through DuckDB: Parquet files from outside the pairs folder
    from pretriever.data.pairs import PairsDir, PairsError, find_pair_files
    from pretriever.serve.pair_pages import PairsView

    elsewhere, pairs = tmp_path / "elsewhere", tmp_path / "pairs"
    for folder in (elsewhere, pairs, pairs / "sub"):
        folder.mkdir()
        pq.write_table(pa.table({"query": ["q"], "positive_text": ["p"], "method": ["dl"]}), folder / "dl.parquet")
    (pairs / "pairs.json").write_text(json.dumps({"methods": {"dl": {"file": entry}}}))
    named = f"{pairs / 'pairs.json'}: method 'dl' names the pair file {entry!r}"
    for read in (PairsDir, PairsView, find_pair_files):
        with pytest.raises(PairsError, match=re.escape(named)):
            read(pairs)
    result = cli("pairs", "export", pairs, "--format", "jsonl", "--out", tmp_path / "out.jsonl")
    assert result.exit_code == 2 and "pairs.json" in result.text and "plain file names" in result.text


def test_pairs_json_plain_file_names_are_read(tmp_path):
    from pretriever.data.pairs import PairsDir, find_pair_files

    pq.write_table(pa.table({"query": ["q"], "positive_text": ["p"], "method": ["dl"]}), tmp_path / "dl-1.0.parquet")
    (tmp_path / "pairs.json").write_text(json.dumps({"methods": {"dl": {"file": "dl-1.0.parquet"}, "cm": {}}}))
    assert PairsDir(tmp_path).methods == ["dl"] and PairsDir(tmp_path).file("dl") == tmp_path / "dl-1.0.parquet"
    assert find_pair_files(tmp_path) == ([tmp_path / "dl-1.0.parquet"], None)
