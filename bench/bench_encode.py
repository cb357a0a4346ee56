"""Encoding benchmark: ``pretriever index build`` against plain ``SentenceTransformer.encode``.

Both encode the same passages (the first ``--docs`` SciFact documents as ``title text``,
read from a corpus store) with the same model object, batch size and max length, in one
process. The pipeline's time is the whole build: reading the store, length-sorted
chunks, atomic checkpoint files, the merge into embeddings.npy and the flat FAISS index.
The two take turns for ``--repeat`` rounds (a change in machine load hits both) and the
best round of each counts. Prints passages/s for both and the ratio (goal: >= 0.95), and
saves JSON. On a shared machine wall-clock rounds swing by 2x, so two steadier figures
come with it: the ratio of CPU seconds, and the pipeline's own overhead timed with a
no-op model (ratio = plain / (plain + overhead)).

    python bench/bench_encode.py [--docs 600] [--batch-size 64] [--repeat 3] [--json bench/out/encode.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "data" / "beir" / "scifact"
OUT_DIR = REPO / "bench" / "out"

console = Console(width=max(shutil.get_terminal_size().columns, 120))


def small_store(docs: int, work: Path) -> Path:
    """A corpus store of the first ``docs`` SciFact documents."""
    from pretriever.corpus import build as corpus_build
    from pretriever.corpus.config import CorpusConfig

    folder = work / f"scifact{docs}"
    folder.mkdir(parents=True, exist_ok=True)
    lines = (SCIFACT / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:docs]
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = folder / "store"
    if not (out / "manifest.json").exists():
        corpus_build.run(CorpusConfig(input=folder, out=out, workers=1, overwrite=True))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=600)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=None, help="default: the model's (256)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--model", default=None, help="default: the packaged all-MiniLM-L6-v2")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temporary one)")
    parser.add_argument("--json", type=Path, default=OUT_DIR / "encode.json")
    args = parser.parse_args()
    if not SCIFACT.exists():
        sys.exit(f"SciFact not found at {SCIFACT}")

    import torch

    from pretriever.index import IndexConfig, encode
    from pretriever.data.passages import PassageSource
    from pretriever.models import load_model

    work = args.work or Path(tempfile.mkdtemp(prefix="bench-encode-"))
    store = small_store(args.docs, work)
    model = load_model(args.model, device=args.device)
    if args.max_length:
        model.max_seq_length = args.max_length
    source = PassageSource(store)
    _, texts = source.read(0, len(source), prepend_title=True)
    source.close()
    model.encode(texts[:args.batch_size], batch_size=args.batch_size, show_progress_bar=False)  # warm-up

    plain_s: list[float] = []
    pipeline_s: list[float] = []
    plain_cpu: list[float] = []  # CPU seconds of this process (less sensitive to other jobs than wall time)
    pipeline_cpu: list[float] = []
    plain_vectors = None
    out = work / "index"
    for round_ in range(args.repeat):
        console.print(f"round {round_ + 1}/{args.repeat}: plain SentenceTransformer.encode ...")
        started, cpu = time.perf_counter(), time.process_time()
        plain_vectors = model.encode(texts, batch_size=args.batch_size, convert_to_numpy=True,
                                     show_progress_bar=False)
        plain_s.append(time.perf_counter() - started)
        plain_cpu.append(time.process_time() - cpu)
        console.print(f"round {round_ + 1}/{args.repeat}: pretriever index build ...")
        cfg = IndexConfig(corpus=store, out=out, model=args.model, batch_size=args.batch_size,
                          max_length=model.max_seq_length, overwrite=True)
        started, cpu = time.perf_counter(), time.process_time()
        encode.run(cfg, model=model)
        pipeline_s.append(time.perf_counter() - started)
        pipeline_cpu.append(time.process_time() - cpu)
    pipeline_vectors = np.load(out / "embeddings.npy")
    n = len(texts)
    # what the pipeline adds around the model (store reads, sorting, checkpoint files, merge, FAISS),
    # timed with a model that returns zeros at once: a figure other jobs on the machine barely move
    overheads = []
    for _ in range(3):
        started = time.perf_counter()
        encode.run(IndexConfig(corpus=store, out=work / "null-index", batch_size=args.batch_size,
                                max_length=model.max_seq_length, overwrite=True), model=NullModel(model))
        overheads.append(time.perf_counter() - started)
    overhead = min(overheads)
    plain_rate, pipeline_rate = n / min(plain_s), n / min(pipeline_s)
    result = {
        "passages": n,
        "model": model_label(args.model),
        "batch_size": args.batch_size,
        "max_length": model.max_seq_length,
        "device": args.device,
        "torch_threads": torch.get_num_threads(),
        "plain_seconds": [round(s, 3) for s in plain_s],
        "pipeline_seconds": [round(s, 3) for s in pipeline_s],
        "plain_passages_per_s": round(plain_rate, 2),
        "pipeline_passages_per_s": round(pipeline_rate, 2),
        "ratio": round(pipeline_rate / plain_rate, 4),
        "plain_cpu_seconds": [round(s, 3) for s in plain_cpu],
        "pipeline_cpu_seconds": [round(s, 3) for s in pipeline_cpu],
        "cpu_ratio": round(min(plain_cpu) / min(pipeline_cpu), 4),
        "pipeline_overhead_seconds": round(overhead, 3),
        "ratio_from_overhead": round(min(plain_s) / (min(plain_s) + overhead), 4),
        "max_abs_diff_vs_plain": float(np.abs(pipeline_vectors - plain_vectors).max()),
        "machine": {"cpus": os.cpu_count(), "load_average": list(os.getloadavg()), "python": platform.python_version(),
                    "torch": torch.__version__},
    }
    table = Table(title=f"encoding {n} SciFact passages (title + text), {result['model']}, batch {args.batch_size}, "
                        f"max length {result['max_length']}, best of {args.repeat}")
    for column in ("encoder", "seconds (each round)", "passages/s"):
        table.add_column(column, justify="right" if column != "encoder" else "left")
    table.add_row("SentenceTransformer.encode", ", ".join(f"{s:.1f}" for s in plain_s), f"{plain_rate:.1f}")
    table.add_row("pretriever index build", ", ".join(f"{s:.1f}" for s in pipeline_s), f"{pipeline_rate:.1f}")
    table.add_row("ratio (goal >= 0.95)", "", f"{result['ratio']:.3f}")
    table.add_row("ratio of CPU seconds (plain / pipeline)",
                  f"{', '.join(f'{s:.0f}' for s in plain_cpu)} / {', '.join(f'{s:.0f}' for s in pipeline_cpu)}",
                  f"{result['cpu_ratio']:.3f}")
    table.add_row("pipeline overhead (no-op model)", f"{overhead:.2f}", "")
    table.add_row("ratio from overhead: plain / (plain + overhead)", "", f"{result['ratio_from_overhead']:.3f}")
    console.print(table)
    console.print(f"largest difference between the two sets of vectors: {result['max_abs_diff_vs_plain']:.2e}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    console.print(f"saved {args.json}")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


class NullModel:
    """Stands in for the model with zero vectors, to time everything but the encoding."""

    def __init__(self, model):
        self.max_seq_length = model.max_seq_length
        self.dim = model.get_embedding_dimension()

    def get_embedding_dimension(self) -> int:
        return self.dim

    def parameters(self):
        """One float32 weight, so the index records the stand-in at fp32 as it records the model."""
        import torch

        yield torch.zeros(1)

    def encode(self, texts, **kwargs):
        return np.zeros((len(texts), self.dim), dtype=np.float32)

    encode_document = encode_query = encode


def model_label(name):
    from pretriever.models import model_label as label

    return label(name)


if __name__ == "__main__":
    main()
