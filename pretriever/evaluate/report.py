"""Tables, plots and the results file of an evaluation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from pretriever.evaluate.manifest import RESULTS_JSON, EvaluationManifest
from pretriever.evaluate.tasks import EvaluationError
from pretriever.metrics import NO_REFERENCE
from pretriever.io import atomic_path
from pretriever.stage import OutputFolder

CURVE_PNG = "accuracy_at_k.png"
RECALL_PNG = "recall_at_k.png"
OVERLAP_PNG = "overlap.png"


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def metrics_table(result) -> Table:
    """Systems side by side: one row per system, one column per metric."""
    title = {"qrels": "retrieval (judgments)", "answers": "open-domain QA: answer in the top k",
             "multihop": "multi-hop: all gold in the top k"}[result.kind]
    source = result.dataset.get("name")
    table = Table(title=f"{title}{f' - {source}' if source else ''} ({result.dataset['queries']:,} queries)")
    table.add_column("system", overflow="fold")
    metrics = [m for m in next(iter(result.systems.values())) if m != "queries"]
    for m in metrics:
        table.add_column(m, justify="right", overflow="fold", min_width=5)
    best = {m: max(v[m] for v in result.systems.values()) for m in metrics}
    for name, values in result.systems.items():
        cells = []
        for m in metrics:
            text = _fmt(values[m])
            cells.append(f"[bold]{text}[/bold]" if len(result.systems) > 1 and values[m] == best[m] else text)
        table.add_row(escape(name), *cells)  # names hold brackets: aopt-query[prf k'=1], [298/300 scored: ...]
    return table


def overlap_table(result) -> Table | None:
    """Rows = Q-P overlap buckets; columns = the bucket's size and each system's metric."""
    ov = result.overlap
    if not ov:
        return None
    mean = f", mean overlap {ov['mean']:.3f}" if ov.get("mean") is not None else ""
    table = Table(title=f"{ov['metric']} by question-passage overlap{mean}",
                  caption=f"overlap: share of question words found in {ov['reference']}")
    table.add_column("overlap")
    table.add_column("questions", justify="right")
    table.add_column("share", justify="right")
    for name in result.systems:
        table.add_column(escape(name), justify="right", overflow="fold")
    for label, row in ov["buckets"].items():
        table.add_row(label, f"{row['n']:,}", f"{row['share']:.1%}", *(_fmt(row["systems"][s]) for s in result.systems))
    return table


def reader_table(read: dict[str, Any]) -> Table:
    """End-to-end EM/F1 per system (``EvaluationResult.reader``), one row each."""
    table = Table(title=f"end-to-end QA: reader {read['reader']} over the top {read['k']}")
    columns = list(next(iter(read["systems"].values())))
    table.add_column("system")
    for name in columns:
        table.add_column(name, justify="right")
    for name, metrics in read["systems"].items():
        table.add_row(escape(name), *(f"{metrics[c]:.4f}" if isinstance(metrics[c], float) else str(metrics[c])
                              for c in columns))
    return table


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_curves(result, path: Path) -> Path:
    """Accuracy@k (answers, multi-hop) or Recall@k (judgments) against k, one line per system."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    metric = "Recall@k"
    for name, curve in result.curves.items():
        ax.plot(curve["k"], curve["value"], label=name, marker="o" if len(curve["k"]) <= 20 else None,
                markersize=3)
        metric = curve.get("metric", metric)
    ax.set_xscale("log")
    ax.set_xlabel("k (log scale)")
    ax.set_ylabel(metric if result.kind == "qrels" else f"share of questions: {metric}")
    ax.set_ylim(0, 1)
    ax.grid(True, alpha=0.3)
    ax.legend()
    ax.set_title(result.dataset.get("name") or result.kind)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)
    return path


def plot_overlap(result, path: Path) -> Path:
    """HLP Figs. 3-4: overlap distribution (questions and each system's top-1 passage), and the
    metric per overlap bucket for each system."""
    plt = _plt()
    ov = result.overlap
    labels = [b for b in ov["buckets"] if b != NO_REFERENCE]
    systems = list(result.systems)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    series = [("questions vs reference", [ov["buckets"][b]["share"] for b in labels])]
    series += [(f"{s} top-1", [ov["top1"][s]["share"].get(b, 0.0) for b in labels]) for s in systems if s in ov["top1"]]
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series):
        left.bar([x + i * width for x in range(len(labels))], values, width, label=name)
    left.set_xticks([x + 0.4 - width / 2 for x in range(len(labels))], labels)
    left.set_xlabel("Q-P overlap")
    left.set_ylabel("share")
    left.set_title("overlap distribution")
    left.legend(fontsize=8)
    width = 0.8 / max(1, len(systems))
    for i, s in enumerate(systems):
        values = [ov["buckets"][b]["systems"][s] or 0.0 for b in labels]
        right.bar([x + i * width for x in range(len(labels))], values, width, label=s)
    right.set_xticks([x + 0.4 - width / 2 for x in range(len(labels))],
                     [f"{b}\n(n={ov['buckets'][b]['n']})" for b in labels])
    right.set_xlabel("Q-P overlap")
    right.set_ylabel(ov["metric"])
    right.set_ylim(0, 1)
    right.set_title(f"{ov['metric']} by overlap")
    right.legend(fontsize=8)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)
    return path


def eval_folder(out: Path) -> OutputFolder:
    """EVAL_DIR: new, empty or an earlier evaluation's (whose files a new one replaces), never anyone else's."""
    return OutputFolder(out, stage="evaluate", holds="an evaluation", owns=(RESULTS_JSON, "*.png", "runs"),
                        error=EvaluationError)


def write_results(result, out: Path, plots: bool = True, save_runs: bool = False) -> dict[str, Path]:
    """results.json (atomically), the plots and, when asked, TREC run files; returns what was written."""
    out = Path(out)
    folder = eval_folder(out)
    folder.check()
    folder.claim()
    written: dict[str, Path] = {}
    data = result.to_json()
    if plots:
        files = {}
        if result.curves:
            files["curve"] = plot_curves(result, out / (RECALL_PNG if result.kind == "qrels" else CURVE_PNG))
        if result.overlap and result.overlap["buckets"]:
            files["overlap"] = plot_overlap(result, out / OVERLAP_PNG)
        data["plots"] = {k: p.name for k, p in files.items()}
        written.update(files)
    if save_runs:
        runs = {}
        for name, hits in result.runs.items():
            path = out / "runs" / f"{_safe(name)}.trec"
            with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
                for qid, row in zip(result.query_ids, hits):
                    for rank, h in enumerate(row, 1):
                        f.write(f"{qid} Q0 {h.passage_id} {rank} {h.score:.6f} {_safe(name)}\n")
            runs[name] = str(path.relative_to(out))
            written[f"run:{name}"] = path
        data["runs"] = runs
    EvaluationManifest.from_json(data).write(out)
    written["results"] = out / RESULTS_JSON
    folder.seal()
    return written


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
