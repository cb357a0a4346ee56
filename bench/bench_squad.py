"""pretriever's reader on SQuAD against the standard transformers recipe, C-MORE's pre-training claim, end to end.

    flock /tmp/heavy.lock nice -n 5 python bench/bench_squad.py [--steps 100] [--batch-size 16] [--max-length 256]
        [--lr 1e-4] [--seeds 13 14 15] [--qac-steps 20] [--timing-steps 20] [--timing-rounds 2]
        [--parts compare,timing,qac,e2e] [--out bench/out/squad] [--json bench/out/squad.json]

Data: ``../shared/data/qa/squad2-dev-5articles.json`` (SQuAD 2.0 dev, first five articles, the published
v2.0 JSON). Trained on the answerable questions of Normans, Computational_complexity_theory and
Sky_(United_Kingdom) (96 + 197 + 108 = 401), tested on those of Southern_California and Victoria_(Australia)
(180 + 124 = 304): the split keeps about 57/43 questions, and puts Normans, whose paragraphs are the longest
(up to 380 tokens), on the training side where truncation matters to training; the test paragraphs are
all under 256 tokens. Scores: SQuAD v1.1 EM/F1 (max over the gold answers; ``pretriever.metrics``'
default normalisation, which tests/test_squad_bench.py checks against evaluate-v1.1.py's formula).

1. **pretriever vs the recipe, same process, same load.** pretriever's reader (``reader.train.run``) fed the
   v2.0 file of the training articles as it is (it skips and counts the unanswerable questions), with
   ``passages=1``: SQuAD is reading comprehension on the gold paragraph, so there is nothing to select and
   the selection loss is zero; read with ``max_answer_length`` 30 on that paragraph. The anchor
   (``bench/squad_recipe.py``): ``AutoModelForQuestionAnswering`` + ``Trainer`` with run_qa's
   preprocessing (doc stride 128) and post-processing (n-best 20, 30 tokens). Same start model
   (all-MiniLM-L6-v2, new span heads drawn after the same seed), steps, batch, max length, lr, warm-up
   share and seed. Throughput: training questions (pretriever) and features (recipe) per second over
   optimizer steps 2..N (the end of step 1 to the end of step N), so model loading, warm-up and the
   checkpoint written at the end are left out of both. pretriever batches questions of similar length together
   (its default, ``group_by_length``); the recipe runs as run_qa does, with random batches. **Timing** then
   repeats short runs of four arms, taking turns (``--timing-rounds`` x ``--timing-steps``): pretriever with and
   without length grouping, the recipe without and with the Trainer's ``group_by_length``, so that the defaults
   and like with like are both compared; the best round of each arm counts: the first run in a process pays
   one-time costs that the second does not. Each is given by wall time and by process CPU time
   (all threads): on the shared machine other jobs' load moves wall time by 2x between runs, CPU time much less.
2. **C-MORE's claim, small.** The same fine-tuning with and without reader pre-training on qac triplets
   (``bench/qac_triplets.sh``: the enwiki sample's links route plus the canned reference pages), seeds
   ``--seeds``: pre-training (``--qac-steps``, seed s) then fine-tuning (seed s); mean +- sd of test EM/F1 and
   paired randomisation tests, over the test questions (each question's score averaged over the seeds) and over
   the seeds.
   The seed of part 1 is the first seed of the no-pre-training arm.
3. **End to end.** ``bash bench/exp_squad_e2e.sh``: a corpus of the test articles' paragraphs, a dense
   index, ``pretriever answer`` for 5 test questions and ``pretriever reader evaluate`` over all of them,
   with the reader of part 1.

Prints the tables and saves JSON (after each part).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from squad_recipe import RecipeSettings, SquadExample, StepClock, squad_examples, train_and_predict  # noqa: E402

from pretriever.metrics import exact_match, f1_score, paired_randomisation  # noqa: E402
from pretriever.progress import Reporter  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SQUAD = REPO.parent / "shared" / "data" / "qa" / "squad2-dev-5articles.json"
TRAIN_TITLES = ("Normans", "Computational_complexity_theory", "Sky_(United_Kingdom)")
TEST_TITLES = ("Southern_California", "Victoria_(Australia)")
console = Console(width=max(shutil.get_terminal_size().columns, 120))


class ClockReporter(Reporter):
    """Marks the reader's optimizer steps (``progress("training", step)``) on a :class:`StepClock`."""

    def __init__(self, clock: StepClock):
        self.clock = clock

    def message(self, text: str) -> None:
        console.print(f"  [dim]{text}[/dim]")

    def progress(self, task: str, done: int, total: int | None = None, unit: str = "items", **fields: object) -> None:
        if task == "training":
            self.clock.mark(done)


def write_split(data: dict, out: Path) -> Path:
    """The training articles' part of the v2.0 file, as it is (unanswerable questions included)."""
    path = out / "squad-train-v2.json"
    path.write_text(json.dumps({"version": data.get("version", "v2.0"),
                                "data": [a for a in data["data"] if a["title"] in TRAIN_TITLES]}))
    return path


def score(predictions: dict[str, str], test: list[SquadExample]) -> dict:
    """SQuAD v1.1 EM and F1 (x100, max over the gold answers) of ``predictions`` on ``test``, with each
    question's (in ``test``'s order, for paired tests)."""
    em = [exact_match(predictions.get(e.qid, ""), e.answers) for e in test]
    f1 = [f1_score(predictions.get(e.qid, ""), e.answers) for e in test]
    return {"EM": 100 * sum(em) / len(test), "F1": 100 * sum(f1) / len(test), "questions": len(test),
            "per_question": {"EM": em, "F1": [round(x, 4) for x in f1]}}


def brief(scores: dict) -> str:
    return f"EM {scores['EM']:.1f}, F1 {scores['F1']:.1f} ({scores['questions']} questions)"


def paired_over_questions(with_runs: list[dict], without_runs: list[dict]) -> dict[str, dict[str, float]]:
    """Each question's EM and F1 averaged over the seeds of each arm; the mean difference (x100) and the paired
    randomisation test's two-sided p over the questions."""
    out = {}
    for metric in ("EM", "F1"):
        arms = [[statistics.mean(q) for q in zip(*(r["per_question"][metric] for r in runs))]
                for runs in (with_runs, without_runs)]
        out[metric] = {"difference": 100 * statistics.mean(arms[0]) - 100 * statistics.mean(arms[1]),
                       "p": paired_randomisation(arms[0], arms[1])}
    return out


def train_ours(data: Path, out: Path, settings: RecipeSettings, steps: int, model: str | None = None,
               group_by_length: bool = True, reuse: bool = False) -> dict:
    """pretriever's reader trained as part 1 says (batches grouped by length, its default, unless
    ``group_by_length`` is false); its counts, step timing and folder. With ``reuse``, a reader already in
    ``out`` whose reader.json records exactly these settings is taken as it is (no timing then): training
    is seeded and deterministic, so a rerun would give the same reader."""
    from pretriever.reader.config import ReaderConfig, ReadOptions
    from pretriever.reader.train import run

    clock = StepClock()
    cfg = ReaderConfig(data=data, out=out, model=model, passages=1, max_length=settings.max_length,
                       batch_size=settings.batch_size, max_steps=steps, learning_rate=settings.learning_rate,
                       warmup_ratio=settings.warmup_ratio, seed=settings.seed, dev_share=0.0, eval_steps=steps,
                       save_total_limit=1, overwrite=True, group_by_length=group_by_length,
                       read=ReadOptions(max_answer_length=settings.max_answer_length, max_length=settings.max_length))
    if reuse and (done := _same_run(cfg)) is not None:
        console.print(f"  reused {out} (same settings)")
        return {"out": str(out), "counts": done["data"], "steps": done["steps"], "timed_steps": 0,
                "timed_seconds": 0.0, "cpu_seconds": 0.0, "loss_curve": done["loss_curve"], "reused": True}
    result = run(cfg, ClockReporter(clock))
    timed_steps, seconds = clock.timed()
    shutil.rmtree(out / "checkpoints", ignore_errors=True)  # the final model is in `out`
    return {"out": str(out), "counts": result.counts, "steps": result.manifest["steps"], "timed_steps": timed_steps,
            "timed_seconds": seconds, "cpu_seconds": clock.cpu_seconds(), "loss_curve": result.manifest["loss_curve"]}


def _same_run(cfg) -> dict | None:
    """reader.json of the reader in ``cfg.out`` if it was trained with ``cfg``'s settings, else None."""
    manifest = cfg.out / "reader.json"
    if not manifest.is_file():
        return None
    done = json.loads(manifest.read_text())
    wanted = json.loads(json.dumps(asdict(cfg), default=str))
    ignore = ("overwrite", "resume")
    same = {k: v for k, v in wanted.items() if k not in ignore} == {
        k: v for k, v in done.get("config", {}).items() if k not in ignore}
    return done if same else None


def read_ours(reader_dir: Path, test: list[SquadExample], settings: RecipeSettings) -> dict[str, str]:
    """The reader's answer to each test question from its gold paragraph alone."""
    from pretriever.reader.config import ReadOptions
    from pretriever.reader.predict import Reader
    from pretriever.retrieval import Passage

    reader = Reader.load(reader_dir, ReadOptions(max_answer_length=settings.max_answer_length,
                                                 max_length=settings.max_length, n_best=settings.n_best,
                                                 device="cpu"))
    return {e.qid: reader.read(e.question, [Passage(e.qid, e.title, e.context)]).text for e in test}


def rate(timed_steps: int, seconds: float, batch: int) -> float:
    return timed_steps * batch / seconds if seconds > 0 else float("nan")


def compare(data_path: Path, train: list[SquadExample], test: list[SquadExample], model: str,
            settings: RecipeSettings, out: Path) -> dict:
    console.rule("part 1: pretriever's reader vs the transformers recipe")
    t0 = time.perf_counter()
    ours = train_ours(data_path, out / f"reader-s{settings.seed}", settings, settings.max_steps)
    ours["test"] = score(read_ours(Path(ours["out"]), test, settings), test)
    ours["examples_per_second"] = rate(ours["timed_steps"], ours["timed_seconds"], settings.batch_size)
    console.print(f"  pretriever: {time.perf_counter() - t0:.0f} s, test {brief(ours['test'])}")
    t0 = time.perf_counter()
    recipe = train_and_predict(train, test, model, settings, str(out / "recipe"))
    anchor = {"train_examples": recipe.train_examples, "train_features": recipe.train_features,
              "steps": recipe.steps, "timed_steps": recipe.timed_steps, "timed_seconds": recipe.timed_seconds,
              "cpu_seconds": recipe.cpu_seconds,
              "features_per_second": rate(recipe.timed_steps, recipe.timed_seconds, settings.batch_size),
              "loss_curve": recipe.loss_curve, "test": score(recipe.predictions, test)}
    # an example is 1.0 + (windows - 1) features: the recipe's examples/s is its features/s over that share
    anchor["examples_per_second"] = anchor["features_per_second"] * recipe.train_examples / recipe.train_features
    console.print(f"  recipe: {time.perf_counter() - t0:.0f} s, test {brief(anchor['test'])}")
    table = Table(title=f"SQuAD 2.0 dev, train {'+'.join(TRAIN_TITLES)} ({len(train)} q), test "
                        f"{'+'.join(TEST_TITLES)} ({len(test)} q); {settings.max_steps} steps x {settings.batch_size}, "
                        f"length {settings.max_length}, lr {settings.learning_rate}")
    for col in ("system", "EM", "F1", "train items/s", "ratio"):
        table.add_column(col, justify="right")
    table.add_row("pretriever reader (passages=1)", f"{ours['test']['EM']:.1f}", f"{ours['test']['F1']:.1f}",
                  f"{ours['examples_per_second']:.2f} q/s",
                  f"{ours['examples_per_second'] / anchor['features_per_second']:.2f}x")
    table.add_row("transformers recipe (run_qa)", f"{anchor['test']['EM']:.1f}", f"{anchor['test']['F1']:.1f}",
                  f"{anchor['features_per_second']:.2f} feat/s", "1.00x")
    console.print(table)
    return {"pretriever": ours, "recipe": anchor,
            "throughput_ratio": ours["examples_per_second"] / anchor["features_per_second"],
            "em_difference": ours["test"]["EM"] - anchor["test"]["EM"]}


TIMING_ARMS = {  # name: (system, batches grouped by length)
    "pretriever": ("ours", True), "pretriever_random": ("ours", False),
    "recipe": ("recipe", False), "recipe_grouped": ("recipe", True)}


def timing(data_path: Path, train: list[SquadExample], model: str, settings: RecipeSettings, steps: int,
           rounds: int, out: Path) -> dict:
    """Training throughput alone: ``rounds`` short runs of each arm, taking turns, the best round of each counts:
    a process's first run pays one-time costs (kernels for new shapes) and the machine's load changes, which a
    single run of each would credit to whichever ran second or at a quiet moment. Arms: pretriever by default
    (batches grouped by length) and with random batches; the recipe as run_qa runs (random batches) and with the
    Trainer's length grouping, so each default is compared and like with like."""
    console.rule(f"timing: {rounds} rounds of {steps} steps each, taking turns")
    rounds_out = []
    for r in range(rounds):
        row = {}
        for arm, (system, grouped) in TIMING_ARMS.items():
            s = RecipeSettings(**{**asdict(settings), "max_steps": steps, "group_by_length": grouped})
            if system == "ours":
                run = train_ours(data_path, out / "timing-reader", s, steps, group_by_length=grouped)
                timed_steps, wall, cpu = run["timed_steps"], run["timed_seconds"], run["cpu_seconds"]
            else:
                recipe = train_and_predict(train, None, model, s, str(out / "timing-recipe"))
                timed_steps, wall, cpu = recipe.timed_steps, recipe.timed_seconds, recipe.cpu_seconds
            row[arm] = {"per_second": rate(timed_steps, wall, s.batch_size),
                        "per_cpu_second": rate(timed_steps, cpu, s.batch_size)}
        rounds_out.append(row)
        console.print(f"  round {r + 1}: " + ", ".join(f"{arm} {v['per_second']:.2f}/s ({v['per_cpu_second']:.2f} "
                                                        "per CPU s)" for arm, v in row.items()))
    shutil.rmtree(out / "timing-reader", ignore_errors=True)

    def best(arm: str, key: str) -> float:
        return max(row[arm][key] for row in rounds_out)

    ratios = {f"{ours}/{recipe}": {"wall": best(ours, "per_second") / best(recipe, "per_second"),
                                   "cpu": best(ours, "per_cpu_second") / best(recipe, "per_cpu_second")}
              for ours, recipe in (("pretriever", "recipe"), ("pretriever_random", "recipe"),
                                   ("pretriever", "recipe_grouped"))}
    result = {"steps": steps, "rounds": rounds_out,
              "best": {arm: {k: best(arm, k) for k in ("per_second", "per_cpu_second")} for arm in TIMING_ARMS},
              "ratios": ratios,
              # the defaults against each other, under the names earlier runs' JSON used
              "ratio_best_wall": ratios["pretriever/recipe"]["wall"],
              "ratio_best_cpu": ratios["pretriever/recipe"]["cpu"]}
    table = Table(title=f"training throughput, best of {rounds} rounds of {steps} steps (items/s)")
    for col in ("pair", "by wall time", "by CPU time"):
        table.add_column(col, justify="right")
    for pair, r in ratios.items():
        table.add_row(pair, f"{r['wall']:.2f}x", f"{r['cpu']:.2f}x")
    console.print(table)
    return result


QAC_ARMS = {  # arm: how it starts its SQuAD fine-tuning
    "without": "the start model (no reader pre-training)",
    "with": "a reader pre-trained on the qac triplets",
    "shuffled": "a reader pre-trained on the same triplets with each question moved to the next triplet (contexts "
                "and answers kept): the same steps and span-extraction practice, questions that do not ask for "
                "the answer"}


def shuffled_questions(triplets: Path) -> Path:
    """The control's data: ``triplets`` (SQuAD JSON) with every question moved one place along (the last to the
    first), so no question asks for its own answer while contexts, answers and their number stay."""
    data = json.loads(triplets.read_text())
    qas = [qa for article in data["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
    questions = [qa["question"] for qa in qas]
    for qa, question in zip(qas, questions[-1:] + questions[:-1]):
        qa["question"] = question
    path = triplets.with_name(triplets.stem + "-shuffled.json")
    path.write_text(json.dumps(data))
    return path


def qac_claim(data_path: Path, test: list[SquadExample], settings: RecipeSettings, seeds: list[int],
              qac_steps: int, out: Path, first: dict) -> dict:
    """C-MORE's claim, small: the arms of :data:`QAC_ARMS`, each seed's readers reused when already trained."""
    console.rule("part 2: with and without reader pre-training on qac triplets")
    triplets = out / "qac" / "qac-squad.json"
    if not triplets.is_file():
        subprocess.run(["bash", str(REPO / "bench" / "qac_triplets.sh"), str(out / "qac")], check=True)
    n_triplets = sum(len(p["qas"]) for a in json.loads(triplets.read_text())["data"] for p in a["paragraphs"])
    pre_data = {"with": triplets, "shuffled": shuffled_questions(triplets)}
    rows: dict[str, list[dict]] = {arm: [] for arm in QAC_ARMS}
    for seed in seeds:
        s = RecipeSettings(**{**asdict(settings), "seed": seed})
        if seed == settings.seed and first:
            rows["without"].append({"seed": seed, **first["test"]})
        else:
            run = train_ours(data_path, out / f"reader-s{seed}", s, s.max_steps, reuse=True)
            rows["without"].append({"seed": seed, **score(read_ours(Path(run["out"]), test, s), test)})
        for arm, prefix in (("with", "qac"), ("shuffled", "shuffled-qac")):
            pre = train_ours(pre_data[arm], out / f"{prefix}-reader-s{seed}", s, qac_steps, reuse=True)
            run = train_ours(data_path, out / f"{prefix}-squad-reader-s{seed}", s, s.max_steps, model=pre["out"],
                             reuse=True)
            rows[arm].append({"seed": seed, "qac_kept": pre["counts"]["kept"],
                              **score(read_ours(Path(run["out"]), test, s), test)})
        console.print(f"  seed {seed}: " + ", ".join(f"{arm} {brief(rows[arm][-1])}" for arm in QAC_ARMS))
    summary = {}
    table = Table(title=f"qac pre-training ({n_triplets} triplets, {qac_steps} steps) then SQuAD fine-tuning, "
                        f"seeds {seeds}: test EM/F1 mean +- sd")
    for col in ("arm", "EM", "F1", "per seed EM"):
        table.add_column(col, justify="right")
    for arm, runs in rows.items():
        em, f1 = [r["EM"] for r in runs], [r["F1"] for r in runs]
        summary[arm] = {"EM_mean": statistics.mean(em), "EM_sd": statistics.stdev(em) if len(em) > 1 else 0.0,
                        "F1_mean": statistics.mean(f1), "F1_sd": statistics.stdev(f1) if len(f1) > 1 else 0.0}
        table.add_row(arm, f"{summary[arm]['EM_mean']:.1f} +- {summary[arm]['EM_sd']:.1f}",
                      f"{summary[arm]['F1_mean']:.1f} +- {summary[arm]['F1_sd']:.1f}", " / ".join(f"{x:.1f}" for x in em))
    paired = {f"with/{other}": {
        "questions": paired_over_questions(rows["with"], rows[other]),
        "seeds": {m: {"difference": statistics.mean(w[m] - o[m] for w, o in zip(rows["with"], rows[other])),
                      "p": paired_randomisation([r[m] for r in rows["with"]], [r[m] for r in rows[other]])}
                  for m in ("EM", "F1")}} for other in ("without", "shuffled")}
    console.print(table)
    for pair, levels in paired.items():
        for level, tests in levels.items():
            console.print(f"  {pair}, paired randomisation over the {level}: " + ", ".join(
                f"{m} {t['difference']:+.1f} (p = {t['p']:.3f})" for m, t in tests.items()))
    return {"triplets": n_triplets, "qac_steps": qac_steps, "runs": rows, "summary": summary, "paired": paired}


def end_to_end(test: list[SquadExample], reader_dir: Path, out: Path) -> dict:
    """Corpus (one document per test paragraph) and QA JSONL for bench/exp_squad_e2e.sh, then run it."""
    console.rule("part 3: end to end")
    e2e = out / "e2e"
    e2e.mkdir(parents=True, exist_ok=True)
    paragraphs: dict[str, tuple[str, str]] = {}
    for e in test:
        paragraphs.setdefault(e.context, (f"{e.title}-{len(paragraphs)}", e.title))
    with open(e2e / "corpus.jsonl", "w", encoding="utf-8") as f:
        for text, (pid, title) in paragraphs.items():
            f.write(json.dumps({"_id": pid, "title": title, "text": text}) + "\n")
    with open(e2e / "test-qa.jsonl", "w", encoding="utf-8") as f:
        for e in test:
            f.write(json.dumps({"question": e.question, "answer": sorted(set(e.answers))}) + "\n")
    picks = [test[i] for i in range(0, len(test), len(test) // 5)][:5]
    done = subprocess.run(["bash", str(REPO / "bench" / "exp_squad_e2e.sh"), str(e2e), str(reader_dir),
                           *[e.question for e in picks]], capture_output=True, text=True)
    console.print(done.stdout[-8000:])
    if done.returncode != 0:
        raise SystemExit(f"exp_squad_e2e.sh failed:\n{done.stderr[-3000:]}")
    answers = [json.loads(line) for line in (e2e / "answers.jsonl").read_text().splitlines() if line.strip()]
    results = json.loads((e2e / "evaluate.json").read_text())
    rows = [{"question": a["question"], "answer": a["answer"], "gold": sorted(set(e.answers)),
             "EM": exact_match(a["answer"], e.answers), "title": a["title"], "passage_id": a["passage_id"],
             "evidence": a["evidence"]} for a, e in zip(answers, picks)]
    return {"paragraphs": len(paragraphs), "answers": rows, "metrics": results.get("metrics", results)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--warmup", type=float, default=0.1)
    parser.add_argument("--seeds", type=int, nargs="+", default=[13, 14, 15])
    parser.add_argument("--qac-steps", type=int, default=20)
    parser.add_argument("--timing-steps", type=int, default=20)
    parser.add_argument("--timing-rounds", type=int, default=2)
    parser.add_argument("--parts", default="compare,timing,qac,e2e",
                        help="comma-separated: compare, timing, qac, e2e")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "squad")
    parser.add_argument("--json", type=Path, default=REPO / "bench" / "out" / "squad.json")
    args = parser.parse_args()
    if not SQUAD.is_file():
        raise SystemExit(f"{SQUAD}: not found (see ../shared/data/SOURCES.md)")

    import torch

    from pretriever.models import resolve_model

    parts = set(args.parts.split(","))
    args.out.mkdir(parents=True, exist_ok=True)
    data = json.loads(SQUAD.read_text())
    train = squad_examples(data, set(TRAIN_TITLES))
    test = squad_examples(data, set(TEST_TITLES))
    data_path = write_split(data, args.out)
    settings = RecipeSettings(max_steps=args.steps, batch_size=args.batch_size, max_length=args.max_length,
                              learning_rate=args.lr, warmup_ratio=args.warmup, seed=args.seeds[0])
    model = str(resolve_model(None))
    load = os.getloadavg()
    report: dict = {"settings": asdict(settings), "train_articles": TRAIN_TITLES, "test_articles": TEST_TITLES,
                    "train_questions": len(train), "test_questions": len(test), "machine": platform.platform(),
                    "torch_threads": torch.get_num_threads(), "load_before": load,
                    "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}

    def save() -> None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, default=str))

    console.print(f"train {len(train)} answerable questions of {', '.join(TRAIN_TITLES)}; test {len(test)} of "
                  f"{', '.join(TEST_TITLES)}; load average {load[0]:.2f}")
    if "compare" in parts:
        report["compare"] = compare(data_path, train, test, model, settings, args.out)
        save()
    if "timing" in parts:
        report["timing"] = timing(data_path, train, model, settings, args.timing_steps, args.timing_rounds, args.out)
        save()
    if "qac" in parts:
        report["qac"] = qac_claim(data_path, test, settings, args.seeds, args.qac_steps, args.out,
                                  report.get("compare", {}).get("pretriever", {}))
        save()
    if "e2e" in parts:
        report["e2e"] = end_to_end(test, args.out / f"reader-s{settings.seed}", args.out)
        save()
    report["load_after"] = os.getloadavg()
    save()
    console.print(f"saved {args.json}")


if __name__ == "__main__":
    main()
