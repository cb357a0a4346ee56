"""What bench's resumable SciFact experiments share (exp21_scifact.py, exp38_plainstart.py): the work folder, the steps
(pretriever CLI commands under the shared lock), an arm-seed from pre-training to its three evaluations, run-next, and
the report's statistics (paired randomisation test over the claims, t-test over the seeds, Holm's correction).

An experiment declares its settings (a frozen dataclass extending :class:`FineTuning`), its arms, what comes before
fine-tuning (the ``start`` of :func:`run_arm_seed`), its units in run-next's order and its comparisons; everything
here is the same for all.

Every step is a pretriever CLI command run under the shared lock (/tmp/heavy.lock, flock(2), the lock of
`flock /tmp/heavy.lock`) at `nice -n 5`; its wall time (without the wait for the lock) and the load are kept
in RUN/steps.jsonl. A step whose output is there is skipped; `pretrain`, `finetune` and `index build` continue
from their checkpoints. An arm-seed's line is appended to WORK/results.jsonl only when all its steps finished.
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

import numpy as np

from pretriever.io import atomic_path
from pretriever.metrics import paired_randomisation

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "beir" / "scifact"
LOCK = Path("/tmp/heavy.lock")
METRICS = ("nDCG@10", "Recall@100")
EVALS = ("zero_shot", "stage1", "stage2")

Rows = dict[tuple[str, int], dict[str, Any]]  # (arm, seed) -> its line of results.jsonl


@dataclass(frozen=True)
class FineTuning:
    """The fine-tuning and evaluation every arm of an experiment shares (`finetune --two-stage`, then indexes); an
    experiment's settings extend it with what comes before."""

    ft_passage_length: int = 128
    ft_query_length: int = 64
    ft_batch: int = 32
    ft_negatives: int = 3  # both stages
    ft_depth: int = 200
    ft_max_steps: int | None = None  # None: ft_epochs epochs
    ft_epochs: float = 1.0
    ft_lr: float | None = None  # None: finetune's default (2e-5, for a model that is a retriever already)
    index_length: int = 128
    seeds: int = 3
    save_steps: int = 50


SMOKE_FINETUNING = dict(ft_passage_length=48, ft_query_length=24, ft_batch=4, ft_negatives=1, ft_depth=10,
                        ft_max_steps=2, index_length=48, seeds=2, save_steps=2)


@dataclass(frozen=True)
class Arm:
    """An arm: its pre-training objective (None: none) on the pairs of one mining method, the context."""

    name: str
    objective: str | None = None  # None: no pre-training
    method: str | None = None  # mining method of the context
    contrastive_only: bool = False  # coCondenser's contrastive term alone (--mlm-weight 0)

    def options(self, length: int, batch: int, steps: int, lr: float, seed: int, save_steps: int) -> list[str]:
        """The `pretrain` options every experiment sets so; CoT-MAE decodes a context other than cc as a query
        (`--decoder ar`, caskcsg's cotmae-qc)."""
        options = ["--objective", self.objective, "--mix", f"{self.method}:1", "--max-length", str(length),
                   "--batch-size", str(batch), "--max-steps", str(steps), "--lr", str(lr), "--seed", str(seed),
                   "--save-steps", str(save_steps), "--logging-steps", "10"]
        if self.objective == "cotmae" and self.method != "cc":
            options += ["--decoder", "ar"]
        return options

    @property
    def baseline(self) -> str | None:
        """The arm a query-like context (title, ICT sentence) must beat besides the experiment's baseline: the same
        objective on cc, the comparison that decides whether the context's being query-like is what helps; None
        for the others."""
        if self.objective and self.method != "cc" and not self.contrastive_only:
            return f"{self.objective}-cc"
        return None


# ----------------------------------------------------------------------------------------------- the work folder


@dataclass
class Work:
    root: Path
    settings: Any  # a frozen dataclass extending FineTuning
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
        path, mine = self.root / "settings.json", json.loads(json.dumps(dataclasses.asdict(self.settings)))
        if path.exists():
            theirs = json.loads(path.read_text())
            if theirs != mine:
                raise SystemExit(f"{path} holds other settings ({theirs}); use another --work")
        else:
            write_atomic(path, json.dumps(mine, indent=1) + "\n")

    def finished(self) -> Rows:
        """The arm-seeds whose line is in results.jsonl (the last line of each wins)."""
        done: Rows = {}
        if self.results.exists():
            for line in self.results.read_text().splitlines():
                if line.strip():
                    row = json.loads(line)
                    done[(row["arm"], row["seed"])] = row
        return done


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


def check_no_claims(pairs: Path, data: Path) -> dict[str, Any]:
    """Refuse pairs any of whose texts is a SciFact claim (test or train): the claims are what is evaluated. Every
    Parquet file under ``pairs`` is read."""
    import pyarrow.parquet as pq

    claims = {json.loads(line)["text"].strip().lower() for line in (data / "queries.jsonl").open()}
    counts = {}
    for f in sorted(pairs.rglob("*.parquet")):
        table = pq.read_table(f)
        texts = [t for c in ("query", "positive_text") if c in table.column_names
                 for t in table[c].to_pylist() if t]
        hits = sum(t.strip().lower() in claims for t in texts)
        if hits:
            raise SystemExit(f"{f}: {hits} texts are SciFact claims; pre-training never reads a claim")
        counts[str(f.relative_to(pairs))] = len(texts)
    return {"claims": len(claims), "texts_checked": counts, "claims_found": 0}


def prepare_scifact(work: Work, psg_words: int) -> None:
    """What every arm of a SciFact experiment shares, each made once: the corpus store (whole abstracts: indexes,
    fine-tuning), the pre-training pairs (``psg_words``-word passages, `mine --method cc,tb,ict`, checked to hold
    no claim) and the packaged model's zero-shot index."""
    sh = work.shared
    sh.mkdir(parents=True, exist_ok=True)
    if not work.data.exists():
        raise SystemExit(f"{work.data}: SciFact (BEIR) is not there")
    run_step(work, sh, "store", ["corpus", "build", str(work.data), "--out", str(sh / "store"), "--overwrite"],
             sh / "store" / "manifest.json")
    run_step(work, sh, "passages", ["corpus", "build", str(work.data), "--out", str(sh / "psg"), "--words",
                                    str(psg_words), "--overwrite"], sh / "psg" / "manifest.json")
    run_step(work, sh, "mine", ["mine", str(sh / "psg"), "--method", "cc,tb,ict", "--negatives", "none",
                                "--out", str(sh / "pairs"), "--overwrite"], sh / "pairs" / "pairs.json")
    if not (sh / "no-claims.json").exists():
        write_atomic(sh / "no-claims.json", json.dumps(check_no_claims(sh / "pairs", work.data), indent=1) + "\n")
    index_step(work, sh, "base-index", None, sh / "base-index")


def pretrain_step(work: Work, folder: Path, pairs: Path, options: list[str], name: str = "pretrain",
                  out: Path | None = None) -> Path:
    """`pretriever pretrain PAIRS --out OUT OPTIONS` (OUT: FOLDER/pt), resumed from its checkpoint."""
    out = out or folder / "pt"
    run_step(work, folder, name, ["pretrain", str(pairs), "--out", str(out), *options,
                                  *resumable(out, "pretrain.json", "checkpoints")], out / "pretrain.json")
    return out


def pretrain_summary(out: Path) -> dict[str, Any]:
    report = json.loads((out / "pretrain.json").read_text())
    curve = report["loss_curve"]
    return {"steps": report["steps"], "train_seconds": report["train_seconds"],
            "pairs_per_second": report["pairs_per_second"], "first": curve[0] if curve else None,
            "last": curve[-1] if curve else None, "pairs": report["pairs"]["per_epoch_by_method"]}


def step_seconds(folder: Path) -> dict[str, float]:
    """Each step's wall time: the sum over its runs (an interrupted step that was resumed counts every part)."""
    seconds: dict[str, float] = {}
    path = folder / "steps.jsonl"
    for line in path.read_text().splitlines() if path.exists() else []:
        row = json.loads(line)
        seconds[row["step"]] = round(seconds.get(row["step"], 0.0) + row["seconds"], 1)
    return seconds


# ---------------------------------------------------------------------------------------------------- the units

Start = Callable[[Path], tuple[str | None, Path, dict[str, Any]]]


def run_arm_seed(work: Work, arm: str, seed: int, start: Start) -> dict[str, Any] | None:
    """One arm-seed from where it stopped; its line appended to results.jsonl at the end. None when it is finished
    already or another runner holds it.

    ``start(folder)`` runs what comes before fine-tuning (the shared steps, the arm's pre-training, its zero-shot
    index) and returns the model fine-tuning starts from (None: the packaged one), the index that is evaluated
    zero-shot, and what the line records besides. Then, identical for every arm: the zero-shot evaluation on the
    test claims, `finetune --two-stage` on the train claims, retriever 2's index, both retrievers' evaluations."""
    if (arm, seed) in work.finished():
        print(f"{arm} seed {seed}: finished already")
        return None
    s, folder = work.settings, work.run_dir(arm, seed)
    with unit_lock(folder) as mine:
        if not mine:
            print(f"{arm} seed {seed}: another runner holds it")
            return None
        print(f"{arm} seed {seed}:", flush=True)
        model, zero_index, extra = start(folder)
        test = work.data / "qrels" / "test.tsv"
        evals = {"zero_shot": eval_step(work, folder, "zs-eval", zero_index, folder / "zs-eval", test)}
        ft = folder / "ft"
        run_step(work, folder, "finetune", [
            "finetune", "--beir", str(work.data), "--split", "train", "--corpus", str(work.shared / "store"),
            *(["--model", model] if model else []), "--two-stage", "--bm25-negatives", str(s.ft_negatives),
            "--negatives-per-query", str(s.ft_negatives), "--bm25-depth", str(s.ft_depth), "--negative-depth",
            str(s.ft_depth), "--max-passage-length", str(s.ft_passage_length), "--max-query-length",
            str(s.ft_query_length), "--batch-size", str(s.ft_batch), "--seed", str(seed),
            *(["--max-steps", str(s.ft_max_steps)] if s.ft_max_steps else ["--epochs", f"{s.ft_epochs:g}"]),
            *(["--lr", f"{s.ft_lr:g}"] if s.ft_lr else []), "--out", str(ft)],
            ft / "stage2" / "modules.json")
        index_step(work, folder, "stage2-index", str(ft / "stage2"), ft / "stage2-index")
        evals["stage1"] = eval_step(work, folder, "stage1-eval", ft / "stage1-index", folder / "stage1-eval", test)
        evals["stage2"] = eval_step(work, folder, "stage2-eval", ft / "stage2-index", folder / "stage2-eval", test)
        steps = step_seconds(folder)
        row = {"arm": arm, "seed": seed, **extra, "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "wall_seconds": round(sum(steps.values()), 1), "steps": steps,
               "pretrain": pretrain_summary(Path(model)) if model else None,
               **{e: {m: evals[e][m] for m in METRICS} for e in EVALS},
               "per_query": {e: evals[e]["per_query"] for e in EVALS}}
        append_line(work.results, row)
        print(f"{arm} seed {seed}: done in {row['wall_seconds']:,.0f} s; "
              + ", ".join(f"{e} nDCG@10 {evals[e]['nDCG@10']:.4f}" for e in EVALS), flush=True)
        return row


def run_next(work: Work, count: int, pending: Callable[[Work], list[tuple[str, Any]]],
             run_unit: Callable[[Work, str, Any], bool]) -> int:
    """Run up to ``count`` units, each the first of ``pending(work)``; ``run_unit`` returns False when another
    runner holds it (then stop rather than spin). Returns how many ran."""
    ran = 0
    while ran < count:
        units = pending(work)
        if not units:
            print("every arm-seed has finished")
            break
        if not run_unit(work, *units[0]):
            break
        ran += 1
    return ran


# --------------------------------------------------------------------------------------------------- the report

Comparisons = Callable[[str], list[tuple[str, str | None, bool]]]  # arm -> (key, the arm it is compared with, planned)


def mean_sd(values: list[float]) -> tuple[float, float | None]:
    return float(np.mean(values)), (float(np.std(values, ddof=1)) if len(values) > 1 else None)


def aggregate(rows: Rows, names: list[str], comparisons: Comparisons, holm_evals: tuple[str, ...],
              extra: Callable[[list[dict[str, Any]]], dict[str, Any]] = lambda runs: {}) -> dict[str, Any]:
    """Per arm (in ``names``' order): seeds, mean and sd over seeds of each evaluation's metrics, mean wall time,
    ``extra`` of its runs; for each of ``comparisons(arm)`` (key, base, planned) whose base has run, the paired
    comparison with the base on the seeds both have (:func:`paired_against`) under that key. In each of
    ``holm_evals`` the planned comparisons are one family: their p-values get Holm's adjustment ("holm_p")."""
    arms: dict[str, Any] = {}
    for name in names:
        seeds = sorted(seed for arm, seed in rows if arm == name)
        if not seeds:
            continue
        runs = [rows[(name, s)] for s in seeds]
        entry: dict[str, Any] = {"seeds": seeds, "wall_seconds": mean_sd([r["wall_seconds"] for r in runs])[0],
                                 "pretrain_seconds": mean_sd([r["steps"].get("pretrain", 0.0) for r in runs])[0],
                                 **extra(runs)}
        for e in EVALS:
            entry[e] = {m: mean_sd([r[e][m] for r in runs]) for m in METRICS}
        for key, base, _ in comparisons(name):
            compared = paired_against(rows, name, base, seeds) if base else None
            if compared:
                entry[key] = compared
        arms[name] = entry
    for e in holm_evals:
        planned = [a[key][e] for name, a in arms.items() for key, _, is_planned in comparisons(name)
                   if is_planned and key in a]
        for vs, adjusted in zip(planned, holm([vs["p"] for vs in planned])):
            vs["holm_p"] = adjusted
    return arms


def holm(ps: list[float]) -> list[float]:
    """Holm's step-down adjustment (Holm 1979, Scand. J. Statist. 6:65-70): the k-th smallest of m p-values
    times m - k + 1, never below the one before it, at most 1. The family is an experiment's planned comparisons,
    so a single one that looks significant is read against the chance that one of m would."""
    adjusted, running = [1.0] * len(ps), 0.0
    for rank, i in enumerate(np.argsort(ps, kind="stable")):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


def paired_claims(mine: list[dict[str, float]], theirs: list[dict[str, float]]) -> dict[str, Any]:
    """Two sets of per-claim nDCG@10 (one dict per seed each, on the same claims), each averaged over its seeds:
    the claims, the mean difference (mine minus theirs) and the paired randomisation test's two-sided p."""
    claims = sorted(theirs[0])
    a = np.mean([[run[q] for q in claims] for run in mine], axis=0)
    b = np.mean([[run[q] for q in claims] for run in theirs], axis=0)
    return {"claims": len(claims), "difference": float(np.mean(a - b)), "p": paired_randomisation(a, b)}


def paired_against(rows: Rows, name: str, base: str, seeds: list[int]) -> dict[str, Any] | None:
    """On the seeds both arms have, each claim's nDCG@10 averaged over those seeds; per evaluation the mean
    difference (arm minus base) and the paired randomisation test's two-sided p over the claims. That test holds
    the seeds fixed, so beside it each seed's difference and a paired t-test over the seeds (``seed_t_p``, None
    for one seed or with no spread), which counts the seed-to-seed spread of fine-tuning."""
    common = [s for s in seeds if (base, s) in rows]
    if not common:
        return None
    out: dict[str, Any] = {"against": base, "seeds": common}
    for e in EVALS:
        per_seed = [rows[(name, s)][e]["nDCG@10"] - rows[(base, s)][e]["nDCG@10"] for s in common]
        out[e] = {**paired_claims([rows[(name, s)]["per_query"][e] for s in common],
                                  [rows[(base, s)]["per_query"][e] for s in common]),
                  "per_seed": per_seed, "seed_t_p": seed_t_test(per_seed)}
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


def comparison_text(vs: dict[str, Any]) -> str:
    """'+0.0105 (p 0.029)', with Holm's adjusted p where the comparison is one of the planned family."""
    holm_p = f"; Holm {p_text(vs['holm_p'])}" if "holm_p" in vs else ""
    return f"{vs['difference']:+.4f} ({p_text(vs['p'])}{holm_p})"


def seed_rows(arms: dict[str, Any]) -> list[list[str]]:
    """After 2 stages, each comparison's per-seed nDCG@10 differences and the paired t-test over the seeds."""
    rows = []
    for name, a in arms.items():
        for key, vs in a.items():
            if key.startswith("vs_"):
                t_p = vs["stage2"]["seed_t_p"]
                rows.append([name, vs["against"], ", ".join(f"{d:+.4f}" for d in vs["stage2"]["per_seed"]),
                             f"{np.mean(vs['stage2']['per_seed']):+.4f}", "–" if t_p is None else p_text(t_p)])
    return rows


SEED_HEADER = ["arm", "against", "2 stages nDCG@10 difference per seed", "mean", "paired t over seeds"]
EVAL_LABELS = {"zero_shot": "zero-shot", "stage1": "1 stage", "stage2": "2 stages"}

Columns = list[tuple[str, str]]  # the comparisons a table shows: (key, evaluation), e.g. ("vs_cc", "stage2")


def header(extra: list[str], compared: Columns) -> list[str]:
    """The arms table's columns: the arm, its seeds, ``extra``, each evaluation's figures (mean ± sd over seeds),
    the ``compared`` comparisons ("2 stages vs cc") and the minutes."""
    return ["arm", "seeds", *extra, "zero-shot nDCG@10", "zero-shot R@100", "2 stages nDCG@10", "2 stages R@100",
            "1 stage nDCG@10", *(f"{EVAL_LABELS[e]} {key.replace('_', ' ')}" for key, e in compared),
            "pre-train min", "wall min"]


def table_rows(arms: dict[str, Any], compared: Columns,
               extra: Callable[[dict[str, Any]], list[str]] = lambda a: []) -> list[list[str]]:
    """One row per arm under :func:`header`'s columns ("–" where a comparison has not run)."""
    rows = []
    for name, a in arms.items():
        rows.append([name, str(len(a["seeds"])), *extra(a),
                     fmt(a["zero_shot"]["nDCG@10"]), fmt(a["zero_shot"]["Recall@100"]),
                     fmt(a["stage2"]["nDCG@10"]), fmt(a["stage2"]["Recall@100"]), fmt(a["stage1"]["nDCG@10"]),
                     *(comparison_text(a[key][e]) if key in a else "–" for key, e in compared),
                     f"{a['pretrain_seconds'] / 60:,.1f}", f"{a['wall_seconds'] / 60:,.1f}"])
    return rows


def markdown(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub table, the first column left-aligned, for bench/README."""
    return "\n".join(["| " + " | ".join(header) + " |", "| --- " + "| ---: " * (len(header) - 1) + "|",
                      *("| " + " | ".join(r) + " |" for r in rows)]) + "\n"


def plot(rows: Rows, path: Path, names: list[str], baseline: str) -> Path:
    """nDCG@10 of every arm-seed, zero-shot and after both fine-tuning stages, a dot per seed and a bar at the
    mean; the dashed line is ``baseline``'s mean, so an arm above it helped on average."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [a for a in names if any(arm == a for arm, _ in rows)]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, (e, title) in zip(axes, (("zero_shot", "straight after pre-training"), ("stage2", "after 2 stages"))):
        for x, name in enumerate(names):
            values = [r[e]["nDCG@10"] for (arm, _), r in sorted(rows.items()) if arm == name]
            ax.scatter([x] * len(values), values, s=14, color="C0" if name == baseline else "C1", zorder=3)
            ax.hlines(np.mean(values), x - 0.3, x + 0.3, color="black", linewidth=1.5)
        base = [r[e]["nDCG@10"] for (arm, _), r in rows.items() if arm == baseline]
        if base:
            ax.axhline(np.mean(base), color="C0", linestyle="--", linewidth=1, label=f'"{baseline}", mean')
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


def write_report(work: Work, tables: list[tuple[str, list[str], list[list[str]]]], note: str, out: dict[str, Any],
                 json_out: Path | None, markdown_out: Path | None, plot_rows: Callable[[Path], Path] | None) -> None:
    """Print ``tables`` (title, header, rows), write ``out`` as JSON (WORK/report.json by default), the tables and
    ``note`` as markdown (WORK/report.md), and the plot (``plot_rows(WORK/report.png)``, when anything finished)."""
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(160, shutil.get_terminal_size().columns))
    for title, header, body in tables:
        table = Table(title=title)
        for h in header:
            table.add_column(h, justify="left" if h in ("arm", "against") else "right", no_wrap=h == "arm")
        for r in body:
            table.add_row(*r)
        console.print(table)
    write_atomic(json_out or work.root / "report.json", json.dumps(out, indent=1) + "\n")
    write_atomic(markdown_out or work.root / "report.md",
                 "\n".join(markdown(header, body) for _, header, body in tables) + "\n" + note)
    print(note, end="")
    if plot_rows:
        print(f"plot: {plot_rows(work.root / 'report.png')}")


def print_finished(work: Work, units: list[tuple[str, Any]]) -> None:
    """status: how many arm-seeds finished, what is next, and each finished one's wall time and result."""
    done = work.finished()
    print(f"{len(done)} arm-seeds finished, {len(units)} units left; next: {units[0] if units else 'nothing'}")
    for (arm, seed), row in sorted(done.items()):
        print(f"  {arm} seed {seed}: {row['wall_seconds']:,.0f} s, stage 2 nDCG@10 {row['stage2']['nDCG@10']:.4f}")


# ------------------------------------------------------------------------------------------------------ the smoke


def smoke_data(folder: Path, source: Path = SCIFACT, n_test: int = 6, n_train: int = 12, n_docs: int = 60) -> Path:
    """A tiny BEIR folder with test and train judgments (:func:`pretriever.testing.beir_subset`): the first claims
    of each split and their abstracts, then other abstracts up to ``n_docs``."""
    from pretriever.testing import beir_subset

    if (folder / "corpus.jsonl").exists():
        return folder
    return beir_subset(folder, source, n_docs=n_docs, splits={"test": n_test, "train": n_train})


def stop(signum: int, frame: Any) -> None:
    raise SystemExit(f"stopped by signal {signum}; run again to continue")


# -------------------------------------------------------------------------------------------------- the command


def parser(doc: str, work: Path, arms: list[str], own: dict[str, str],
           sizes: tuple[str, ...] = ()) -> argparse.ArgumentParser:
    """The options and commands every experiment has (--work, --lock, --smoke; run-next, run, status, report),
    --size where the design has ``sizes`` besides its full one, and after run the experiment's ``own`` commands
    without arguments (name: help)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, help=f"where every output goes, never the repository (default: {work})")
    if sizes:
        parser.add_argument("--size", choices=["full", *sizes], default="full",
                            help="the design's size; each but full has its own default --work")
    parser.add_argument("--lock", type=Path, default=LOCK, help="the lock the heavy steps take turns on")
    parser.add_argument("--smoke", action="store_true", help="a tiny SciFact subset and a few steps each")
    sub = parser.add_subparsers(dest="command", required=True)
    nxt = sub.add_parser("run-next", help="run the next unit(s) not finished")
    nxt.add_argument("--count", type=int, default=1)
    one = sub.add_parser("run", help="run (or finish) one arm-seed")
    one.add_argument("arm", choices=arms)
    one.add_argument("seed", type=int)
    for name, help in own.items():
        sub.add_parser(name, help=help)
    sub.add_parser("status", help="what has finished and what is next")
    rep = sub.add_parser("report", help="the table, JSON and markdown from results.jsonl")
    rep.add_argument("--json", type=Path)
    rep.add_argument("--markdown", type=Path)
    return parser


def main(design: ModuleType, argv: list[str] | None = None) -> None:
    """The command line of the experiment ``design`` (its module): its ``__doc__`` is the help, and it declares
    ``WORK`` (the default work folder), ``ARMS``, ``Work``, ``Settings()`` and ``SMOKE``, optionally ``SIZES``
    (name: (settings, default work folder), smaller designs that --size picks), ``COMMANDS`` (its own
    commands, name: (help, function of the work folder)), ``pending`` and ``run_unit`` (run-next's units),
    ``run_arm_seed``, ``status`` and ``report``. A stopped runner (SIGTERM) records the interrupted step's time,
    and kills it."""
    sizes = getattr(design, "SIZES", {})
    args = parser(design.__doc__ or "", design.WORK, list(design.ARMS),
                  {name: help for name, (help, _) in design.COMMANDS.items()}, tuple(sizes)).parse_args(argv)
    signal.signal(signal.SIGTERM, stop)
    settings, root = sizes.get(getattr(args, "size", "full"), (design.Settings(), design.WORK))
    work = design.Work((args.work or root).resolve(), design.SMOKE if args.smoke else settings, lock=args.lock)
    if args.smoke:
        work.data = smoke_data(work.root / "smoke-data")
    if REPO in work.root.parents or work.root == REPO:
        raise SystemExit(f"--work {work.root} is inside the repository; results live outside it")
    work.root.mkdir(parents=True, exist_ok=True)
    work.check_settings()
    if args.command == "run-next":
        run_next(work, args.count, design.pending, design.run_unit)
    elif args.command == "run":
        design.run_arm_seed(work, args.arm, args.seed)
    elif args.command == "status":
        design.status(work)
    elif args.command == "report":
        design.report(work, args.json, args.markdown)
    else:
        design.COMMANDS[args.command][1](work)
