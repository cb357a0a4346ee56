"""``pretriever train`` and ``pretriever finetune``: train a bi-encoder on mined pairs or labelled data, in one
stage or two.

Wire into the main app with ``app.command("train")(train_command)`` and
``app.command("finetune")(finetune_command)``.
"""

from __future__ import annotations

import os

from rich.markup import escape
from rich.table import Table

from pretriever.cli.common import stage
from pretriever.cli.options import Flag, config_command
from pretriever.progress import Reporter, RichReporter, console
from pretriever.train import FinetuneConfig, TrainConfig
from pretriever.train import finetune as finetuning
from pretriever.train import run as training
from pretriever.train.heldout import smoothed
from pretriever.train.manifest import TrainManifest


SHORT = {"model": "-m", "limit": "-n", "batch_size": "-b"}
FLAGS = {"use_negatives": Flag("--negatives/--no-negatives"), "normalize": Flag("--normalize/--no-normalize"),
         "shared_encoder": Flag("--shared-encoder/--separate-encoders"),
         "learning_rate": Flag("--lr", deprecated=("--learning-rate",)), "warmup_ratio": Flag("--warmup"),
         "no_duplicates": Flag("--no-duplicates/--allow-duplicates")}


@config_command(TrainConfig, "train", arguments=("pairs",), short=SHORT,
                flags={"pairs": Flag(extra_help="Leave out with --beir or --dpr."), **FLAGS})
def train_command(cfg: TrainConfig) -> None:
    """Train a dense retriever (bi-encoder) with sentence-transformers.

    The loss is HLP's (Zhou et al., 2022, section 3.3): for each query, the NLL of its positive passage
    against every other passage in the batch plus each pair's extra negative (2n - 1 negatives for a batch
    of n pairs), i.e. sentence-transformers' MultipleNegativesRankingLoss; --mini-batch-size switches to
    its GradCache version so the paper's batch of 400 fits on a small GPU. Learning rate 2e-5 with 10%
    linear warm-up and linear decay, as in the paper. The result is a standard sentence-transformers model
    folder: SentenceTransformer("MODEL_DIR") loads it anywhere.

    To reproduce HLP's setting, start from BERT with CLS pooling and a raw inner product: --model
    bert-base-uncased --pooling cls --similarity dot --scale 1 --batch-size 400 --mini-batch-size 64
    --epochs 5. The defaults instead suit the packaged all-MiniLM-L6-v2, which normalises its vectors
    (cosine with scale 20).

    Fine-tuning: --beir DIR (qrels split, BM25 hard negatives) or --dpr FILE, with --limit for few-shot
    runs (HLP: m = 16, 128, 1024) and --separate-encoders (HLP fine-tunes two encoders).

    Checkpoints are written every --save-steps steps; after an interruption the same command with --resume
    continues from the newest one and ends with the same weights. On several GPUs run the same command
    under accelerate or torchrun, e.g. accelerate launch --num-processes 8 $(which pretriever) train ...
    or torchrun --nproc-per-node 8 $(which pretriever) train ...; --batch-size is per GPU.

    Examples:

      pretriever train pairs/ --out hlp-minilm/ --mix dl:1 --batch-size 32 --heldout-pairs 32
          (HLP mixes dl:0.5,cm:0.5; a small sample has too few linked articles for co-mention pairs)

      pretriever train --beir scifact/ --split train --limit 16 --separate-encoders --out scifact-16/

    Retriever 2 of two-stage fine-tuning takes its negatives from an index of retriever 1
    (--negatives-from INDEX_DIR --negative-depth 200 --negatives-per-query 15); `pretriever finetune
    --two-stage` runs the whole chain, and its help shows it step by step.
    """
    run_train(cfg)


def run_train(cfg: TrainConfig):
    """Train under a progress bar and print the summary table."""
    _quiet_libraries()
    with RichReporter() as report, stage(report):
        result = training.run(cfg, report)
    print_summary(result.manifest, cfg)
    return result


def _train_stage(cfg: TrainConfig, report: Reporter):
    """One stage of ``finetune``: train it and print its summary table."""
    result = training.run(cfg, report)
    print_summary(result.manifest, cfg)
    return result


@config_command(FinetuneConfig, "finetune", short=SHORT, skip=("pairs", "dpr", "mix", "negatives_from", "resume"),
                flags=FLAGS)
def finetune_command(cfg: FinetuneConfig) -> None:
    """Fine-tune on judged queries, in one stage or two (query-as-context, Figure 3; coCondenser;
    CoT-MAE).

    Retriever 1 is `pretriever train --beir DIR` with in-batch negatives and --bm25-negatives BM25
    negatives per query, drawn with the seed from BM25's top --bm25-depth, never a judged positive (the
    paper and caskcsg's eval_msmarco.sh: 15 of the top 200, the same count as retriever 2). With
    --two-stage, the corpus is then indexed with retriever 1, and retriever 2 is trained from the same
    --model (the paper starts both from the pre-trained model) with --negatives-per-query negatives per
    query drawn with the seed from retriever 1's top --negative-depth, never a judged positive (paper: 200
    and 15). Every option of `pretriever train` applies to both stages.

    The run resumes by itself: the same command again keeps the finished stages, continues an interrupted
    one from its checkpoint, and runs again every stage after one that ran. It prints where each stage's
    output is (also in FINETUNE_DIR/finetune.json); evaluate retriever 2 with `pretriever index build` on
    FINETUNE_DIR/stage2 and `pretriever evaluate`.

    Examples:

      pretriever finetune --beir scifact/ --corpus scifact-store/ --two-stage --bm25-negatives 3
          --negatives-per-query 3 --batch-size 8 --max-steps 2 --out scifact-ft/

      pretriever train --beir scifact/ --negatives-from scifact-ft/stage1-index/ --negative-depth 200
          --negatives-per-query 15 --batch-size 4 --max-steps 2 --out scifact-r2/
          (retriever 2 alone, with the paper's depth and count, from the index the run above built)
    """
    _quiet_libraries()
    with RichReporter() as report, stage(report):
        result = finetuning.run(cfg, report, run_train=_train_stage)
    table = Table(title=f"pretriever finetune -> {cfg.out}")
    for column in ("stage", "output", "this run", "seconds"):
        table.add_column(column, overflow="fold")
    for s in result.stages:
        table.add_row(s.name, str(s.path), s.note, f"{s.seconds:.1f}" if s.ran else "-")
    console.print(table)
    final = result.stages[-1].path
    console.print(escape(f"Retriever {'2' if cfg.two_stage else '1'}: SentenceTransformer(\"{final}\"); index it "
                         f"with `pretriever index build CORPUS --model {final} --out INDEX_DIR`."))


def _quiet_libraries() -> None:
    """Our rich progress bar replaces the tqdm bars of transformers and the hub (loading, saving), and
    tokenizers run serially, so DataLoader workers fork without tokenizers' deadlock warning."""
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        from huggingface_hub.utils import disable_progress_bars
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        disable_progress_bars()
    except ImportError:  # pragma: no cover
        pass


def print_summary(report: TrainManifest, cfg) -> None:
    """The run in one table (the same numbers are in MODEL_DIR/train.json)."""
    data, model, training = report.data, report.model, report.training
    table = Table(title=f"pretriever train -> {cfg.out}")
    table.add_column("what")
    table.add_column("value", overflow="fold")
    per = ", ".join(f"{k} {v:,}" for k, v in data["per_method"].items())
    table.add_row("training pairs", f"{data['pairs']:,} ({per})")
    if data.get("duplicate_across_methods"):
        table.add_row("found by two methods", "trained once: " + ", ".join(
            f"{k} {v:,} left to an earlier method" for k, v in data["duplicate_across_methods"].items()))
    extra = data.get("negatives_per_pair", 1)
    table.add_row("negatives", (f"{'one' if extra == 1 else extra} extra per pair + in-batch"
                                + (f" (from {data['hard_negatives']})" if extra > 1 else ""))
                  if data["negatives"] else "in-batch only")
    if data.get("negatives_found"):
        table.add_row("hard negatives", ", ".join(f"{k} {v:,}" for k, v in data["negatives_found"].items()))
    table.add_row("model", f"{model['base']}: {model['pooling']} pooling, "
                           f"{'normalized, ' if model['normalize'] else ''}"
                           f"{'shared encoder' if model['shared_encoder'] else 'separate query/passage encoders'}")
    table.add_row("loss", f"{training['loss']}, {model['similarity']} x {model['scale']:g}")
    table.add_row("steps", f"{training['steps']:,} (batch {training['batch_size']}, epoch {training['epochs']:g}"
                           + (f", resumed at step {training['resumed_at_step']}" if training.get("resumed_from") else "")
                           + ")")
    trend = smoothed(report.loss_curve)
    if trend:
        table.add_row("training loss", f"{trend[0]:.4f} -> {trend[1]:.4f} (mean of the first and last fifth of "
                                       "the logged steps)")
    elif report.loss_curve:
        table.add_row("training loss", f"{len(report.loss_curve)} logged steps: too few for a trend (each is one "
                                       "batch, and later batches differ); "
                      + ("read the held-out loss below" if report.heldout else "see loss.png"))
    held = report.heldout
    if held:
        before, after = held["before"], held["after"]
        table.add_row(f"held-out pairs ({held['pairs']:,})",
                      f"query ranks its own positive first: {before['acc@1']:.0%} -> {after['acc@1']:.0%}; "
                      f"MRR {before['mrr']:.3f} -> {after['mrr']:.3f}; loss {before['loss']:.4f} -> {after['loss']:.4f}")
    table.add_row("time", f"{report.seconds['train']:.1f} s training, {report.seconds['total']:.1f} s in all")
    if report.pairs_per_second:
        table.add_row("throughput", f"{report.pairs_per_second:,.1f} pairs/s")
    console.print(table)
    console.print(escape(f"Load it with: SentenceTransformer(\"{cfg.out}\")"
                         + ("  (encode_query / encode_document)" if not model["shared_encoder"] else "")))
