"""``pretriever pretrain``: coCondenser or CoT-MAE pre-training of a sentence-transformers encoder.

Wire into the main app with ``app.command("pretrain")(pretrain_command)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from pretriever.cli.common import stage
from pretriever.config import build_config, help_for
from pretriever.pretrain import PretrainConfig
from pretriever.pretrain.run import pretrain
from pretriever.progress import console, count_progress

P = PretrainConfig


def pretrain_command(
    pairs: Path = typer.Argument(..., help=help_for(P, "pairs"), show_default=False),
    out: Path = typer.Option(..., "--out", "-o", help=help_for(P, "out"), show_default=False),
    objective: Optional[str] = typer.Option(None, "--objective", help=help_for(P, "objective")),
    model: Optional[str] = typer.Option(None, "--model", "-m", help=help_for(P, "model")),
    mix: Optional[str] = typer.Option(None, "--mix", help=help_for(P, "mix")),
    max_length: Optional[int] = typer.Option(None, "--max-length", help=help_for(P, "max_length")),
    mask_rate: Optional[float] = typer.Option(None, "--mask-rate", help=help_for(P, "mask_rate")),
    encoder_mask_rate: Optional[float] = typer.Option(None, "--encoder-mask-rate",
                                                      help=help_for(P, "encoder_mask_rate")),
    decoder_mask_rate: Optional[float] = typer.Option(None, "--decoder-mask-rate",
                                                      help=help_for(P, "decoder_mask_rate")),
    head_layers: Optional[int] = typer.Option(None, "--head-layers", help=help_for(P, "head_layers")),
    head_from_layer: Optional[int] = typer.Option(None, "--head-from-layer", help=help_for(P, "head_from_layer")),
    decoder_layers: Optional[int] = typer.Option(None, "--decoder-layers", help=help_for(P, "decoder_layers")),
    temperature: Optional[float] = typer.Option(None, "--temperature", help=help_for(P, "temperature")),
    epochs: Optional[float] = typer.Option(None, "--epochs", help=help_for(P, "epochs")),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help=help_for(P, "max_steps")),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", "-b", help=help_for(P, "batch_size")),
    gradient_accumulation: Optional[int] = typer.Option(None, "--gradient-accumulation",
                                                        help=help_for(P, "gradient_accumulation")),
    learning_rate: Optional[float] = typer.Option(None, "--learning-rate", "--lr", help=help_for(P, "learning_rate")),
    warmup_ratio: Optional[float] = typer.Option(None, "--warmup-ratio", help=help_for(P, "warmup_ratio")),
    weight_decay: Optional[float] = typer.Option(None, "--weight-decay", help=help_for(P, "weight_decay")),
    seed: Optional[int] = typer.Option(None, "--seed", help=help_for(P, "seed")),
    device: Optional[str] = typer.Option(None, "--device", help=help_for(P, "device")),
    save_steps: Optional[int] = typer.Option(None, "--save-steps", help=help_for(P, "save_steps")),
    logging_steps: Optional[int] = typer.Option(None, "--logging-steps", help=help_for(P, "logging_steps")),
    resume: Optional[bool] = typer.Option(None, "--resume", help=help_for(P, "resume")),
    overwrite: Optional[bool] = typer.Option(None, "--overwrite", help=help_for(P, "overwrite")),
    config: Optional[Path] = typer.Option(None, "--config", help="A TOML file; its [pretrain] table sets defaults."),
) -> None:
    """Pre-train an encoder on mined pairs with coCondenser or CoT-MAE (query-as-context: pairs of method qc).

    MODEL_DIR is a plain sentence-transformers model (heads and decoder discarded): fine-tune it with
    `pretriever train --model MODEL_DIR`.

    Examples:

      pretriever pretrain qc-pairs/ --objective cotmae --mix qc:1 --batch-size 8 --max-steps 4 --out cotmae-minilm/     (a real run: --batch-size 64, no --max-steps)

      pretriever pretrain qc-pairs/ --objective cocondenser --mix cc:1 --batch-size 8 --max-steps 4 --out cocondenser-minilm/
    """
    with stage():
        cfg = build_config(PretrainConfig, config, "pretrain", pairs=pairs, out=out, objective=objective, model=model,
                           mix=mix, max_length=max_length, mask_rate=mask_rate, encoder_mask_rate=encoder_mask_rate,
                           decoder_mask_rate=decoder_mask_rate, head_layers=head_layers,
                           head_from_layer=head_from_layer, decoder_layers=decoder_layers, temperature=temperature,
                           epochs=epochs, max_steps=max_steps, batch_size=batch_size,
                           gradient_accumulation=gradient_accumulation, learning_rate=learning_rate,
                           warmup_ratio=warmup_ratio, weight_decay=weight_decay, seed=seed, device=device,
                           save_steps=save_steps, logging_steps=logging_steps, resume=resume, overwrite=overwrite)
    with count_progress() as bar, stage(bar):
        task = bar.add_task(f"pretrain {cfg.objective}", total=None, rate="")

        def step(done: int, total: int, terms: dict[str, float]) -> None:
            shown = " ".join(f"{k} {v:.3f}" for k, v in terms.items())
            bar.update(task, completed=done, total=total, rate=shown)

        result = pretrain(cfg, progress=step)
    last = result.curve[-1] if result.curve else {}
    terms = " ".join(f"{k} {v:.3f}" for k, v in last.items() if k not in ("step", "epoch", "learning_rate"))
    console.print(f"{result.steps:,} steps, {result.pairs_seen:,} pairs in {result.seconds:.1f}s "
                  f"({result.rate:,.1f} pairs/s); last: {terms}")
    console.print(f"wrote {cfg.out} (sentence-transformers model) and {cfg.out / 'pretrain.json'}")
