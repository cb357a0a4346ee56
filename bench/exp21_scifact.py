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

import dataclasses
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import experiment  # noqa: E402
from experiment import (  # noqa: E402
    METRICS, SMOKE_FINETUNING, FineTuning, Rows, eval_step, index_step, pretrain_step, pretrain_summary, seed_rows,
    step_seconds, write_atomic)
from experiment import (  # noqa: E402,F401 (offered, as always)
    append_line, check_no_claims, holm, p_text, resumable, run_step, seed_t_test)

WORK = Path("/work/exp21-results")


@dataclass(frozen=True)
class Settings(FineTuning):
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


SMOKE = Settings(psg_words=40, pt_length=32, pt_batch=4, head_warmup=2, joint_steps=2, mlm_candidates=(1.0, 0.3),
                 **SMOKE_FINETUNING)


@dataclass(frozen=True)
class Arm(experiment.Arm):
    def pretrain_options(self, s: Settings, seed: int, mlm_weight: float) -> list[str]:
        """From all-MiniLM-L6-v2: the new heads first warm up alone on the frozen encoder (none for the contrastive
        term alone), then every weight trains at the fine-tuning-sized rate."""
        warm = 0 if self.contrastive_only else s.head_warmup
        return [*self.options(s.pt_length, s.pt_batch, warm + s.joint_steps, s.pt_lr, seed, s.save_steps),
                "--head-warmup-steps", str(warm), "--head-lr", str(s.head_lr),
                "--mlm-weight", str(0.0 if self.contrastive_only else mlm_weight)]


ARMS = {a.name: a for a in [
    Arm("none"),
    Arm("cocondenser-cc", "cocondenser", "cc"), Arm("cocondenser-title", "cocondenser", "tb"),
    Arm("cocondenser-ict", "cocondenser", "ict"),
    Arm("cotmae-cc", "cotmae", "cc"), Arm("cotmae-title", "cotmae", "tb"), Arm("cotmae-ict", "cotmae", "ict"),
    Arm("contrastive-cc", "cocondenser", "cc", contrastive_only=True),
]}


# ----------------------------------------------------------------------------------------------- the work folder


class Work(experiment.Work):
    """The work folder, with the MLM weight chosen before the arms (WORK/mlm-weight.json)."""

    def mlm_weight(self) -> float | None:
        path = self.root / "mlm-weight.json"
        return json.loads(path.read_text())["weight"] if path.exists() else None


# ---------------------------------------------------------------------------------------------------- the steps


def prepare(work: Work) -> None:
    """The corpus stores, the pre-training pairs (checked to hold no claim), the base model's zero-shot index
    (:func:`experiment.prepare_scifact`) and the validation split of the train claims: everything arms share,
    each made once."""
    experiment.prepare_scifact(work, work.settings.psg_words)
    if not (work.shared / "qrels-val.tsv").exists():
        write_atomic(work.shared / "qrels-val.tsv",
                     validation_qrels(work.data / "qrels" / "train.tsv", work.settings.val_share))


def validation_qrels(train: Path, share: float, seed: int = 0) -> str:
    """A seeded ``share`` of the train claims (all their judgments), as a BEIR qrels file."""
    lines = train.read_text().splitlines()
    ids = sorted({line.split("\t")[0] for line in lines[1:]}, key=int)
    chosen = set(random.Random(seed).sample(ids, max(1, round(share * len(ids)))))
    return "\n".join([lines[0], *(line for line in lines[1:] if line.split("\t")[0] in chosen)]) + "\n"


def arm_pretrain(work: Work, folder: Path, arm: Arm, seed: int, mlm_weight: float) -> Path:
    return pretrain_step(work, folder, work.shared / "pairs", arm.pretrain_options(work.settings, seed, mlm_weight))


# ---------------------------------------------------------------------------------------------------- the units


def choose_unit(work: Work, weight: float) -> None:
    """One MLM-weight candidate: coCondenser on cc, seed 0, zero-shot nDCG@10 on the validation claims."""
    folder = work.root / "choose-mlm" / f"w{weight:g}"
    done = folder / "result.json"
    if done.exists():
        return
    out = arm_pretrain(work, folder, ARMS["cocondenser-cc"], 0, weight)
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


def run_arm_seed(work: Work, arm_name: str, seed: int) -> dict[str, Any] | None:
    """One arm-seed from where it stopped (:func:`experiment.run_arm_seed`): the shared steps, then the arm's
    pre-training with the chosen MLM weight and its zero-shot index (`none`: the base index)."""
    arm = ARMS[arm_name]

    def start(folder: Path) -> tuple[str | None, Path, dict[str, Any]]:
        prepare(work)
        if arm.objective is None:
            return None, work.shared / "base-index", {"mlm_weight": None}
        weight = 0.0 if arm.contrastive_only else choose_mlm_weight(work)
        model = str(arm_pretrain(work, folder, arm, seed, weight))
        index_step(work, folder, "zs-index", model, folder / "zs-index")
        return model, folder / "zs-index", {"mlm_weight": weight}

    return experiment.run_arm_seed(work, arm_name, seed, start)


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


def run_unit(work: Work, kind: str, what: Any) -> bool:
    """One unit of run-next; False when another runner holds it."""
    if kind == "choose":
        prepare(work)
        choose_unit(work, what)
        if not [u for u in pending(work) if u[0] == "choose"]:
            print(f"MLM weight chosen: {choose_mlm_weight(work):g}")
        return True
    return run_arm_seed(work, *what) is not None


# --------------------------------------------------------------------------------------------------- the report


def comparisons(name: str) -> list[tuple[str, str | None, bool]]:
    """Against "none" (every arm), and a query-like context against its objective on cc (see :attr:`Arm.baseline`),
    the planned family that gets Holm's adjustment after two stages."""
    return [("vs_none", "none" if name != "none" else None, False), ("vs_cc", ARMS[name].baseline, True)]


def aggregate(rows: Rows) -> dict[str, Any]:
    """Per arm (:func:`experiment.aggregate`): seeds, mean and sd over seeds, mean wall time, the MLM weight;
    against "none" and, for a query-like context, against its objective's cc arm ("vs_cc", whose p after two
    stages also gets Holm's adjustment over all such comparisons, "holm_p")."""
    return experiment.aggregate(rows, list(ARMS), comparisons, ("stage2",),
                                lambda runs: {"mlm_weight": runs[0]["mlm_weight"]})


COMPARED = [("vs_none", "zero_shot"), ("vs_none", "stage2"), ("vs_cc", "stage2")]
HEADER = experiment.header(["MLM w"], COMPARED)


def table_rows(arms: dict[str, Any]) -> list[list[str]]:
    return experiment.table_rows(arms, COMPARED, lambda a: ["" if a["mlm_weight"] is None else f"{a['mlm_weight']:g}"])


def plot(rows: Rows, path: Path) -> Path:
    """nDCG@10 of every arm-seed (:func:`experiment.plot`); the dashed line is "none"'s mean."""
    return experiment.plot(rows, path, list(ARMS), "none")


def report(work: Work, json_out: Path | None, markdown_out: Path | None) -> dict[str, Any]:
    finished = work.finished()
    arms = aggregate(finished)
    claims = next((r["per_query"]["stage2"] for r in finished.values()), {})
    note = ("vs none: mean per-claim nDCG@10 difference, per-claim scores averaged over the seeds both arms have, "
            "and the two-sided p of a paired randomisation test over the claims (10,000 sign flips); vs cc: the same "
            "for a query-like context against its objective on cc, with Holm's adjusted p over those planned "
            "comparisons. Second table: the same comparisons seed by seed "
            "and a two-sided paired t-test over the seeds, which also counts fine-tuning's spread between seeds.\n")
    out = {"arms": arms, "mlm_weight": json.loads((work.root / "mlm-weight.json").read_text())
           if (work.root / "mlm-weight.json").exists() else None, "settings": dataclasses.asdict(work.settings)}
    experiment.write_report(
        work, [(f"SciFact, {len(claims)} test claims, mean ± sd over seeds ({work.root})", HEADER, table_rows(arms)),
               ("Seed by seed, after 2 stages", experiment.SEED_HEADER, seed_rows(arms))],
        note, out, json_out, markdown_out, (lambda path: plot(finished, path)) if finished else None)
    return out


def status(work: Work) -> None:
    experiment.print_finished(work, pending(work))
    print(f"MLM weight: {work.mlm_weight()}")


COMMANDS = {"choose-mlm-weight": ("pre-train each MLM-weight candidate and record the best",
                                  lambda work: print(f"MLM weight: {choose_mlm_weight(work):g}"))}


def main(argv: list[str] | None = None) -> None:
    experiment.main(sys.modules[__name__], argv)


if __name__ == "__main__":
    main()
