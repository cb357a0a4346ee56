"""Reader throughput: ``pretriever``'s reader against a plain transformers ``pipeline("question-answering")``.

transformers 5 removed the question-answering pipeline, so the peer runs in a subprocess on
transformers 4.57 (the last release with it), installed beside the project's environment with
``pip install --target PEER_PATH --no-deps transformers==4.57.1 huggingface_hub==0.36.0
tokenizers==0.22.1`` and given with ``--peer-path`` (same torch, same threads, same model folder).

Both read the same passages with the same model (a reader folder made from the packaged
all-MiniLM-L6-v2: a standard transformers question-answering folder, so the pipeline loads it as
is) at the same max length and batch size, in one process: for each question the top k = 20
BM25 passages of a SciFact store (100-word passages of the first ``--docs`` documents, built by
``pretriever corpus build``; the questions are SciFact claims). pretriever reads
``question [SEP] title [SEP] passage`` and scores spans plus a passage-selection logit; the
pipeline reads ``question [SEP] title. passage`` and scores spans (its own post-processing). The
two take turns for ``--repeat`` rounds and the best round of each counts. Two sizes: ``--small``
and ``--large`` questions. Prints passages/s for both and the ratio pretriever / pipeline.

    python bench/bench_reader.py --peer-path /tmp/tf4 [--docs 300] [--small 5] [--large 20] [--k 20] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "data" / "beir" / "scifact"
OUT_DIR = REPO / "bench" / "out"
console = Console(width=max(shutil.get_terminal_size().columns, 120))


def workload(tmp: Path, docs: int, questions: int, k: int):
    """(question, [Passage]) for the first ``questions`` SciFact claims over a store of ``docs`` documents."""
    from pretriever.corpus import build as corpus_build
    from pretriever.corpus.config import CorpusConfig
    from pretriever.index import BM25Index, IndexFolder
    from pretriever.reader.predict import passages_for

    subset = tmp / "corpus.jsonl"
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as f:
        subset.write_text("".join(line for _, line in zip(range(docs), f)), encoding="utf-8")
    corpus_build.run(CorpusConfig(input=subset, out=tmp / "store"))
    BM25Index.build(tmp / "store").save(tmp / "bm25")  # what `pretriever index bm25 STORE --out DIR` writes
    claims = [json.loads(line)["text"] for line in (SCIFACT / "queries.jsonl").read_text().splitlines()[:questions]]
    with IndexFolder(tmp / "bm25").open(require_store=True) as searcher:
        return [(q, passages_for(searcher, hits)) for q, hits in zip(claims, searcher.search(claims, k))]


def run_ours(reader, work) -> float:
    t0 = time.perf_counter()
    for question, passages in work:
        reader.read(question, passages)
    return time.perf_counter() - t0


def peer(job: Path) -> None:
    """In the subprocess (transformers 4): time pipeline("question-answering") over the job's passages."""
    import torch
    from transformers import __version__, pipeline

    spec = json.loads(job.read_text())
    torch.set_num_threads(spec["threads"])
    qa = pipeline("question-answering", model=spec["model"], tokenizer=spec["model"], device="cpu")

    def run(work) -> float:
        t0 = time.perf_counter()
        for question, contexts in work:
            qa(question=[question] * len(contexts), context=contexts, batch_size=spec["batch_size"],
               max_seq_len=spec["max_length"], max_answer_len=spec["max_answer"], top_k=1)
        return time.perf_counter() - t0

    run(spec["work"][:1])  # warm-up
    print(json.dumps({"seconds": run(spec["work"]), "transformers": __version__}))


def run_pipeline(peer_path: Path, tmp: Path, model: Path, work, args, max_answer: int, threads: int) -> dict:
    job = tmp / "job.json"
    job.write_text(json.dumps({"model": str(model), "batch_size": args.batch_size, "max_length": args.max_length,
                               "max_answer": max_answer, "threads": threads,
                               "work": [(q, [f"{p.title}. {p.text}" for p in ps]) for q, ps in work]}))
    env = {**os.environ, "PYTHONPATH": str(peer_path), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, __file__, "--as-peer", str(job)], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the pipeline peer failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--small", type=int, default=5)
    parser.add_argument("--large", type=int, default=20)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=20)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", type=Path, default=OUT_DIR / "reader.json")
    parser.add_argument("--peer-path", type=Path, help="a folder holding transformers 4.57 (see the docstring)")
    parser.add_argument("--as-peer", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.as_peer:
        peer(args.as_peer)
        return
    if args.peer_path is None or not (args.peer_path / "transformers").is_dir():
        raise SystemExit("--peer-path must name a folder with transformers 4.57 in it (see the docstring)")

    import torch

    from pretriever.reader.config import ReadOptions
    from pretriever.reader.model import load_reader_model, save_reader_model
    from pretriever.reader.predict import Reader

    torch.manual_seed(0)
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-reader-") as tmp_name:
        tmp = Path(tmp_name)
        module, tokenizer = load_reader_model(None)
        save_reader_model(module, tokenizer, tmp / "reader")
        options = ReadOptions(max_length=args.max_length, batch_size=args.batch_size, device="cpu")
        reader = Reader.load(tmp / "reader", options)
        work_all = workload(tmp, args.docs, args.large, args.k)
        run_ours(reader, work_all[:1])  # warm-up
        peer_version = ""
        for size in (args.small, args.large):
            work = work_all[:size]
            n = sum(len(p) for _, p in work)
            ours, theirs = [], []
            for _ in range(args.repeat):  # take turns: a change in load hits both
                ours.append(run_ours(reader, work))
                answer = run_pipeline(args.peer_path, tmp, tmp / "reader", work, args, options.max_answer_length,
                                      torch.get_num_threads())
                theirs.append(answer["seconds"])
                peer_version = answer["transformers"]
            row = {"questions": size, "passages": n, "pretriever_s": min(ours), "pipeline_s": min(theirs),
                   "pretriever_pps": n / min(ours), "pipeline_pps": n / min(theirs)}
            row["ratio"] = row["pretriever_pps"] / row["pipeline_pps"]
            row["pipeline_transformers"] = peer_version
            results.append(row)

    table = Table(title=f"reader throughput, k={args.k}, max length {args.max_length}, batch {args.batch_size}, "
                        f"all-MiniLM-L6-v2, CPU threads {torch.get_num_threads()}")
    for col in ("questions", "passages", "pretriever passages/s", "pipeline passages/s", "ratio"):
        table.add_column(col, justify="right")
    for r in results:
        table.add_row(str(r["questions"]), str(r["passages"]), f"{r['pretriever_pps']:.1f}",
                      f"{r['pipeline_pps']:.1f}", f"{r['ratio']:.2f}")
    console.print(table)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "results": results,
                                     "machine": platform.platform(), "threads": torch.get_num_threads()}, indent=2))
    console.print(f"saved {args.json}")


if __name__ == "__main__":
    main()
