"""Held-out masked-LM figures of a pre-training run (``pretrain --eval-pairs``).

The loss of the encoder and its MLM head on texts the run never trains on, and its perplexity
(the exp of the mean cross-entropy per masked word piece), so that a plain start
(``--objective mlm --init random``) is trained to a stated quality and can stop there
(``--target-perplexity``), and so that what another objective costs the MLM can be read.
Every evaluation masks the same pieces: the masks are drawn from a generator seeded afresh,
apart from training's, which is left as it was (a resumed run draws what it would have).
"""

from __future__ import annotations

import math
from pathlib import Path

import torch

from pretriever.pretrain.data import load_pairs
from pretriever.pretrain.objectives.base import Objective, masked, mlm_loss


def heldout_texts(path: Path) -> list[str]:
    """Both texts of every pair in the pairs folder ``path``, each distinct text once, in file order (a cc
    passage that is one pair's x and another's y counts once)."""
    pairs = load_pairs(path)
    return list(dict.fromkeys(text for pair in zip(pairs.x, pairs.y) for text in pair))


def heldout_mlm(objective: Objective, texts: list[str], rate: float, batch_size: int,
                seed: int = 0) -> dict[str, float | int]:
    """{"loss", "perplexity", "masked_tokens", "texts"}: the masked-LM loss of ``objective``'s encoder and MLM head
    over ``texts``, summed over every masked word piece and divided by their number, and its exp.

    The texts are cut and masked as training does (:meth:`Objective.tokenize`, :meth:`Objective.mask` at
    ``rate``), in batches of ``batch_size``, with torch's generator forked and seeded with ``seed``: the same
    windows and masks at every call, and training's random state untouched. Dropout is off; the objective's
    mode is restored."""
    device = next(objective.parameters()).device
    was_training = objective.training
    objective.eval()
    total, count = 0.0, 0
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(seed)
            for start in range(0, len(texts), batch_size):
                enc = objective.tokenize(texts[start:start + batch_size])
                ids, labels = objective.mask(enc, rate)
                labels = labels.to(device)
                last = objective.encoder(input_ids=ids.to(device),
                                         attention_mask=enc["attention_mask"].to(device)).last_hidden_state
                total += float(mlm_loss(objective.mlm_head, last, labels, 1))  # the sum over masked pieces
                count += int(masked(labels))
    finally:
        objective.train(was_training)
    loss = total / max(1, count)
    return {"loss": loss, "perplexity": math.exp(loss), "masked_tokens": count, "texts": len(texts)}
