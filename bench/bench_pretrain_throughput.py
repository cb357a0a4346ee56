"""Pre-training throughput with GradCache on, beside the plain MNRL trainer, at two lengths, in one run.

``pretriever pretrain --objective cocondenser|cotmae --mini-batch-size M`` against a plain
sentence-transformers ``SentenceTransformerTrainer`` with MultipleNegativesRankingLoss (what
``pretriever train`` runs without GradCache), on the same model (the packaged all-MiniLM-L6-v2),
pairs (real SciFact train claims with their cited abstracts, x = abstract, y = claim, method
qc as for query-as-context: CoT-MAE decodes the claim with its AR decoder), batch size,
maximum length and number of steps. pairs/s inside the training loop; the ratio is ours over
MNRL's. GradCache encodes every text twice (once without a graph) and the objectives add MLM
heads over the vocabulary and a Condenser head or a decoder, so the goal is >= 0.5x.
The same run also times CachedMultipleNegativesRankingLoss (``train --mini-batch-size``) at the
same mini-batch size: ours over it is the price of the objectives' terms alone.
``--without-gradcache`` adds the objectives with one pass over the batch (GradCache's cost).

    python bench/bench_pretrain_throughput.py [--lengths 64,128] [--batch-size 16] [--mini-batch-size 8]
        [--steps 16] [--without-gradcache] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from bench_pretrain import OUT_DIR, make_pairs, run_mnrl, run_pretrain, start  # noqa: E402  (the same pairs and peer; puts the repo on sys.path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", default="64,128", help="maximum lengths in word pieces")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--mini-batch-size", type=int, default=8)
    parser.add_argument("--steps", type=int, default=16, help="optimizer steps per arm (MNRL: one epoch of as many)")
    parser.add_argument("--without-gradcache", action="store_true", help="also the objectives without GradCache")
    parser.add_argument("--json", type=Path, default=OUT_DIR / "pretrain_throughput.json")
    args = parser.parse_args()
    start()
    import torch

    rows = []
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="bench-pretrain-throughput-") as tmp:
        pairs = make_pairs(Path(tmp) / "pairs", args.steps * args.batch_size)
        for length in [int(v) for v in args.lengths.split(",")]:
            args.max_length = length
            mnrl, mnrl_cpu = run_mnrl(pairs, args)
            cached, _ = run_mnrl(pairs, args, args.mini_batch_size)
            arms = [(o, args.mini_batch_size) for o in ("cocondenser", "cotmae")]
            arms += [(o, None) for o in ("cocondenser", "cotmae")] if args.without_gradcache else []
            for objective, mini in arms:
                ours, ours_cpu = run_pretrain(pairs, objective, args, mini_batch_size=mini, max_steps=args.steps,
                                              logging_steps=1000)
                rows.append({"objective": objective, "gradcache": mini, "length": length, "pairs_per_s": ours,
                             "mnrl_pairs_per_s": mnrl, "ratio": ours / mnrl, "ratio_cpu": ours_cpu / mnrl_cpu,
                             "cached_mnrl_pairs_per_s": cached, "ratio_to_cached": ours / cached,
                             "load_average": os.getloadavg()})
    print(f"{'objective':12} {'GradCache':>9} {'length':>6} {'pairs/s':>8} {'MNRL pairs/s':>12} {'ratio':>6} "
          f"{'ratio per CPU s':>15} {'cached MNRL /s':>14} {'ratio':>6} {'load (1 min)':>12}")
    for r in rows:
        gc = f"{r['gradcache']}" if r["gradcache"] else "off"
        print(f"{r['objective']:12} {gc:>9} {r['length']:>6} {r['pairs_per_s']:>8.2f} {r['mnrl_pairs_per_s']:>12.2f} "
              f"{r['ratio']:>6.3f} {r['ratio_cpu']:>15.3f} {r['cached_mnrl_pairs_per_s']:>14.2f} "
              f"{r['ratio_to_cached']:>6.3f} {r['load_average'][0]:>12.2f}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "started": started,
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "units": "pairs/s inside the training loop; ratio = pretriever / sentence-transformers MNRL trainer",
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads()},
        "rows": rows}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
