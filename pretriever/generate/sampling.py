"""Nucleus sampling with one random stream per sequence, so a passage's queries do not depend on its batch.

``model.generate`` samples every row of a batch from one global generator, so the same
passage gets other queries in another batch, shard or resumed run. Here generation runs
greedy (``do_sample=False``) behind a logits processor that applies transformers' own
top-k and top-p warpers, draws the next token of each row from that row's generator
(seeded by seed, passage id and candidate index) and leaves only that token possible,
which greedy search then takes.
"""

from __future__ import annotations

import hashlib


def row_seed(seed: int, passage_id: str, candidate: int) -> int:
    """A 63-bit seed for one (passage, candidate) sequence."""
    digest = hashlib.blake2b(f"{seed}|{passage_id}|{candidate}".encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def seeded_sampler(seeds: list[int], top_k: int, top_p: float):
    """A ``LogitsProcessor`` sampling row ``r`` with a ``torch.Generator`` seeded by ``seeds[r]``."""
    import torch  # heavy: imported when generation starts
    from transformers import LogitsProcessor, TopKLogitsWarper, TopPLogitsWarper

    class SeededNucleusSampler(LogitsProcessor):
        def __init__(self) -> None:
            self.generators = [torch.Generator().manual_seed(s) for s in seeds]
            self.warpers = [TopKLogitsWarper(top_k=top_k), TopPLogitsWarper(top_p=top_p)]

        def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
            scores = scores.float()
            for warper in self.warpers:
                scores = warper(input_ids, scores)
            probs = torch.softmax(scores, dim=-1).cpu()
            draws = torch.stack([torch.rand((), generator=g, dtype=torch.float64) for g in self.generators])
            cdf = probs.double().cumsum(-1)
            chosen = torch.searchsorted(cdf, (draws * cdf[:, -1]).unsqueeze(-1)).clamp_(max=probs.shape[-1] - 1)
            out = torch.full_like(scores, float("-inf"))
            out.scatter_(-1, chosen.to(scores.device), 0.0)
            return out

    return SeededNucleusSampler()
