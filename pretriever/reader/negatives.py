"""BM25 over what a pairs folder was mined from, for the dpr-reader export: the negatives of each question and
every context's score, as DPR's retriever output has them.

DPR's reader trains on 24 passages per question, drawn from the retriever's ``n_docs`` (100) results; a pair
holds one positive and at most one negative. :class:`PairsContexts` indexes the passages of the store the pairs
were mined from and the blocks of the reference pages that qac cut its positives from (each size it cut, with
the ids qac gave them), so ``pretriever pairs export --format dpr-reader --negatives N`` can add BM25's top N for
each question and score the positive and the mined negative in the same index.

It lives in the reader layer because it joins the index layer's BM25 with the mine layer's blocks, two
siblings that never import each other; :func:`pretriever.mine.export.export_pairs` takes it as a
:class:`pretriever.mine.export.ReaderContexts`.

Example::

    from pretriever.data.pairs import PairsDir
    from pretriever.mine.export import export_pairs
    from pretriever.reader.negatives import PairsContexts

    pairs = PairsDir("qac/")
    export_pairs(pairs, "dpr-reader", "qac-reader.json", ["qac"], contexts=PairsContexts(pairs), negatives=100)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import pyarrow.parquet as pq

from pretriever.data import PassageLookup, PassageSource, load_references, passage_text
from pretriever.data.pairs import PairsDir, PairsError
from pretriever.index import BM25Index
from pretriever.mine.triplets import block_id, cut_blocks
from pretriever.progress import QUIET, Reporter
from pretriever.retrieval import Hit, Passage


def block_sizes(pairs: PairsDir) -> list[tuple[int, int]]:
    """The (n, m) block sizes qac cut the reference pages into, as its report in pairs.json records them."""
    qac = pairs.manifest.methods.get("qac") or {}
    return [(int(n), int(m)) for n, m in (size.split(":") for size in qac.get("blocks") or [])]


class PairsContexts:
    """BM25 (the index stage's defaults) over a pairs folder's store and the blocks of its reference pages; a
    :class:`pretriever.retrieval.Searcher` with ``scores_of`` (a passage's score whether retrieved or not)."""

    name = "bm25"

    def __init__(self, pairs: PairsDir, store: Path | None = None, report: Reporter = QUIET):
        corpus = store or Path(pairs.manifest.corpus_path or "")
        if not (corpus / "manifest.json").exists():
            raise PairsError(f"{pairs.path}: the corpus store it was mined from ({corpus}) is not there; "
                             "give it with --corpus")
        self.lookup = PassageLookup(corpus)
        self.blocks: dict[str, Passage] = dict(self._blocks(pairs))
        ids: list[str] = []
        texts: list[str] = []
        source = PassageSource(self.lookup.store)
        report.message(f"BM25 over {source.total:,} passages of {corpus} and {len(self.blocks):,} reference blocks")
        try:
            for part_ids, part_texts in source.iter_parts(True):
                ids.extend(part_ids)
                texts.extend(part_texts)
        finally:
            source.close()
        ids.extend(self.blocks)
        texts.extend(passage_text(b.title, b.text, True) for b in self.blocks.values())
        self.bm25 = BM25Index.build_from_texts(ids, texts)

    @staticmethod
    def _blocks(pairs: PairsDir) -> Iterable[tuple[str, Passage]]:
        """(id, block) of every page of the references folder qac read, cut at each size it cut."""
        refs = pairs.manifest.option("references")
        sizes = block_sizes(pairs)
        if not refs or not sizes:  # qac --context links: its positives are the store's passages
            return
        table = pq.read_table(load_references(refs).references, columns=["url", "title", "text"])
        for url, title, text in zip(*(table.column(c).to_pylist() for c in ("url", "title", "text"))):
            for n, m in sizes:
                for idx, block in enumerate(cut_blocks(text or "", n, m)):
                    pid = block_id(url, idx, (n, m) if len(sizes) > 1 else None)
                    yield pid, Passage(pid, title, block, None)

    def __len__(self) -> int:
        return len(self.bm25)

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        return self.bm25.search(queries, k)

    def passages(self, ids: Iterable[str]) -> dict[str, Passage]:
        """Title and text of each id: a reference block, else the store's passage."""
        ids = list(dict.fromkeys(ids))
        found = self.lookup.passages([i for i in ids if i not in self.blocks])
        return {i: self.blocks.get(i) or found[i] for i in ids}

    def scores_of(self, query: str, passage_ids: Sequence[str]) -> list[float]:
        return self.bm25.scores_of(query, passage_ids)

    def close(self) -> None:
        self.lookup.close()
