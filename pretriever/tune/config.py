"""Settings of ``pretriever tune`` (also the ``[tune]`` table of a TOML config)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pretriever.config import batch_size_option, device_option, option, seed_option
from pretriever.tune.generators import GENERATORS


@dataclass
class TuneConfig:
    """Settings of ``pretriever tune`` (choose dense, BM25 or a fusion for an index without labels).

    Each field's help lives in its metadata (:func:`pretriever.config.option`), which ``--help`` and the TOML config
    read.
    """

    index: Path = option(help="INDEX_DIR: a dense (or refined) index folder; its bm25/ is used when present, else "
                              "BM25 is built in memory from the store it names.")
    queries_from: list[str] | None = option(None, "Pseudo-query generators, comma-separated: masked-ict (a sentence "
                                                  "is the query, its passage without it the positive), titles (the "
                                                  "title is the query, the passage without it the positive), linked "
                                                  "(HLP dual-link and co-mention pairs; needs pairs). Generators "
                                                  "named here must each make pseudo-queries; the default set "
                                                  "is every generator, less those (named, with why) that "
                                                  "cannot run or make none on this corpus.",
                                            default_help="every generator that fits: masked-ict, titles, "
                                                         "linked (with --pairs)")
    pairs: Path | None = option(None, "A pairs folder of `pretriever mine --method dl,cm` over the same store, for "
                                      "the linked generator.")
    n: int = option(1000, "Pseudo-queries per generator (each masked passage is encoded again).")
    seed: int = seed_option("the sample, the masked sentences and the bootstrap")
    prf: bool = option(True, "Also try each fusion with label-free dense PRF (k = 3).")
    bootstrap: int = option(1000, "Bootstrap resamples of the pseudo-queries for the intervals.")
    dry_run: bool = option(False, "Print the table and the choice; write neither tune.json nor index.json.")
    qrels: Path | None = option(None, "Validation only, never read by the choice: judgments (BEIR or TREC qrels) on "
                                      "which every candidate is also scored (Kendall tau against the pseudo ranking, "
                                      "real nDCG@10 lost by the choice).")
    queries: Path | None = option(None, "Validation only: the BEIR queries.jsonl the --qrels judge.")
    compare: Path | None = option(None, "Another dense index of the same store (the model before training, say): its "
                                        "dense retrieval is scored on the same pseudo-queries, its masked passages "
                                        "encoded with its own model, and the paired difference from this index's "
                                        "dense is reported with a bootstrap interval. It is never a candidate.")
    corpus: Path | None = option(None, "The corpus store, when it is not where index.json says (moved).",
                                 default_help="the store the index names")
    device: str | None = device_option("queries and masked passages are encoded")
    batch_size: int = batch_size_option(64, "Passages", more=" when masked passages are encoded again")

    def __post_init__(self) -> None:
        self.index = Path(self.index)
        for name in ("pairs", "qrels", "queries", "corpus", "compare"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, Path(value))
        if isinstance(self.queries_from, str):
            self.queries_from = [m.strip() for m in self.queries_from.split(",") if m.strip()]
        if self.queries_from is not None and (not self.queries_from
                                              or len(set(self.queries_from)) != len(self.queries_from)):
            raise ValueError(f"queries_from must name generators once each, got {self.queries_from}")
        if (self.qrels is None) != (self.queries is None):
            raise ValueError("validation needs both qrels and the queries they judge (or neither)")
        for name in ("n", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.bootstrap < 0:
            raise ValueError(f"bootstrap must be 0 or more, got {self.bootstrap}")

    @property
    def by_default(self) -> bool:
        """No generator was named: the default set, which leaves out those that cannot run (linked without
        --pairs) or make nothing on the corpus (titles without titles)."""
        return self.queries_from is None

    @property
    def generators(self) -> list[str]:
        """The generators to try: those named, else every registered one (the default set, filtered as it runs)."""
        return list(self.queries_from if self.queries_from is not None else GENERATORS)

    def to_json(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}
