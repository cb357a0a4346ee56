"""Issue 38, item 1: can a fresh CoT-MAE decoder learn to read h, and does reading h before normalisation matter?

The decoder (``--decoder mlm``: one transformer layer over [h ; y's embeddings, y masked at ``--rate``]) is
trained alone, the plain start's encoder and MLM head frozen, on SciFact's cc pairs; every ``--every`` steps
its masked-token loss on 256 held-out pairs is measured with the true h, another passage's h (rolled by one)
and h = 0. ``--copy`` makes y = x, so that h (the encoder's view of x masked at 30%) holds the very words the
decoder must restore: the easiest case for h. ``--normalised`` feeds h at norm 1, as the heads read it before
issue 38's fix. Same seed, data order and masks in every arm.

    python bench/probe_decoder_reads_h.py [--work /tmp/probe-h] [--start PATH] [--copy] [--rate 0.95]
        [--steps 1600] [--lr 1e-3] [--normalised] [--batch 32] [--length 64]

Prints one row per measurement; bench/README.md ("Does the bottleneck read h?") keeps the figures.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import pyarrow.parquet as pq
import torch
import torch.nn.functional as F
from probe_head_reads_h import pairs_and_start

from pretriever.pretrain.config import PretrainConfig
from pretriever.pretrain.run import build_objective

HELD_OUT = 256


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/probe-h"))
    parser.add_argument("--start", type=Path, help="an existing plain start instead of the 2 x 128 one built")
    parser.add_argument("--copy", action="store_true", help="y = x: the decoder restores the encoded text itself")
    parser.add_argument("--rate", type=float, default=0.95, help="the decoder's mask rate")
    parser.add_argument("--steps", type=int, default=1600)
    parser.add_argument("--every", type=int, default=400, help="measure every N steps")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--pooling", default="mean")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=64, help="word pieces per text")
    parser.add_argument("--normalised", action="store_true", help="feed h at norm 1 (the reading before the fix)")
    args = parser.parse_args()
    pairs, start = pairs_and_start(args.work, args.start, 2, 600)
    cfg = PretrainConfig(out=args.work / "decoder-probe", model=str(start), pairs=pairs, objective="cotmae",
                         decoder="mlm", decoder_mask_rate=args.rate, batch_size=args.batch, max_length=args.length,
                         pooling=args.pooling)
    objective = build_objective(cfg, "cpu")[1]
    rows = pq.read_table(pairs / "cc.parquet").to_pylist()
    random.Random(1).shuffle(rows)
    held, train, size = rows[:HELD_OUT], rows[HELD_OUT:], args.batch
    objective.requires_grad_(False)
    objective.decoder.requires_grad_(True)  # the decoder alone trains
    optimizer = torch.optim.AdamW(objective.decoder.parameters(), lr=args.lr)

    def batch(part: list[dict]) -> tuple[dict, dict, torch.Tensor]:
        xs = [r["positive_text"] for r in part]
        inputs = objective.prepare(xs, xs if args.copy else [r["query"] for r in part], ["cc"] * len(part))
        with torch.no_grad():
            h = objective.encode({k: inputs[k] for k in objective.encoder_rows[0]})[0]
        return inputs, objective.counts(inputs), F.normalize(h, dim=-1) if args.normalised else h

    def measure() -> dict[str, float]:
        objective.eval()
        state = torch.get_rng_state()
        torch.manual_seed(123)  # the same masks at every measurement
        totals = {"true": 0.0, "rolled": 0.0, "zero": 0.0}
        with torch.no_grad():
            for at in range(0, HELD_OUT, size):
                inputs, counts, h = batch(held[at:at + size])
                for name, given in (("true", h), ("rolled", h.roll(1, 0)), ("zero", torch.zeros_like(h))):
                    totals[name] += objective.batch_terms(given, inputs, counts)["ctx_mlm"].item() * size / HELD_OUT
        torch.set_rng_state(state)
        objective.train()
        return totals

    print("| decoder steps | loss, true h | rolled h | h = 0 | rolled - true | seconds |\n"
          "| ---: | ---: | ---: | ---: | ---: | ---: |")
    torch.manual_seed(0)
    started = time.perf_counter()
    objective.train()
    for step in range(args.steps + 1):
        if step % args.every == 0:
            m = measure()
            print(f"| {step} | {m['true']:.4f} | {m['rolled']:.4f} | {m['zero']:.4f} | {m['rolled'] - m['true']:+.4f} "
                  f"| {time.perf_counter() - started:.0f} |", flush=True)
        if step == args.steps:
            break
        at = (step * size) % (len(train) - size)
        inputs, counts, h = batch(train[at:at + size])
        loss = objective.batch_terms(h, inputs, counts)["ctx_mlm"]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
