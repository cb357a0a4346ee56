"""``pretriever train``: train a bi-encoder on mined pairs or labelled data.

Wire into the main app with ``app.command("train")(train_command)``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from pretriever.cli.common import stage
from pretriever.config import build_config, help_for
from pretriever.progress import console
from pretriever.train import TrainConfig, train
from pretriever.train.heldout import smoothed


def train_command(
    pairs: Optional[Path] = typer.Argument(None, help=help_for(TrainConfig, "pairs", "Leave out with --beir or --dpr."),
                                           show_default=False),
    out: Path = typer.Option(..., "--out", "-o", help=help_for(TrainConfig, "out")),
    model: Optional[str] = typer.Option(None, "--model", "-m", help=help_for(TrainConfig, "model")),
    beir: Optional[Path] = typer.Option(None, "--beir", help=help_for(TrainConfig, "beir")),
    split: Optional[str] = typer.Option(None, "--split", help=help_for(TrainConfig, "split")),
    dpr: Optional[Path] = typer.Option(None, "--dpr", help=help_for(TrainConfig, "dpr")),
    corpus: Optional[Path] = typer.Option(None, "--corpus", help=help_for(TrainConfig, "corpus")),
    hard_negatives: Optional[str] = typer.Option(None, "--hard-negatives", help=help_for(TrainConfig, "hard_negatives")),
    bm25_depth: Optional[int] = typer.Option(None, "--bm25-depth", help=help_for(TrainConfig, "bm25_depth")),
    prepend_title: Optional[bool] = typer.Option(None, "--prepend-title/--no-prepend-title",
                                                 help=help_for(TrainConfig, "prepend_title")),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", help=help_for(TrainConfig, "limit")),
    mix: Optional[str] = typer.Option(None, "--mix", help=help_for(TrainConfig, "mix")),
    negatives: Optional[bool] = typer.Option(None, "--negatives/--no-negatives", help=help_for(TrainConfig, "use_negatives")),
    pooling: Optional[str] = typer.Option(None, "--pooling", help=help_for(TrainConfig, "pooling")),
    normalize: Optional[bool] = typer.Option(None, "--normalize/--no-normalize", help=help_for(TrainConfig, "normalize")),
    shared_encoder: Optional[bool] = typer.Option(None, "--shared-encoder/--separate-encoders",
                                                  help=help_for(TrainConfig, "shared_encoder")),
    similarity: Optional[str] = typer.Option(None, "--similarity", help=help_for(TrainConfig, "similarity")),
    scale: Optional[float] = typer.Option(None, "--scale", help=help_for(TrainConfig, "scale")),
    max_query_length: Optional[int] = typer.Option(None, "--max-query-length", help=help_for(TrainConfig, "max_query_length")),
    max_passage_length: Optional[int] = typer.Option(None, "--max-passage-length", help=help_for(TrainConfig, "max_passage_length")),
    epochs: Optional[float] = typer.Option(None, "--epochs", help=help_for(TrainConfig, "epochs")),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help=help_for(TrainConfig, "max_steps")),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", "-b", help=help_for(TrainConfig, "batch_size")),
    mini_batch_size: Optional[int] = typer.Option(None, "--mini-batch-size", help=help_for(TrainConfig, "mini_batch_size")),
    learning_rate: Optional[float] = typer.Option(None, "--lr", "--learning-rate", help=help_for(TrainConfig, "learning_rate")),
    warmup_ratio: Optional[float] = typer.Option(None, "--warmup", help=help_for(TrainConfig, "warmup_ratio")),
    weight_decay: Optional[float] = typer.Option(None, "--weight-decay", help=help_for(TrainConfig, "weight_decay")),
    seed: Optional[int] = typer.Option(None, "--seed", help=help_for(TrainConfig, "seed")),
    no_duplicates: Optional[bool] = typer.Option(None, "--no-duplicates/--allow-duplicates",
                                                 help=help_for(TrainConfig, "no_duplicates")),
    precision: Optional[str] = typer.Option(None, "--precision", help=help_for(TrainConfig, "precision")),
    gather_across_devices: Optional[bool] = typer.Option(None, "--gather-across-devices",
                                                         help=help_for(TrainConfig, "gather_across_devices")),
    save_steps: Optional[int] = typer.Option(None, "--save-steps", help=help_for(TrainConfig, "save_steps")),
    keep_checkpoints: Optional[bool] = typer.Option(None, "--keep-checkpoints", help=help_for(TrainConfig, "keep_checkpoints")),
    heldout_pairs: Optional[int] = typer.Option(None, "--heldout-pairs", help=help_for(TrainConfig, "heldout_pairs")),
    logging_steps: Optional[int] = typer.Option(None, "--logging-steps", help=help_for(TrainConfig, "logging_steps")),
    resume: bool = typer.Option(False, "--resume", help=help_for(TrainConfig, "resume")),
    overwrite: bool = typer.Option(False, "--overwrite", help=help_for(TrainConfig, "overwrite")),
    config: Optional[Path] = typer.Option(
        None, "--config", help="TOML file whose \\[train] table sets any of these options (keys as in "
                               "TrainConfig, e.g. batch_size = 400, mix = \"dl:0.5,cm:0.5\")."),
) -> None:
    """Train a dense retriever (bi-encoder) with sentence-transformers.

    The loss is HLP's (Zhou et al., 2022, section 3.3): for each query, the NLL of its positive passage against every other passage in the batch plus each pair's extra negative (2n - 1 negatives for a batch of n pairs), i.e. sentence-transformers' MultipleNegativesRankingLoss; --mini-batch-size switches to its GradCache version so the paper's batch of 400 fits on a small GPU. Learning rate 2e-5 with 10% linear warm-up and linear decay, as in the paper. The result is a standard sentence-transformers model folder: SentenceTransformer("MODEL_DIR") loads it anywhere.

    To reproduce HLP's setting, start from BERT with CLS pooling and a raw inner product: --model bert-base-uncased --pooling cls --similarity dot --scale 1 --batch-size 400 --mini-batch-size 64 --epochs 5. The defaults instead suit the packaged all-MiniLM-L6-v2, which normalises its vectors (cosine with scale 20).

    Fine-tuning: --beir DIR (qrels split, BM25 hard negatives) or --dpr FILE, with --limit for few-shot runs (HLP: m = 16, 128, 1024) and --separate-encoders (HLP fine-tunes two encoders).

    Checkpoints are written every --save-steps steps; after an interruption the same command with --resume continues from the newest one and ends with the same weights. On several GPUs run the same command under accelerate or torchrun, e.g. accelerate launch --num-processes 8 $(which pretriever) train ... or torchrun --nproc-per-node 8 $(which pretriever) train ...; --batch-size is per GPU.

    Examples:

      pretriever train pairs/ --out hlp-minilm/ --mix dl:0.5,cm:0.5 --batch-size 32 --heldout-pairs 32

      pretriever train --beir scifact/ --split train --limit 16 --separate-encoders --out scifact-16/
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")  # progress is shown by our rich bar
    with stage():
        cfg = build_config(
            TrainConfig, config, "train", out=out, pairs=pairs, model=model, beir=beir, split=split, dpr=dpr,
            corpus=corpus, hard_negatives=hard_negatives, bm25_depth=bm25_depth, prepend_title=prepend_title,
            limit=limit, mix=mix, use_negatives=negatives,
            pooling=pooling, normalize=normalize, shared_encoder=shared_encoder, similarity=similarity, scale=scale,
            max_query_length=max_query_length, max_passage_length=max_passage_length, epochs=epochs,
            max_steps=max_steps, batch_size=batch_size, mini_batch_size=mini_batch_size,
            learning_rate=learning_rate, warmup_ratio=warmup_ratio, weight_decay=weight_decay, seed=seed,
            no_duplicates=no_duplicates, precision=precision, gather_across_devices=gather_across_devices,
            save_steps=save_steps, keep_checkpoints=keep_checkpoints, logging_steps=logging_steps,
            heldout_pairs=heldout_pairs,
            resume=resume or None, overwrite=overwrite or None)
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
