"""Every loop beside its peer, per step: the host's work that a GPU cannot hide (issue 41, item 2).

Each loop against the tool a user would call instead (or, for a setting, against itself without it), at the same
model, batch, length and data:

- ``train``: ``pretriever.train`` against ``SentenceTransformerTrainer`` + MultipleNegativesRankingLoss
  (query, positive, one negative; no-duplicates sampler; SciFact train claims and their cited abstracts);
- ``pretrain``: ``pretriever.pretrain`` (coCondenser and CoT-MAE, no GradCache) against the same trainer with
  MNRL on (claim, abstract) pairs: the objectives do more per step, so their goal is a share of it, not par;
- ``gradcache``: ``pretriever.pretrain`` coCondenser with GradCache (``--mini-batch-size``, default half the
  batch) against itself in one pass: the gradients are the same, the extra is a no-grad forward (goal 0.6x);
- ``readerworkers``: ``pretriever.reader.train`` with ``--dataloader-workers`` (``--reader-workers``, 2) against
  itself without: whether building batches beside training pays for its processes;
- ``reader``: ``pretriever.reader.train`` (``passages=1``) against the transformers question-answering recipe
  (``bench/squad_recipe.py``: run_qa's features, ``Trainer``) on the SQuAD 2.0 dev articles; and at the default
  ``passages=4`` with a quarter of the questions, so that a step holds as many sequences as the recipe's;
- ``encode``: ``pretriever.index.encode`` (index build) against ``SentenceTransformer.encode`` over the same
  SciFact passages (a step is one batch).

Each arm runs ``--large`` steps and its clock is read at the end of step ``--small`` and of the last step
(:class:`StepClock`; a step is an optimizer step, counted by a hook on every torch optimizer, or for encoding a
batch the encoder sees): seconds per step = (t_large - t_small) / (large - small), so what is paid once (loading
the model, tokenising the whole set beforehand as the recipe does, CUDA's first kernels, saving at the end) stays
outside, and what is paid per step (tokenising in the loop, building batches in Python, logging) stays in. (Two
whole runs of the two sizes, as before 2026-11-28 night, let set-up's jitter of 1-2 s on a GPU swamp 20 steps.)
Two figures per loop:

- **steps/s** (and steps per process-CPU second, which other jobs on the cores move far less) with the model of
  ``--shape`` (``tiny``: 2 layers x 64, random weights: a step is almost all host
  work, which is what bounds a small model on a GPU); the best of ``--repeat`` rounds, taking turns;
- **ATen operators per step** (torch.profiler over whole runs of the two sizes, leaf ``aten::`` calls, the
  difference):
  each is a kernel launch on a GPU; the count does not depend on the device or the load.

The settings that differ between an arm and its peer are printed under the table.

    python bench/bench_loops.py [--loops train,pretrain,gradcache,reader,readerworkers,encode]
        [--shape tiny|minilm|base]
        [--batch-size 16] [--max-length 128] [--small 10] [--large 50] [--repeat 2] [--device cpu]
        [--precision fp32] [--mini-batch-size N] [--no-ops] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("KINETO_LOG_LEVEL", "5")  # the profiler's start/stop lines

from bench_pretrain import make_pairs as make_qc_pairs  # noqa: E402  (puts the repo on sys.path)
from bench_train import OUT_DIR, SCIFACT, make_pairs as make_triple_pairs  # noqa: E402
from squad_recipe import RecipeSettings, squad_examples, train_and_predict  # noqa: E402

SQUAD = SCIFACT.parent.parent / "qa" / "squad2-dev-5articles.json"
SHAPES = {"tiny": (2, 64, 2), "minilm": (6, 384, 12), "base": (12, 768, 12)}  # layers, hidden, heads

Run = Callable[[int, Path], None]  # steps, scratch folder: one whole run, setup included
Hook = Callable[[Callable[[], None]], object]  # registers a tick per step, returns a handle with .remove()


def optimizer_steps(tick: Callable[[], None]):
    """Ticks at every optimizer step of any torch optimizer (a training loop's step, whoever wrote the loop)."""
    from torch.optim.optimizer import register_optimizer_step_post_hook

    return register_optimizer_step_post_hook(lambda *_: tick())


class StepClock:
    """The wall and CPU clocks at the end of step ``first`` and of step ``last`` of one run, steps counted by a
    hook: the time between is (last - first) steps with everything paid once (loading, set-up, the first
    batches of new shapes) left outside. On CUDA it waits for the device at those two stamps only, so the steps
    between keep their overlap of host and device."""

    def __init__(self, first: int, last: int, cuda: bool):
        self.first, self.last, self.cuda, self.count = first, last, cuda, 0
        self.stamps: dict[int, tuple[float, float]] = {}

    def tick(self) -> None:
        self.count += 1
        if self.count in (self.first, self.last):
            if self.cuda:
                import torch

                torch.cuda.synchronize()
            self.stamps[self.count] = (time.perf_counter(), time.process_time())

    def per_step(self) -> tuple[float, float]:
        """Wall and CPU seconds per step between the two stamps."""
        if len(self.stamps) != 2:
            raise RuntimeError(f"the run counted {self.count} steps, fewer than {self.last}")
        (wall0, cpu0), (wall1, cpu1) = self.stamps[self.first], self.stamps[self.last]
        return (wall1 - wall0) / (self.last - self.first), (cpu1 - cpu0) / (self.last - self.first)


@dataclass
class Loop:
    """One loop and its peer: a run of each for a number of steps, and what differs between them."""

    name: str
    ours: Run
    peer: Run
    peer_name: str
    differs: str
    goal: float  # ours / peer steps/s to reach
    counts: Hook = optimizer_steps  # what a step is: an optimizer step, or a batch the encoder sees


def st_trainer(model: str, anchor_positive: list[list[str]], args, steps: int, out: Path) -> None:
    """The sentence-transformers trainer with MNRL: ``steps`` steps over the columns given (anchor, positive[,
    negative]), no-duplicates batches, the same schedule as pretriever's defaults, no checkpoint."""
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.base.sampler import BatchSamplers
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    names = ["anchor", "positive", "negative"][:len(anchor_positive)]
    dataset = Dataset.from_dict(dict(zip(names, anchor_positive)))
    st = SentenceTransformer(model, device=args.device)
    st.max_seq_length = args.max_length
    training = SentenceTransformerTrainingArguments(
        output_dir=str(out), max_steps=steps, per_device_train_batch_size=args.batch_size, learning_rate=2e-5,
        warmup_steps=0.1, lr_scheduler_type="linear", seed=0, data_seed=0, batch_sampler=BatchSamplers.NO_DUPLICATES,
        save_strategy="no", report_to="none", disable_tqdm=True, logging_steps=steps, dataloader_pin_memory=False,
        bf16=args.precision == "bf16", fp16=args.precision == "fp16")
    SentenceTransformerTrainer(model=st, args=training, train_dataset=dataset,
                               loss=MultipleNegativesRankingLoss(st)).train()
    st.save(str(out / "model"))


def columns(pairs: Path, names: list[str]) -> list[list[str]]:
    import pyarrow.parquet as pq

    table = pq.read_table(pairs / "pairs.parquet", columns=names)
    return [table.column(n).to_pylist() for n in names]


def loops(model: str, work: Path, args) -> dict[str, Loop]:
    """The loops to compare, with their data made once in ``work``."""
    from pretriever.pretrain import PretrainConfig
    from pretriever.pretrain import run as pretraining
    from pretriever.reader.config import ReaderConfig
    from pretriever.reader.train import run as reader_train
    from pretriever.train import TrainConfig
    from pretriever.train.run import run as train

    n = min(args.large * args.batch_size, 640)  # SciFact has ~800 usable training claims; longer runs repeat them
    triples = make_triple_pairs(work / "triples", n)
    qc = make_qc_pairs(work / "qc", n)

    def train_ours(steps: int, out: Path) -> None:
        train(TrainConfig(out=out, pairs=triples, model=model, batch_size=args.batch_size, max_steps=steps,
                          max_query_length=args.max_length, max_passage_length=args.max_length, seed=0,
                          learning_rate=2e-5, precision=args.precision), device=args.device)

    def pretrain_ours(objective: str, mini_batch_size: int | None = None) -> Run:
        def run(steps: int, out: Path) -> None:
            pretraining.run(PretrainConfig(pairs=qc, out=out, objective=objective, model=model, device=args.device,
                                           batch_size=args.batch_size, max_length=args.max_length, max_steps=steps,
                                           logging_steps=steps, save_steps=10 ** 9, precision=args.precision,
                                           mini_batch_size=mini_batch_size))
        return run

    squad = json.loads(SQUAD.read_text(encoding="utf-8"))
    examples = squad_examples(squad)
    recipe = RecipeSettings(batch_size=args.batch_size, max_length=args.reader_length, seed=0, learning_rate=5e-5,
                            device=args.device, precision=args.precision)

    def reader_ours(workers: int = 0, passages: int = 1) -> Run:
        def run(steps: int, out: Path) -> None:  # batch: as many sequences (questions x passages) as the recipe's
            reader_train(ReaderConfig(data=SQUAD, out=out, model=model, passages=passages,
                                      max_length=recipe.max_length, batch_size=recipe.batch_size // passages,
                                      max_steps=steps,
                                      learning_rate=recipe.learning_rate, warmup_ratio=recipe.warmup_ratio, seed=0,
                                      dev_share=0.0, eval_steps=10 ** 9, save_total_limit=1, group_by_length=False,
                                      precision=args.precision, dataloader_workers=workers))
        return run

    def reader_peer(steps: int, out: Path) -> None:
        settings = RecipeSettings(**{**recipe.__dict__, "max_steps": steps})
        train_and_predict(examples, None, model, settings, str(out))

    # built and loaded before anything is timed: exactly steps x batch passages per size (the timed runs take
    # --large steps; a run of --small steps is only counted for operators)
    stores = {steps: scifact_store(work / f"store-{steps}", steps * args.batch_size)
              for steps in ((args.small, args.large) if args.ops else (args.large,))}
    texts = {steps: passage_texts(store) for steps, store in stores.items()}
    st = encoder(model, args)

    def encode_ours(steps: int, out: Path) -> None:
        from pretriever.index import IndexConfig, encode

        encode.run(IndexConfig(corpus=stores[steps], out=out, model=model, batch_size=args.batch_size,
                               device=args.device, max_length=args.max_length), model=st)  # st: cast in encoder()

    def encode_peer(steps: int, out: Path) -> None:
        st.encode(texts[steps], batch_size=args.batch_size, show_progress_bar=False)

    mnrl = "SentenceTransformerTrainer + MNRL"
    mini = args.mini_batch_size or args.batch_size // 2  # the gradcache loop's mini-batch, in texts
    return {
        "train": Loop("train", train_ours, lambda s, o: st_trainer(model, columns(
            triples, ["query", "positive_text", "negative_text"]), args, s, o), mnrl,
            "pretriever also writes train.json and a loss plot (both cost per run, not per step)", 1.0),
        "pretrain cocondenser": Loop("pretrain cocondenser", pretrain_ours("cocondenser"), lambda s, o: st_trainer(
            model, columns(qc, ["query", "positive_text"]), args, s, o), mnrl,
            "coCondenser adds MLM over the masked pieces and the Condenser head: more work per step (goal 0.7x)", 0.7),
        "pretrain cotmae": Loop("pretrain cotmae", pretrain_ours("cotmae"), lambda s, o: st_trainer(
            model, columns(qc, ["query", "positive_text"]), args, s, o), mnrl,
            "CoT-MAE adds MLM and a decoder pass over the context (goal 0.6x)", 0.6),
        "gradcache": Loop("gradcache", pretrain_ours("cocondenser", mini), pretrain_ours("cocondenser"),
                          "pretriever pretrain cocondenser, one pass", f"GradCache at mini-batches of {mini} texts: a "
                          "no-grad forward of the whole batch first, then the forward and backward by mini-batch "
                          "(goal 0.6x)", 0.6),
        "reader": Loop("reader", reader_ours(), reader_peer, "transformers QA recipe (run_qa + Trainer)",
                       "the recipe tokenises every question once before training (doc stride 128); pretriever "
                       "tokenises in its collate; both random batches, passages=1, no evaluation", 1.0),
        "reader default": Loop("reader default", reader_ours(passages=4), reader_peer,
                               "transformers QA recipe (run_qa + Trainer)",
                               f"--passages 4 (the default) at {recipe.batch_size // 4} questions a batch: as many "
                               "sequences a step as the recipe's features; the 3 negatives drawn for each question "
                               "are tokenised per batch (the positives once, before training)", 1.0),
        "readerworkers": Loop("readerworkers", reader_ours(args.reader_workers), reader_ours(),
                              "pretriever reader train, no workers",
                              f"--dataloader-workers {args.reader_workers}: batches built (passages drawn, "
                              "tokenised) beside training; worth its default only above 1.0x", 1.0),
        "encode": Loop("encode", encode_ours, encode_peer, "SentenceTransformer.encode",
                       "index build also writes each chunk, the ids and a flat FAISS index", 1.0,
                       counts=lambda tick: st.register_forward_hook(lambda *_: tick())),
    }


def scifact_store(out: Path, passages: int) -> Path:
    """A corpus store of exactly ``passages`` passages: the first SciFact abstracts, each cut to its first 80
    words so that it is one passage (the passage length is 100 words)."""
    from pretriever.corpus import build as corpus_build
    from pretriever.corpus.config import CorpusConfig

    out.parent.mkdir(parents=True, exist_ok=True)
    subset = out.with_suffix(".jsonl")
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as f, open(subset, "w", encoding="utf-8") as w:
        for _, line in zip(range(passages), f):
            doc = json.loads(line)
            w.write(json.dumps({**doc, "text": " ".join(doc["text"].split()[:80])}) + "\n")
    corpus_build.run(CorpusConfig(input=subset, out=out))
    if (found := len(passage_texts(out))) != passages:
        sys.exit(f"{out}: {found} passages, not {passages}")
    return out


def passage_texts(store: Path) -> list[str]:
    """The store's passages as index build encodes them (title, then text)."""
    from pretriever.data.passages import PassageSource

    source = PassageSource(store)
    try:
        return source.read(0, len(source), prepend_title=True)[1]
    finally:
        source.close()


def encoder(model: str, args):
    """The model loaded once for both encode arms (loading is not what is timed)."""
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(model, device=args.device)
    st.max_seq_length = args.max_length
    if args.precision != "fp32":  # as index build --precision does to the encoder it loads
        from pretriever.training import precision_dtype

        st.to(precision_dtype(args.precision))
    return st


def timed(run: Run, counts: Hook, args, work: Path) -> tuple[float, float]:
    """Wall and process CPU seconds (all threads) per step of one run of ``--large`` steps, from the end of step
    ``--small`` on (:class:`StepClock`): CPU time moves far less than wall time when other jobs share the cores."""
    clock = StepClock(args.small, args.large, args.device.startswith("cuda"))
    handle = counts(clock.tick)
    try:
        with tempfile.TemporaryDirectory(dir=work) as out:
            run(args.large, Path(out) / "out")
    finally:
        handle.remove()
    return clock.per_step()


def leaf_ops(run: Run, steps: int, work: Path) -> int:
    """ATen operators without children that one whole run calls (the kernels it would launch on a GPU)."""
    from torch.profiler import ProfilerActivity, profile

    with tempfile.TemporaryDirectory(dir=work) as out, profile(activities=[ProfilerActivity.CPU]) as prof:
        run(steps, Path(out) / "out")
    return sum(1 for e in prof.events() if e.name.startswith("aten::") and not e.cpu_children)


def measure(loop: Loop, args, work: Path) -> dict:
    """Seconds per step of each side between steps ``--small`` and ``--large`` of one run (the best of
    ``--repeat`` rounds, the sides taking turns and swapping who goes first, so that neither always meets the
    cold caches), and operators per step from the difference between whole runs of the two sizes."""
    span = args.large - args.small
    times: dict[str, list[tuple[float, float]]] = {"ours": [], "peer": []}
    for round_ in range(args.repeat):
        for side in ("ours", "peer") if round_ % 2 == 0 else ("peer", "ours"):
            times[side].append(timed(getattr(loop, side), loop.counts, args, work))
    row = {"loop": loop.name, "peer_tool": loop.peer_name, "differs": loop.differs, "goal": loop.goal}
    for side in ("ours", "peer"):
        wall, cpu = (min(t[i] for t in times[side]) for i in (0, 1))
        ops = ((leaf_ops(getattr(loop, side), args.large, work) - leaf_ops(getattr(loop, side), args.small, work))
               / span if args.ops else None)
        row[side] = {"seconds_per_step": times[side], "steps_per_s": 1 / wall if wall > 0 else float("nan"),
                     "steps_per_cpu_s": 1 / cpu if cpu > 0 else float("nan"), "ops_per_step": ops}
    row["ratio"] = row["ours"]["steps_per_s"] / row["peer"]["steps_per_s"]
    row["cpu_ratio"] = row["ours"]["steps_per_cpu_s"] / row["peer"]["steps_per_cpu_s"]
    row["ops_ratio"] = row["ours"]["ops_per_step"] / row["peer"]["ops_per_step"] if args.ops else None
    return row


def figure(value: float | None, spec: str, unit: str = "") -> str:
    """A table cell: ``value`` formatted, then ``unit``; "-" when not measured (--no-ops)."""
    return "-" if value is None else format(value, spec) + unit


def save(rows: list[dict], args, started: str, load_before: float) -> None:
    """The rows so far, the settings and the machine, as JSON at ``args.json``."""
    import torch

    result = {"started": started, "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
              "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                          "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
                          "device": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu",
                          "load_before": load_before, "load_after": os.getloadavg()[0]},
              "rows": rows}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--loops", default="train,pretrain,gradcache,reader,readerworkers,encode",
                        help="any of train, pretrain (both objectives), gradcache, reader, readerworkers, encode")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="tiny", help="the random model's shape")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=128, help="word pieces (train, pretrain, encode)")
    parser.add_argument("--reader-length", type=int, default=256, help="word pieces of a reader sequence")
    parser.add_argument("--small", type=int, default=10, help="steps of the short run")
    parser.add_argument("--large", type=int, default=50, help="steps of the long run")
    parser.add_argument("--repeat", type=int, default=2, help="timed rounds; the fastest of each size counts")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--no-ops", dest="ops", action="store_false",
                        help="skip the operator counts (they do not depend on the device: the CPU's hold on a GPU)")
    parser.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32",
                        help="both sides' arithmetic (fp16/bf16: the Trainers' mixed precision, a GPU only)")
    parser.add_argument("--mini-batch-size", type=int, default=None,
                        help="the gradcache loop's mini-batch in texts (default half the batch)")
    parser.add_argument("--reader-workers", type=int, default=2,
                        help="the readerworkers loop's --dataloader-workers (against none)")
    parser.add_argument("--json", type=Path, default=OUT_DIR / "loops.json")
    args = parser.parse_args()
    if not SCIFACT.exists() or not SQUAD.exists():
        sys.exit(f"needs SciFact ({SCIFACT}) and the SQuAD articles ({SQUAD}): ../shared/data beside the checkout")
    from rich.console import Console
    from rich.table import Table
    from transformers.utils import logging as hf_logging

    from pretriever.testing import random_bert

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    wanted = {w.strip() for w in args.loops.split(",")}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = os.getloadavg()[0]
    rows: list[dict] = []
    failed: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-loops-") as tmp:
        work = Path(tmp)
        layers, hidden, heads = SHAPES[args.shape]
        model = str(random_bert(work / "model", layers=layers, hidden=hidden, heads=heads,
                                max_length=args.max_length))
        for name, loop in loops(model, work, args).items():
            if name.split()[0] not in wanted:
                continue
            try:
                rows.append(measure(loop, args, work))
            except Exception as e:  # noqa: BLE001  one loop that breaks (a missing package there) costs only its row
                traceback.print_exc()
                failed.append({"loop": name, "error": f"{type(e).__name__}: {e}"})
                print(f"{name}: failed: {failed[-1]['error']}", flush=True)
            else:
                ops = figure(rows[-1]["ops_ratio"], ".2f", "x")
                print(f"{name}: {rows[-1]['ratio']:.2f}x steps/s, {ops} operators", flush=True)
            save(rows + failed, args, started, load_before)  # after each loop: a run cut short keeps its rows
    table = Table(title=f"per step, {args.shape} model ({layers} x {hidden}, random), batch {args.batch_size}, "
                        f"length {args.max_length} (reader {args.reader_length}), {args.device} "
                        f"{args.precision}; steps "
                        f"{args.small} -> {args.large}, best of {args.repeat}")
    for col in ("loop", "peer", "steps/s", "peer steps/s", "ratio", "ratio by CPU s", "goal", "ops/step",
                "peer ops/step", "ops ratio"):
        table.add_column(col, justify="left" if col in ("loop", "peer") else "right")
    for r in rows:
        table.add_row(r["loop"], r["peer_tool"], f"{r['ours']['steps_per_s']:.2f}", f"{r['peer']['steps_per_s']:.2f}",
                      f"{r['ratio']:.2f}x", f"{r['cpu_ratio']:.2f}x", f"{r['goal']:.1f}x",
                      figure(r["ours"]["ops_per_step"], ".0f"), figure(r["peer"]["ops_per_step"], ".0f"),
                      figure(r["ops_ratio"], ".2f", "x"))
    console = Console(width=160)
    console.print(table)
    for r in rows:
        console.print(f"- {r['loop']}: {r['differs']}")
    for r in failed:
        console.print(f"- {r['loop']}: FAILED, {r['error']}")
    console.print(f"saved {args.json}")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
