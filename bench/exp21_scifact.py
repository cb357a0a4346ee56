"""Issue 21, section 8: query-as-context pre-training on SciFact, run so that a difference would show, resumable
one arm-seed at a time (bench/README.md, "Pre-training on SciFact, again").

No doc2query weights exist offline, so the query-like context is what the corpus has: the title (`mine --method
tb`; SciFact titles read like claims) and an ICT sentence (`mine --method ict`), against two passages of one
abstract (`cc`). Never a claim as input to pre-training: the pairs come from the corpus store alone, and
`prepare` checks that no pair text is a claim.

Arms (all from the packaged all-MiniLM-L6-v2, the same steps, batch, length and seed per seed):
    none                    no pre-training
    cocondenser-{cc,title,ict}  coCondenser on that context
    cotmae-{cc,title,ict}   CoT-MAE: cc with the official symmetric decoder; title and ict, the query-like
                            contexts, with caskcsg's query-as-context AR decoder (`--decoder ar`), as qc would
    contrastive-cc          coCondenser's contrastive term alone (`--mlm-weight 0`) on cc: no head to warm,
                            so no warm-up; the same joint steps
Pre-training (SETTINGS): 64-word passages (`corpus build --words 64`), 96 word pieces, batch 16, 200 steps
with the encoder frozen and the new heads at 1e-4 (`--head-warmup-steps`), then 300 joint steps at 2e-5.
The MLM weight is chosen first (`choose-mlm-weight`): coCondenser on cc, seed 0, each candidate's zero-shot
nDCG@10 on a validation split of the TRAINING claims (a seeded 20% of qrels/train.tsv; never the test claims),
the best one used by every arm with MLM terms.
Fine-tuning, identical for every arm: `pretriever finetune --beir SF --split train --two-stage`, one epoch of
batch 32 over the 809 train claims (919 judged pairs, 29 steps a stage), 3 negatives per claim in both stages
(BM25's top 200 for retriever 1, retriever 1's top 200 for retriever 2), abstracts at 128 word pieces, claims at
64, the arm's seed. Evaluation: the 300 test claims, nDCG@10 and Recall@100 (with per-claim nDCG@10) of the
index built straight after pre-training (zero-shot) and of retrievers 1 and 2, indexes at 128 word pieces.

Every step is a pretriever CLI command run under the shared lock (/tmp/heavy.lock, flock(2), the lock of
`flock /tmp/heavy.lock`) at `nice -n 5`; its wall time (without the wait for the lock) and the load are kept
in RUN/steps.jsonl. A step whose output is there is skipped; `pretrain`, `finetune` and `index build` continue
from their checkpoints. An arm-seed's line is appended to WORK/results.jsonl only when all its steps finished.

    python bench/exp21_scifact.py run-next [--count N] [--work /work/exp21-results]
    python bench/exp21_scifact.py run cocondenser-title 1
    python bench/exp21_scifact.py choose-mlm-weight      (also done by run-next, first)
    python bench/exp21_scifact.py status
    python bench/exp21_scifact.py report [--json OUT] [--markdown OUT]   (and WORK/report.png)
    python bench/exp21_scifact.py --smoke --work /tmp/exp21-smoke run-next --count 99   (the whole chain on a
        tiny subset, a few steps each: checks the plumbing, measures nothing)

Order of run-next: none seed 0 (the fine-tuning cost, no MLM weight needed), the MLM-weight candidates, then
seed by seed every arm (seed 0 first), so that an interrupted experiment has whole seeds.

Cost, measured 2026-11-27 on the shared 2-core machine, wall time without the wait for the lock, load 1.5-2.1
(bench/README.md has the table): shared steps once 2 min (the base index 89 s); `none` 661 s a seed
(`finetune --two-stage` 551 s, retriever 2's index 81 s, three evaluations ~10 s each); coCondenser's
pre-training 777 s (500 steps of 16 pairs, 10.4 pairs/s), its zero-shot index 79 s. A pre-trained arm-seed
is about 25 min, one seed of all eight arms about 3 hours, the whole design (3 seeds, the MLM-weight
choice) about 10 hours of lock time (coCondenser the dearest objective: an upper estimate).
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from pretriever.io import atomic_path
from pretriever.metrics import paired_randomisation

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "beir" / "scifact"
WORK = Path("/work/exp21-results")
LOCK = Path("/tmp/heavy.lock")


@dataclass(frozen=True)
class Settings:
    """What every arm shares; recorded in WORK/settings.json, and a work folder refuses other settings."""

    psg_words: int = 64  # pre-training passages (`corpus build --words`)
    pt_length: int = 96  # word pieces per pre-training text
    pt_batch: int = 16
    head_warmup: int = 200  # steps with the encoder frozen (heads at head_lr)
    joint_steps: int = 300  # steps of everything at pt_lr after the warm-up
    pt_lr: float = 2e-5
    head_lr: float = 1e-4
    mlm_candidates: tuple[float, ...] = (1.0, 0.3, 0.1)
    val_share: float = 0.2  # of the train claims, for the MLM weight
    ft_passage_length: int = 128
    ft_query_length: int = 64
    ft_batch: int = 32
    ft_negatives: int = 3  # both stages
    ft_depth: int = 200
    ft_max_steps: int | None = None  # None: one epoch
    index_length: int = 128
    seeds: int = 3
    save_steps: int = 50


SMOKE = Settings(psg_words=40, pt_length=32, pt_batch=4, head_warmup=2, joint_steps=2, mlm_candidates=(1.0, 0.3),
                 ft_passage_length=48, ft_query_length=24, ft_batch=4, ft_negatives=1, ft_depth=10, ft_max_steps=2,
                 index_length=48, seeds=2, save_steps=2)


@dataclass(frozen=True)
class Arm:
    name: str
    objective: str | None = None  # None: no pre-training
    method: str | None = None  # mining method of the context
    contrastive_only: bool = False

    def pretrain_options(self, s: Settings, seed: int, mlm_weight: float) -> list[str]:
        warm = 0 if self.contrastive_only else s.head_warmup
        options = ["--objective", self.objective, "--mix", f"{self.method}:1", "--max-length", str(s.pt_length),
                   "--batch-size", str(s.pt_batch), "--max-steps", str(warm + s.joint_steps),
                   "--head-warmup-steps", str(warm), "--lr", str(s.pt_lr), "--head-lr", str(s.head_lr),
                   "--mlm-weight", str(0.0 if self.contrastive_only else mlm_weight), "--seed", str(seed),
                   "--save-steps", str(s.save_steps), "--logging-steps", "10"]
        if self.objective == "cotmae" and self.method != "cc":
            options += ["--decoder", "ar"]  # the query-like context decoded as qc is (caskcsg's cotmae-qc)
        return options

    @property
    def baseline(self) -> str | None:
        """The arm a query-like context (title, ICT sentence) must beat besides `none`: the same objective on cc,
        the comparison that decides whether the context's being query-like is what helps; None for the others."""
        if self.objective and self.method != "cc" and not self.contrastive_only:
            return f"{self.objective}-cc"
        return None


ARMS = {a.name: a for a in [
    Arm("none"),
    Arm("cocondenser-cc", "cocondenser", "cc"), Arm("cocondenser-title", "cocondenser", "tb"),
    Arm("cocondenser-ict", "cocondenser", "ict"),
    Arm("cotmae-cc", "cotmae", "cc"), Arm("cotmae-title", "cotmae", "tb"), Arm("cotmae-ict", "cotmae", "ict"),
    Arm("contrastive-cc", "cocondenser", "cc", contrastive_only=True),
]}
METRICS = ("nDCG@10", "Recall@100")
EVALS = ("zero_shot", "stage1", "stage2")


# ----------------------------------------------------------------------------------------------- the work folder


@dataclass
class Work:
    root: Path
    settings: Settings
    data: Path = SCIFACT
    lock: Path = LOCK

    @property
    def shared(self) -> Path:
        return self.root / "shared"

    @property
    def results(self) -> Path:
        return self.root / "results.jsonl"

    def run_dir(self, arm: str, seed: int) -> Path:
        return self.root / "runs" / f"{arm}-s{seed}"

    def check_settings(self) -> None:
        """Record the settings on first use; refuse a folder that holds another experiment's."""
        path, mine = self.root / "settings.json", dataclasses.asdict(self.settings)
        mine["mlm_candidates"] = list(mine["mlm_candidates"])
        if path.exists():
            theirs = json.loads(path.read_text())
            if theirs != mine:
                raise SystemExit(f"{path} holds other settings ({theirs}); use another --work")
        else:
            write_atomic(path, json.dumps(mine, indent=1) + "\n")

    def finished(self) -> dict[tuple[str, int], dict[str, Any]]:
        """The arm-seeds whose line is in results.jsonl (the last line of each wins)."""
        done: dict[tuple[str, int], dict[str, Any]] = {}
        if self.results.exists():
            for line in self.results.read_text().splitlines():
                if line.strip():
                    row = json.loads(line)
                    done[(row["arm"], row["seed"])] = row
        return done

    def mlm_weight(self) -> float | None:
        path = self.root / "mlm-weight.json"
        return json.loads(path.read_text())["weight"] if path.exists() else None


def write_atomic(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def append_line(path: Path, row: dict[str, Any]) -> None:
    """One whole line, in one write, under an exclusive lock: two runners never interleave."""
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(json.dumps(row) + "\n")
        f.flush()
        os.fsync(f.fileno())


@contextmanager
def unit_lock(folder: Path) -> Iterator[bool]:
    """True when this runner holds the unit (no other runner works on it now)."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True


# ---------------------------------------------------------------------------------------------------- the steps


def pretriever() -> list[str]:
    beside = Path(sys.executable).parent / "pretriever"
    return [str(beside)] if beside.exists() else [shutil.which("pretriever") or "pretriever"]


def run_step(work: Work, folder: Path, name: str, args: list[str], done: Path) -> float:
    """`pretriever ARGS` unless ``done`` exists; under the heavy lock, at nice 5; its wall time (lock wait apart)
    and the load before and after appended to FOLDER/steps.jsonl. Returns the seconds it ran (0 if skipped)."""
    if done.exists():
        return 0.0
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    waited = time.perf_counter()
    with work.lock.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        waited = time.perf_counter() - waited
        load, started = os.getloadavg()[0], time.perf_counter()
        rc: int | str = "interrupted"  # stopped (Ctrl-C, SIGTERM): subprocess.run kills the step, its time is kept
        try:
            with (folder / "logs" / f"{name}.log").open("a") as log:
                log.write(f"\n$ pretriever {' '.join(args)}\n")
                log.flush()
                rc = subprocess.run(["nice", "-n", "5", *pretriever(), *args], stdout=log, stderr=subprocess.STDOUT,
                                    env={**os.environ, "HF_HUB_OFFLINE": "1"}).returncode
        finally:
            seconds = time.perf_counter() - started
            append_line(folder / "steps.jsonl", {
                "step": name, "command": "pretriever " + " ".join(args), "rc": rc, "seconds": round(seconds, 1),
                "lock_wait_seconds": round(waited, 1), "load_before": round(load, 2),
                "load_after": round(os.getloadavg()[0], 2),
                "ended": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    if rc != 0 or not done.exists():
        raise SystemExit(f"step {name} failed (exit {rc}); see {folder / 'logs' / (name + '.log')}")
    print(f"  {name}: {seconds:,.0f} s (waited {waited:,.0f} s for the lock, load {load:.1f})", flush=True)
    return seconds


def resumable(folder: Path, marker: str, work_marker: str) -> list[str]:
    """--resume when an interrupted run left its work behind, --overwrite when a folder without it is there."""
    if (folder / work_marker).exists():
        return ["--resume"]
    return ["--overwrite"] if folder.exists() and not (folder / marker).exists() else []


def index_step(work: Work, folder: Path, name: str, model: str | None, out: Path) -> None:
    args = ["index", "build", str(work.shared / "store"), "--out", str(out), "--max-length",
            str(work.settings.index_length)] + (["--model", model] if model else [])
    run_step(work, folder, name, args + resumable(out, "index.json", "_work"), out / "index.json")


def eval_step(work: Work, folder: Path, name: str, index: Path, out: Path, qrels: Path) -> dict[str, Any]:
    """Evaluate one index on ``qrels``: {"nDCG@10", "Recall@100", "per_query": {claim id: nDCG@10}}."""
    if out.exists() and not (out / "results.json").exists():
        shutil.rmtree(out)
    run_step(work, folder, name, ["evaluate", "--index", str(index), "--queries", str(work.data / "queries.jsonl"),
                                  "--qrels", str(qrels), "--out", str(out), "--no-plots", "--no-tuned"],
             out / "results.json")
    return read_eval(out / "results.json")


def read_eval(path: Path) -> dict[str, Any]:
    results = json.loads(path.read_text())
    (system, means), = ((k, v) for k, v in results["systems"].items() if k != "bm25")
    per_query = {q: v["nDCG@10"] for q, v in results["per_query"][system].items()}
    return {**{m: means[m] for m in METRICS}, "per_query": per_query}


def prepare(work: Work) -> None:
    """The corpus stores, the pre-training pairs (checked to hold no claim), the validation split of the train
    claims, and the base model's zero-shot index: everything arms share, each made once."""
    sh, s = work.shared, work.settings
    sh.mkdir(parents=True, exist_ok=True)
    if not work.data.exists():
        raise SystemExit(f"{work.data}: SciFact (BEIR) is not there")
    run_step(work, sh, "store", ["corpus", "build", str(work.data), "--out", str(sh / "store"), "--overwrite"],
             sh / "store" / "manifest.json")
    run_step(work, sh, "passages", ["corpus", "build", str(work.data), "--out", str(sh / "psg"), "--words",
                                    str(s.psg_words), "--overwrite"], sh / "psg" / "manifest.json")
    run_step(work, sh, "mine", ["mine", str(sh / "psg"), "--method", "cc,tb,ict", "--negatives", "none",
                                "--out", str(sh / "pairs"), "--overwrite"], sh / "pairs" / "pairs.json")
    if not (sh / "no-claims.json").exists():
        write_atomic(sh / "no-claims.json", json.dumps(check_no_claims(sh / "pairs", work.data), indent=1) + "\n")
    if not (sh / "qrels-val.tsv").exists():
        write_atomic(sh / "qrels-val.tsv", validation_qrels(work.data / "qrels" / "train.tsv", s.val_share))
    index_step(work, sh, "base-index", None, sh / "base-index")


def check_no_claims(pairs: Path, data: Path) -> dict[str, Any]:
    """Refuse pairs any of whose texts is a SciFact claim (test or train): the claims are what is evaluated."""
    import pyarrow.parquet as pq

    claims = {json.loads(line)["text"].strip().lower() for line in (data / "queries.jsonl").open()}
    counts = {}
    for f in sorted(pairs.glob("*.parquet")):
        table = pq.read_table(f)
        texts = [t for c in ("query", "positive_text") if c in table.column_names
                 for t in table[c].to_pylist() if t]
        hits = sum(t.strip().lower() in claims for t in texts)
        if hits:
            raise SystemExit(f"{f}: {hits} texts are SciFact claims; pre-training never reads a claim")
        counts[f.name] = len(texts)
    return {"claims": len(claims), "texts_checked": counts, "claims_found": 0}


def validation_qrels(train: Path, share: float, seed: int = 0) -> str:
    """A seeded ``share`` of the train claims (all their judgments), as a BEIR qrels file."""
    lines = train.read_text().splitlines()
    ids = sorted({line.split("\t")[0] for line in lines[1:]}, key=int)
    chosen = set(random.Random(seed).sample(ids, max(1, round(share * len(ids)))))
    return "\n".join([lines[0], *(line for line in lines[1:] if line.split("\t")[0] in chosen)]) + "\n"


def pretrain_step(work: Work, folder: Path, arm: Arm, seed: int, mlm_weight: float) -> Path:
    out = folder / "pt"
    options = arm.pretrain_options(work.settings, seed, mlm_weight)
    run_step(work, folder, "pretrain", ["pretrain", str(work.shared / "pairs"), "--out", str(out), *options,
                                        *resumable(out, "pretrain.json", "checkpoints")], out / "pretrain.json")
    return out


def pretrain_summary(out: Path) -> dict[str, Any]:
    report = json.loads((out / "pretrain.json").read_text())
    curve = report["loss_curve"]
    return {"steps": report["steps"], "train_seconds": report["train_seconds"],
            "pairs_per_second": report["pairs_per_second"], "first": curve[0] if curve else None,
            "last": curve[-1] if curve else None, "pairs": report["pairs"]["per_epoch_by_method"]}


# ---------------------------------------------------------------------------------------------------- the units


def choose_unit(work: Work, weight: float) -> None:
    """One MLM-weight candidate: coCondenser on cc, seed 0, zero-shot nDCG@10 on the validation claims."""
    folder = work.root / "choose-mlm" / f"w{weight:g}"
    done = folder / "result.json"
    if done.exists():
        return
    out = pretrain_step(work, folder, ARMS["cocondenser-cc"], 0, weight)
    index_step(work, folder, "index", str(out), folder / "index")
    val = eval_step(work, folder, "eval-val", folder / "index", folder / "eval-val", work.shared / "qrels-val.tsv")
    write_atomic(done, json.dumps({"weight": weight, "val": {m: val[m] for m in METRICS},
                                   "pretrain": pretrain_summary(out), "steps": step_seconds(folder)}) + "\n")


def choose_mlm_weight(work: Work) -> float:
    """Run the missing candidates, then record the best (ties: the earlier candidate) in WORK/mlm-weight.json."""
    chosen = work.mlm_weight()
    if chosen is not None:
        return chosen
    prepare(work)
    for weight in work.settings.mlm_candidates:
        choose_unit(work, weight)
    base = eval_step(work, work.shared, "base-eval-val", work.shared / "base-index", work.shared / "base-eval-val",
                     work.shared / "qrels-val.tsv")
    rows = [json.loads((work.root / "choose-mlm" / f"w{w:g}" / "result.json").read_text())
            for w in work.settings.mlm_candidates]
    best = max(rows, key=lambda r: r["val"]["nDCG@10"])  # max keeps the first of equals
    write_atomic(work.root / "mlm-weight.json", json.dumps(
        {"weight": best["weight"], "by": "zero-shot nDCG@10 on WORK/shared/qrels-val.tsv (train claims)",
         "candidates": {f"{r['weight']:g}": r["val"]["nDCG@10"] for r in rows},
         "no_pretraining": base["nDCG@10"]}, indent=1) + "\n")
    return best["weight"]


def step_seconds(folder: Path) -> dict[str, float]:
    """Each step's wall time: the sum over its runs (an interrupted step that was resumed counts every part)."""
    seconds: dict[str, float] = {}
    path = folder / "steps.jsonl"
    for line in path.read_text().splitlines() if path.exists() else []:
        row = json.loads(line)
        seconds[row["step"]] = round(seconds.get(row["step"], 0.0) + row["seconds"], 1)
    return seconds


def run_arm_seed(work: Work, arm_name: str, seed: int) -> dict[str, Any] | None:
    """One arm-seed from where it stopped; its line appended to results.jsonl at the end. None when it is finished
    already or another runner holds it."""
    if (arm_name, seed) in work.finished():
        print(f"{arm_name} seed {seed}: finished already")
        return None
    arm, s = ARMS[arm_name], work.settings
    folder = work.run_dir(arm_name, seed)
    with unit_lock(folder) as mine:
        if not mine:
            print(f"{arm_name} seed {seed}: another runner holds it")
            return None
        print(f"{arm_name} seed {seed}:", flush=True)
        prepare(work)
        weight = None
        if arm.objective is None:
            model, zero_index = None, work.shared / "base-index"
        else:
            weight = 0.0 if arm.contrastive_only else choose_mlm_weight(work)
            model = str(pretrain_step(work, folder, arm, seed, weight))
            zero_index = folder / "zs-index"
            index_step(work, folder, "zs-index", model, zero_index)
        test = work.data / "qrels" / "test.tsv"
        evals = {"zero_shot": eval_step(work, folder, "zs-eval", zero_index, folder / "zs-eval", test)}
        ft = folder / "ft"
        run_step(work, folder, "finetune", [
            "finetune", "--beir", str(work.data), "--split", "train", "--corpus", str(work.shared / "store"),
            *(["--model", model] if model else []), "--two-stage", "--bm25-negatives", str(s.ft_negatives),
            "--negatives-per-query", str(s.ft_negatives), "--bm25-depth", str(s.ft_depth), "--negative-depth",
            str(s.ft_depth), "--max-passage-length", str(s.ft_passage_length), "--max-query-length",
            str(s.ft_query_length), "--batch-size", str(s.ft_batch), "--seed", str(seed),
            *(["--max-steps", str(s.ft_max_steps)] if s.ft_max_steps else ["--epochs", "1"]), "--out", str(ft)],
            ft / "stage2" / "modules.json")
        index_step(work, folder, "stage2-index", str(ft / "stage2"), ft / "stage2-index")
        evals["stage1"] = eval_step(work, folder, "stage1-eval", ft / "stage1-index", folder / "stage1-eval", test)
        evals["stage2"] = eval_step(work, folder, "stage2-eval", ft / "stage2-index", folder / "stage2-eval", test)
        steps = step_seconds(folder)
        row = {"arm": arm_name, "seed": seed, "mlm_weight": weight,
               "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "wall_seconds": round(sum(steps.values()), 1), "steps": steps,
               "pretrain": pretrain_summary(Path(model)) if model else None,
               **{e: {m: evals[e][m] for m in METRICS} for e in EVALS},
               "per_query": {e: evals[e]["per_query"] for e in EVALS}}
        append_line(work.results, row)
        print(f"{arm_name} seed {seed}: done in {row['wall_seconds']:,.0f} s; "
              + ", ".join(f"{e} nDCG@10 {evals[e]['nDCG@10']:.4f}" for e in EVALS), flush=True)
        return row


def pending(work: Work) -> list[tuple[str, Any]]:
    """The units left, in run-next's order: ("run", (arm, seed)) and ("choose", weight)."""
    done = work.finished()
    units: list[tuple[str, Any]] = []
    if ("none", 0) not in done:
        units.append(("run", ("none", 0)))
    if work.mlm_weight() is None:
        units += [("choose", w) for w in work.settings.mlm_candidates
                  if not (work.root / "choose-mlm" / f"w{w:g}" / "result.json").exists()]
    units += [("run", (arm, seed)) for seed in range(work.settings.seeds) for arm in ARMS
              if (arm, seed) not in done and (arm, seed) != ("none", 0)]
    return units


def run_next(work: Work, count: int) -> int:
    """Run up to ``count`` units; returns how many ran."""
    ran = 0
    while ran < count:
        units = pending(work)
        if not units:
            print("every arm-seed has finished")
            break
        kind, what = units[0]
        if kind == "choose":
            prepare(work)
            choose_unit(work, what)
            if not [u for u in pending(work) if u[0] == "choose"]:
                print(f"MLM weight chosen: {choose_mlm_weight(work):g}")
        elif run_arm_seed(work, *what) is None:
            break  # held by another runner: do not spin
        ran += 1
    return ran


# --------------------------------------------------------------------------------------------------- the report


def mean_sd(values: list[float]) -> tuple[float, float | None]:
    return float(np.mean(values)), (float(np.std(values, ddof=1)) if len(values) > 1 else None)


def aggregate(rows: dict[tuple[str, int], dict[str, Any]]) -> dict[str, Any]:
    """Per arm: seeds, mean and sd over seeds of each evaluation's metrics, mean wall time; against "none", on the
    seeds both have, the per-claim nDCG@10 averaged over those seeds, its mean difference and the paired
    randomisation test's p over the claims (zero-shot and after each fine-tuning stage); a query-like context's
    arm the same against its objective's cc arm ("vs_cc", see :attr:`Arm.baseline`), whose p after two stages
    also gets Holm's adjustment over all such comparisons ("holm_p")."""
    arms: dict[str, Any] = {}
    for name in ARMS:
        seeds = sorted(seed for arm, seed in rows if arm == name)
        if not seeds:
            continue
        runs = [rows[(name, s)] for s in seeds]
        entry: dict[str, Any] = {"seeds": seeds, "wall_seconds": mean_sd([r["wall_seconds"] for r in runs])[0],
                                 "pretrain_seconds": mean_sd([r["steps"].get("pretrain", 0.0) for r in runs])[0],
                                 "mlm_weight": runs[0]["mlm_weight"]}
        for e in EVALS:
            entry[e] = {m: mean_sd([r[e][m] for r in runs]) for m in METRICS}
        for key, base in (("vs_none", "none" if name != "none" else None), ("vs_cc", ARMS[name].baseline)):
            compared = paired_against(rows, name, base, seeds) if base else None
            if compared:
                entry[key] = compared
        arms[name] = entry
    planned = [a["vs_cc"]["stage2"] for a in arms.values() if "vs_cc" in a]
    for vs, adjusted in zip(planned, holm([vs["p"] for vs in planned])):
        vs["holm_p"] = adjusted
    return arms


def holm(ps: list[float]) -> list[float]:
    """Holm's step-down adjustment (Holm 1979, Scand. J. Statist. 6:65-70): the k-th smallest of m p-values
    times m - k + 1, never below the one before it, at most 1. The family is the planned "vs cc" comparisons
    (a query-like context against its objective on cc, four when every arm has run), so a single one that looks
    significant is read against the chance that one of four would."""
    adjusted, running = [1.0] * len(ps), 0.0
    for rank, i in enumerate(np.argsort(ps, kind="stable")):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


def paired_against(rows: dict[tuple[str, int], dict[str, Any]], name: str, base: str,
                   seeds: list[int]) -> dict[str, Any] | None:
    """On the seeds both arms have, each claim's nDCG@10 averaged over those seeds; per evaluation the mean
    difference (arm minus base) and the paired randomisation test's two-sided p over the claims. That test holds
    the seeds fixed, so beside it each seed's difference and a paired t-test over the seeds (``seed_t_p``, None
    for one seed or with no spread), which counts the seed-to-seed spread of fine-tuning."""
    common = [s for s in seeds if (base, s) in rows]
    if not common:
        return None
    out: dict[str, Any] = {"against": base, "seeds": common}
    for e in EVALS:
        claims = sorted(rows[(base, common[0])]["per_query"][e])
        mine = np.mean([[rows[(name, s)]["per_query"][e][q] for q in claims] for s in common], axis=0)
        theirs = np.mean([[rows[(base, s)]["per_query"][e][q] for q in claims] for s in common], axis=0)
        per_seed = [rows[(name, s)][e]["nDCG@10"] - rows[(base, s)][e]["nDCG@10"] for s in common]
        out[e] = {"claims": len(claims), "difference": float(np.mean(mine - theirs)),
                  "p": paired_randomisation(mine, theirs), "per_seed": per_seed, "seed_t_p": seed_t_test(per_seed)}
    return out


def seed_t_test(differences: list[float]) -> float | None:
    """Two-sided p of a one-sample t-test of the per-seed differences against 0 (a paired t over seeds)."""
    if len(differences) < 2 or np.std(differences) == 0:
        return None
    from scipy.stats import ttest_1samp

    return float(ttest_1samp(differences, 0.0).pvalue)


def fmt(value: tuple[float, float | None]) -> str:
    mean, sd = value
    return f"{mean:.4f}" + (f" ± {sd:.4f}" if sd is not None else "")


def p_text(p: float) -> str:
    """10,000 sign flips cannot tell p below 0.001 apart: say so rather than print 0.000."""
    return "p < 0.001" if p < 0.001 else f"p {p:.3f}"


def table_rows(arms: dict[str, Any]) -> list[list[str]]:
    rows = []
    for name, a in arms.items():
        compared = [(a.get(key, {}), e) for key, e in (("vs_none", "zero_shot"), ("vs_none", "stage2"),
                                                         ("vs_cc", "stage2"))]
        rows.append([name, str(len(a["seeds"])), "" if a["mlm_weight"] is None else f"{a['mlm_weight']:g}",
                     fmt(a["zero_shot"]["nDCG@10"]), fmt(a["zero_shot"]["Recall@100"]),
                     fmt(a["stage2"]["nDCG@10"]), fmt(a["stage2"]["Recall@100"]), fmt(a["stage1"]["nDCG@10"]),
                     *(comparison_text(vs[e]) if e in vs else "–" for vs, e in compared),
                     f"{a['pretrain_seconds'] / 60:,.1f}", f"{a['wall_seconds'] / 60:,.1f}"])
    return rows


def comparison_text(vs: dict[str, Any]) -> str:
    """'+0.0105 (p 0.029)', with Holm's adjusted p where the comparison is one of the planned family."""
    holm_p = f"; Holm {p_text(vs['holm_p'])}" if "holm_p" in vs else ""
    return f"{vs['difference']:+.4f} ({p_text(vs['p'])}{holm_p})"


def seed_rows(arms: dict[str, Any]) -> list[list[str]]:
    """After 2 stages, each comparison's per-seed nDCG@10 differences and the paired t-test over the seeds."""
    rows = []
    for name, a in arms.items():
        for key in ("vs_none", "vs_cc"):
            if key in a:
                vs = a[key]["stage2"]
                t_p = vs["seed_t_p"]
                rows.append([name, a[key]["against"], ", ".join(f"{d:+.4f}" for d in vs["per_seed"]),
                             f"{np.mean(vs['per_seed']):+.4f}", "–" if t_p is None else p_text(t_p)])
    return rows


SEED_HEADER = ["arm", "against", "2 stages nDCG@10 difference per seed", "mean", "paired t over seeds"]
HEADER = ["arm", "seeds", "MLM w", "zero-shot nDCG@10", "zero-shot R@100", "2 stages nDCG@10", "2 stages R@100",
          "1 stage nDCG@10", "zero-shot vs none", "2 stages vs none", "2 stages vs cc", "pre-train min",
          "wall min"]


def markdown(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub table, the first column left-aligned, for bench/README."""
    return "\n".join(["| " + " | ".join(header) + " |", "| --- " + "| ---: " * (len(header) - 1) + "|",
                      *("| " + " | ".join(r) + " |" for r in rows)]) + "\n"


def plot(rows: dict[tuple[str, int], dict[str, Any]], path: Path) -> Path:
    """nDCG@10 of every arm-seed, zero-shot and after both fine-tuning stages, a dot per seed and a bar at the
    mean; the dashed line is "none"'s mean, so an arm above it helped on average."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [a for a in ARMS if any(arm == a for arm, _ in rows)]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, (e, title) in zip(axes, (("zero_shot", "straight after pre-training"), ("stage2", "after 2 stages"))):
        for x, name in enumerate(names):
            values = [r[e]["nDCG@10"] for (arm, _), r in sorted(rows.items()) if arm == name]
            ax.scatter([x] * len(values), values, s=14, color="C0" if name == "none" else "C1", zorder=3)
            ax.hlines(np.mean(values), x - 0.3, x + 0.3, color="black", linewidth=1.5)
        base = [r[e]["nDCG@10"] for (arm, _), r in rows.items() if arm == "none"]
        if base:
            ax.axhline(np.mean(base), color="C0", linestyle="--", linewidth=1, label='"none", mean')
            ax.legend(loc="best", fontsize="small")
        ax.set_xticks(range(len(names)), names, rotation=35, ha="right")
        ax.set_ylabel("nDCG@10, SciFact test claims")
        ax.set_title(title)
        ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)
    return path


def report(work: Work, json_out: Path | None, markdown_out: Path | None) -> dict[str, Any]:
    from rich.console import Console
    from rich.table import Table

    finished = work.finished()
    arms = aggregate(finished)
    rows, by_seed = table_rows(arms), seed_rows(arms)
    claims = next((r["per_query"]["stage2"] for r in finished.values()), {})
    console = Console(width=max(160, shutil.get_terminal_size().columns))
    for title, header, body in ((f"SciFact, {len(claims)} test claims, mean ± sd over seeds ({work.root})", HEADER,
                                 rows), ("Seed by seed, after 2 stages", SEED_HEADER, by_seed)):
        table = Table(title=title)
        for h in header:
            table.add_column(h, justify="left" if h in ("arm", "against") else "right", no_wrap=h == "arm")
        for r in body:
            table.add_row(*r)
        console.print(table)
    md = markdown(HEADER, rows) + "\n" + markdown(SEED_HEADER, by_seed)
    note = ("vs none: mean per-claim nDCG@10 difference, per-claim scores averaged over the seeds both arms have, "
            "and the two-sided p of a paired randomisation test over the claims (10,000 sign flips); vs cc: the same "
            "for a query-like context against its objective on cc, with Holm's adjusted p over those planned "
            "comparisons. Second table: the same comparisons seed by seed "
            "and a two-sided paired t-test over the seeds, which also counts fine-tuning's spread between seeds.\n")
    out = {"arms": arms, "mlm_weight": json.loads((work.root / "mlm-weight.json").read_text())
           if (work.root / "mlm-weight.json").exists() else None, "settings": dataclasses.asdict(work.settings)}
    write_atomic(json_out or work.root / "report.json", json.dumps(out, indent=1) + "\n")
    write_atomic(markdown_out or work.root / "report.md", md + "\n" + note)
    print(note, end="")
    if finished:
        print(f"plot: {plot(finished, work.root / 'report.png')}")
    return out


def status(work: Work) -> None:
    done, units = work.finished(), pending(work)
    print(f"{len(done)} arm-seeds finished, {len(units)} units left; next: {units[0] if units else 'nothing'}")
    print(f"MLM weight: {work.mlm_weight()}")
    for (arm, seed), row in sorted(done.items()):
        print(f"  {arm} seed {seed}: {row['wall_seconds']:,.0f} s, stage 2 nDCG@10 {row['stage2']['nDCG@10']:.4f}")


# ------------------------------------------------------------------------------------------------------ the smoke


def smoke_data(folder: Path, source: Path = SCIFACT, n_test: int = 6, n_train: int = 12, n_docs: int = 60) -> Path:
    """A tiny BEIR folder with test and train judgments: the first claims of each split and their abstracts, then
    other abstracts up to ``n_docs``."""
    if (folder / "corpus.jsonl").exists():
        return folder
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    judged, keep = {}, set()
    for split, n in (("test", n_test), ("train", n_train)):
        lines = (source / "qrels" / f"{split}.tsv").read_text().splitlines()
        wanted = list(dict.fromkeys(line.split("\t")[0] for line in lines[1:]))[:n]
        judged[split] = [lines[0], *(line for line in lines[1:] if line.split("\t")[0] in wanted)]
        keep |= set(wanted)
    needed = {line.split("\t")[1] for rows in judged.values() for line in rows[1:]}
    docs = [d for d in map(json.loads, (source / "corpus.jsonl").open())]
    docs = [d for d in docs if d["_id"] in needed] + [d for d in docs if d["_id"] not in needed][:n_docs - len(needed)]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text("".join(line + "\n" for line in (source / "queries.jsonl").read_text()
                                                  .splitlines() if json.loads(line)["_id"] in keep))
    for split, rows in judged.items():
        (folder / "qrels" / f"{split}.tsv").write_text("\n".join(rows) + "\n")
    return folder


def stop(signum: int, frame: Any) -> None:
    raise SystemExit(f"stopped by signal {signum}; run again to continue")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=WORK, help="where every output goes (never the repository)")
    parser.add_argument("--lock", type=Path, default=LOCK, help="the lock the heavy steps take turns on")
    parser.add_argument("--smoke", action="store_true", help="a tiny SciFact subset and a few steps each")
    sub = parser.add_subparsers(dest="command", required=True)
    nxt = sub.add_parser("run-next", help="run the next unit(s) not finished")
    nxt.add_argument("--count", type=int, default=1)
    one = sub.add_parser("run", help="run (or finish) one arm-seed")
    one.add_argument("arm", choices=list(ARMS))
    one.add_argument("seed", type=int)
    sub.add_parser("choose-mlm-weight", help="pre-train each MLM-weight candidate and record the best")
    sub.add_parser("status", help="what has finished and what is next")
    rep = sub.add_parser("report", help="the table, JSON and markdown from results.jsonl")
    rep.add_argument("--json", type=Path)
    rep.add_argument("--markdown", type=Path)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, stop)  # a stopped runner records the interrupted step's time, and kills it
    work = Work(args.work.resolve(), SMOKE if args.smoke else Settings(), lock=args.lock)
    if args.smoke:
        work.data = smoke_data(work.root / "smoke-data")
    if REPO in work.root.parents or work.root == REPO:
        raise SystemExit(f"--work {work.root} is inside the repository; results live outside it")
    work.root.mkdir(parents=True, exist_ok=True)
    work.check_settings()
    if args.command == "run-next":
        run_next(work, args.count)
    elif args.command == "run":
        run_arm_seed(work, args.arm, args.seed)
    elif args.command == "choose-mlm-weight":
        print(f"MLM weight: {choose_mlm_weight(work):g}")
    elif args.command == "status":
        status(work)
    else:
        report(work, args.json, args.markdown)


if __name__ == "__main__":
    main()
