"""``pretriever tune``: choose dense, BM25 or a fusion for an index, from pseudo-queries made from its corpus.

Wire into the main app with ``app.command("tune")(tune_command)``.
"""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from pretriever.cli.common import stage
from pretriever.cli.options import Flag, config_command
from pretriever.progress import RichReporter, console
from pretriever.tune import run as tuning
from pretriever.tune.config import TuneConfig


def _names(value: str) -> list[str]:
    """--queries-from masked-ict,titles -> ["masked-ict", "titles"]."""
    return [name.strip() for name in value.split(",") if name.strip()]


@config_command(TuneConfig, "tune", arguments=("index",),
                flags={"queries_from": Flag("--queries-from", parse=_names, cli_type=str), "n": Flag(("-n", "--n"))})
def tune_command(cfg: TuneConfig) -> None:
    """Choose how to search INDEX_DIR: dense, BM25, or their fusion (RRF k = 60, convex alpha 0.1 ... 0.9,
    each with and without dense PRF k = 3), from pseudo-queries made from the corpus alone; no labels
    needed.

    Pseudo-queries (--queries-from): masked-ict (a sentence of a passage is the query; the passage
    WITHOUT that sentence is the positive: it is encoded again and indexed again in BM25, so the query's
    words are not copied from its positive), titles (the title is the query; its document is scored
    without it) and linked (HLP dual-link and co-mention pairs, --pairs from `pretriever mine --method
    dl,cm`). Left to the default, tune uses each of these that makes pseudo-queries on the corpus and
    names the others with the reason (no titles, as in MS MARCO; titles shared by several documents;
    linked without --pairs), in the output and in tune.json ("left_out"); it fails only when none fits.
    A generator named in --queries-from that cannot run or makes none is an error, raised before
    anything is encoded. Each generator's lexical overlap (share of query words in
    the positive) is reported, beside the real queries' with --qrels (SciFact: masked-ict 0.54, titles
    0.82, the test claims 0.60).

    The choice: the candidate with the best nDCG@10, averaged over generators. Dense stays the choice
    unless the winner is clearly better: its 95% bootstrap interval must lie above dense's, and no
    generator may put it below dense; the output says which test failed. The choice, the table and the
    intervals go to INDEX_DIR/tune.json; the chosen setting goes into INDEX_DIR/index.json ("tuned"),
    and from then on `search`, `evaluate` (a row "tuned: ..."), `serve` and `answer` use it unless given
    --no-tuned. --dry-run writes nothing.

    Validation (--qrels with --queries): every candidate is also scored on real judgments, AFTER the
    choice, which never reads them; reported: real nDCG@10, Kendall tau between the pseudo and real
    rankings of the candidates, and the real nDCG@10 lost by the choice against the best candidate.

    Before and after (--compare OTHER_INDEX, another dense index of the same store, e.g. the model before
    training): its dense retrieval is scored on the same pseudo-queries (its masked passages encoded with
    its own model) and printed beside the candidates, never one of them, with the paired difference and
    its 95% bootstrap interval: a label-free check that training moved retrieval on this corpus, up or
    down, as `pretriever quickstart` shows.

    Cost: n passages encoded again and BM25 indexed again per generator, and n queries searched per
    candidate. On SciFact (5,183 abstracts, all-MiniLM-L6-v2, n = 1000, 2 cores) 188 s, against 171 s
    for the index's own encode; it chose hybrid convex 0.4, 0.007 nDCG@10 below the best of the 22
    candidates on the test claims (bench/README.md).

    Examples:

      pretriever tune scifact-index/ -n 40 --dry-run

      pretriever tune scifact-index/ -n 40 --queries-from masked-ict,titles --qrels
          scifact/qrels/test.tsv --queries scifact/queries.jsonl
    """
    with RichReporter() as report, stage(report):
        result = tuning.run(cfg, report)
    console.print(result_table(result))
    gens = Table(title="pseudo-queries")
    for column in ("generator", "queries", "masked", "lexical overlap", "best candidate", "seconds"):
        gens.add_column(column, justify="left" if column in ("generator", "best candidate") else "right")
    for name, info in result.generators.items():
        overlap = f"{info['overlap']:.2f}" if info["overlap"] is not None else "-"
        gens.add_row(name, str(info["queries"]), str(info["masked"]), overlap,
                     escape(result.choice.agreement["winners"].get(name, "")),
                     f"{info['mask_seconds'] + info['score_seconds']:.1f}")
    if result.validation is not None and result.validation.get("overlap") is not None:
        v = result.validation
        gens.add_row("real queries", str(v["queries"]), "", f"{v['overlap']:.2f}", "", "")
    console.print(gens)
    for name, why in result.left_out.items():
        console.print(f"{escape(name)}: {escape(why)}")
    taus = ", ".join(f"{k}: {v:.2f}" for k, v in result.choice.agreement["tau"].items() if v is not None)
    if taus:
        console.print(f"agreement between generators (Kendall tau): {taus}")
    if result.validation is not None:
        v = result.validation
        tau = f"{v['kendall_tau']:.2f}" if v["kendall_tau"] is not None else "-"
        console.print(f"validation on {escape(v['qrels'])} ({v['queries']} queries, never read by the choice): "
                      f"Kendall tau pseudo vs real {tau}; best real {escape(v['best'])} "
                      f"{v['nDCG@10'][v['best']]:.4f}; the choice loses {v['lost']:.4f} nDCG@10")
        for note in v.get("notes", []):
            console.print(f"[yellow]{escape(note)}[/yellow]")
    if result.compared:
        console.print(compared_line(result.compared))
    console.print(f"[bold]choice: {escape(result.choice.label)}[/bold] ({escape(result.choice.reason)})")
    total = result.seconds.get("pseudo_total", 0.0)
    console.print(f"{total:.0f} s for the choice" + (f", {result.seconds['validation']:.0f} s validation"
                                                      if "validation" in result.seconds else ""))
    if result.written:
        console.print("written: " + ", ".join(str(p) for p in result.written))
    else:
        console.print("dry run: nothing written")


def result_table(result: tuning.TuneResult) -> Table:
    """Every candidate: pseudo nDCG@10 with its interval and per generator, and real nDCG@10 when
    validated."""
    scores, choice = result.choice.scores, result.choice
    generators = list(result.generators)
    real = (result.validation or {}).get("nDCG@10", {})
    table = Table(title="candidates (nDCG@10 on pseudo-queries)")
    table.add_column("candidate")
    table.add_column("pseudo", justify="right")
    table.add_column("95% interval", justify="right")
    for g in generators:
        table.add_column(g, justify="right")
    if real:
        table.add_column("real", justify="right")
    if result.compared:
        theirs = result.compared["dense"]
        table.add_row(f"dense of {escape(result.compared['index'])} (compared, not a candidate)",
                      f"{theirs['pseudo_nDCG@10']:.4f}", "{:.3f}-{:.3f}".format(*theirs["interval"]),
                      *(f"{theirs['per_generator'][g]:.4f}" for g in generators), *([""] if real else []),
                      style="dim")
    for c in result.candidates:
        s = scores[c.label]
        mark = " <- chosen" if c.label == choice.label else " (best, not kept)" if c.label == choice.best else ""
        row = [escape(c.label) + mark, f"{s.mean:.4f}", f"{s.low:.3f}-{s.high:.3f}",
               *(f"{s.per_generator[g]:.4f}" for g in generators)]
        if real:
            row.append(f"{real[c.label]:.4f}")
        table.add_row(*row)
    return table


def compared_line(compared: dict) -> str:
    """One sentence a person can act on: what --compare's dense scored against this index's, by how much, and
    whether the 95% interval of the paired difference excludes no change."""
    before, after, change = (compared[k] for k in ("dense", "this_dense", "difference"))
    low, high = change["interval"]
    verdict = ("up" if low > 0 else "down" if high < 0 else "no clear change: the interval holds 0")
    return (f"dense nDCG@10 on the same pseudo-queries: {escape(compared['index'])} {before['pseudo_nDCG@10']:.3f} "
            f"-> this index {after['pseudo_nDCG@10']:.3f}, {change['pseudo_nDCG@10']:+.3f} (95% interval "
            f"{low:+.3f} to {high:+.3f}): {verdict}")
