"""``pretriever refine run|grid``: pseudo-relevance feedback on dense vectors (linear eq. 9, AOpt).

Wire into the main app with ``app.add_typer(refine_app, name="refine")``.

``pretriever refine run INDEX_DIR ...`` runs the refinement (``run`` is the default sub-command,
so ``pretriever refine INDEX_DIR ...`` does the same); ``pretriever refine grid INDEX_DIR ...``
sweeps linear re-weighting.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from typer.core import TyperGroup

from pretriever.cli.common import stage
from pretriever.cli.options import Flag, config_command
from pretriever.index import IndexMeta
from pretriever.progress import RichReporter, console
from pretriever.refine import grid
from pretriever.refine import pipeline as refinement
from pretriever.refine.config import RefineConfig


class _RunByDefault(TyperGroup):
    """``pretriever refine INDEX_DIR ...`` means ``pretriever refine run INDEX_DIR ...``."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


refine_app = typer.Typer(
    cls=_RunByDefault,
    help=(
        "Refine (after index): move dense vectors with pseudo-relevance feedback. Retrieve the top k "
        "passages of each feedback query, label them (answers in the passage, qrels judgments, or the "
        "top k' for label-free PRF), then rewrite passage vectors by linear re-weighting (eq. 9) or "
        "AOpt gradient descent, re-retrieve and repeat; AOpt-query refines query vectors the same way.\n\n"
        "The output is a normal index folder: score it with `pretriever evaluate --index REFINED_DIR`.\n\n"
        "Honest protocol by default: refine with TRAINING labels and evaluate on held-out test queries; "
        "--oracle allows the paper's leaky setting (test labels), labelled 'oracle' everywhere.\n\n"
        "Example:  pretriever refine run scifact-index/ --queries scifact/queries.jsonl --feedback qrels "
        "--qrels scifact/qrels/train.tsv --method aopt-passage --out scifact-aopt/"
    ),
    no_args_is_help=True,
)


class _Reporter(RichReporter):
    """Rich bars and dim messages, but the oracle protocol's warning in a red panel."""

    def message(self, text: str) -> None:
        if text.startswith("ORACLE"):
            self.bars.console.print(Panel(escape(text), title="WARNING", style="bold red"))
        else:
            super().message(text)


_SHORT = {"queries": "-q", "feedback": "-f", "answers": "-a", "method": "-m", "limit": "-n"}
_GRID = ("betas", "gammas", "validation", "seed", "select_metric")
_SEARCH_TIME = ("prf_k", "prf_weight")  # HybridOptions' search-time PRF: labels are searched without it


@refine_app.command("run")
@config_command(RefineConfig, "refine", arguments=("index",), short=_SHORT, skip=_GRID + _SEARCH_TIME, nested=("fusion",),
                flags={"k": Flag(("-k", "--k")), "test_time_queries": Flag("--test-time/--no-test-time"),
                       "normalize": Flag("--normalize/--no-normalize"), "learning_rate": Flag("--lr")})
def run_command(cfg: RefineConfig) -> None:
    """Refine INDEX_DIR's vectors with feedback and write REFINED_INDEX_DIR (a normal index folder).

    Examples (SciFact, honest protocol: training claims refine, test claims evaluate):

      pretriever refine run scifact-index/ -q scifact/queries.jsonl -f qrels --qrels
          scifact/qrels/train.tsv --method aopt-passage --rounds 2 --out sf-aopt/

      pretriever refine run scifact-index/ -q scifact/queries.jsonl -f qrels --qrels
          scifact/qrels/train.tsv --method hybrid --k-pos 3 --out sf-hybrid/

      pretriever refine run scifact-index/ -q scifact/queries.jsonl -f qrels --qrels
          scifact/qrels/train.tsv --fuse-bm25 --out sf-aopt-bm25/
          (the passages to label found by dense + BM25, RRF)

      pretriever evaluate --index scifact-index/ --index sf-aopt/ -q scifact/queries.jsonl --qrels
          scifact/qrels/test.tsv --out eval/
    """
    with _Reporter() as report, stage(report):
        meta = refinement.run(cfg, report).manifest
    print_refine(meta, cfg.out)


def print_refine(meta: IndexMeta, out: Path) -> None:
    """The table ``pretriever refine run`` prints: per side and round, labels, moves, loss and time."""
    ref = meta.refine
    protocol = ref["protocol"]["name"]
    table = Table(title=f"refined index {out}  [{protocol.upper() if protocol == 'oracle' else protocol}]")
    table.add_column("side")
    table.add_column("round", justify="right")
    table.add_column("queries (with a positive)", justify="right")
    table.add_column("labelled passages (with a positive)", justify="right")
    table.add_column("moved", justify="right")
    table.add_column("loss start -> end", justify="right")
    table.add_column("epochs (mean)", justify="right")
    table.add_column("seconds", justify="right")
    for r in ref["rounds"]:
        lab, opt = r["labels"], r["optimise"]
        loss = (f"{opt['loss_start']:.4f} -> {opt['loss_end']:.4f}" if opt.get("loss_start") is not None else "")
        table.add_row(r["side"], str(r["round"]), f"{lab['queries']:,} ({lab['queries_with_positive']:,})",
                      f"{lab['passages']:,} ({lab['passages_with_positive']:,})",
                      f"{opt.get('trained', opt.get('moved', 0)):,}", loss,
                      f"{opt.get('epochs_mean', 0):.1f}" if "epochs_mean" in opt else "",
                      f"{r['seconds']['total']:.2f}")
    console.print(table)
    console.print(f"method {ref['method']}, {ref['queries']['count']:,} feedback queries ({ref['feedback']['kind']}), "
                  f"{ref['passages_changed']:,} passage vectors changed, name {meta.name!r}")
    search = ref["params"].get("label_search") or {"retrieval": "dense"}
    fusion = search.get("fusion")
    console.print(f"labelled passages found by: {search['retrieval']}"
                  + (f" ({fusion['fusion']}, depth {fusion['depth'] or 'auto'})" if fusion else ""))
    console.print(f"query side: {ref['query_side']['note']}")
    if ref["query_side"].get("test_time") or ref["query_side"].get("refined_vectors"):
        console.print("[yellow]`pretriever search` and `pretriever evaluate` (which open indexes with "
                      "pretriever.index.IndexFolder) use the refined query side; DenseIndex.load does not: it "
                      "searches the refined passages with plainly encoded queries[/yellow]")
    if protocol == "oracle":
        console.print(Panel(escape(ref["protocol"]["warning"]), title="ORACLE", style="bold red"))
    console.print(f"next: pretriever evaluate --index {ref['base_index']} --index {out} --queries ... --qrels ... "
                  "--out EVAL_DIR")


def _linear(values: dict, extras: dict) -> None:
    values["method"] = "linear"  # the grid sweeps linear re-weighting


@refine_app.command("grid")
@config_command(RefineConfig, "refine", arguments=("index",), short=_SHORT, before=_linear,
                only=("out", "queries", "feedback", "qrels", "answers", "k", "validation", "seed", "select_metric",
                      "oracle", "holdout", "limit", "match", "device"),
                flags={"k": Flag(("-k", "--k")),
                       "feedback": Flag(extra_help="The grid is scored with labels: qrels or answers."),
                       "oracle": Flag(extra_help="Here: score on the feedback queries themselves (the paper's "
                                                 "Figure 6).")})
def grid_command(cfg: RefineConfig) -> None:
    """Sweep linear re-weighting p' = p + beta*mean(pos q) + gamma*mean(neg q), beta 0..0.9, gamma 0..-0.9
    (Figure 6).

    Labels come from a fit split of the feedback queries and every point is scored on the held-out rest,
    so the chosen point is honest; then refine with it: pretriever refine run INDEX --method linear --beta
    B --gamma G ...

    Example:  pretriever refine grid scifact-index/ -q scifact/queries.jsonl --qrels
    scifact/qrels/train.tsv --out sf-grid/
    """
    with _Reporter() as report, stage(report):
        done = grid.run(cfg, report)
    result = done.manifest
    metric = result["select_metric"]
    table = Table(title=f"{metric} [{result['protocol']}]: rows gamma, columns beta")
    table.add_column("gamma \\ beta")
    for b in result["betas"]:
        table.add_column(f"{b:g}", justify="right")
    best = result["best"]
    for g, row in zip(result["gammas"], result["metrics"][metric]):
        cells = []
        for b, v in zip(result["betas"], row):
            cell = f"{100 * v:.1f}"
            cells.append(f"[bold red]{cell}[/bold red]" if (b, g) == (best["beta"], best["gamma"]) else cell)
        table.add_row(f"{g:g}", *cells)
    console.print(table)
    base = result.get("base") or {}
    console.print(f"best: beta {best['beta']:g}, gamma {best['gamma']:g}: {metric} {best[metric]:.4f}"
                  + (f" (beta = gamma = 0: {base[metric]:.4f})" if metric in base else "")
                  + f"; scored on {result['split']['scored_on']} ({result['split']['validation']} queries)")
    console.print(f"written: {Path(cfg.out) / 'grid.json'}" + (f", {done.plot}" if done.plot else ""))
