"""``pretriever train``: train a bi-encoder on mined pairs or labelled data.

Wire into the main app with ``app.command("train")(train_command)``.
"""

from __future__ import annotations

import os

from rich.markup import escape
from rich.table import Table

from pretriever.cli.common import stage
from pretriever.cli.options import Flag, config_command
from pretriever.progress import console
from pretriever.train import TrainConfig, train
from pretriever.train.heldout import smoothed


@config_command(TrainConfig, "train", arguments=("pairs",), short={"model": "-m", "limit": "-n", "batch_size": "-b"},
                flags={"pairs": Flag(extra_help="Leave out with --beir or --dpr."),
                       "use_negatives": Flag("--negatives/--no-negatives"),
                       "normalize": Flag("--normalize/--no-normalize"),
                       "shared_encoder": Flag("--shared-encoder/--separate-encoders"),
                       "learning_rate": Flag(("--lr", "--learning-rate")), "warmup_ratio": Flag("--warmup"),
                       "no_duplicates": Flag("--no-duplicates/--allow-duplicates")})
def train_command(cfg: TrainConfig) -> None:
    """Train a dense retriever (bi-encoder) with sentence-transformers.

    The loss is HLP's (Zhou et al., 2022, section 3.3): for each query, the NLL of its positive passage against every other passage in the batch plus each pair's extra negative (2n - 1 negatives for a batch of n pairs), i.e. sentence-transformers' MultipleNegativesRankingLoss; --mini-batch-size switches to its GradCache version so the paper's batch of 400 fits on a small GPU. Learning rate 2e-5 with 10% linear warm-up and linear decay, as in the paper. The result is a standard sentence-transformers model folder: SentenceTransformer("MODEL_DIR") loads it anywhere.

    To reproduce HLP's setting, start from BERT with CLS pooling and a raw inner product: --model bert-base-uncased --pooling cls --similarity dot --scale 1 --batch-size 400 --mini-batch-size 64 --epochs 5. The defaults instead suit the packaged all-MiniLM-L6-v2, which normalises its vectors (cosine with scale 20).

    Fine-tuning: --beir DIR (qrels split, BM25 hard negatives) or --dpr FILE, with --limit for few-shot runs (HLP: m = 16, 128, 1024) and --separate-encoders (HLP fine-tunes two encoders).

    Checkpoints are written every --save-steps steps; after an interruption the same command with --resume continues from the newest one and ends with the same weights. On several GPUs run the same command under accelerate or torchrun, e.g. accelerate launch --num-processes 8 $(which pretriever) train ... or torchrun --nproc-per-node 8 $(which pretriever) train ...; --batch-size is per GPU.

    Examples:

      pretriever train pairs/ --out hlp-minilm/ --mix dl:1 --batch-size 32 --heldout-pairs 32   (HLP mixes dl:0.5,cm:0.5; a small sample has too few linked articles for co-mention pairs)

      pretriever train --beir scifact/ --split train --limit 16 --separate-encoders --out scifact-16/
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")  # progress is shown by our rich bar
    _quiet_libraries()
    with stage():
        result = train(cfg, progress=True, step=lambda message: console.print(f"[dim]{escape(message)}[/dim]"))
    print_summary(result.report, cfg)


def _quiet_libraries() -> None:
    """Our rich progress bar replaces the tqdm bars of transformers and the hub (loading, saving)."""
    try:
        from huggingface_hub.utils import disable_progress_bars
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        disable_progress_bars()
    except ImportError:  # pragma: no cover
        pass


def print_summary(report: dict, cfg) -> None:
    """The run in one table (the same numbers are in MODEL_DIR/train.json)."""
    data, model, training = report["data"], report["model"], report["training"]
    table = Table(title=f"pretriever train -> {cfg.out}")
    table.add_column("what")
    table.add_column("value", overflow="fold")
    per = ", ".join(f"{k} {v:,}" for k, v in data["per_method"].items())
    table.add_row("training pairs", f"{data['pairs']:,} ({per})")
    if data.get("duplicate_across_methods"):
        table.add_row("found by two methods", "trained once: " + ", ".join(
            f"{k} {v:,} left to an earlier method" for k, v in data["duplicate_across_methods"].items()))
    table.add_row("negatives", "one extra per pair + in-batch" if data["negatives"] else "in-batch only")
    if data.get("negatives_found"):
        table.add_row("hard negatives", ", ".join(f"{k} {v:,}" for k, v in data["negatives_found"].items()))
    table.add_row("model", f"{model['base']}: {model['pooling']} pooling, "
                           f"{'normalized, ' if model['normalize'] else ''}"
                           f"{'shared encoder' if model['shared_encoder'] else 'separate query/passage encoders'}")
    table.add_row("loss", f"{training['loss']}, {model['similarity']} x {model['scale']:g}")
    table.add_row("steps", f"{training['steps']:,} (batch {training['batch_size']}, epoch {training['epochs']:g}"
                           + (f", resumed at step {training['resumed_at_step']}" if training.get("resumed_from") else "")
                           + ")")
    trend = smoothed(report["loss_curve"])
    if trend:
        table.add_row("training loss", f"{trend[0]:.4f} -> {trend[1]:.4f} (mean of the first and last fifth of "
                                       "the logged steps; noisy on small runs)")
    held = report.get("heldout")
    if held:
        before, after = held["before"], held["after"]
        table.add_row(f"held-out pairs ({held['pairs']:,})",
                      f"query ranks its own positive first: {before['acc@1']:.0%} -> {after['acc@1']:.0%}; "
                      f"MRR {before['mrr']:.3f} -> {after['mrr']:.3f}; loss {before['loss']:.4f} -> {after['loss']:.4f}")
    table.add_row("time", f"{report['seconds']['train']:.1f} s training, {report['seconds']['total']:.1f} s in all")
    if report.get("pairs_per_second"):
        table.add_row("throughput", f"{report['pairs_per_second']:,.1f} pairs/s")
    console.print(table)
    console.print(escape(f"Load it with: SentenceTransformer(\"{cfg.out}\")"
                         + ("  (encode_query / encode_document)" if not model["shared_encoder"] else "")))
