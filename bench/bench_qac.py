"""Benchmark of C-MORE triplet construction (``mine --method qac``'s per-pair work) at two sizes.

    python bench/bench_qac.py [--sizes 200,1000] [--ref-words 1000] [--json bench/out/qac.json]

Statements are real: the cited sentences of the enwiki sample (built into a temporary store,
not timed). References are synthetic: ``--ref-words`` words of filler drawn from the sample's
own vocabulary with the statement's sentence (lightly reworded) placed at a seeded position,
so BM25 has ~15 blocks to rank and entities can be found, as on real pages.

For each size, in one run and on the same statements:

- **pretriever**: ``nlp.pipe`` over the statements + for each pair ``cut_blocks`` (128/64),
  BM25 block choice (bm25s), entity matching, span finding and the question: pairs/s;
- **peer (the bound)**: plain spaCy ``nlp.pipe`` over the same statements with the same
  pipeline (tok2vec + ner): statements/s. NER is the part no implementation can skip, so
  pretriever/spaCy (<= 1) says how close the whole construction is to NER alone.

The projection for the paper's 6M statement-reference pairs divides 6M by the larger size's
rate (one process; spaCy's ``n_process`` or more machines would divide it further, not measured).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

import duckdb
from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from pretriever.corpus import build as corpus_build  # noqa: E402
from pretriever.corpus.config import CorpusConfig  # noqa: E402
from pretriever.mine.triplets import Triplet, build_triplet, cut_blocks, load_ner  # noqa: E402

SAMPLE = REPO.parent / "shared" / "data" / "wiki" / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
PAPER_PAIRS = 6_000_000


def statements_and_vocab(dump: Path, work: Path) -> tuple[list[str], list[str]]:
    corpus_build.run(CorpusConfig(input=dump, out=work / "store", workers=2))
    con = duckdb.connect()
    rows = con.sql(f"SELECT DISTINCT statement FROM '{work}/store/citations/*.parquet' "
                   "WHERE url IS NOT NULL AND length(statement) > 40 ORDER BY statement").fetchall()
    words = con.sql(f"SELECT text FROM '{work}/store/passages/*.parquet' LIMIT 2000").fetchall()
    vocab = [w for (t,) in words for w in t.split()]
    return [r[0] for r in rows], vocab


def reference(statement: str, vocab: list[str], words: int, rng: random.Random) -> str:
    filler = [rng.choice(vocab) for _ in range(words)]
    at = rng.randrange(0, max(1, words - 40))
    return " ".join(filler[:at] + ["According", "to", "the", "report,"] + statement.split() + filler[at:])


def run_ours(nlp, statements: list[str], refs: list[str]) -> tuple[float, int]:
    started = time.perf_counter()
    made = 0
    for i, (statement, doc) in enumerate(zip(statements, nlp.pipe(statements, batch_size=128))):
        entities = [(e.text, e.label_, e.start_char, e.end_char) for e in doc.ents]
        result = build_triplet(statement, entities, cut_blocks(refs[i], 128, 64), 0, str(i))
        made += isinstance(result, Triplet)
    return time.perf_counter() - started, made


def run_spacy(nlp, statements: list[str]) -> float:
    started = time.perf_counter()
    for _ in nlp.pipe(statements, batch_size=128):
        pass
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="200,1000")
    parser.add_argument("--ref-words", type=int, default=1000)
    parser.add_argument("--dump", type=Path, default=SAMPLE)
    parser.add_argument("--json", type=Path, default=REPO / "bench" / "out" / "qac.json")
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        statements, vocab = statements_and_vocab(args.dump, Path(tmp))
    nlp = load_ner("en_core_web_sm")
    list(nlp.pipe(statements[:50]))  # warm up
    results = []
    for n in sizes:
        chosen = [statements[i % len(statements)] for i in range(n)]
        refs = [reference(s, vocab, args.ref_words, rng) for s in chosen]
        run_spacy(nlp, chosen[:50])
        spacy_s = run_spacy(nlp, chosen)
        ours_s, made = run_ours(nlp, chosen, refs)
        results.append({"pairs": n, "ours_seconds": round(ours_s, 3), "ours_pairs_per_s": round(n / ours_s, 1),
                        "triplets": made, "spacy_seconds": round(spacy_s, 3),
                        "spacy_statements_per_s": round(n / spacy_s, 1), "ratio": round(spacy_s / ours_s, 3)})
    rate = results[-1]["ours_pairs_per_s"]
    projection_h = PAPER_PAIRS / rate / 3600
    table = Table(title=f"C-MORE triplet construction ({args.ref_words}-word references, blocks 128/64, one process)")
    for col in ("pairs", "pretriever pairs/s", "triplets made", "spaCy nlp.pipe statements/s", "pretriever / spaCy"):
        table.add_column(col, justify="right")
    for r in results:
        table.add_row(f"{r['pairs']:,}", f"{r['ours_pairs_per_s']:,.1f}", f"{r['triplets']:,}",
                      f"{r['spacy_statements_per_s']:,.1f}", f"{r['ratio']:.2f}")
    console = Console()
    console.print(table)
    console.print(f"projection for {PAPER_PAIRS:,} statement-reference pairs at {rate:,.1f} pairs/s: "
                  f"{projection_h:,.1f} h in one process")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"machine": platform.platform(), "ref_words": args.ref_words,
                                     "results": results, "projection_hours_6M": round(projection_h, 2)}, indent=1))


if __name__ == "__main__":
    main()
