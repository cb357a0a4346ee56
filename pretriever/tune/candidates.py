"""The settings ``pretriever tune`` chooses between: dense, BM25, RRF (k = 60) and convex fusion with alpha
0.1 ... 0.9, each fusion with and without dense PRF (k = 3) where the dense side searches by vector.

A :class:`Candidate` is a :class:`~pretriever.index.TunedSetting` (what index.json records when it wins) that
can build its retriever over any dense and BM25 pair, so the same candidate runs over the masked index of each
generator and over the real index for validation.
"""

from __future__ import annotations

from dataclasses import dataclass

from pretriever.index import HybridOptions, HybridRetriever, TunedSetting
from pretriever.retrieval import Retriever, VectorSearch

RRF_K = 60
ALPHAS = tuple(round(0.1 * i, 1) for i in range(1, 10))
PRF_K = 3
DENSE = "dense"


@dataclass(frozen=True)
class Candidate:
    """One setting ``pretriever tune`` scores (dense, BM25, a fusion, with or without PRF), built over the two
    retrievers.
    """

    setting: TunedSetting

    @property
    def label(self) -> str:
        return self.setting.label

    def build(self, dense: Retriever, lexical: Retriever) -> Retriever:
        """This setting's retriever over ``dense`` and ``lexical`` (named by its label).

        Args:
            dense: the index's retriever.
            lexical: its BM25.

        Returns:
            The retriever.
        """
        if self.setting.mode == "index":
            return dense
        if self.setting.mode == "bm25":
            return lexical
        hybrid = HybridRetriever(dense, lexical, self.setting.fusion)
        hybrid.name = self.label
        return hybrid


def candidates(dense: Retriever, prf: bool = True) -> list[Candidate]:
    """Every candidate for ``dense`` (PRF variants only when ``prf`` and ``dense`` searches by vector).

    Args:
        dense: the index's retriever.
        prf: include the dense-PRF variants.

    Returns:
        The candidates, dense first.
    """
    out = [Candidate(TunedSetting(DENSE, "index")), Candidate(TunedSetting("bm25", "bm25"))]
    fusions = [(f"hybrid rrf k={RRF_K}", HybridOptions(fusion="rrf", rrf_k=RRF_K))]
    fusions += [(f"hybrid convex {a:g}", HybridOptions(fusion="convex", alpha=a)) for a in ALPHAS]
    with_prf = prf and isinstance(dense, VectorSearch)
    for label, options in fusions:
        out.append(Candidate(TunedSetting(label, "hybrid", options)))
        if with_prf:
            out.append(Candidate(TunedSetting(f"{label} + prf {PRF_K}", "hybrid",
                                              HybridOptions(**{**options.__dict__, "prf_k": PRF_K}))))
    return out
