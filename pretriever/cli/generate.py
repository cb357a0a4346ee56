"""``pretriever generate``: doc2query candidate queries for every passage of a corpus store.

Wire into the main app with ``app.command("generate")(generate_command)``.
"""

from __future__ import annotations



from pretriever.cli.common import stage
from pretriever.cli.options import Flag, config_command
from pretriever.data import QUERIES_FILE
from pretriever.generate import GenerateConfig
from pretriever.generate import run as generation
from pretriever.progress import RichReporter, console

@config_command(GenerateConfig, "generate", arguments=("corpus",),
                short={"model": "-m", "per_passage": "-c", "batch_size": "-b", "limit": "-n"},
                flags={"from_file": Flag("--from")})
def generate_command(cfg: GenerateConfig) -> None:
    """Generate C queries per passage (doc2query, nucleus sampling), or import them with --from.

    Output: QUERIES_DIR/generated_queries.parquet (passage_id, candidate, text) and manifest.json, the
    input of `pretriever mine CORPUS --method qc --queries QUERIES_DIR`.

    Examples:

      pretriever generate enwiki/ --model doc2query/all-with-prefix-t5-base-v1 --per-passage 5
          --limit 300 --out queries/
          (the prefix 'text2query: ' comes from the model's name; the command says which)

      pretriever generate enwiki/ --from doc2query-queries.jsonl --out imported-queries/
          (queries made elsewhere: {"id": passage or doc id, "queries": [...]} per line)
    """
    with RichReporter() as report, stage(report):
        result = generation.run(cfg, report)
    if result.prefix_note:
        console.print(result.prefix_note)
    skipped = ", ".join(f"{n:,} {why.replace('_', ' ')}" for why, n in result.skipped.items() if n) or "none"
    console.print(f"{result.passages:,} passages, {result.queries:,} queries in {result.seconds:.1f}s "
                  f"({result.rate:,.1f} passages/s); skipped: {skipped}")
    if result.complete:
        console.print(f"wrote {cfg.out / QUERIES_FILE}")
    else:
        console.print("this shard is done; the table is written when every shard has run")
