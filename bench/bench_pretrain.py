"""Pre-training and generation benchmark, each beside a plain peer, at two sizes, in one run.

1. Pre-training throughput (pairs/s inside the training loop): ``pretriever pretrain``
   with coCondenser and with CoT-MAE against a plain sentence-transformers
   ``SentenceTransformerTrainer`` with MultipleNegativesRankingLoss, on the same model (the
   packaged all-MiniLM-L6-v2), pairs (real SciFact train claims with their cited abstracts:
   x = abstract, y = claim, as for query-as-context), batch size, maximum length and one
   epoch. The objectives do more work per pair than MNRL (MLM heads over the vocabulary, a
   Condenser head or a decoder), so a ratio below 1 is the price of those terms.
2. Generation throughput (passages/s, model loading included on both sides): ``pretriever
   generate`` (store reading, per-sequence seeded sampling, Parquet parts, manifest) with a
   tiny random T5 against a plain loop of ``model.generate(do_sample=True, top_k=25,
   top_p=0.95, num_return_sequences=C)`` over the same passage texts.

    python bench/bench_pretrain.py [--sizes 64,128] [--batch-size 16] [--max-length 64] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench_train import SCIFACT  # noqa: E402  (the shared data's one place among the benches)
OUT_DIR = REPO / "bench" / "out"


def make_pairs(folder: Path, n: int) -> Path:
    """n real (claim, cited abstract) pairs as a pairs folder of method qc."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pretriever.data import load_corpus, load_qrels, load_queries, qrels_path, relevant

    queries, corpus = load_queries(SCIFACT), load_corpus(SCIFACT)
    qrels = relevant(load_qrels(qrels_path(SCIFACT, "train")))
    qids = [q for q in qrels if qrels[q][0] in corpus][:n]
    rows = [{"method": "qc", "query": queries[q], "positive_text": corpus[qrels[q][0]][1],
             "positive_passage_id": qrels[q][0] + f"#{i}", "candidate": 0} for i, q in enumerate(qids)]
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "pairs.parquet")
    return folder


def run_mnrl(pairs: Path, args, mini_batch_size: int | None = None) -> tuple[float, float]:
    """Pairs per second and per CPU second of the plain sentence-transformers MNRL trainer (with GradCache,
    CachedMultipleNegativesRankingLoss, when given ``mini_batch_size``)."""
    import pyarrow.parquet as pq
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer.losses import (CachedMultipleNegativesRankingLoss,
                                                                   MultipleNegativesRankingLoss)

    from pretriever.models import resolve_model

    table = pq.read_table(pairs / "pairs.parquet", columns=["query", "positive_text"])
    dataset = Dataset.from_dict({"anchor": table.column(0).to_pylist(), "positive": table.column(1).to_pylist()})
    model = SentenceTransformer(resolve_model(None), device="cpu")
    model.max_seq_length = args.max_length
    with tempfile.TemporaryDirectory() as out:
        training_args = SentenceTransformerTrainingArguments(
            output_dir=out, num_train_epochs=1, per_device_train_batch_size=args.batch_size, learning_rate=1e-4,
            warmup_steps=0.1, seed=0, save_strategy="no", report_to="none", disable_tqdm=True,
            dataloader_pin_memory=False)
        trainer = SentenceTransformerTrainer(model=model, args=training_args, train_dataset=dataset,
                                             loss=CachedMultipleNegativesRankingLoss(
                                                 model, mini_batch_size=mini_batch_size) if mini_batch_size
                                             else MultipleNegativesRankingLoss(model))
        t, c = time.perf_counter(), time.process_time()
        trainer.train()
        return len(dataset) / (time.perf_counter() - t), len(dataset) / (time.process_time() - c)


def run_pretrain(pairs: Path, objective: str, args, **options) -> tuple[float, float]:
    """Pairs per second and per CPU second inside pretriever's training loop (one epoch unless ``options`` say)."""
    from pretriever.pretrain import PretrainConfig
    from pretriever.pretrain import run as pretraining

    with tempfile.TemporaryDirectory() as out:
        result = pretraining.run(PretrainConfig(pairs=pairs, out=Path(out) / "m", objective=objective, device="cpu",
                                                batch_size=args.batch_size, max_length=args.max_length,
                                                **({"epochs": 1} | options)))
        return result.rate, result.pairs_seen / result.cpu_seconds


def start() -> None:
    """Exit when SciFact is absent; quiet transformers' logging and progress bars."""
    if not SCIFACT.exists():
        sys.exit(f"SciFact not found at {SCIFACT} (../shared/data beside the checkout)")
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


def run_generate(store, t5: Path, n: int, args) -> float:
    from pretriever.generate import GenerateConfig
    from pretriever.generate import run as generation

    with tempfile.TemporaryDirectory() as out:
        result = generation.run(GenerateConfig(corpus=store.path, out=Path(out) / "q", model=str(t5), limit=n,
                                               per_passage=args.per_passage, batch_size=args.batch_size,
                                               max_input_length=args.max_length, max_output_length=args.max_output,
                                               device="cpu"))
        return result.passages / result.seconds


def run_plain_generate(store, t5: Path, n: int, args) -> float:
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    con = store.connect()
    texts = [t for (t,) in con.sql(f"SELECT text FROM passages LIMIT {n}").fetchall()]
    t = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(t5)
    model = AutoModelForSeq2SeqLM.from_pretrained(t5).eval()
    torch.manual_seed(0)
    for i in range(0, len(texts), args.batch_size):
        enc = tok(texts[i:i + args.batch_size], max_length=args.max_length, truncation=True, padding=True,
                  return_tensors="pt", return_token_type_ids=False)
        with torch.inference_mode():
            out = model.generate(**enc, do_sample=True, top_k=25, top_p=0.95, num_return_sequences=args.per_passage,
                                 max_new_tokens=args.max_output)
        tok.batch_decode(out, skip_special_tokens=True)
    return len(texts) / (time.perf_counter() - t)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="64,128", help="pairs (pre-training) and passages (generation)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--per-passage", type=int, default=5)
    parser.add_argument("--max-output", type=int, default=16)
    parser.add_argument("--json", type=Path, default=OUT_DIR / "pretrain.json")
    args = parser.parse_args()
    start()
    import torch

    from pretriever.corpus import build as corpus_build
    from pretriever.corpus.config import CorpusConfig
    from pretriever.data.store import CorpusStore
    from pretriever.testing import beir_subset, random_t5

    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-pretrain-") as tmp:
        tmp = Path(tmp)
        t5 = random_t5(tmp / "t5")
        corpus_build.run(CorpusConfig(input=beir_subset(tmp / "beir", SCIFACT, n_docs=max(sizes)), out=tmp / "store",
                                       workers=1))
        store = CorpusStore(tmp / "store")
        for n in sizes:
            pairs = make_pairs(tmp / f"pairs-{n}", n)
            for objective in ("cocondenser", "cotmae"):  # the peer runs right before each, so load hits both alike
                mnrl, mnrl_cpu = run_mnrl(pairs, args)
                ours, ours_cpu = run_pretrain(pairs, objective, args)
                rows.append({"what": f"pretrain {objective}", "size": n, "pretriever": ours, "peer": mnrl,
                             "peer_name": "sentence-transformers MNRL trainer", "ratio": ours / mnrl,
                             "pretriever_per_cpu_s": ours_cpu, "peer_per_cpu_s": mnrl_cpu,
                             "ratio_cpu": ours_cpu / mnrl_cpu})
            plain = run_plain_generate(store, t5, n, args)
            ours = run_generate(store, t5, n, args)
            rows.append({"what": "generate (tiny T5)", "size": n, "pretriever": ours, "peer": plain,
                         "peer_name": "plain model.generate loop", "ratio": ours / plain})
    print(f"{'':28} {'size':>5} {'pretriever/s':>13} {'peer/s':>9} {'ratio':>6} {'ratio per CPU s':>16}  peer")
    for r in rows:
        cpu = f"{r['ratio_cpu']:.3f}" if "ratio_cpu" in r else "-"
        print(f"{r['what']:28} {r['size']:>5} {r['pretriever']:>13.2f} {r['peer']:>9.2f} {r['ratio']:>6.3f} "
              f"{cpu:>16}  {r['peer_name']}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "units": "pairs/s (pretrain, inside the training loop) and passages/s (generate, model loading included)",
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                    "load_average": os.getloadavg()},
        "rows": rows}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
