"""Pre-training on several processes (``torchrun`` / ``accelerate launch``: one per GPU), data-parallel as DDP is,
so that W processes at ``--batch-size n`` train as one process at n x W:

- each process takes its n pairs of every batch of n x W (the batches one process would form: :func:`share`);
- every loss term is a sum over the process's rows divided by the count of the whole global batch (masked tokens
  summed over the processes: :func:`summed`), so the processes' terms add up to one process's;
- coCondenser's contrastive term scores each process's spans against every process's (:func:`gather`, whose
  gradient goes back to the process that encoded them), as the official code does under DDP (luyug/Condenser,
  ``gather_tensors``);
- the gradients are summed over the processes once per optimizer step (:func:`sum_gradients`), after gradient
  accumulation and GradCache's backward passes, before clipping.

Each process draws its own masks and dropout (seeded with the seed plus its rank): W processes see the same
batches as one process at n x W, not the same random masks.
"""

from __future__ import annotations

import torch


def distributed() -> bool:
    """Whether this process is one of several in a process group."""
    return torch.distributed.is_available() and torch.distributed.is_initialized() and (
        torch.distributed.get_world_size() > 1)


def share(batch: list[int], rank: int, processes: int) -> list[int]:
    """Process ``rank``'s contiguous share of a global ``batch`` (its length a multiple of ``processes``)."""
    n = len(batch) // processes
    return batch[rank * n:(rank + 1) * n]


def summed(values: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``values`` (scalars) summed over the processes, in one collective; as they are in a single process."""
    if not distributed() or not values:
        return values
    names = sorted(values)
    stacked = torch.stack([torch.as_tensor(values[k]).double() for k in names])
    torch.distributed.all_reduce(stacked)
    return {k: v.to(torch.as_tensor(values[k]).dtype) for k, v in zip(names, stacked)}


def gather(rows: torch.Tensor) -> tuple[torch.Tensor, int]:
    """(every process's ``rows`` in rank order, where this process's begin). The gather is differentiable: the
    gradient that every process's loss sends to a row is summed back to the process that made it."""
    if not distributed():
        return rows, 0
    from torch.distributed.nn.functional import all_gather

    parts = all_gather(rows.contiguous())
    return torch.cat(parts), torch.distributed.get_rank() * len(rows)


def sum_gradients(params: list[torch.Tensor]) -> None:
    """Sum the gradients of ``params`` over the processes, in one collective. A weight with no gradient on any
    process keeps none (AdamW then skips it, as in one process: a frozen encoder, a decoder no row used)."""
    if not distributed():
        return
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    seen = torch.tensor([p.grad is not None for p in params], dtype=grads[0].dtype, device=grads[0].device)
    flat = torch.cat([g.flatten() for g in grads] + [seen])
    torch.distributed.all_reduce(flat)
    offset = 0
    for p in params:
        size = p.numel()
        p.grad = flat[offset:offset + size].view_as(p)  # views of one fresh buffer: no copy
        offset += size
    for p, any_grad in zip(params, flat[offset:].tolist()):
        if not any_grad:
            p.grad = None


def rng_states(state: torch.Tensor) -> list[torch.Tensor]:
    """Every process's random state ``state`` (torch's CPU generator), in rank order, for a checkpoint."""
    if not distributed():
        return [state]
    group = host_group()
    states = [torch.empty_like(state) for _ in range(torch.distributed.get_world_size())]
    torch.distributed.all_gather(states, state, group=group)
    return states


_HOST_GROUP: list = []


def host_group():
    """A process group for tensors on the host: the default one under gloo, a gloo group beside NCCL's."""
    if torch.distributed.get_backend() == "gloo":
        return None
    if not _HOST_GROUP:
        _HOST_GROUP.append(torch.distributed.new_group(backend="gloo"))
    return _HOST_GROUP[0]
