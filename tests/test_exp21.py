"""bench/exp21_scifact.py's pure parts: the report's aggregation over seeds and claims (its paired randomisation
test, pretriever.metrics', checked by hand on the seed-averaged claims), the validation split of the train claims,
and the resume logic (a finished arm-seed is skipped, run-next's order, a stopped step's time). No training."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import exp21_scifact as exp  # noqa: E402


def row(arm, seed, per_query_stage2, zero=0.5, wall=100.0):
    claims = {str(i): v for i, v in enumerate(per_query_stage2)}
    mean = float(np.mean(per_query_stage2))
    return {"arm": arm, "seed": seed, "mlm_weight": None if arm == "none" else 0.3, "wall_seconds": wall,
            "steps": {} if arm == "none" else {"pretrain": wall / 2, "finetune": wall / 2},
            "zero_shot": {"nDCG@10": zero, "Recall@100": 0.9}, "stage1": {"nDCG@10": mean, "Recall@100": 0.9},
            "stage2": {"nDCG@10": mean, "Recall@100": 0.9},
            "per_query": {"zero_shot": {q: zero for q in claims}, "stage1": claims, "stage2": claims}}


def test_aggregate_means_sds_and_the_test_on_seed_averaged_claims():
    rows = {("none", 0): row("none", 0, [0.0, 0.0, 0.0], wall=60), ("none", 1): row("none", 1, [0.2, 0.2, 0.2], wall=80),
            ("cocondenser-cc", 0): row("cocondenser-cc", 0, [1.0, 0.0, 1.0]),
            ("cocondenser-cc", 1): row("cocondenser-cc", 1, [1.0, 0.4, 1.0]),
            ("cotmae-cc", 2): row("cotmae-cc", 2, [1.0, 1.0, 1.0])}  # no "none" of seed 2: no test
    arms = exp.aggregate(rows)
    assert list(arms) == ["none", "cocondenser-cc", "cotmae-cc"]  # the arms' order, not the rows'
    assert arms["none"]["wall_seconds"] == 70 and arms["none"]["pretrain_seconds"] == 0
    assert arms["cocondenser-cc"]["pretrain_seconds"] == 50
    mean, sd = arms["cocondenser-cc"]["stage2"]["nDCG@10"]
    assert mean == pytest.approx((2 / 3 + 2.4 / 3) / 2) and sd == pytest.approx(np.std([2 / 3, 0.8], ddof=1))
    assert arms["cotmae-cc"]["stage2"]["nDCG@10"][1] is None and "vs_none" not in arms["cotmae-cc"]
    vs = arms["cocondenser-cc"]["vs_none"]
    # per claim, averaged over seeds 0 and 1: arm (1.0, 0.2, 1.0), none (0.1, 0.1, 0.1): d = (0.9, 0.1, 0.9);
    # sign patterns reaching |mean| 1.9/3: both with all signs equal: 2 of 8
    assert vs["seeds"] == [0, 1] and vs["stage2"]["difference"] == pytest.approx(1.9 / 3)
    assert vs["stage2"]["p"] == pytest.approx(2 / 8)
    assert vs["zero_shot"]["difference"] == 0 and vs["zero_shot"]["p"] == 1.0
    table = exp.table_rows(arms)
    assert table[1][0] == "cocondenser-cc" and table[1][9].startswith("+0.6333 (p 0.250)")



def test_a_query_like_context_is_also_tested_against_its_objective_on_cc():
    rows = {("none", 0): row("none", 0, [0.0, 0.0, 0.0]),
            ("cotmae-cc", 0): row("cotmae-cc", 0, [0.5, 0.5, 0.5]),
            ("cotmae-title", 0): row("cotmae-title", 0, [1.0, 0.5, 0.5]),
            ("cocondenser-ict", 1): row("cocondenser-ict", 1, [1.0, 1.0, 1.0])}  # no cocondenser-cc: no test
    arms = exp.aggregate(rows)
    vs_cc = arms["cotmae-title"]["vs_cc"]
    # d = (0.5, 0, 0): the flips of the first claim reach |mean| 0.5/3 either way, the zero ones change nothing
    assert vs_cc["against"] == "cotmae-cc" and vs_cc["stage2"]["difference"] == pytest.approx(0.5 / 3)
    assert vs_cc["stage2"]["p"] == 1.0
    assert arms["cotmae-title"]["vs_none"]["stage2"]["difference"] == pytest.approx(2 / 3)
    assert "vs_cc" not in arms["cotmae-cc"] and "vs_cc" not in arms["cocondenser-ict"]
    assert exp.ARMS["contrastive-cc"].baseline is None and exp.ARMS["cocondenser-ict"].baseline == "cocondenser-cc"
    table = {r[0]: r for r in exp.table_rows(arms)}
    assert table["cotmae-title"][10] == "+0.1667 (p 1.000; Holm p 1.000)" and table["cotmae-cc"][10] == "–"
    assert len(table["none"]) == len(exp.HEADER)

def test_each_comparison_is_also_tested_over_the_seeds():
    d = [0.01, 0.02, 0.03]
    rows = {("none", s): row("none", s, [0.5, 0.5, 0.5]) for s in range(3)}
    rows |= {("cocondenser-cc", s): row("cocondenser-cc", s, [0.5 + d[s]] * 3) for s in range(3)}
    rows[("cocondenser-title", 0)] = row("cocondenser-title", 0, [0.7, 0.7, 0.7])  # one seed: no t-test
    arms = exp.aggregate(rows)
    vs = arms["cocondenser-cc"]["vs_none"]["stage2"]
    assert vs["per_seed"] == pytest.approx(d)
    # t = mean / (sd / sqrt 3) = 0.02 / (0.01 / sqrt 3) = 2 sqrt 3; Student's t with 2 degrees of freedom has
    # CDF 1/2 + t / (2 sqrt(2 + t^2)), so the two-sided p is 1 - t / sqrt(2 + t^2) = 1 - sqrt(12 / 14)
    assert vs["seed_t_p"] == pytest.approx(1 - np.sqrt(12 / 14))
    title = arms["cocondenser-title"]
    assert title["vs_cc"]["stage2"]["per_seed"] == pytest.approx([0.19]) and title["vs_cc"]["stage2"]["seed_t_p"] is None
    table = {(r[0], r[1]): r for r in exp.seed_rows(arms)}
    assert table[("cocondenser-cc", "none")][2:] == ["+0.0100, +0.0200, +0.0300", "+0.0200", "p 0.074"]
    assert table[("cocondenser-title", "cocondenser-cc")][4] == "–"
    assert exp.seed_t_test([0.01, 0.01]) is None  # no spread: no t


def test_the_planned_context_against_cc_comparisons_get_holms_adjustment():
    # by hand (Holm 1979): sorted 0.01, 0.03, 0.04, 0.5 times 4, 3, 2, 1 = 0.04, 0.09, 0.08 -> 0.09 (never below
    # the one before), 0.5
    assert exp.holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert exp.holm([0.4, 0.6]) == [0.8, 0.8] and exp.holm([]) == []  # 0.4 x 2; 0.6 x 1 kept at 0.8
    rows = {("none", 0): row("none", 0, [0.0, 0.0, 0.0]),
            ("cotmae-cc", 0): row("cotmae-cc", 0, [0.5, 0.5, 0.5]),
            ("cotmae-title", 0): row("cotmae-title", 0, [1.0, 0.5, 0.5]),
            ("cocondenser-cc", 0): row("cocondenser-cc", 0, [0.0, 0.0, 0.0]),
            ("cocondenser-title", 0): row("cocondenser-title", 0, [1.0, 1.0, 1.0])}
    arms = exp.aggregate(rows)
    # two planned comparisons: cocondenser-title vs cc p 2/8 (all three signs equal), cotmae-title's 1.0
    assert arms["cocondenser-title"]["vs_cc"]["stage2"]["holm_p"] == pytest.approx(0.5)
    assert arms["cotmae-title"]["vs_cc"]["stage2"]["holm_p"] == 1.0
    assert "holm_p" not in arms["cocondenser-title"]["vs_none"]["stage2"]  # against none: not the family
    table = {r[0]: r for r in exp.table_rows(arms)}
    assert table["cocondenser-title"][10] == "+1.0000 (p 0.250; Holm p 0.500)"
    assert table["cocondenser-title"][9] == "+1.0000 (p 0.250)"


def test_validation_split_is_a_seeded_fifth_of_the_train_claims(tmp_path):
    train = tmp_path / "train.tsv"
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{100 + q}\t1" for q in range(20)] + ["3\t999\t1"]
    train.write_text("\n".join(lines) + "\n")
    text = exp.validation_qrels(train, 0.2)
    assert text == exp.validation_qrels(train, 0.2)
    body = text.splitlines()
    assert body[0] == lines[0]
    claims = {line.split("\t")[0] for line in body[1:]}
    assert len(claims) == 4  # 20% of 20 claims, with every judgment of each
    assert len(body) - 1 == 4 + ("3" in claims)


def fake_work(tmp_path, done=(), weight=None):
    work = exp.Work(tmp_path, exp.Settings(seeds=2, mlm_candidates=(1.0, 0.3)), data=tmp_path / "no-data")
    for arm, seed in done:
        exp.append_line(work.results, row(arm, seed, [0.5]))
    if weight is not None:
        (tmp_path / "mlm-weight.json").write_text(json.dumps({"weight": weight}))
    return work


def test_run_next_order_and_what_is_skipped(tmp_path):
    work = fake_work(tmp_path)
    units = exp.pending(work)
    assert units[:3] == [("run", ("none", 0)), ("choose", 1.0), ("choose", 0.3)]
    assert units[3] == ("run", ("cocondenser-cc", 0)) and units[-1] == ("run", ("contrastive-cc", 1))
    assert len(units) == 3 + 2 * len(exp.ARMS) - 1
    (tmp_path / "choose-mlm" / "w1").mkdir(parents=True)
    (tmp_path / "choose-mlm" / "w1" / "result.json").write_text("{}")
    work = fake_work(tmp_path, done=[("none", 0), ("cocondenser-cc", 0)])
    assert exp.pending(work)[:2] == [("choose", 0.3), ("run", ("cocondenser-title", 0))]
    (tmp_path / "mlm-weight.json").write_text(json.dumps({"weight": 0.3}))
    assert exp.pending(work)[0] == ("run", ("cocondenser-title", 0))


def test_a_finished_arm_seed_is_skipped_without_running_anything(tmp_path, monkeypatch):
    work = fake_work(tmp_path, done=[("cotmae-ict", 1)], weight=0.3)

    def boom(*args, **kwargs):
        raise AssertionError("a step ran")

    monkeypatch.setattr(exp, "run_step", boom)
    monkeypatch.setattr(exp, "prepare", boom)
    assert exp.run_arm_seed(work, "cotmae-ict", 1) is None
    with pytest.raises(AssertionError, match="a step ran"):  # an unfinished one does run
        exp.run_arm_seed(work, "cotmae-ict", 0)


def test_a_step_whose_output_is_there_is_skipped(tmp_path, monkeypatch):
    work = fake_work(tmp_path)
    monkeypatch.setattr(exp.experiment.subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran")))
    done = tmp_path / "out" / "index.json"
    done.parent.mkdir()
    done.write_text("{}")
    assert exp.run_step(work, tmp_path, "index", ["index", "build"], done) == 0.0
    assert not (tmp_path / "steps.jsonl").exists()
    assert exp.resumable(tmp_path / "out", "index.json", "_work") == []
    (tmp_path / "part" / "_work").mkdir(parents=True)
    assert exp.resumable(tmp_path / "part", "index.json", "_work") == ["--resume"]
    (tmp_path / "empty").mkdir()
    assert exp.resumable(tmp_path / "empty", "index.json", "_work") == ["--overwrite"]


def test_the_arms_share_steps_batch_length_and_seed():
    s = exp.Settings()
    options = {name: arm.pretrain_options(s, 2, 0.3) for name, arm in exp.ARMS.items() if arm.objective}

    def value(opts, flag):
        return opts[opts.index(flag) + 1]

    for flag in ("--max-length", "--batch-size", "--seed", "--lr"):
        assert len({value(o, flag) for o in options.values()}) == 1, flag
    assert {value(o, "--max-steps") for n, o in options.items() if n != "contrastive-cc"} == {"500"}
    assert value(options["contrastive-cc"], "--max-steps") == "300"  # the same joint steps, no warm-up
    assert value(options["contrastive-cc"], "--mlm-weight") == "0.0"
    assert value(options["cotmae-title"], "--decoder") == "ar" and "--decoder" not in options["cotmae-cc"]
    assert value(options["cocondenser-title"], "--mix") == "tb:1"


def test_an_interrupted_step_keeps_its_time_and_counts_with_its_rerun(tmp_path, monkeypatch):
    work = fake_work(tmp_path)
    work.lock = tmp_path / "lock"

    def stopped(*args, **kwargs):
        raise SystemExit("stopped by signal 15")

    monkeypatch.setattr(exp.experiment.subprocess, "run", stopped)
    with pytest.raises(SystemExit):
        exp.run_step(work, tmp_path, "pretrain", ["pretrain"], tmp_path / "pt" / "pretrain.json")
    (first,) = [json.loads(line) for line in (tmp_path / "steps.jsonl").read_text().splitlines()]
    assert first["rc"] == "interrupted"

    class Done:
        returncode = 0

    def finishes(*args, **kwargs):
        (tmp_path / "pt").mkdir()
        (tmp_path / "pt" / "pretrain.json").write_text("{}")
        return Done()

    monkeypatch.setattr(exp.experiment.subprocess, "run", finishes)
    exp.run_step(work, tmp_path, "pretrain", ["pretrain", "--resume"], tmp_path / "pt" / "pretrain.json")
    rows = [json.loads(line) for line in (tmp_path / "steps.jsonl").read_text().splitlines()]
    assert [r["rc"] for r in rows] == ["interrupted", 0]
    assert exp.step_seconds(tmp_path)["pretrain"] == pytest.approx(rows[0]["seconds"] + rows[1]["seconds"], abs=0.11)


def test_pairs_holding_a_claim_are_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "1", "text": "Aspirin prevents cancer."}) + "\n")
    pairs = tmp_path / "pairs"
    pairs.mkdir()
    pq.write_table(pa.table({"query": ["A title."], "positive_text": ["A passage."]}), pairs / "tb.parquet")
    assert exp.check_no_claims(pairs, tmp_path)["texts_checked"] == {"tb.parquet": 2}
    pq.write_table(pa.table({"query": [" aspirin prevents cancer. "], "positive_text": ["x"]}), pairs / "ict.parquet")
    with pytest.raises(SystemExit, match="ict.parquet: 1 texts are SciFact claims"):
        exp.check_no_claims(pairs, tmp_path)


def test_the_plot_is_written_whole_as_a_png(tmp_path):
    rows = {("none", 0): row("none", 0, [0.1, 0.2]), ("cotmae-ict", 0): row("cotmae-ict", 0, [0.3, 0.2]),
            ("cotmae-ict", 1): row("cotmae-ict", 1, [0.4, 0.2])}
    out = exp.plot(rows, tmp_path / "report.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and [f.name for f in tmp_path.iterdir()] == ["report.png"]


def test_a_p_below_what_the_flips_resolve_is_not_printed_as_zero():
    assert exp.p_text(0.00009) == "p < 0.001" and exp.p_text(0.0432) == "p 0.043"
