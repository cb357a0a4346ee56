"""Query generation cost (doc2query, ``pretriever generate``) against a plain transformers ``generate`` loop.

    python bench/bench_generate.py [--sizes 16,48] [--per-passage 5] [--max-output-length 16] [--json OUT]

No doc2query weights are offline, so the model is a **t5-base-shaped T5 with random weights**
(12 + 12 layers, d_model 768, d_ff 3072, 12 heads; the packaged MiniLM's WordPiece vocabulary,
saved once under ``bench/out/t5-base-random``): the cost of generation is the architecture's,
not the weights'. Random weights almost never emit the end token, so every query runs to
``--max-output-length`` tokens (16 by default, about the length of a real doc2query query); the
mean words a query of both tools are printed to show they did the same work.

Passages: the first N of the enwiki sample store (real text, cut at 256 tokens). pretriever:
``generate.run.run(GenerateConfig(...))`` whole (store reading, seeded per-row sampling, Parquet
parts), C queries per passage, batch 16. Peer: the same model object's ``generate(do_sample=True,
top_k=25, top_p=0.95, num_return_sequences=C)`` over the same tokenized batches. The two take
turns; the best of ``--repeat`` rounds counts. The exponent between sizes says how cost grows.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DUMP = REPO.parent / "shared" / "data" / "wiki" / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
OUT_DIR = REPO / "bench" / "out"


def t5_base_random(path: Path) -> Path:
    """A t5-base-shaped T5 with random weights and the MiniLM tokenizer (built once)."""
    if (path / "config.json").exists():
        return path
    from pretriever.testing import random_t5

    return random_t5(path, d_model=768, d_kv=64, d_ff=3072, layers=12, heads=12)


def run_ours(store: Path, model: Path, n: int, args, out: Path) -> tuple[float, int]:
    from pretriever.generate.config import GenerateConfig
    from pretriever.generate import run as generation

    started = time.perf_counter()
    result = generation.run(GenerateConfig(corpus=store, out=out, model=str(model), per_passage=args.per_passage,
                                           max_output_length=args.max_output_length, limit=n, overwrite=True,
                                           device="cpu"))
    seconds = time.perf_counter() - started
    import pyarrow.parquet as pq

    texts = pq.read_table(out / "generated_queries.parquet").column("text").to_pylist()
    assert result.queries == n * args.per_passage
    return seconds, sum(len(t.split()) for t in texts) / len(texts)


def run_peer(store: Path, model_dir: Path, n: int, args) -> tuple[float, int]:
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from pretriever.generate.folder import open_passages

    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSeq2SeqLM.from_pretrained(model_dir).eval()
    source = open_passages(store)
    _, texts = source.read(0, n, False)
    source.close()
    words = []
    for b in range(0, n, 16):
        enc = tokenizer(texts[b:b + 16], max_length=256, truncation=True, padding=True, return_tensors="pt",
                        return_token_type_ids=False)
        with torch.inference_mode():
            out = model.generate(**enc, do_sample=True, top_k=25, top_p=0.95, max_new_tokens=args.max_output_length,
                                 num_return_sequences=args.per_passage)
        words += [len(t.split()) for t in tokenizer.batch_decode(out, skip_special_tokens=True)]
    return time.perf_counter() - started, sum(words) / len(words)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="16,48")
    ap.add_argument("--per-passage", type=int, default=5)
    ap.add_argument("--max-output-length", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--model-dir", type=Path, default=OUT_DIR / "t5-base-random")
    ap.add_argument("--json", type=Path, default=OUT_DIR / "generate.json")
    args = ap.parse_args()
    from pretriever.corpus import build as corpus_build
    from pretriever.corpus.config import CorpusConfig

    console = Console()
    model = t5_base_random(args.model_dir)
    work = Path(tempfile.mkdtemp(prefix="bench-generate-"))
    store = work / "store"
    corpus_build.run(CorpusConfig(input=DUMP, out=store, workers=1))
    runs = []
    for n in [int(s) for s in args.sizes.split(",")]:
        ours = peer = float("inf")
        for _ in range(args.repeat):
            s, ours_words = run_ours(store, model, n, args, work / f"q-{n}")
            ours = min(ours, s)
            s, peer_words = run_peer(store, model, n, args)
            peer = min(peer, s)
        runs.append({"passages": n, "queries": n * args.per_passage, "seconds": round(ours, 2),
                     "peer_seconds": round(peer, 2), "ratio_ours_rate_over_peer": round(peer / ours, 3),
                     "passages_per_s": round(n / ours, 3), "peer_passages_per_s": round(n / peer, 3),
                     "query_words": round(ours_words, 1), "peer_query_words": round(peer_words, 1)})
        console.print(f"[dim]{runs[-1]}[/dim]")
    for small, large in zip(runs, runs[1:]):
        large["exponent"] = round(math.log(large["seconds"] / small["seconds"]) / math.log(large["passages"] / small["passages"]), 3)
    table = Table(title=f"doc2query generation, t5-base shape (random weights), C={args.per_passage}, "
                        f"{args.max_output_length} tokens a query, CPU, {torch.get_num_threads()} threads")
    for col in ("passages", "pretriever s", "passages/s", "plain generate s", "passages/s ", "ratio (rate)",
                "words a query (ours / peer)", "exponent"):
        table.add_column(col, justify="right")
    for r in runs:
        table.add_row(str(r["passages"]), f"{r['seconds']:.1f}", f"{r['passages_per_s']:.2f}", f"{r['peer_seconds']:.1f}",
                      f"{r['peer_passages_per_s']:.2f}", f"{r['ratio_ours_rate_over_peer']:.2f}",
                      f"{r['query_words']} / {r['peer_query_words']}", str(r.get("exponent", "")))
    console.print(table)
    info = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cores": os.cpu_count(),
            "torch_threads": torch.get_num_threads(), "load_1m": os.getloadavg()[0]}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"machine": info, "runs": runs}, indent=1))
    console.print(f"saved {args.json}")


if __name__ == "__main__":
    main()
