"""Issue 38, item 1: does the Condenser head use h once it reads the pooled vector at the official scale?

On a plain start (a small BERT trained from random weights with masked-LM alone on SciFact's abstracts, so that
its MLM head predicts tokens), the head is warmed up on the frozen encoder, or the whole model trained with
coCondenser, and then its masked-token loss (L_aux) on held-in cc pairs is measured three ways: with the true h,
with another passage's h (the batch rolled by one) and with h = 0. A head that uses h scores the true h best.
The scored head is the trained one, read back from the run's model.pt (kept there since 71ab7e4; before,
this probe scored a freshly drawn head: bench/README.md's correction).

    python bench/probe_head_reads_h.py [--work /tmp/probe-h] [--start-steps 600] [--layers 2] [--only 0 3]
        [--start /work/exp38-session/shared/start/model]   (an existing plain start instead of building one)
    python bench/probe_head_reads_h.py --score RUN/pt [RUN/pt ...] --pairs PAIRS   (only score trained heads:
        coCondenser's L_aux or CoT-MAE's decoder term, e.g. exp38's arms on WORK/shared/pairs)

Prints one row per setting; bench/README.md ("Does the bottleneck read h?") keeps the figures.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import pyarrow.parquet as pq
import torch

import pretriever.corpus.build
from pretriever import mine
from pretriever.corpus.config import CorpusConfig
from pretriever.mine.config import MineConfig
from pretriever.pretrain.config import PretrainConfig
from pretriever.pretrain.run import build_objective, run

SCIFACT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "beir" / "scifact"
SETTINGS = {  # name: (pooling, head warm-up steps, head lr, joint steps, lr)
    "cls, head warm-up 100 at 1e-3": ("cls", 100, 1e-3, 0, 0.0),
    "cls, head warm-up 400 at 3e-3": ("cls", 400, 3e-3, 0, 0.0),
    "mean, head warm-up 200 at 3e-3": ("mean", 200, 3e-3, 0, 0.0),
    "cls, coCondenser 300 joint steps at 5e-4": ("cls", 0, 0.0, 300, 5e-4),
}


def head_losses(model: Path, pairs: Path, pooling: str | None, rows: int = 256, batch: int = 32,
               objective: str = "cocondenser") -> dict[str, float]:
    """The head's term with the true, a rolled and a zero h, averaged over the first ``rows`` shuffled cc pairs:
    L_aux of coCondenser's head, or the decoder's ctx_mlm of CoT-MAE (``objective``); ``pooling`` None keeps the
    model's own. Refused when the model's folder holds no trained head for the objective."""
    cfg = PretrainConfig(out=model / "probe", model=str(model), pairs=pairs, objective=objective,
                         batch_size=batch, max_length=64, pooling=pooling)
    _, built, notes = build_objective(cfg, "cpu")
    new = notes.get("head_weights_new")  # None: no model.pt; a list: weights it lacks (one saved before 71ab7e4)
    if new is None or new:
        raise SystemExit(f"{model}: no trained {objective} head to score: "
                         + (f"its model.pt lacks {len(new)} of the head's weights" if new else notes["head"]))
    built.eval()
    data = pq.read_table(pairs / "cc.parquet").to_pylist()
    random.Random(1).shuffle(data)
    totals = {"true": 0.0, "rolled": 0.0, "zero": 0.0}
    torch.manual_seed(0)
    with torch.no_grad():
        for at in range(0, rows, batch):
            part = data[at:at + batch]
            inputs = built.prepare([r["positive_text"] for r in part], [r["query"] for r in part], ["cc"] * batch)
            counts = built.counts(inputs)
            h, state = built.encode({k: inputs[k] for k in built.encoder_rows[0]})
            for name, given in (("true", h), ("rolled", h.roll(1, 0)), ("zero", torch.zeros_like(h))):
                if objective == "cocondenser":
                    term = built.row_terms(given, state, inputs, counts)["aux"]
                else:
                    term = built.batch_terms(given, inputs, counts)["ctx_mlm"]
                totals[name] += term.item() / (rows // batch)
    return totals


def score(folders: list[Path], pairs: Path) -> None:
    """One row per pretrain folder: its trained head (from its model.pt) scored by :func:`head_losses`."""
    print("| folder | objective | true h | rolled h | h = 0 | rolled - true |\n"
          "| --- | --- | ---: | ---: | ---: | ---: |")
    for folder in folders:
        objective = json.loads((folder / "pretrain.json").read_text())["options"]["objective"]
        losses = head_losses(folder, pairs, None, objective=objective)
        print(f"| {folder} | {objective} | {losses['true']:.4f} | {losses['rolled']:.4f} | {losses['zero']:.4f} "
              f"| {losses['rolled'] - losses['true']:+.4f} |", flush=True)


def pairs_and_start(work: Path, start: Path | None, layers: int, steps: int) -> tuple[Path, Path]:
    """(WORK/pairs: SciFact's cc pairs of 64-word passages, the start: the model ``start`` as it is, or a plain
    start built in WORK/start, a BERT of ``layers`` x 128 trained ``steps`` MLM steps from random weights), each
    made once."""
    pairs = work / "pairs"
    if not (pairs / "pairs.json").exists():
        pretriever.corpus.build.run(CorpusConfig(input=SCIFACT, out=work / "store", words=64, overwrite=True))
        mine.run(MineConfig(corpus=work / "store", out=pairs, methods=["cc"], overwrite=True))
    if start is not None:
        return pairs, start
    start = work / "start"
    if not (start / "pretrain.json").exists():
        run(PretrainConfig(out=start, pairs=pairs, objective="mlm", init="random", init_layers=layers,
                           init_hidden=128, init_heads=2, pooling="cls", batch_size=32, max_length=64,
                           max_steps=steps, learning_rate=1e-3, warmup_ratio=0.05, overwrite=True))
    return pairs, start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/probe-h"))
    parser.add_argument("--start-steps", type=int, default=600)
    parser.add_argument("--layers", type=int, default=2, help="the start's layers (the head reads the middle one)")
    parser.add_argument("--only", type=int, nargs="*", help="the settings to run, by their row number from 0")
    parser.add_argument("--start", type=Path, help="an existing plain start (a pretrain folder) instead of one built")
    parser.add_argument("--score", type=Path, nargs="+", help="only score these pretrain folders' trained heads "
                        "(coCondenser or CoT-MAE) on --pairs")
    parser.add_argument("--pairs", type=Path, help="with --score: a pairs folder with cc.parquet")
    args = parser.parse_args()
    if args.score:
        score(args.score, args.pairs)
        return
    pairs, start = pairs_and_start(args.work, args.start, args.layers, args.start_steps)
    print("| setting | L_aux, true h | rolled h | h = 0 |\n| --- | ---: | ---: | ---: |")
    for i, (name, (pooling, warm, head_lr, joint, lr)) in enumerate(SETTINGS.items()):
        if args.only is not None and i not in args.only:
            continue
        out = args.work / f"setting-{i}"
        run(PretrainConfig(out=out, model=str(start), pairs=pairs, objective="cocondenser", pooling=pooling,
                           batch_size=32, max_length=64, max_steps=warm + joint, head_warmup_steps=warm,
                           head_lr=head_lr or 1e-4, learning_rate=lr or 1e-4, logging_steps=50, save_steps=100000,
                           overwrite=True, seed=0))
        losses = head_losses(out, pairs, pooling)
        print(f"| {name} | {losses['true']:.6f} | {losses['rolled']:.6f} | {losses['zero']:.6f} |", flush=True)


if __name__ == "__main__":
    main()
