"""bench/exp38_plainstart.py's pure parts: the design (the issue's arms from the plain start, one budget, the start's
options), the planned comparisons with Holm's correction, the positive control's verdict, the start's text (held-out
documents whole, no claim, SQuAD without its questions) and run-next's order. No training; the machinery shared
with exp21 (steps, resuming, the tests themselves) is tested in tests/test_exp21.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import exp38_plainstart as exp  # noqa: E402

CLAIMS = 7  # all 2^7 sign patterns are enumerated: a constant positive difference has p = 2/128 exactly


def row(arm, seed, value, zero=None):
    """An arm-seed's line: nDCG@10 ``value`` on every claim after both stages, ``zero`` (default: the same)
    zero-shot."""
    zero = value if zero is None else zero
    per_query = {e: {str(q): (zero if e == "zero_shot" else value) for q in range(CLAIMS)}
                 for e in exp.experiment.EVALS}
    return {"arm": arm, "seed": seed, "wall_seconds": 100.0, "steps": {"pretrain": 60.0},
            **{e: {"nDCG@10": next(iter(per_query[e].values())), "Recall@100": 0.9} for e in per_query},
            "per_query": per_query}


def start_summary(value):
    return {"shape": "4 x 256, 4 heads", "steps": 3000, "planned_steps": 3000, "stopped": "the step budget",
            "target_perplexity": 60.0, "perplexity": 75.3, "tokens_seen": 10**7, "train_seconds": 3600.0,
            "held_out_texts": 900, "step_seconds": {"pretrain": 3700.0, "index": 30.0},
            "zero_shot": {"nDCG@10": value, "Recall@100": 0.5}, "per_query": {str(q): value for q in range(CLAIMS)}}


def value(options, flag):
    return options[options.index(flag) + 1]


def test_the_arms_are_the_issues_with_one_budget_from_the_start():
    assert list(exp.ARMS) == ["mlm", "contrastive-ict", "contrastive-title", "cocondenser-cc", "cocondenser-title",
                              "cotmae-cc", "cotmae-title", "mlm-warm", "cotmae-cc-warm", "cocondenser-cc-warm",
                              "minilm"]
    s = exp.Settings()
    options = {name: arm.pretrain_options(s, 2) for name, arm in exp.ARMS.items()
               if arm.objective and not arm.head_warmup}
    for flag in ("--max-length", "--batch-size", "--max-steps", "--lr", "--seed"):
        assert len({value(o, flag) for o in options.values()}) == 1, flag
    assert value(options["mlm"], "--max-steps") == "1500" and value(options["mlm"], "--objective") == "mlm"
    assert all("--head-warmup-steps" not in o for o in options.values())  # a plain start has nothing to protect
    assert {n for n, o in options.items() if "--mlm-weight" in o} == {"contrastive-ict", "contrastive-title"}
    assert value(options["contrastive-ict"], "--mlm-weight") == "0"
    assert value(options["contrastive-ict"], "--mix") == "ict:1"
    assert value(options["cocondenser-title"], "--mix") == "tb:1"
    assert value(options["cotmae-title"], "--decoder") == "ar" and "--decoder" not in options["cotmae-cc"]
    assert exp.ARMS["minilm"].objective is None


def test_a_warm_arm_is_its_arm_with_the_heads_trained_alone_first_and_the_same_encoder_budget():
    """The follow-up: 1,000 head-only steps at 1e-3 before the shared steps, so the encoder's steps are the
    unwarmed arm's; compared with mlm-warm (whose MLM head had the same warm-up) and with the unwarmed arm,
    outside Holm's family."""
    s = exp.Settings()
    for name in ("mlm-warm", "cotmae-cc-warm", "cocondenser-cc-warm"):
        warm, plain = (exp.ARMS[n].pretrain_options(s, 1) for n in (name, name.removesuffix("-warm")))
        assert value(warm, "--head-warmup-steps") == "1000" and value(warm, "--head-lr") == "0.001"
        assert int(value(warm, "--max-steps")) == int(value(plain, "--max-steps")) + 1000
        assert warm[:warm.index("--max-steps")] == plain[:plain.index("--max-steps")]
    for name in ("cotmae-cc-warm", "cocondenser-cc-warm"):
        assert exp.comparisons(name) == [("vs_mlm", "mlm-warm", False), ("vs_cc", name.removesuffix("-warm"), False)]
    assert exp.comparisons("mlm-warm") == [("vs_mlm", "mlm", False), ("vs_cc", None, False)]


def test_every_arm_pre_trains_from_the_start_and_minilm_not_at_all(tmp_path, monkeypatch):
    work = exp.Work(tmp_path, exp.Settings(), data=tmp_path / "no-data")
    seen = []

    def pretrain(work, folder, pairs, options, **kw):
        seen.append(options)
        raise SystemExit("stop here")

    monkeypatch.setattr(exp.experiment, "prepare_scifact", lambda work, words: None)
    monkeypatch.setattr(exp, "build_start", lambda work: tmp_path / "the-start")
    monkeypatch.setattr(exp, "pretrain_step", pretrain)
    with pytest.raises(SystemExit, match="stop here"):
        exp.run_arm_seed(work, "cotmae-title", 1)
    assert seen[0][:2] == ["--model", str(tmp_path / "the-start")]
    assert seen[0][2:] == exp.ARMS["cotmae-title"].pretrain_options(work.settings, 1)
    monkeypatch.setattr(exp.experiment, "eval_step", lambda *a, **k: (_ for _ in ()).throw(SystemExit("evaluated")))
    with pytest.raises(SystemExit, match="evaluated"):  # straight to the packaged model's zero-shot index
        exp.run_arm_seed(work, "minilm", 0)
    assert len(seen) == 1


def test_the_start_is_mlm_from_random_weights_to_a_target_perplexity_or_a_budget(tmp_path):
    options = exp.start_options(exp.Settings(), tmp_path / "held")
    assert value(options, "--objective") == "mlm" and value(options, "--init") == "random"
    assert [value(options, f) for f in ("--init-layers", "--init-hidden", "--init-heads")] == ["4", "256", "4"]
    assert value(options, "--eval-pairs") == str(tmp_path / "held")
    assert value(options, "--target-perplexity") == "50.0" and value(options, "--max-steps") == "3000"
    assert value(options, "--pooling") == "cls" and "--normalize" in options


def test_the_planned_comparisons_are_each_arm_against_mlm_and_title_against_cc_with_holm():
    rows = {("mlm", 0): row("mlm", 0, 0.0), ("minilm", 0): row("minilm", 0, 0.5)}
    rows |= {(a, 0): row(a, 0, 1.0 if a.endswith(("title", "warm")) else 0.5) for a in exp.ARMS
             if a not in ("mlm", "minilm")}
    arms = exp.aggregate(rows)
    planned = [(name, key) for name, a in arms.items() for key in ("vs_mlm", "vs_cc") if key in a
               and name != "minilm" and not name.endswith("-warm")]
    assert len(planned) == 8 and ("cocondenser-title", "vs_cc") in planned and ("cotmae-title", "vs_cc") in planned
    assert "vs_mlm" not in arms["mlm"] and "vs_cc" not in arms["contrastive-title"]
    for name, key in planned:  # every difference is constant and positive: p = 2/128 each; Holm: 8 x 2/128
        for e in ("zero_shot", "stage2"):
            assert arms[name][key][e]["p"] == pytest.approx(2 / 128)
            assert arms[name][key][e]["holm_p"] == pytest.approx(8 * 2 / 128)
        assert "holm_p" not in arms[name][key]["stage1"]
    assert arms["cotmae-title"]["vs_cc"]["against"] == "cotmae-cc"
    assert arms["cotmae-title"]["vs_cc"]["stage2"]["difference"] == pytest.approx(0.5)
    minilm = arms["minilm"]["vs_mlm"]["stage2"]  # for scale: shown, not in the family
    assert minilm["p"] == pytest.approx(2 / 128) and "holm_p" not in minilm
    warm = arms["cotmae-cc-warm"]["vs_cc"]["stage2"]  # the follow-up: against its cc arm, not in the family
    assert warm["difference"] == pytest.approx(0.5) and "holm_p" not in warm
    assert arms["cotmae-cc-warm"]["vs_cc"]["against"] == "cotmae-cc"
    assert arms["cotmae-cc-warm"]["vs_mlm"]["against"] == "mlm-warm"
    table = exp.table_rows(arms, start_summary(0.1))
    assert table[0][:4] == ["start", "1", "0.1000", "0.5000"] and {len(r) for r in table} == {len(exp.HEADER)}
    by_arm = {r[0]: r for r in table}
    assert by_arm["cocondenser-title"][exp.HEADER.index("2 stages vs cc")] == "+0.5000 (p 0.016; Holm p 0.125)"
    assert by_arm["minilm"][exp.HEADER.index("2 stages vs mlm")] == "+0.5000 (p 0.016)"


def test_the_positive_control_says_when_the_start_is_too_weak(tmp_path):
    start = start_summary(0.2)
    assert exp.positive_control({}, start) is None and "not run yet" in exp.verdict(None)
    better = exp.positive_control({("mlm", 0): row("mlm", 0, 0.5), ("mlm", 1): row("mlm", 1, 0.3)}, start)
    assert better["passed"] and better["seeds"] == 2 and better["difference"] == pytest.approx(0.2)
    assert exp.verdict(better).startswith("Positive control passed") and "+0.2000" in exp.verdict(better)
    level = exp.positive_control({("mlm", 0): row("mlm", 0, 0.2)}, start)
    assert not level["passed"] and "too weak" in exp.verdict(level)
    # the report says so above its tables
    work = exp.Work(tmp_path, exp.Settings(), data=tmp_path / "no-data")
    (tmp_path / "start.json").write_text(json.dumps(start))
    exp.experiment.append_line(work.results, row("mlm", 0, 0.2))
    exp.experiment.append_line(work.results, row("cocondenser-cc", 0, 0.3))
    out = exp.report(work, None, None)
    text = (tmp_path / "report.md").read_text()
    assert "Positive control FAILED" in text and "too weak" in text and "held-out perplexity 75.3" in text
    assert out["positive_control"]["passed"] is False and "per_query" not in out["start"]
    assert (tmp_path / "report.png").exists()


def write_pairs(folder, rows):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    for method in ("ict", "cc"):
        pq.write_table(pa.Table.from_pylist([{"method": method, "query": q, "positive_text": p, "query_doc_id": d,
                                              "pair_id": "x"} for m, q, p, d in rows if m == method]),
                       folder / f"{method}.parquet")
    return folder


def test_the_start_text_holds_out_whole_documents_and_no_claim(tmp_path):
    import pyarrow.parquet as pq

    wiki = write_pairs(tmp_path / "wiki", [("ict", f"s{d}{i}", f"p{d}{i}", str(d)) for d in range(10) for i in range(3)]
                       + [("cc", f"a{d}", f"b{d}", str(d)) for d in range(10)])
    squad = write_pairs(tmp_path / "squad", [("ict", "s", "p", "1"), ("cc", "a", "b", "1")])  # id 1 as in wiki
    counts = exp.split_text({"wiki": wiki, "squad": squad}, tmp_path / "text", 0.2)
    assert counts["wiki"]["documents"] == 10 and counts["wiki"]["held_out_documents"] == 2
    assert counts["squad"]["held_out_documents"] == 1  # at least one
    assert counts == exp.split_text({"wiki": wiki, "squad": squad}, tmp_path / "again", 0.2)  # seeded
    read = {side: {f.name: pq.read_table(f).to_pylist() for f in sorted((tmp_path / "text" / side).glob("*"))}
            for side in ("train", "held")}
    assert set(read["held"]) == {"ict.wiki.parquet", "cc.wiki.parquet", "ict.squad.parquet", "cc.squad.parquet"}
    held_docs = {r["query_doc_id"] for rows in read["held"].values() for r in rows}
    train_docs = {r["query_doc_id"] for rows in read["train"].values() for r in rows}
    assert not held_docs & train_docs and "squad:1" in held_docs  # a document is held out whole or not at all
    assert held_docs | train_docs == {"squad:1", *(f"wiki:{d}" for d in range(10))}  # ids by source: never met
    assert sum(len(rows) for side in read.values() for rows in side.values()) == 30 + 10 + 2  # no pair lost
    assert len(read["held"]["ict.wiki.parquet"]) == 2 * 3  # every pair of a held document
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "1", "text": "b3"}) + "\n")
    with pytest.raises(SystemExit, match=r"cc\.wiki\.parquet: 1 texts are SciFact claims"):
        exp.check_no_claims(tmp_path / "text", tmp_path)
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "1", "text": "a claim no source holds"}) + "\n")
    assert exp.check_no_claims(tmp_path / "text", tmp_path)["claims_found"] == 0


def test_squad_gives_its_paragraphs_never_its_questions(tmp_path):
    source = tmp_path / "squad.json"
    source.write_text(json.dumps({"data": [{"title": "Sky_(United_Kingdom)", "paragraphs": [
        {"context": "Sky UK Limited is a British broadcaster.", "qas": [{"question": "What is Sky UK?"}]},
        {"context": "It was formed in 1990.", "qas": []}]}]}))
    docs = [json.loads(line) for line in exp.squad_jsonl(source).splitlines()]
    assert docs == [{"id": "Sky_(United_Kingdom)-0", "title": "Sky (United Kingdom)",
                     "text": "Sky UK Limited is a British broadcaster."},
                    {"id": "Sky_(United_Kingdom)-1", "title": "Sky (United Kingdom)", "text": "It was formed in 1990."}]


def test_run_next_builds_the_start_first_then_whole_seeds(tmp_path):
    work = exp.Work(tmp_path, exp.Settings(seeds=2), data=tmp_path / "no-data")
    units = exp.pending(work)
    assert units[:3] == [("start", None), ("run", ("mlm", 0)), ("run", ("contrastive-ict", 0))]
    assert len(units) == 1 + 2 * len(exp.ARMS) and units[-1] == ("run", ("minilm", 1))
    (tmp_path / "start.json").write_text(json.dumps(start_summary(0.1)))
    exp.experiment.append_line(work.results, row("mlm", 0, 0.3))
    assert exp.pending(work)[0] == ("run", ("contrastive-ict", 0)) and len(exp.pending(work)) == 2 * len(exp.ARMS) - 1
    assert exp.build_start(work) == work.start / "model"  # made already: nothing runs


def test_the_session_size_is_the_design_smaller_in_its_own_folder_with_fine_tuning_that_moves_it(tmp_path,
                                                                                                    capsys):
    exp.experiment.main(exp, ["--size", "session", "--work", str(tmp_path), "status"])
    saved = json.loads((tmp_path / "settings.json").read_text())
    assert saved == json.loads(json.dumps(exp.dataclasses.asdict(exp.SESSION)))
    assert (saved["start_layers"], saved["start_hidden"], saved["pt_steps"], saved["ft_lr"]) == (4, 128, 300, 2e-4)
    assert "Start: not built yet." in capsys.readouterr().out
    with pytest.raises(SystemExit, match="other settings"):  # a folder keeps the size it was made with
        exp.experiment.main(exp, ["--work", str(tmp_path), "status"])
    assert exp.SIZES["session"][1] != exp.WORK


def test_fine_tuning_takes_the_sizes_rate_and_epochs(tmp_path, monkeypatch):
    seen = []

    def run_step(work, folder, name, options, output):
        seen.append(options)
        raise SystemExit("stop here")

    monkeypatch.setattr(exp.experiment, "prepare_scifact", lambda work, words: None)
    monkeypatch.setattr(exp.experiment, "eval_step", lambda *a, **k: {})
    monkeypatch.setattr(exp.experiment, "run_step", run_step)
    cases = ((exp.SESSION, "0.0002", "1"), (exp.Settings(), None, "1"), (exp.Settings(ft_epochs=2.5), None, "2.5"))
    for i, (settings, lr, epochs) in enumerate(cases):
        work = exp.Work(tmp_path / str(i), settings, data=tmp_path / "no-data")
        with pytest.raises(SystemExit, match="stop here"):
            exp.run_arm_seed(work, "minilm", 0)
        assert value(seen[-1], "--epochs") == epochs
        assert (value(seen[-1], "--lr") if "--lr" in seen[-1] else None) == lr
