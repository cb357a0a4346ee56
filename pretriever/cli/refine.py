"""``pretriever refine ...``: pseudo-relevance feedback on dense vectors (linear eq. 9, AOpt).

Wire into the main app with ``app.add_typer(refine_app, name="refine")``.

``pretriever refine INDEX_DIR ...`` runs the refinement (the ``run`` sub-command is the
default, so ``pretriever refine run INDEX_DIR ...`` is the same); ``pretriever refine grid
INDEX_DIR ...`` sweeps linear re-weighting.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from typer.core import TyperGroup

from pretriever.config import ConfigError, build_config
from pretriever.progress import console

EXIT_USAGE = 2  # bad options, unreadable inputs, a leaking protocol without --oracle


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
        "Example:  pretriever refine scifact-index/ --queries scifact/queries.jsonl --feedback qrels "
        "--qrels scifact/qrels/train.tsv --method aopt-passage --out scifact-aopt/"
    ),
    no_args_is_help=True,
)


def _fail(message: str) -> typer.Exit:
    console.print(f"[red]error:[/red] {escape(message)}")
    return typer.Exit(EXIT_USAGE)


def _errors():
    from pretriever.data.store import StoreError
    from pretriever.data.qa import QAFileError
    from pretriever.data.beir import DatasetError
    from pretriever.index.errors import IndexStageError
    from pretriever.refine.pipeline import RefineError

    return (ConfigError, DatasetError, QAFileError, RefineError, IndexStageError, StoreError, ValueError, OSError)


def _say(message: str) -> None:
    if message.startswith("ORACLE"):
        console.print(Panel(escape(message), title="WARNING", style="bold red"))
    else:
        console.print(f"[dim]{escape(message)}[/dim]")


_FEEDBACK_HELP = ("How retrieved passages are labelled: qrels (judged relevant, with --queries and --qrels), "
                  "answers (contains an answer, DPR matching, with --answers), or topk (label-free PRF: the "
                  "top --k-pos are relevant). Default: qrels.")
_ORACLE_HELP = ("Allow feedback labels of the evaluation queries (the paper's protocol). This LEAKS the test "
                "labels into the index; results are labelled 'oracle'.")
_HOLDOUT_HELP = ("The evaluation queries (BEIR qrels/queries or a QA file): any of them among the feedback "
                 "queries is dropped (unless --oracle).")


@refine_app.command("run")
def run_command(
    index: Path = typer.Argument(..., help="The dense index to refine (`pretriever index build`).", show_default=False),
    out: Optional[Path] = typer.Option(None, "--out", "-o", show_default=False,
                                       help="REFINED_INDEX_DIR: a new index folder (refine/ holds the labels)."),
    queries: Optional[Path] = typer.Option(None, "--queries", "-q", show_default=False,
                                           help="Feedback queries: BEIR queries.jsonl (or a QA file for topk)."),
    feedback: Optional[str] = typer.Option(None, "--feedback", "-f", help=_FEEDBACK_HELP),
    qrels: Optional[Path] = typer.Option(None, "--qrels", show_default=False,
                                         help="Judgments of the feedback queries (e.g. qrels/train.tsv)."),
    answers: Optional[Path] = typer.Option(None, "--answers", "-a", show_default=False,
                                           help="Feedback questions with answers (NQ-open JSONL, DPR TSV/JSON)."),
    method: Optional[str] = typer.Option(None, "--method", "-m", help="linear (eq. 9), aopt-passage, aopt-query "
                                         "or hybrid (passages, then queries). Default: aopt-passage."),
    k: Optional[int] = typer.Option(None, "-k", "--k", help="Passages retrieved and labelled per query. Default: 100."),
    k_pos: Optional[int] = typer.Option(None, "--k-pos", help="topk feedback (and test-time query refinement): "
                                        "the top k' that count as relevant. Default: 5."),
    beta: Optional[float] = typer.Option(None, "--beta", help="linear: weight of the mean positive query. Default: 0.6."),
    gamma: Optional[float] = typer.Option(None, "--gamma", help="linear: weight of the mean negative query. Default: -0.1."),
    lr: Optional[float] = typer.Option(None, "--lr", help="AOpt learning rate. Default: 0.1."),
    max_epochs: Optional[int] = typer.Option(None, "--max-epochs", help="AOpt epochs per round, at most. Default: 100."),
    patience: Optional[int] = typer.Option(None, "--patience", help="AOpt: stop a vector after this many epochs "
                                           "without loss improvement. Default: 5."),
    rounds: Optional[int] = typer.Option(None, "--rounds", help="Passage side: retrieve-label-optimise-reindex "
                                         "rounds (Figure 5). Default: 1."),
    query_rounds: Optional[int] = typer.Option(None, "--query-rounds", help="Query side rounds (also at test time). Default: 1."),
    normalize: Optional[bool] = typer.Option(None, "--normalize/--no-normalize", help="L2-normalise refined vectors. Default: no (as the paper)."),
    test_time: Optional[bool] = typer.Option(None, "--test-time/--no-test-time", help="aopt-query/hybrid: refine "
                                             "unseen queries at search time with label-free topk feedback. Default: yes."),
    oracle: bool = typer.Option(False, "--oracle", help=_ORACLE_HELP),
    holdout: Optional[Path] = typer.Option(None, "--holdout", help=_HOLDOUT_HELP, show_default=False),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", help="Only the first N feedback queries."),
    match: Optional[str] = typer.Option(None, "--match", help="Answer matching: string (DPR) or regex. Default: string."),
    device: Optional[str] = typer.Option(None, "--device", help="cpu, cuda, ... for encoding and AOpt."),
    threads: Optional[int] = typer.Option(None, "--threads", help="torch threads for AOpt (default: torch's; 1 is "
                                          "often fastest on a CPU shared with other jobs)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an index already in --out."),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file whose [refine] table sets any of these."),
) -> None:
    """Refine INDEX_DIR's vectors with feedback and write REFINED_INDEX_DIR (a normal index folder).

    Examples (SciFact, honest protocol: training claims refine, test claims evaluate):

      pretriever refine scifact-index/ -q scifact/queries.jsonl -f qrels --qrels scifact/qrels/train.tsv --method aopt-passage --rounds 2 --out sf-aopt/

      pretriever refine scifact-index/ -q scifact/queries.jsonl -f qrels --qrels scifact/qrels/train.tsv --method hybrid --k-pos 3 --out sf-hybrid/

      pretriever evaluate --index scifact-index/ --index sf-aopt/ -q scifact/queries.jsonl --qrels scifact/qrels/test.tsv --out eval/
    """
    from pretriever.refine.config import RefineConfig
    from pretriever.refine.pipeline import run_refine

    try:
        cfg = build_config(RefineConfig, config, "refine", index=index, out=out, queries=queries, feedback=feedback,
                           qrels=qrels, answers=answers, method=method, k=k, k_pos=k_pos, beta=beta, gamma=gamma,
                           lr=lr, max_epochs=max_epochs, patience=patience, rounds=rounds,
                           query_rounds=query_rounds, normalize=normalize, test_time_queries=test_time,
                           oracle=oracle or None, holdout=holdout, limit=limit, match=match, device=device,
                           threads=threads, overwrite=overwrite or None)
    except TypeError as err:
        raise _fail("--out REFINED_INDEX_DIR is required (or `out` in the [refine] table of --config)") from err
    except (ConfigError, ValueError) as err:
        raise _fail(str(err)) from err
    try:
        meta = run_refine(cfg, step=_say)
    except _errors() as err:
        raise _fail(str(err)) from err
    print_refine(meta, cfg.out)


def print_refine(meta: dict, out: Path) -> None:
    ref = meta["refine"]
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
                  f"{ref['passages_changed']:,} passage vectors changed, name {meta['name']!r}")
    console.print(f"query side: {ref['query_side']['note']}")
    if ref["query_side"].get("test_time") or ref["query_side"].get("refined_vectors"):
        console.print("[yellow]the query side applies only when the folder is opened with "
                      "pretriever.refine.open_index / RefinedIndex.load; DenseIndex.load searches the refined "
                      "passages with plainly encoded queries[/yellow]")
    if protocol == "oracle":
        console.print(Panel(escape(ref["protocol"]["warning"]), title="ORACLE", style="bold red"))
    console.print(f"next: pretriever evaluate --index {ref['base_index']} --index {out} --queries ... --qrels ... "
                  "--out EVAL_DIR")


@refine_app.command("grid")
def grid_command(
    index: Path = typer.Argument(..., help="The dense index.", show_default=False),
    out: Optional[Path] = typer.Option(None, "--out", "-o", show_default=False,
                                       help="GRID_DIR: grid.json and grid.png (heat maps) are written here."),
    queries: Optional[Path] = typer.Option(None, "--queries", "-q", show_default=False,
                                           help="BEIR queries.jsonl (with --qrels)."),
    feedback: Optional[str] = typer.Option(None, "--feedback", "-f", help="qrels (default) or answers."),
    qrels: Optional[Path] = typer.Option(None, "--qrels", show_default=False, help="Judgments of the feedback queries."),
    answers: Optional[Path] = typer.Option(None, "--answers", "-a", show_default=False, help="Questions with answers."),
    k: Optional[int] = typer.Option(None, "-k", "--k", help="Passages labelled per query. Default: 100."),
    validation: Optional[float] = typer.Option(None, "--validation", help="Share of the feedback queries held out "
                                               "to score every point (honest protocol). Default: 0.2."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the validation split. Default: 0."),
    select_metric: Optional[str] = typer.Option(None, "--select-metric", help="Metric that picks the best point. "
                                                "Default: nDCG@10 (qrels), Acc@20 (answers)."),
    oracle: bool = typer.Option(False, "--oracle", help="Score on the feedback queries themselves (the paper's "
                                "Figure 6; leaks labels)."),
    holdout: Optional[Path] = typer.Option(None, "--holdout", help=_HOLDOUT_HELP, show_default=False),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", help="Only the first N feedback queries."),
    match: Optional[str] = typer.Option(None, "--match", help="Answer matching: string or regex."),
    device: Optional[str] = typer.Option(None, "--device", help="Device for encoding the queries."),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file whose [refine] table sets any of "
                                          "these (betas, gammas lists too)."),
) -> None:
    """Sweep linear re-weighting p' = p + beta*mean(pos q) + gamma*mean(neg q), beta 0..0.9, gamma 0..-0.9 (Figure 6).

    Labels come from a fit split of the feedback queries and every point is scored on the held-out rest, so the chosen point is honest; then refine with it: pretriever refine INDEX --method linear --beta B --gamma G ...

    Example:  pretriever refine grid scifact-index/ -q scifact/queries.jsonl --qrels scifact/qrels/train.tsv --out sf-grid/
    """
    from pretriever.refine.config import RefineConfig
    from pretriever.refine.grid import run_grid

    try:
        cfg = build_config(RefineConfig, config, "refine", index=index, out=out, queries=queries, feedback=feedback,
                           qrels=qrels, answers=answers, method="linear", k=k, validation=validation, seed=seed,
                           select_metric=select_metric, oracle=oracle or None, holdout=holdout, limit=limit,
                           match=match, device=device)
    except TypeError as err:
        raise _fail("--out GRID_DIR is required (or `out` in the [refine] table of --config)") from err
    except (ConfigError, ValueError) as err:
        raise _fail(str(err)) from err
    try:
        result = run_grid(cfg, step=_say)
    except _errors() as err:
        raise _fail(str(err)) from err
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
    console.print(f"written: {Path(cfg.out) / 'grid.json'}" + (f", {result['plot']}" if result.get("plot") else ""))
