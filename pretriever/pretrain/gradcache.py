"""GradCache for pre-training: the gradient of a whole batch's loss with the encoder's activations of only
``mini_batch_size`` rows alive at a time, so the contrastive term can score a large batch (the papers: 2,048 and
more sequences) on a small device.

Gao et al., "Scaling Deep Contrastive Learning Batch Size under Memory Limited Setup" (RepL4NLP 2021; code:
luyug/GradCache, used by luyug/Condenser's ``CoCondenserPretrainer``), in three steps over an objective's parts
(:class:`~pretriever.pretrain.objectives.base.Objective`):

1. encode the rows chunk by chunk without a graph: every row's sentence embedding h, each chunk's random state
   kept (:class:`~sentence_transformers.base.losses.gradcache.RandContext`); the widest chunk (most word pieces
   with padding) is encoded with its graph, which step 3 uses instead of encoding it again: one chunk's
   activations alive through step 2, as in step 3, and one chunk fewer to encode twice (a third of the pass
   without a graph at batch 16 in chunks of 8 over abstracts and claims);
2. compute the terms that read h across rows (coCondenser's contrastive term; CoT-MAE's decoders, which read
   the partner's h, in pieces of ``mini_batch_size`` decoder rows) on a detached h and backpropagate them: the
   heads get their gradients and h its gradient, the cache;
3. encode each other chunk again under its kept random state (the same dropout) with a graph and backpropagate
   its per-row terms (MLM, the Condenser head) plus h . cache; the kept chunk's per-row terms draw from the
   random state that followed its encoding, as they would have after encoding it again.

The parameter gradients are those of one pass over the whole batch (up to rounding; a test checks it with
dropout off): each chunk's terms are divided by the whole batch's masked-token counts, so they add up to the
batch's mean and the MLM weight is the same with GradCache as without. The official code differs there: with
GradCache on, luyug/Condenser and caskcsg/ir (``cocondenser/modeling.py``, line 259) scale each chunk's mean MLM
loss by chunk rows / ``per_device_train_batch_size``; a chunk holds spans, two per document, so the chunks add up
to twice the batch's mean: a constant x2 on the MLM terms whenever GradCache is on, never when it is off.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

import torch

from pretriever.pretrain.distributed import summed
from pretriever.pretrain.objectives.base import Objective, rows_of


def _backward(loss: torch.Tensor | float) -> None:
    if isinstance(loss, torch.Tensor) and loss.requires_grad:
        loss.backward()


def _add(total: dict[str, torch.Tensor], part: dict[str, torch.Tensor]) -> None:
    for name, value in part.items():
        value = value.detach().float()
        total[name] = total[name] + value if name in total else value


def gradcache_step(objective: Objective, inputs: dict[str, torch.Tensor], mini_batch_size: int, scale: float = 1.0,
                   autocast: AbstractContextManager | None = None) -> dict[str, torch.Tensor]:
    """Accumulate into the parameters' ``.grad`` the gradient of ``scale`` x the objective's loss on ``inputs``
    (what ``objective(**inputs)["loss"].backward()`` would give), encoding ``mini_batch_size`` rows at a time.
    Returns the detached terms as ``objective(**inputs)`` reports them. ``autocast`` (reused: ``torch.autocast``)
    wraps the forward computations, never a backward."""
    from sentence_transformers.base.losses.gradcache import RandContext  # heavy; the same class as their Cached losses

    autocast = autocast if autocast is not None else nullcontext()
    family = objective.encoder_rows
    n = len(inputs[family[0][0]])
    if n <= mini_batch_size:  # one chunk: the plain pass needs no more memory, and saves the pass without a graph
        with autocast:
            out = objective(**inputs)
        _backward(out["loss"] * scale)
        return {k: v.detach() for k, v in out.items()}
    counts = summed(objective.counts(inputs))
    chunks = [rows_of(inputs, family, slice(i, i + mini_batch_size)) for i in range(0, n, mini_batch_size)]
    widest = max(range(len(chunks)), key=lambda i: chunks[i][family[1]].numel())  # its graph is kept: see step 1
    states, embeddings, kept = [], [], None
    for i, chunk in enumerate(chunks):
        states.append(RandContext(*chunk.values()))
        with torch.set_grad_enabled(i == widest), autocast:
            h_chunk, state = objective.encode(chunk)
        if i == widest:
            kept = (h_chunk, state, RandContext(*chunk.values()))  # the random state row_terms drew from before
        embeddings.append(h_chunk.detach())
    h = torch.cat(embeddings).requires_grad_()
    terms: dict[str, torch.Tensor] = {}
    for piece in objective.batch_pieces(inputs, mini_batch_size):
        with autocast:
            part = objective.batch_terms(h, piece, counts)
        _backward(objective.weighted(part) * scale)
        _add(terms, part)
    cache = h.grad
    for i in [widest, *(i for i in range(len(chunks)) if i != widest)]:  # the kept graph first: freed first
        chunk = chunks[i]
        if i == widest:
            h_chunk, state, after = kept
            kept = None
            with after, autocast:
                part = objective.row_terms(h_chunk, state, chunk, counts)
        else:
            with states[i], autocast:
                h_chunk, state = objective.encode(chunk)
                part = objective.row_terms(h_chunk, state, chunk, counts)
        surrogate = objective.weighted(part) * scale
        if cache is not None:
            rows = cache[i * mini_batch_size:(i + 1) * mini_batch_size]
            surrogate = surrogate + torch.dot(h_chunk.float().flatten(), rows.float().flatten())
        _backward(surrogate)
        _add(terms, part)
        del h_chunk, state, part, surrogate
    return {"loss": objective.weighted(terms), **{t: terms[t] for t in objective.terms}}
