"""``pretriever generate``: doc2query candidate queries for every passage of a corpus store.

Wire into the main app with ``app.command("generate")(generate_command)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from pretriever.cli.common import stage
from pretriever.config import build_config, help_for
from pretriever.data import QUERIES_FILE
from pretriever.generate import GenerateConfig, generate, import_queries
from pretriever.progress import console, count_progress

G = GenerateConfig


def generate_command(
    corpus: Path = typer.Argument(..., help=help_for(G, "corpus"), show_default=False),
    out: Path = typer.Option(..., "--out", "-o", help=help_for(G, "out"), show_default=False),
    model: Optional[str] = typer.Option(None, "--model", "-m", help=help_for(G, "model")),
    per_passage: Optional[int] = typer.Option(None, "--per-passage", "-c", help=help_for(G, "per_passage")),
    prefix: Optional[str] = typer.Option(None, "--prefix", help=help_for(G, "prefix")),
    top_k: Optional[int] = typer.Option(None, "--top-k", help=help_for(G, "top_k")),
    top_p: Optional[float] = typer.Option(None, "--top-p", help=help_for(G, "top_p")),
    max_input_length: Optional[int] = typer.Option(None, "--max-input-length", help=help_for(G, "max_input_length")),
    max_output_length: Optional[int] = typer.Option(None, "--max-output-length",
                                                    help=help_for(G, "max_output_length")),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", "-b", help=help_for(G, "batch_size")),
    seed: Optional[int] = typer.Option(None, "--seed", help=help_for(G, "seed")),
    prepend_title: Optional[bool] = typer.Option(None, "--prepend-title/--no-prepend-title",
                                                 help=help_for(G, "prepend_title")),
    shard: Optional[str] = typer.Option(None, "--shard", help=help_for(G, "shard")),
    checkpoint_every: Optional[int] = typer.Option(None, "--checkpoint-every", help=help_for(G, "checkpoint_every")),
    device: Optional[str] = typer.Option(None, "--device", help=help_for(G, "device")),
    precision: Optional[str] = typer.Option(None, "--precision", help=help_for(G, "precision")),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", help=help_for(G, "limit")),
    from_file: Optional[Path] = typer.Option(None, "--from", help=help_for(G, "from_file")),
    key: Optional[str] = typer.Option(None, "--key", help=help_for(G, "key")),
    resume: Optional[bool] = typer.Option(None, "--resume", help=help_for(G, "resume")),
    overwrite: Optional[bool] = typer.Option(None, "--overwrite", help=help_for(G, "overwrite")),
    config: Optional[Path] = typer.Option(None, "--config", help="A TOML file; its [generate] table sets defaults."),
) -> None:
    """Generate C queries per passage (doc2query, nucleus sampling), or import them with --from.

    Output: QUERIES_DIR/generated_queries.parquet (passage_id, candidate, text) and manifest.json, the input of
    `pretriever mine CORPUS --method qc --queries QUERIES_DIR`.

    Examples:

      pretriever generate enwiki/ --model doc2query/all-with-prefix-t5-base-v1 --prefix "text2query: " --per-passage 5 --limit 300 --out queries/

      pretriever generate enwiki/ --from doc2query-queries.jsonl --out imported-queries/     (queries made elsewhere: {"id": passage or doc id, "queries": [...]} per line)
    """
    with stage():
        cfg = build_config(GenerateConfig, config, "generate", corpus=corpus, out=out, model=model,
                           per_passage=per_passage, prefix=prefix, top_k=top_k, top_p=top_p,
                           max_input_length=max_input_length, max_output_length=max_output_length,
                           batch_size=batch_size, seed=seed, prepend_title=prepend_title, shard=shard,
                           checkpoint_every=checkpoint_every, device=device, precision=precision, limit=limit,
                           from_file=from_file, key=key, resume=resume, overwrite=overwrite)
    if cfg.from_file is not None:
        with stage():
            result = import_queries(cfg)
    else:
        with count_progress() as bar, stage(bar):
            task = bar.add_task("generate", total=None, rate="")

            def step(done: int, total: int) -> None:
                rate = done / max(bar.tasks[task].elapsed or 1e-9, 1e-9)
                bar.update(task, completed=done, total=total, rate=f"{rate:,.1f} passages/s")

            result = generate(cfg, progress=step)
    skipped = ", ".join(f"{n:,} {why.replace('_', ' ')}" for why, n in result.skipped.items() if n) or "none"
    console.print(f"{result.passages:,} passages, {result.queries:,} queries in {result.seconds:.1f}s "
                  f"({result.rate:,.1f} passages/s); skipped: {skipped}")
    if result.complete:
        console.print(f"wrote {cfg.out / QUERIES_FILE}")
    else:
        console.print("this shard is done; the table is written when every shard has run")
