"""Issue 38, section 3: context-supervised pre-training from a plain masked-language model, as the papers start,
resumable one unit at a time (bench/README.md, "Pre-training from a plain start").

From all-MiniLM-L6-v2, a model already trained for retrieval, no arm of exp21 could be expected to help. Here every
arm starts from a BERT trained from random weights with masked-LM alone, on all the text at hand, never a claim.

Start (`start`, done first by run-next): `pretrain --objective mlm --init random`, a BERT of 4 layers x 256 (4
heads, feed-forward 1,024, the MiniLM tokenizer), CLS pooling, normalised, on the enwiki sample's articles,
SciFact's 5,183 abstracts and the five SQuAD 2.0 dev articles' 173 paragraphs (never a question), each source as
96-word passages (`corpus build --words 96`) read through `mine --method ict,cc` pairs (each epoch: every passage
that holds a whole sentence, split into the sentence and the rest, and two passages of each longer document). A
seeded 3% of each source's documents is held out whole; the masked-LM loss on their texts (15% whole-word masking
with a fixed seed) gives the validation perplexity every 250 steps (`pretrain --eval-pairs`). Training stops at
perplexity 50 or after 3,000 steps of 32 pairs at 128 word pieces (about 4.5 epochs; lr 5e-4, 5% warm-up, linear
decay), whichever comes first (`--target-perplexity`, `--max-steps`); WORK/start.json keeps the steps, word
pieces, time, the perplexity curve and the start's zero-shot nDCG@10. `start` checks that no text is a claim.

Arms (the same steps, batch, length, rate and seed per seed; all but minilm from the start):
    mlm                     masked-LM alone, on the cc pairs: the baseline
    contrastive-ict         coCondenser's contrastive term alone (`--mlm-weight 0`) on ICT sentence -> passage
    contrastive-title       the same on title -> abstract passage (`mine --method tb`)
    cocondenser-{cc,title}  coCondenser on that context (MLM weight 1, as the papers)
    cotmae-{cc,title}       CoT-MAE: cc with the symmetric decoder, title with caskcsg's query-as-context AR
                            decoder (`--decoder ar`)
    {mlm,cotmae-cc,cocondenser-cc}-warm
                            a follow-up: the arm with its heads (the MLM head too) first trained alone for 1,000
                            steps at 1e-3 (`--head-warmup-steps`, the encoder frozen), then the same steps as the
                            others; compared with mlm-warm (mlm-warm with mlm) and with the arm without the
                            warm-up, outside the planned family
    minilm                  no pre-training, the packaged all-MiniLM-L6-v2: the same fine-tuning, for scale
Pre-training (SETTINGS): SciFact's 64-word passages (`corpus build --words 64`, `mine --method cc,tb,ict`, as
exp21), 96 word pieces, batch 16, 1,500 steps at 1e-4 (10% warm-up, linear decay), every weight from the first step
(the papers' setting: a plain start has no retrieval skill to protect, so no head warm-up). The start's MLM head is
kept (pretrain.json: "mlm_head": "from model.pt"), so the MLM terms continue where the start left them.
Fine-tuning, identical for every arm and the same as exp21's: `pretriever finetune --beir SF --split train
--two-stage`, one epoch of batch 32 over the 809 train claims, 3 negatives per claim in both stages, abstracts at
128 word pieces, claims at 64, the arm's seed. Evaluation: the 300 test claims, nDCG@10 and Recall@100 (with
per-claim nDCG@10) zero-shot and after retrievers 1 and 2, indexes at 128 word pieces.

Planned comparisons, each a paired randomisation test over the claims (per-claim nDCG@10 averaged over the seeds
both arms have; beside it a t-test over the seeds): every pre-trained arm against mlm, and title against cc for
coCondenser and CoT-MAE, 8 in all; Holm's correction over the 8, zero-shot and after two stages each a family.
minilm against mlm is shown, not in the family. Positive control: fine-tuning from the plain start (the mlm arm
after two stages) must beat the start zero-shot (positive, p < 0.05 over the claims); if it does not, the report
says that the start is too weak and that the comparisons say nothing about the objectives.

    python bench/exp38_plainstart.py run-next [--count N] [--work /work/exp38-results]
    python bench/exp38_plainstart.py start            (also done by run-next, first)
    python bench/exp38_plainstart.py run cocondenser-title 1
    python bench/exp38_plainstart.py status
    python bench/exp38_plainstart.py report [--json OUT] [--markdown OUT]   (and WORK/report.png)
    python bench/exp38_plainstart.py --smoke --work /tmp/exp38-smoke run-next --count 99   (the whole chain on
        a tiny SciFact subset, a tiny start and a few steps each: checks the plumbing, measures nothing)
    python bench/exp38_plainstart.py --size session run-next --count 99   (the same design, smaller, in
        /work/exp38-session: a 4 x 128 start of 2,000 steps at 1e-3, 300 steps per arm at 3e-4, fine-tuning at
        2e-4; about 2 hours on 2 cores, so that one session can run it whole; see SESSION)

Order of run-next: the start, then seed by seed every arm (seed 0 first), so that an interrupted experiment has
whole seeds.

Cost, estimated for the 2-core machine with the runner alone, as exp21's 10 hours were measured (bench/README.md,
"Pre-training on SciFact, again"): a probe of these sizes (2026-11-28, 6 steps each, one thread, the machine
shared, so single-thread CPU time relative to exp21's coCondenser on all-MiniLM-L6-v2, 1.55 s a step alone) puts
the start's step at about 0.75 of that (1.15 s; measured quiet on 2026-11-28 it was 3.3 s, so the start's
budget went from 8,000 to 3,000 steps, about 2.8 h, checkpointed every 100; the evaluations a few minutes, the three
stores and pairs 2 min) and the arms' at 0.26 (contrastive, CoT-MAE title) to 0.67 (CoT-MAE cc), 10-26 min for
1,500 steps; fine-tuning and indexes scale with the encoder's arithmetic, about 0.3 of MiniLM's (fine-tuning
3-4 min, each index 0.5 min, three evaluations 0.5 min); minilm is exp21's `none`, 12 min. One seed of the eight
arms about 2.5 h, the whole design about 10 h of lock time. No clean measurement was possible beside four other
agents' work, so read the estimate as +-50%: at twice it, it still fits a day. WORK/shared/start/steps.jsonl and
each run's steps.jsonl keep every step's time: look at the start's first hour.
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
    METRICS, REPO, SMOKE_FINETUNING, FineTuning, Rows, check_no_claims, eval_step, fmt, index_step, p_text,
    pretrain_step, run_step, seed_rows, step_seconds, unit_lock, write_atomic)

WORK = Path("/work/exp38-results")
DATA = REPO.parent / "shared" / "data"
WIKI = DATA / "wiki" / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
SQUAD = DATA / "qa" / "squad2-dev-5articles.json"
BASELINE = "mlm"
ALPHA = 0.05  # the positive control's level


@dataclass(frozen=True)
class Settings(FineTuning):
    """What the start and every arm share; recorded in WORK/settings.json, and a work folder refuses other
    settings."""

    start_layers: int = 4
    start_hidden: int = 256
    start_heads: int = 4
    start_words: int = 96  # the start's passages (`corpus build --words`)
    start_length: int = 128  # word pieces per start text
    start_batch: int = 32  # pairs: 64 texts a step
    start_steps: int = 3000  # the budget, if the target perplexity is not reached first
    start_lr: float = 5e-4
    start_warmup: float = 0.05
    target_perplexity: float = 50.0
    heldout_share: float = 0.03  # of each source's documents
    eval_steps: int = 250
    start_save_steps: int = 100  # a checkpoint every ~6 min: a session's end kills the runner
    psg_words: int = 64  # the arms' pre-training passages
    pt_length: int = 96
    pt_batch: int = 16
    pt_steps: int = 1500
    pt_lr: float = 1e-4


SMOKE = Settings(start_layers=2, start_hidden=64, start_heads=2, start_words=40, start_length=32, start_batch=4,
                 start_steps=4, target_perplexity=1e9, eval_steps=2, start_save_steps=2, psg_words=40, pt_length=32,
                 pt_batch=4, pt_steps=2, **SMOKE_FINETUNING)

# The whole design at a size that one 3-hour session on 2 cores can run (the full one needs ~10 h, and a session's
# VM does not keep its files): a 4 x 128 start of 2,000 steps, 300 pre-training steps per arm, and fine-tuning at a
# higher rate than the default 2e-5, which is sized for a model that is a retriever already (not tuned: chosen
# before any arm ran).
SESSION = Settings(start_hidden=128, start_heads=2, start_steps=2000, start_lr=1e-3, pt_steps=300, pt_lr=3e-4,
                   ft_lr=2e-4)
SIZES = {"session": (SESSION, Path("/work/exp38-session"))}


@dataclass(frozen=True)
class Arm(experiment.Arm):
    head_warmup: int = 0  # steps the new head trains alone first, the encoder frozen, before the shared budget

    def pretrain_options(self, s: Settings, seed: int) -> list[str]:
        """From the plain start, as the papers: every weight trains from the first step at the pre-training rate,
        the MLM terms at weight 1; the contrastive arms without them. A warm arm first trains its head alone for
        ``head_warmup`` steps at HEAD_LR, then the same steps as the others: the encoder's budget is the same."""
        options = [*self.options(s.pt_length, s.pt_batch, s.pt_steps + self.head_warmup, s.pt_lr, seed, s.save_steps),
                   *(["--mlm-weight", "0"] if self.contrastive_only else [])]
        if self.head_warmup:
            options += ["--head-warmup-steps", str(self.head_warmup), "--head-lr", str(HEAD_LR)]
        return options

    @property
    def baseline(self) -> str | None:
        """A warm arm's: the same objective and context without the warm-up (mlm-warm's is mlm, its vs-mlm)."""
        if self.head_warmup:
            return None if self.objective == "mlm" else self.name.removesuffix("-warm")
        return super().baseline


# The follow-up arms (2026-11-29, after the session-size run): a fresh CoT-MAE decoder began to read h only after
# about 1,000 steps at 1e-3 (bench/README, "When does a fresh decoder start to read h?"), so 300 joint steps could
# not test the bottleneck. These warm the heads up that long first (the encoder frozen), then run the arm's steps.
# The warm-up trains the MLM head too, so mlm-warm (the MLM head alone warmed up so) is their baseline.
HEAD_WARMUP = 1000
HEAD_LR = 1e-3


ARMS = {a.name: a for a in [
    Arm(BASELINE, "mlm", "cc"),
    Arm("contrastive-ict", "cocondenser", "ict", contrastive_only=True),
    Arm("contrastive-title", "cocondenser", "tb", contrastive_only=True),
    Arm("cocondenser-cc", "cocondenser", "cc"), Arm("cocondenser-title", "cocondenser", "tb"),
    Arm("cotmae-cc", "cotmae", "cc"), Arm("cotmae-title", "cotmae", "tb"),
    Arm("mlm-warm", "mlm", "cc", head_warmup=HEAD_WARMUP),
    Arm("cotmae-cc-warm", "cotmae", "cc", head_warmup=HEAD_WARMUP),
    Arm("cocondenser-cc-warm", "cocondenser", "cc", head_warmup=HEAD_WARMUP),
    Arm("minilm"),
]}


class Work(experiment.Work):
    """The work folder, with the start in WORK/shared/start and its summary in WORK/start.json."""

    @property
    def start(self) -> Path:
        return self.shared / "start"

    def start_summary(self) -> dict[str, Any] | None:
        path = self.root / "start.json"
        return json.loads(path.read_text()) if path.exists() else None


# ---------------------------------------------------------------------------------------------------- the start


def squad_jsonl(source: Path) -> str:
    """The SQuAD articles' paragraphs as JSONL documents (`corpus build` reads id, title, text): ARTICLE-N, the
    article's title, the paragraph. Only the text the articles hold; never a question."""
    articles = json.loads(source.read_text())["data"]
    return "".join(json.dumps({"id": f"{a['title']}-{i}", "title": a["title"].replace("_", " "),
                               "text": p["context"]}) + "\n"
                   for a in articles for i, p in enumerate(a["paragraphs"]))


def split_text(pairs: dict[str, Path], out: Path, share: float, seed: int = 0) -> dict[str, Any]:
    """Each source's mined pairs (``pairs``: source -> its pairs folder) into OUT/train and OUT/held, as
    METHOD.SOURCE.parquet: a seeded ``share`` of the source's documents (at least one) held out whole, with every
    pair of theirs, the rest for training. Document ids get the source as a prefix, so that two sources' ids never
    make one cc document. Returns per source its documents, those held out, and the pairs per method and side."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    counts: dict[str, Any] = {}
    for source, folder in pairs.items():
        tables = {f.stem: pq.read_table(f, columns=["method", "query", "positive_text", "query_doc_id"])
                  for f in sorted(folder.glob("*.parquet"))}
        docs = sorted({d for t in tables.values() for d in t["query_doc_id"].to_pylist()})
        held = set(random.Random(seed).sample(docs, max(1, round(share * len(docs))))) if docs else set()
        sides: dict[str, dict[str, int]] = {"train": {}, "held": {}}
        for method, table in tables.items():
            ids = table["query_doc_id"].to_pylist()
            table = table.set_column(3, "query_doc_id", pa.array([f"{source}:{d}" for d in ids], pa.string()))
            is_held = pa.array([d in held for d in ids], pa.bool_())
            for side, part in (("train", table.filter(pc.invert(is_held))), ("held", table.filter(is_held))):
                (out / side).mkdir(parents=True, exist_ok=True)
                pq.write_table(part, out / side / f"{method}.{source}.parquet")
                sides[side][method] = part.num_rows
        counts[source] = {"documents": len(docs), "held_out_documents": len(held), "pairs": sides}
    return counts


def start_options(s: Settings, held: Path) -> list[str]:
    """`pretrain` of the start: MLM alone from random weights, CLS pooling (the papers') normalised (as fine-tuning
    and the index score), to the target perplexity on ``held`` or the step budget."""
    return ["--objective", "mlm", "--init", "random", "--init-layers", str(s.start_layers), "--init-hidden",
            str(s.start_hidden), "--init-heads", str(s.start_heads), "--pooling", "cls", "--normalize",
            "--max-length", str(s.start_length), "--batch-size", str(s.start_batch), "--max-steps",
            str(s.start_steps), "--lr", str(s.start_lr), "--warmup-ratio", str(s.start_warmup), "--eval-pairs",
            str(held), "--eval-steps", str(s.eval_steps), "--target-perplexity", str(s.target_perplexity),
            "--seed", "0", "--save-steps", str(s.start_save_steps), "--logging-steps", "50"]


def build_start(work: Work) -> Path:
    """The plain start, made once (each step resumable, one runner at a time): the three sources' stores and
    ict,cc pairs, split into training and held-out documents and checked for claims, the MLM pre-training, its
    index and zero-shot evaluation on the test claims; WORK/start.json at the end. Returns the model's folder."""
    model = work.start / "model"
    if work.start_summary() is not None:
        return model
    with unit_lock(work.start) as mine:
        if not mine:
            raise SystemExit("another runner is building the start; run again once it has finished")
        make_start(work, model)
    return model


def make_start(work: Work, model: Path) -> None:
    st, s = work.start, work.settings
    experiment.prepare_scifact(work, s.psg_words)  # the store the start's index encodes
    if not (st / "squad.jsonl").exists():
        write_atomic(st / "squad.jsonl", squad_jsonl(SQUAD))
    sources = {"wiki": WIKI, "scifact": work.data, "squad": st / "squad.jsonl"}
    for source, path in sources.items():
        store, pairs = st / f"store-{source}", st / f"pairs-{source}"
        run_step(work, st, f"store-{source}", ["corpus", "build", str(path), "--out", str(store), "--words",
                                               str(s.start_words), "--overwrite"], store / "manifest.json")
        run_step(work, st, f"mine-{source}", ["mine", str(store), "--method", "ict,cc", "--negatives", "none",
                                              "--out", str(pairs), "--overwrite"], pairs / "pairs.json")
    if not (st / "text.json").exists():
        text = {"sources": split_text({src: st / f"pairs-{src}" for src in sources}, st / "text", s.heldout_share),
                "no_claims": check_no_claims(st / "text", work.data)}
        write_atomic(st / "text.json", json.dumps(text, indent=1) + "\n")
    pretrain_step(work, st, st / "text" / "train", start_options(s, st / "text" / "held"), out=model)
    index_step(work, st, "index", str(model), st / "index")
    zero = eval_step(work, st, "eval", st / "index", st / "eval", work.data / "qrels" / "test.tsv")
    write_atomic(work.root / "start.json", json.dumps(start_summary(work, model, zero), indent=1) + "\n")


def start_summary(work: Work, model: Path, zero: dict[str, Any]) -> dict[str, Any]:
    """The start's budget and quality: steps, word pieces, time, the held-out perplexity curve, whether the target
    or the budget ended it, and its zero-shot figures (with per-claim nDCG@10, the positive control's baseline)."""
    s, report = work.settings, json.loads((model / "pretrain.json").read_text())
    curve = report["held_out"]["curve"]
    return {"shape": f"{s.start_layers} x {s.start_hidden}, {s.start_heads} heads", "steps": report["steps"],
            "planned_steps": report["planned_steps"], "target_perplexity": s.target_perplexity,
            "stopped": report["stopped"] or "the step budget", "perplexity": curve[-1]["perplexity"],
            "held_out_loss": curve[-1]["loss"], "held_out_texts": curve[-1]["texts"],
            "held_out_masked_tokens": curve[-1]["masked_tokens"],
            "perplexity_curve": {row["step"]: round(row["perplexity"], 2) for row in curve},
            "tokens_seen": report["tokens_seen"], "pairs_seen": report["pairs_seen"],
            "train_seconds": report["train_seconds"], "pairs_per_epoch": report["pairs"]["per_epoch_by_method"],
            "step_seconds": step_seconds(work.start), "text": json.loads((work.start / "text.json").read_text()),
            "zero_shot": {m: zero[m] for m in METRICS}, "per_query": zero["per_query"]}


# ---------------------------------------------------------------------------------------------------- the units


def run_arm_seed(work: Work, arm_name: str, seed: int) -> dict[str, Any] | None:
    """One arm-seed from where it stopped (:func:`experiment.run_arm_seed`): the arm's pre-training from the start
    and its zero-shot index (minilm: the packaged model's index)."""
    arm, s = ARMS[arm_name], work.settings

    def start(folder: Path) -> tuple[str | None, Path, dict[str, Any]]:
        experiment.prepare_scifact(work, s.psg_words)
        if arm.objective is None:
            return None, work.shared / "base-index", {}
        options = ["--model", str(build_start(work)), *arm.pretrain_options(s, seed)]
        model = str(pretrain_step(work, folder, work.shared / "pairs", options))
        index_step(work, folder, "zs-index", model, folder / "zs-index")
        return model, folder / "zs-index", {}

    return experiment.run_arm_seed(work, arm_name, seed, start)


def pending(work: Work) -> list[tuple[str, Any]]:
    """The units left, in run-next's order: ("start", None), then ("run", (arm, seed)) seed by seed."""
    done = work.finished()
    units: list[tuple[str, Any]] = [] if work.start_summary() else [("start", None)]
    return units + [("run", (arm, seed)) for seed in range(work.settings.seeds) for arm in ARMS
                    if (arm, seed) not in done]


def run_unit(work: Work, kind: str, what: Any) -> bool:
    """One unit of run-next; False when another runner holds it."""
    if kind == "start":
        build_start(work)
        return True
    return run_arm_seed(work, *what) is not None


# --------------------------------------------------------------------------------------------------- the report


def comparisons(name: str) -> list[tuple[str, str | None, bool]]:
    """Every arm against mlm (planned, but minilm's: for scale), and title against cc for coCondenser and CoT-MAE
    (planned; see :attr:`experiment.Arm.baseline`)."""
    arm = ARMS[name]
    if arm.head_warmup:  # the follow-up, outside the family: a warm arm against mlm-warm and its unwarmed arm
        return [("vs_mlm", BASELINE if arm.objective == "mlm" else f"{BASELINE}-warm", False),
                ("vs_cc", arm.baseline, False)]
    return [("vs_mlm", BASELINE if name != BASELINE else None, name != "minilm"), ("vs_cc", arm.baseline, True)]


def aggregate(rows: Rows) -> dict[str, Any]:
    """Per arm (:func:`experiment.aggregate`), with Holm's correction over the 8 planned comparisons zero-shot and,
    a family of its own, after two stages."""
    return experiment.aggregate(rows, list(ARMS), comparisons, ("zero_shot", "stage2"))


def positive_control(rows: Rows, start: dict[str, Any] | None) -> dict[str, Any] | None:
    """Fine-tuning from the plain start must beat the start zero-shot: the mlm arm after two stages (per-claim
    nDCG@10 averaged over its seeds) against the start's zero-shot nDCG@10 on the same claims, the paired
    randomisation test; passed when the difference is positive with p below ALPHA. None until both have run."""
    runs = [r for (arm, _), r in sorted(rows.items()) if arm == BASELINE]
    if not runs or start is None:
        return None
    out = {"seeds": len(runs), **experiment.paired_claims([r["per_query"]["stage2"] for r in runs],
                                                           [start["per_query"]])}
    return {**out, "passed": out["difference"] > 0 and out["p"] < ALPHA}


def verdict(control: dict[str, Any] | None) -> str:
    """The positive control in a sentence; a failed one says the start is too weak to conclude anything."""
    if control is None:
        return "Positive control: not run yet (it needs the start and the mlm arm)."
    text = (f"fine-tuning from the plain start (the mlm arm after two stages, {control['seeds']} seeds) against the "
            f"start zero-shot, {control['difference']:+.4f} nDCG@10 ({p_text(control['p'])} over "
            f"{control['claims']} claims)")
    if control["passed"]:
        return f"Positive control passed: {text}."
    return (f"Positive control FAILED: {text}. The plain start is too weak: fine-tuning cannot make a retriever of "
            "it, so the comparisons below say nothing about the pre-training objectives.")


def start_text(start: dict[str, Any] | None) -> str:
    """The start's budget and quality in a sentence."""
    if start is None:
        return "Start: not built yet."
    return (f"Start: BERT {start['shape']} from random weights, MLM alone, {start['steps']:,} of "
            f"{start['planned_steps']:,} steps ({start['stopped']}), {start['tokens_seen']:,} word pieces, "
            f"{start['train_seconds'] / 3600:.1f} h of training; held-out perplexity {start['perplexity']:.1f} "
            f"(target {start['target_perplexity']:g}, {start['held_out_texts']:,} texts); zero-shot nDCG@10 "
            f"{start['zero_shot']['nDCG@10']:.4f}, R@100 {start['zero_shot']['Recall@100']:.4f}.")


COMPARED = [("vs_mlm", "zero_shot"), ("vs_mlm", "stage2"), ("vs_cc", "zero_shot"), ("vs_cc", "stage2")]
HEADER = experiment.header([], COMPARED)


def table_rows(arms: dict[str, Any], start: dict[str, Any] | None) -> list[list[str]]:
    """The start (zero-shot only) above the arms."""
    rows = experiment.table_rows(arms, COMPARED)
    if start is None:
        return rows
    zero = [fmt((start["zero_shot"][m], None)) for m in METRICS]
    return [["start", "1", *zero, *["–"] * (len(HEADER) - 6), f"{start['train_seconds'] / 60:,.1f}",
             f"{sum(start['step_seconds'].values()) / 60:,.1f}"], *rows]


def plot(rows: Rows, path: Path) -> Path:
    """nDCG@10 of every arm-seed (:func:`experiment.plot`); the dashed line is mlm's mean."""
    return experiment.plot(rows, path, list(ARMS), BASELINE)


def report(work: Work, json_out: Path | None, markdown_out: Path | None) -> dict[str, Any]:
    finished, start = work.finished(), work.start_summary()
    arms = aggregate(finished)
    control = positive_control(finished, start)
    claims = next((r["per_query"]["stage2"] for r in finished.values()), {})
    note = (f"{start_text(start)}\n\n{verdict(control)}\n\nvs mlm: mean per-claim nDCG@10 difference against "
            "masked-LM alone from the same start, per-claim scores averaged over the seeds both arms have, and the "
            "two-sided p of a paired randomisation test over the claims (10,000 sign flips); vs cc: the same for "
            "the title context against its objective on cc. A warm arm's vs mlm is against mlm-warm (mlm-warm's "
            "against mlm), its vs cc against the same arm without the warm-up. "
            "Holm: the adjusted p over the 8 planned comparisons (each pre-trained arm against mlm, title against cc "
            "for coCondenser and CoT-MAE), zero-shot and after two stages each a family; minilm against mlm is for "
            "scale and the warm arms are a follow-up, not in the family (uncorrected p). Second table: the same "
            "comparisons seed by seed and a two-sided paired t-test over the seeds.\n")
    out = {"start": {k: v for k, v in (start or {}).items() if k != "per_query"}, "positive_control": control,
           "arms": arms, "settings": dataclasses.asdict(work.settings)}
    experiment.write_report(
        work, [(f"SciFact, {len(claims)} test claims, mean ± sd over seeds ({work.root})", HEADER,
                table_rows(arms, start)), ("Seed by seed, after 2 stages", experiment.SEED_HEADER, seed_rows(arms))],
        note, out, json_out, markdown_out, (lambda path: plot(finished, path)) if finished else None)
    return out


def status(work: Work) -> None:
    print(start_text(work.start_summary()))
    experiment.print_finished(work, pending(work))


COMMANDS = {"start": ("train the plain start (MLM from random weights) and evaluate it zero-shot",
                      lambda work: print(f"{build_start(work)}\n{start_text(work.start_summary())}"))}


if __name__ == "__main__":
    experiment.main(sys.modules[__name__])
