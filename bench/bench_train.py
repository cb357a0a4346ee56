"""Training benchmark: ``pretriever train`` against a plain sentence-transformers training loop.

Both train the packaged all-MiniLM-L6-v2 on the same pairs (real SciFact claims, each with
its cited abstract as the positive and another abstract as the negative), with the same
loss (MultipleNegativesRankingLoss, cosine, scale 20), batch size, maximum length (queries
and passages), learning-rate schedule, no-duplicates batch sampler and seed. The plain
loop is what a user would write by hand: load the model, set ``max_seq_length``, build a
``datasets.Dataset`` from the Parquet file, ``SentenceTransformerTrainer.train()``, save.

pretriever runs through ``pretriever.train.train`` exactly as the CLI does (pairs folder
scan and sampling, Arrow file, rich progress bar, train.json, loss plot). The two take
turns for ``--repeat`` rounds, so a change in machine load hits both; the figures are
the median over rounds:

- training throughput: pairs / seconds inside ``trainer.train()`` (the goal is a ratio >= 0.95),
- training work: pairs / CPU seconds of the process inside ``trainer.train()`` (a fairer
  comparison when other processes share the cores),
- end to end: pairs / seconds of the whole call (data, model loading, training, saving).

    python bench/bench_train.py [--pairs 96] [--batch-size 16] [--max-length 128] [--repeat 2] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("PRETRIEVER_SHARED_DATA") or REPO.parent / "shared" / "data")  # as tests/conftest.py
SCIFACT = DATA / "beir" / "scifact"
OUT_DIR = REPO / "bench" / "out"


def make_pairs(folder: Path, n: int) -> Path:
    """n real (claim, cited abstract, other abstract) pairs as a pairs folder (half dl, half cm)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pretriever.data import load_corpus, load_qrels, load_queries, qrels_path, relevant

    queries, qrels, corpus = load_queries(SCIFACT), relevant(load_qrels(qrels_path(SCIFACT, "train"))), load_corpus(SCIFACT)
    qids = [q for q in qrels if qrels[q][0] in corpus][:n]
    if len(qids) < n:
        sys.exit(f"SciFact has only {len(qids)} usable training queries; ask for fewer --pairs")
    docs = list(corpus)
    rows = []
    for i, q in enumerate(qids):
        pos, neg = qrels[q][0], docs[(i * 97 + 13) % len(docs)]
        rows.append({"pair_id": f"p{i}", "method": "dl" if i % 2 == 0 else "cm", "query": queries[q],
                     "positive_passage_id": pos, "positive_text": corpus[pos][1],
                     "negative_passage_id": neg, "negative_text": corpus[neg][1]})
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "pairs.parquet")
    return folder


def run_plain(pairs: Path, out: Path, args) -> dict:
    """The hand-written sentence-transformers loop."""
    t0 = time.perf_counter()
    import pyarrow.parquet as pq
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.base.sampler import BatchSamplers
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from pretriever.models import resolve_model

    table = pq.read_table(pairs / "pairs.parquet", columns=["query", "positive_text", "negative_text"])
    dataset = Dataset.from_dict({"anchor": table.column(0).to_pylist(), "positive": table.column(1).to_pylist(),
                                 "negative": table.column(2).to_pylist()})
    model = SentenceTransformer(resolve_model(None), device="cpu")
    model.max_seq_length = args.max_length
    training_args = SentenceTransformerTrainingArguments(
        output_dir=str(out / "checkpoints"), num_train_epochs=1, per_device_train_batch_size=args.batch_size,
        learning_rate=2e-5, warmup_steps=0.1, lr_scheduler_type="linear", seed=0, data_seed=0,
        batch_sampler=BatchSamplers.NO_DUPLICATES, save_strategy="no", report_to="none", disable_tqdm=True,
        logging_steps=1, dataloader_pin_memory=False)
    trainer = SentenceTransformerTrainer(model=model, args=training_args, train_dataset=dataset,
                                         loss=MultipleNegativesRankingLoss(model))
    t1, c1 = time.perf_counter(), time.process_time()
    trainer.train()
    train_s, train_cpu = time.perf_counter() - t1, time.process_time() - c1
    model.save(str(out))
    return {"train_s": train_s, "train_cpu_s": train_cpu, "total_s": time.perf_counter() - t0, "pairs": len(dataset)}


def run_pretriever(pairs: Path, out: Path, args) -> dict:
    t0 = time.perf_counter()
    from pretriever.progress import RichReporter
    from pretriever.train import TrainConfig
    from pretriever.train.run import run

    cfg = TrainConfig(out=out, pairs=pairs, batch_size=args.batch_size, max_query_length=args.max_length,
                      max_passage_length=args.max_length, seed=0, overwrite=True)
    with RichReporter() as report:
        result = run(cfg, report, device="cpu")
    return {"train_s": result.manifest.seconds["train"], "train_cpu_s": result.manifest.seconds["train_cpu"],
            "total_s": time.perf_counter() - t0,
            "pairs": result.manifest.data["pairs"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=96, help="training pairs (one epoch)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=128, help="word pieces, queries and passages")
    parser.add_argument("--repeat", type=int, default=2, help="rounds; the tools take turns")
    parser.add_argument("--json", type=Path, default=OUT_DIR / "train.json")
    args = parser.parse_args()
    if not SCIFACT.exists():
        sys.exit(f"SciFact not found at {SCIFACT} (../shared/data beside the checkout)")

    import torch
    from rich.console import Console
    from rich.table import Table
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    console = Console(width=160)
    load_before = os.getloadavg()
    runs: dict[str, list[dict]] = {"sentence-transformers": [], "pretriever": []}
    with tempfile.TemporaryDirectory(prefix="bench-train-") as tmp:
        pairs = make_pairs(Path(tmp) / "pairs", args.pairs)
        for r in range(args.repeat):
            order = [("sentence-transformers", run_plain), ("pretriever", run_pretriever)]
            if r % 2:
                order.reverse()
            for name, fn in order:
                res = fn(pairs, Path(tmp) / f"{name}-{r}", args)
                res["pairs_per_s"] = res["pairs"] / res["train_s"]
                res["pairs_per_cpu_s"] = res["pairs"] / res["train_cpu_s"]
                res["end_to_end_pairs_per_s"] = res["pairs"] / res["total_s"]
                runs[name].append(res)
                console.print(f"round {r + 1} {name}: {res['pairs_per_s']:.2f} pairs/s training "
                              f"({res['train_s']:.1f} s wall, {res['train_cpu_s']:.1f} s CPU); "
                              f"{res['total_s']:.1f} s end to end")

    def med(name: str, key: str) -> float:
        return statistics.median(x[key] for x in runs[name])

    plain, ours = "sentence-transformers", "pretriever"
    ratio = med(ours, "pairs_per_s") / med(plain, "pairs_per_s")
    ratio_e2e = med(ours, "end_to_end_pairs_per_s") / med(plain, "end_to_end_pairs_per_s")
    ratio_cpu = med(ours, "pairs_per_cpu_s") / med(plain, "pairs_per_cpu_s")
    table = Table(title=f"training throughput: {args.pairs} pairs, batch {args.batch_size}, max length "
                        f"{args.max_length}, one negative, all-MiniLM-L6-v2, {torch.get_num_threads()} threads")
    for col in ("", "training pairs/s", "train s", "pairs per CPU s", "end-to-end pairs/s", "end-to-end s"):
        table.add_column(col, justify="right")
    for name in (plain, ours):
        table.add_row(name, f"{med(name, 'pairs_per_s'):.2f}", f"{med(name, 'train_s'):.1f}",
                      f"{med(name, 'pairs_per_cpu_s'):.3f}", f"{med(name, 'end_to_end_pairs_per_s'):.2f}",
                      f"{med(name, 'total_s'):.1f}")
    table.add_row("ratio", f"{ratio:.3f}", "", f"{ratio_cpu:.3f}", f"{ratio_e2e:.3f}", "")
    console.print(table)
    result = {
        "what": "pretriever train vs a plain SentenceTransformerTrainer loop, same data/loss/batch/length/seed",
        "settings": {"pairs": args.pairs, "batch_size": args.batch_size, "max_length": args.max_length,
                     "negatives": 1, "loss": "MultipleNegativesRankingLoss (cos, scale 20)",
                     "model": "all-MiniLM-L6-v2 (packaged)", "epochs": 1, "repeat": args.repeat},
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                    "torch": torch.__version__, "load_average_before": load_before,
                    "load_average_after": os.getloadavg()},
        "runs": runs,
        "median_pairs_per_s": {plain: med(plain, "pairs_per_s"), ours: med(ours, "pairs_per_s")},
        "ratio_training": ratio,
        "ratio_end_to_end": ratio_e2e,
        "ratio_cpu_time": ratio_cpu,  # pairs per CPU second: less sensitive to other processes on the machine
        "goal": "ratio_training >= 0.95",
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    console.print(f"saved {args.json}")


if __name__ == "__main__":
    main()
