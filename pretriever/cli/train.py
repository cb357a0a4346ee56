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

from pretriever.config import ConfigError, build_config
from pretriever.progress import console

EXIT_USAGE = 2  # bad options, unusable data, a MODEL_DIR that cannot be written or resumed


def _fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    console.print(f"[red]error:[/red] {escape(message)}")
    return typer.Exit(code)


def train_command(
    pairs: Optional[Path] = typer.Argument(
        None, help="Mined pairs: a folder from `pretriever mine` (or any folder of Parquet files with query and "
                   "positive_text, optionally method and negative_text). Leave out with --beir or --dpr.",
        show_default=False),
    out: Path = typer.Option(..., "--out", "-o", help="MODEL_DIR: the trained sentence-transformers model, plus "
                             "train.json (config, pairs per method, loss curve, time, pairs/s), loss.png and, "
                             "while training, checkpoints/."),
    model: Optional[str] = typer.Option(
        None, "--model", "-m", help="Model to start from: a local sentence-transformers or Hugging Face folder, or "
                                    "a name in the local Hugging Face cache (no downloads). Default: the packaged "
                                    "all-MiniLM-L6-v2. HLP starts from bert-base-uncased."),
    beir: Optional[Path] = typer.Option(
        None, "--beir", help="Fine-tune on a BEIR dataset folder (queries.jsonl, qrels/SPLIT.tsv, corpus.jsonl): one "
                             "example per relevant (query, passage), BM25 hard negatives mined here."),
    split: Optional[str] = typer.Option(None, "--split", help="BEIR qrels split to train on. Default: train."),
    dpr: Optional[Path] = typer.Option(
        None, "--dpr", help="Fine-tune on a DPR training JSON file (question, answers, positive_ctxs, "
                            "hard_negative_ctxs), e.g. from `pretriever pairs export --format dpr`."),
    corpus: Optional[Path] = typer.Option(
        None, "--corpus", help="A corpus store with the passages for --beir/--dpr; its BM25 index gives the hard "
                               "negatives. Default: BEIR's corpus.jsonl, or the contexts of the DPR file."),
    hard_negatives: Optional[str] = typer.Option(
        None, "--hard-negatives", help="--beir/--dpr: bm25 (the best BM25 passage that is not a positive and, for "
                                       "DPR, holds no answer: DPR's recipe), file (DPR's own hard_negative_ctxs) or "
                                       "none (in-batch negatives only). Default: bm25."),
    bm25_depth: Optional[int] = typer.Option(
        None, "--bm25-depth", help="BM25 hits looked at for each query's hard negative. Default: 10."),
    prepend_title: Optional[bool] = typer.Option(
        None, "--prepend-title/--no-prepend-title", help="--beir/--dpr: passages as \"title text\", as the index "
                                                         "stage encodes them. Default: on."),
    limit: Optional[int] = typer.Option(
        None, "--limit", "-n", help="Few-shot: train on this many queries (labelled data) or pairs (mined), drawn "
                                    "with --seed. HLP's few-shot runs use m = 16, 128 (256 in its text) and 1024."),
    mix: Optional[str] = typer.Option(
        None, "--mix", help="Mined pairs: share of each method in the training set, e.g. dl:0.5,cm:0.5 (HLP: 10M "
                            "DL + 10M CM). The budget is --limit, or the most pairs the methods allow with these "
                            "shares; each method's pairs are a seeded sample."),
    negatives: Optional[bool] = typer.Option(
        None, "--negatives/--no-negatives", help="Use each pair's extra negative passage (HLP: one random "
                                                 "negative) on top of the in-batch negatives. Default: on."),
    pooling: Optional[str] = typer.Option(
        None, "--pooling", help="cls (HLP, DPR) | mean | max. Default: keep the model's own (the packaged model: "
                                "mean, then normalize); a plain Hugging Face checkpoint gets cls."),
    normalize: Optional[bool] = typer.Option(
        None, "--normalize/--no-normalize", help="L2-normalise embeddings. Default: keep the model's own (packaged "
                                                 "model: yes; a plain checkpoint: no, as in HLP)."),
    shared_encoder: Optional[bool] = typer.Option(
        None, "--shared-encoder/--separate-encoders",
        help="One encoder for queries and passages (HLP pre-training, default) or two, DPR-style (HLP "
             "fine-tuning); two are saved as a sentence-transformers Router: use encode_query / encode_document."),
    similarity: Optional[str] = typer.Option(
        None, "--similarity", help="cos (sentence-transformers' default) or dot (HLP: inner product of the [CLS] "
                                   "vectors). Default: cos."),
    scale: Optional[float] = typer.Option(
        None, "--scale", help="Logits = scale x similarity. HLP: 1 with dot; sentence-transformers: 20 with cos. "
                              "Default: 20."),
    max_query_length: Optional[int] = typer.Option(
        None, "--max-query-length", help="Word pieces per query. HLP: 150 pre-training, 256 fine-tuning. "
                                         "Default: 150."),
    max_passage_length: Optional[int] = typer.Option(
        None, "--max-passage-length", help="Word pieces per passage. HLP: 256. Default: 256."),
    epochs: Optional[float] = typer.Option(
        None, "--epochs", help="Passes over the data. HLP: 5 pre-training, 40 fine-tuning. Default: 1."),
    max_steps: Optional[int] = typer.Option(
        None, "--max-steps", help="Stop after this many optimizer steps (overrides --epochs)."),
    batch_size: Optional[int] = typer.Option(
        None, "--batch-size", "-b", help="Pairs per step per device; every other passage in the batch is a "
                                         "negative. HLP: 400 pre-training, 256 fine-tuning. Default: 32."),
    mini_batch_size: Optional[int] = typer.Option(
        None, "--mini-batch-size", help="Use GradCache (CachedMultipleNegativesRankingLoss): encode this many "
                                        "texts at a time, so a batch of 400 fits in the memory of this many. "
                                        "Same loss, about 20-30% slower. Default: off."),
    learning_rate: Optional[float] = typer.Option(
        None, "--lr", "--learning-rate", help="Peak learning rate (AdamW). HLP: 2e-5. Default: 2e-5."),
    warmup_ratio: Optional[float] = typer.Option(
        None, "--warmup", help="Share of the steps with a linear warm-up; then linear decay to 0. HLP: 0.1. "
                               "Default: 0.1."),
    weight_decay: Optional[float] = typer.Option(None, "--weight-decay", help="AdamW weight decay. Default: 0."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the data sample (--limit, --mix), the batch "
                                       "order and dropout. Default: 0."),
    no_duplicates: Optional[bool] = typer.Option(
        None, "--no-duplicates/--allow-duplicates", help="Never put the same text twice in a batch (a duplicate "
                                                         "would be a false negative). Default: on."),
    precision: Optional[str] = typer.Option(None, "--precision", help="fp32 | fp16 | bf16 (mixed precision, "
                                            "GPUs). Default: fp32."),
    gather_across_devices: Optional[bool] = typer.Option(
        None, "--gather-across-devices", help="Multi-GPU: every device's passages are negatives for every query "
                                              "(a global batch of batch-size x GPUs)."),
    save_steps: Optional[int] = typer.Option(
        None, "--save-steps", help="Checkpoint every N steps into MODEL_DIR/checkpoints. Default: 1000."),
    keep_checkpoints: Optional[bool] = typer.Option(
        None, "--keep-checkpoints", help="Keep MODEL_DIR/checkpoints after training (removed by default)."),
    logging_steps: Optional[int] = typer.Option(
        None, "--logging-steps", help="Record the loss every N steps. Default: about 50 points over the run."),
    resume: bool = typer.Option(False, "--resume", help="Continue an interrupted run from the newest checkpoint "
                                "in MODEL_DIR (same options as the interrupted run)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace a model already in MODEL_DIR."),
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

      pretriever train pairs/ --out hlp-minilm/ --mix dl:0.5,cm:0.5 --limit 200000 --batch-size 128

      pretriever train --beir scifact/ --split train --limit 128 --separate-encoders --out scifact-128/
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")  # progress is shown by our rich bar
    from pretriever.train.config import TrainConfig
    from pretriever.train.errors import TrainError

    try:
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
            resume=resume or None, overwrite=overwrite or None)
    except (ConfigError, ValueError, TypeError) as err:
        raise _fail(str(err)) from err

    from pretriever.train.run import train

    _quiet_libraries()
    try:
        result = train(cfg, progress=True, step=lambda message: console.print(f"[dim]{escape(message)}[/dim]"))
    except TrainError as err:
        raise _fail(str(err)) from err
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
    curve = report["loss_curve"]
    if curve:
        table.add_row("loss first -> last", f"{curve[0]['loss']:.4f} -> {curve[-1]['loss']:.4f}")
    table.add_row("time", f"{report['seconds']['train']:.1f} s training, {report['seconds']['total']:.1f} s in all")
    if report.get("pairs_per_second"):
        table.add_row("throughput", f"{report['pairs_per_second']:,.1f} pairs/s")
    console.print(table)
    console.print(escape(f"Load it with: SentenceTransformer(\"{cfg.out}\")"
                         + ("  (encode_query / encode_document)" if not model["shared_encoder"] else "")))
