"""`pretriever tune` on SciFact: every candidate's pseudo and real nDCG@10, Kendall tau, the nDCG@10 the choice
loses, and the time, beside the time the index's own encode took (the cost the issue compares tune with).

Runs :func:`pretriever.tune.run.run` in dry-run mode (the index is not written to), with validation on the
judgments given: ``qrels/train.tsv`` to choose the generators' constants, ``qrels/test.tsv`` for the table in
bench/README.md. The validation never reaches the choice (tests/test_tune.py checks it).

    python bench/bench_tune.py --index /tmp/scifact-index --queries ../shared/data/beir/scifact/queries.jsonl \
        --qrels ../shared/data/beir/scifact/qrels/test.tsv [-n 1000] [--seed 0] [--json bench/out/tune.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # as the command line does: the library never sets it

from pretriever.index import IndexMeta  # noqa: E402
from pretriever.progress import Reporter  # noqa: E402
from pretriever.tune import TuneConfig  # noqa: E402
from pretriever.tune import run as tuning  # noqa: E402


class Printed(Reporter):
    """Each step's message on stdout, beside the figures."""

    def message(self, text: str) -> None:
        print(f"  {text}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--qrels", type=Path, required=True)
    parser.add_argument("-n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--queries-from", default="masked-ict,titles")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    load_before = os.getloadavg()
    started = time.perf_counter()
    cfg = TuneConfig(index=args.index, queries_from=args.queries_from, n=args.n, seed=args.seed, dry_run=True,
                     qrels=args.qrels, queries=args.queries)
    result = tuning.run(cfg, Printed())
    wall = time.perf_counter() - started
    meta = IndexMeta.read(args.index, dense=True)
    rate = (meta.recorded.get("encode") or {}).get("passages_per_second")
    encode_s = meta.count / rate if rate else None
    v = result.validation
    gens = list(result.generators)
    print(f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, {os.cpu_count()} cores, "
          f"load {load_before[0]:.1f} before / {os.getloadavg()[0]:.1f} after; n={args.n} seed={args.seed}; "
          f"validation {args.qrels} ({v['queries']} queries)\n")
    print("| candidate | pseudo nDCG@10 | 95% interval | " + " | ".join(gens) + " | real nDCG@10 |")
    print("|---|---:|---:|" + "---:|" * len(gens) + "---:|")
    for c in result.candidates:
        s = result.choice.scores[c.label]
        chosen, best = c.label == result.choice.label, c.label == result.choice.best
        mark = " **(chosen)**" if chosen else " (best pseudo)" if best else ""
        mark += " (best real)" if c.label == v["best"] else ""
        print(f"| {c.label}{mark} | {s.mean:.4f} | {s.low:.3f}-{s.high:.3f} | "
              + " | ".join(f"{s.per_generator[g]:.4f}" for g in gens) + f" | {v['nDCG@10'][c.label]:.4f} |")
    print()
    for g in gens:
        info = result.generators[g]
        print(f"- {g}: {info['queries']} queries, lexical overlap {info['overlap']}, "
              f"{info['mask_seconds']:.0f} s masking + {info['score_seconds']:.0f} s scoring")
    print(f"- real queries: lexical overlap {v['overlap']}")
    print(f"- choice: {result.choice.label} ({result.choice.reason})")
    print(f"- Kendall tau pseudo vs real: {v['kendall_tau']:.3f}; generators: {result.choice.agreement['tau']}")
    print(f"- real nDCG@10 lost by the choice: {v['lost']:.4f} (by the best pseudo candidate: "
          f"{v['best_on_pseudo_lost']:.4f})")
    print(f"- time: {result.seconds['pseudo_total']:.0f} s for the choice, {result.seconds['validation']:.0f} s "
          f"validation, {wall:.0f} s in all")
    if encode_s:
        print(f"- the index's own encode took {encode_s:.0f} s: ratio choice / encode "
              f"{result.seconds['pseudo_total'] / encode_s:.2f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**result.manifest.to_json(), "wall_seconds": wall, "encode_seconds": encode_s},
                                        indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
