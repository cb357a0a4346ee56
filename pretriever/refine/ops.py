"""The two vector updates of the refine stage, vectorised over every vector of a round.

Both work on a bipartite *label graph*: ``centre`` vectors (the ones that move) and ``other``
vectors (fixed while the centres move), joined by edges ``(centre[e], other[e], positive[e])``.
For AOpt-passage the centres are passages and the others the queries that retrieved them;
for AOpt-query it is the other way round.

Linear re-weighting (paper eq. 9)::

    c' = alpha * c + beta * mean(others on positive edges) + gamma * mean(others on negative edges)

(gamma is negative in the paper's grid, 0 .. -0.9; an empty mean contributes nothing).

AOpt (eqs. 10-14): per centre ``c`` the multi-positive softmax loss::

    L(c) = -log( sum_{i in pos} exp(c . o_i) / sum_{j in pos + neg} exp(c . o_j) )

and plain gradient descent ``c <- c - lr * dL/dc`` with::

    dL/dc = sum_{j in pos+neg} softmax_all(j) o_j  -  sum_{i in pos} softmax_pos(i) o_i

The paper's extracted formula shows raw dot products inside the sums; dot products can be
negative (so a ratio of raw sums is not a probability and its log may be undefined), so we take
``exp`` of them - the usual contrastive (InfoNCE with several positives) reading.

The paper trains with batch size 1: each vector's loss depends only on itself and its fixed
others, so running every vector of a round in one tensor op (segment sums over the edge list)
gives exactly the per-vector result; early stopping is kept per vector with masks.
A centre with no positive edge has an undefined loss and one with no negative edge a constant
loss of 0 (zero gradient); neither moves.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

DEFAULT_MAX_EDGES = 2_000_000  # edges per block of centres optimised together
# below this many edges x dim a block gathers an edges x dim array (no sparse kernels: their fixed
# cost per call dominates small problems); above it scores are SDDMM and gradients SpMM on CSR
SPARSE_MIN_ELEMENTS = 1_000_000


@dataclass
class AOptResult:
    """What :func:`aopt` returns: the refined centres and, per centre, whether it trained, its loss before and after,
    and its epochs.
    """

    vectors: np.ndarray  # n_centres x dim (float32, or float64 when asked), the refined centres
    trainable: np.ndarray  # bool per centre: had at least one positive and one negative edge
    loss_start: np.ndarray  # loss before the first update (nan where not trainable)
    loss_end: np.ndarray  # loss of the returned vector (nan where not trainable)
    epochs: np.ndarray  # epochs (forward + backward + update) run per centre
    stopped_early: np.ndarray  # bool: stopped by patience, not by max_epochs

    def summary(self) -> dict:
        t = self.trainable
        n = int(t.sum())
        return {"centres": int(len(t)), "trained": n,
                "loss_start": float(np.nanmean(self.loss_start)) if n else None,
                "loss_end": float(np.nanmean(self.loss_end)) if n else None,
                "epochs_mean": float(self.epochs[t].mean()) if n else 0.0,
                "epochs_max": int(self.epochs[t].max()) if n else 0,
                "stopped_early": int(self.stopped_early[t].sum())}


def _segment_means(others: np.ndarray, centre: np.ndarray, other: np.ndarray, mask: np.ndarray,
                   n: int, max_edges: int = DEFAULT_MAX_EDGES) -> tuple[np.ndarray, np.ndarray]:
    """Mean of ``others[other[e]]`` over the edges ``e`` of each centre where ``mask`` holds (0 where
    there is none), summed in float64 in blocks of ``max_edges`` edges; and the counts."""
    import torch

    dim = others.shape[1]
    sums = torch.zeros((n, dim), dtype=torch.float64)
    idx = np.flatnonzero(mask)
    counts = np.bincount(centre[idx], minlength=n).astype(np.float64)
    for lo in range(0, len(idx), max_edges):
        block = idx[lo:lo + max_edges]
        sums.index_add_(0, torch.as_tensor(centre[block]),
                        torch.as_tensor(np.asarray(others[other[block]]), dtype=torch.float64))
    means = sums.numpy() / np.maximum(counts, 1)[:, None]
    return means, counts


def linear_update(centres: np.ndarray, others: np.ndarray, centre: np.ndarray, other: np.ndarray,
                  positive: np.ndarray, beta: float, gamma: float, alpha: float = 1.0) -> np.ndarray:
    """Eq. 9 for every centre: ``alpha*c + beta*mean(pos others) + gamma*mean(neg others)`` (float32).

    Args:
        centres: the vectors that move (n x d).
        others: the vectors that stay (m x d).
        centre: each edge's centre row.
        other: each edge's other row.
        positive: whether each edge is a positive label.
        beta: the weight of the positives' mean.
        gamma: the weight of the negatives' mean (negative pushes away).
        alpha: the weight of the centre itself.

    Returns:
        The updated centres.
    """
    centre, other = np.asarray(centre, np.int64), np.asarray(other, np.int64)
    positive = np.asarray(positive, bool)
    pos_mean, _ = _segment_means(others, centre, other, positive, len(centres))
    neg_mean, _ = _segment_means(others, centre, other, ~positive, len(centres))
    out = alpha * np.asarray(centres, np.float64) + beta * pos_mean + gamma * neg_mean
    return out.astype(np.float32)


def linear_terms(others: np.ndarray, centre: np.ndarray, other: np.ndarray, positive: np.ndarray,
                 n: int) -> tuple[np.ndarray, np.ndarray]:
    """(mean of positive others, mean of negative others) per centre: eq. 9 for many (beta, gamma) at once."""
    centre, other = np.asarray(centre, np.int64), np.asarray(other, np.int64)
    positive = np.asarray(positive, bool)
    return (_segment_means(others, centre, other, positive, n)[0],
            _segment_means(others, centre, other, ~positive, n)[0])


class _Graph:
    """The edges of a block as a CSR pattern (rows: centres, columns: others), sorted by (centre, other)."""

    def __init__(self, torch, c_e, o_e, pos_e, n: int, m: int, sparse: bool | None = None):
        self.torch, self.c_e, self.o_e, self.pos_e, self.n, self.m = torch, c_e, o_e, pos_e, n, m
        self.sparse = sparse
        self.crow = torch.zeros(n + 1, dtype=torch.int64, device=c_e.device)
        self.crow[1:] = torch.cumsum(torch.bincount(c_e, minlength=n), 0)

    def matrix(self, values):
        return self.torch.sparse_csr_tensor(self.crow, self.o_e, values, size=(self.n, self.m))

    def keep(self, rows):
        """The sub-graph of the centres where ``rows`` (bool, n) holds, renumbered."""
        torch = self.torch
        keep_edges = rows[self.c_e]
        renumber = torch.cumsum(rows.to(torch.int64), 0) - 1
        return _Graph(torch, renumber[self.c_e[keep_edges]], self.o_e[keep_edges], self.pos_e[keep_edges],
                      int(rows.sum()), self.m, self.sparse)


def _forward(torch, C, O, graph: _Graph):
    """Loss per centre and its gradient for centres ``C`` (n x d) against ``O`` (m x d) over ``graph``.

    Scores are a sampled dense-dense product on the sparsity pattern (SDDMM) and the gradient a
    sparse-dense product (SpMM), so no edges x dim array is ever built.
    """
    n, c_e, pos_e = graph.n, graph.c_e, graph.pos_e
    sparse = graph.sparse if graph.sparse is not None else len(c_e) * C.shape[1] >= SPARSE_MIN_ELEMENTS
    if sparse:
        s = torch.sparse.sampled_addmm(graph.matrix(torch.ones_like(pos_e)), C, O.T, beta=0.0).values()
    else:
        O_e = O[graph.o_e]
        s = (C[c_e] * O_e).sum(1)
    # each log-sum-exp is shifted by its own maximum, so positives that score far below a negative
    # do not underflow to exp(.) = 0 (which would make the loss infinite and the gradient nan)
    m = torch.full((n,), -math.inf, dtype=s.dtype, device=s.device).scatter_reduce(0, c_e, s, "amax")
    s_pos = torch.where(pos_e > 0, s, torch.full_like(s, -math.inf))
    m_pos = torch.full((n,), -math.inf, dtype=s.dtype, device=s.device).scatter_reduce(0, c_e, s_pos, "amax")
    e = torch.exp(s - m[c_e])
    e_pos = torch.exp(s_pos - m_pos[c_e])
    z_all = torch.zeros(n, dtype=s.dtype, device=s.device).index_add_(0, c_e, e)
    z_pos = torch.zeros(n, dtype=s.dtype, device=s.device).index_add_(0, c_e, e_pos)
    loss = (m + torch.log(z_all)) - (m_pos + torch.log(z_pos))
    coef = e / z_all[c_e] - e_pos / z_pos[c_e]
    if sparse:
        grad = graph.matrix(coef) @ O
    else:
        grad = torch.zeros_like(C).index_add_(0, c_e, coef[:, None] * O_e)
    return loss, grad


def aopt_loss(centres: np.ndarray, others: np.ndarray, centre: np.ndarray, other: np.ndarray,
              positive: np.ndarray, dtype: str = "float64") -> np.ndarray:
    """The AOpt loss of each centre as it stands (nan for centres without a positive and a negative).

    Per centre c (a passage vector for AOpt-passage, a query vector for AOpt-query), over the fixed
    vectors o joined to it by labelled edges::

        L(c) = -log( sum_{i in pos} exp(c . o_i) / sum_{j in pos + neg} exp(c . o_j) )

    a contrastive loss with several positives; :func:`aopt` descends it.

    Requirements:
        Each centre to be scored has at least one positive and one negative edge.

    Inputs:
        +------------------------------+------------------------------------------------------------+
        | Array                        | Meaning                                                    |
        +==============================+============================================================+
        | ``centres`` (n x d)          | the vectors that move                                      |
        +------------------------------+------------------------------------------------------------+
        | ``others`` (m x d)           | the vectors that stay                                      |
        +------------------------------+------------------------------------------------------------+
        | ``centre``, ``other`` (e)    | edge e joins ``centres[centre[e]]`` to ``others[other[e]]``|
        +------------------------------+------------------------------------------------------------+
        | ``positive`` (e, bool)       | whether edge e is a positive label                         |
        +------------------------------+------------------------------------------------------------+

    Example::

        import math

        import numpy as np

        from pretriever.refine.ops import aopt, aopt_loss

        centres = np.array([[1.0, 0.0]])  # one passage vector
        others = np.array([[1.0, 1.0], [0.0, 2.0]])  # two queries that retrieved it
        centre, other, positive = np.array([0, 0]), np.array([0, 1]), np.array([True, False])
        loss = aopt_loss(centres, others, centre, other, positive)[0]
        assert math.isclose(loss, -math.log(math.exp(1.0) / (math.exp(1.0) + math.exp(0.0))))
        moved = aopt(centres, others, centre, other, positive, lr=0.1, max_epochs=10)
        assert moved.loss_end[0] < loss  # the passage moved towards the query it answers

    References:
        The AOpt paper ("Auto Text Representation Optimization" with pseudo-relevance feedback;
        ../shared/papers/README.md), eqs 10-14; the exponentials are the usual InfoNCE reading of its
        extracted formula (see the module docstring).

    Args:
        centres: the vectors that move (n x d).
        others: the vectors that stay (m x d).
        centre: each edge's centre row.
        other: each edge's other row.
        positive: whether each edge is a positive label.
        dtype: the precision the loss is computed in.

    Returns:
        One loss per centre.
    """
    return aopt(centres, others, centre, other, positive, lr=0.0, max_epochs=0, dtype=dtype).loss_end


def aopt(centres: np.ndarray, others: np.ndarray, centre: np.ndarray, other: np.ndarray, positive: np.ndarray, *,
         lr: float = 0.1, max_epochs: int = 100, patience: int = 5, min_delta: float = 0.0,
         restore_best: bool = True, device: str | None = None, dtype: str = "float32",
         max_edges: int = DEFAULT_MAX_EDGES, sparse: bool | None = None, threads: int | None = None) -> AOptResult:
    """AOpt gradient descent on every centre at once (batch size 1 per vector, run as one batch).

    ``centres`` (n x d) move; ``others`` (m x d) stay; edge ``e`` joins ``centres[centre[e]]`` to
    ``others[other[e]]`` and is positive where ``positive[e]``. Each trainable centre runs up to
    ``max_epochs`` epochs of ``c <- c - lr * dL/dc``; its epoch's loss is measured before that
    epoch's update, and it stops after ``patience`` epochs in a row whose loss did not beat its
    best by more than ``min_delta``. With ``restore_best`` each centre ends at the vector where its
    loss was lowest (the vector after the last update is measured too), else at its last vector.
    Centres are processed in blocks of about ``max_edges`` edges; blocks are independent, so the
    result does not depend on the block size. ``sparse``: force (True) or forbid (False) the
    SDDMM/SpMM kernels; None chooses by size. ``threads``: torch intra-op threads for this call
    (None: torch's default; on a CPU shared with other jobs, 1 is often fastest).

    Args:
        centres: the vectors that move (n x d).
        others: the vectors that stay (m x d).
        centre: each edge's centre row.
        other: each edge's other row.
        positive: whether each edge is a positive label.
        lr: the step size.
        max_epochs: the most epochs per centre.
        patience: epochs without improvement before a centre stops.
        min_delta: the least improvement that counts.
        restore_best: end each centre at its best vector, not its last.
        device: torch device (None: the CPU).
        dtype: ``float32`` or ``float64``.
        max_edges: edges per block.
        sparse: force or forbid the sparse kernels (None: by size).
        threads: torch intra-op threads for this call (None: torch's default).

    Returns:
        The refined centres and per-centre statistics.
    """
    import torch

    if threads is not None and threads != torch.get_num_threads():
        previous = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            return aopt(centres, others, centre, other, positive, lr=lr, max_epochs=max_epochs, patience=patience,
                        min_delta=min_delta, restore_best=restore_best, device=device, dtype=dtype,
                        max_edges=max_edges, sparse=sparse)
        finally:
            torch.set_num_threads(previous)

    centres = np.asarray(centres)
    n, dim = centres.shape
    centre = np.asarray(centre, np.int64)
    other = np.asarray(other, np.int64)
    positive = np.asarray(positive, bool)
    n_pos = np.bincount(centre[positive], minlength=n)
    n_neg = np.bincount(centre[~positive], minlength=n)
    trainable = (n_pos > 0) & (n_neg > 0)
    out = np.array(centres, dtype=np.dtype(dtype), copy=True)
    loss_start = np.full(n, np.nan)
    loss_end = np.full(n, np.nan)
    epochs = np.zeros(n, dtype=np.int64)
    early = np.zeros(n, dtype=bool)
    keep = trainable[centre]
    centre, other, positive = centre[keep], other[keep], positive[keep]
    order = np.lexsort((other, centre))
    centre, other, positive = centre[order], other[order], positive[order]
    ids = np.flatnonzero(trainable)
    if not len(ids):
        return AOptResult(out, trainable, loss_start, loss_end, epochs, early)
    tdtype = {"float32": torch.float32, "float64": torch.float64}[dtype]
    dev = torch.device(device or "cpu")
    # block boundaries at centre boundaries, about max_edges edges each
    starts = np.searchsorted(centre, ids)
    ends = np.r_[starts[1:], len(centre)]
    block_start = 0
    while block_start < len(ids):
        block_end = max(block_start + 1, int(np.searchsorted(ends, starts[block_start] + max_edges, side="right")))
        rows = ids[block_start:block_end]
        lo, hi = starts[block_start], ends[block_end - 1]
        local = np.searchsorted(rows, centre[lo:hi])
        used, col = np.unique(other[lo:hi], return_inverse=True)
        graph = _Graph(torch, torch.as_tensor(local, device=dev), torch.as_tensor(col.astype(np.int64), device=dev),
                       torch.as_tensor(positive[lo:hi], dtype=tdtype, device=dev), len(rows), len(used), sparse)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Ss]parse.*")
            res = _aopt_block(torch, torch.as_tensor(np.asarray(centres[rows]), dtype=tdtype, device=dev),
                              torch.as_tensor(np.asarray(others[used]), dtype=tdtype, device=dev), graph,
                              lr, max_epochs, patience, min_delta, restore_best)
        out[rows], loss_start[rows], loss_end[rows], epochs[rows], early[rows] = res
        block_start = block_end
    return AOptResult(out, trainable, loss_start, loss_end, epochs, early)


def _aopt_block(torch, C, O, graph: _Graph, lr, max_epochs, patience, min_delta, restore_best):
    n = C.shape[0]
    start = C.clone()
    best = C.clone()
    best_loss = torch.full((n,), math.inf, dtype=C.dtype, device=C.device)
    first = None
    wait = torch.zeros(n, dtype=torch.int64, device=C.device)
    epochs = torch.zeros(n, dtype=torch.int64, device=C.device)
    early = torch.zeros(n, dtype=torch.bool, device=C.device)
    # the centres still running and their edges (compacted as centres stop)
    run_ids = torch.arange(n, device=C.device)
    g = graph
    for _ in range(max_epochs):
        C_run = C[run_ids]
        loss, grad = _forward(torch, C_run, O, g)
        if first is None:
            first = loss.clone()
        improved = torch.isfinite(loss) & (loss < best_loss[run_ids] - min_delta)  # nan or inf: not improved
        better_ids = run_ids[improved]
        best_loss[better_ids] = loss[improved]
        best[better_ids] = C_run[improved]
        wait[run_ids] = torch.where(improved, torch.zeros_like(wait[run_ids]), wait[run_ids] + 1)
        C[run_ids] = C_run - lr * grad  # this epoch's update
        epochs[run_ids] += 1
        stop = wait[run_ids] >= patience
        if bool(stop.any()):
            early[run_ids[stop]] = True
            run_ids = run_ids[~stop]
            if not len(run_ids):
                break
            g = g.keep(~stop)
    if first is None:  # max_epochs == 0: just measure
        first, _ = _forward(torch, C, O, graph)
        best_loss = first.clone()
    elif len(run_ids):  # centres that ran out of epochs: measure the vector after their last update
        loss, _ = _forward(torch, C[run_ids], O, g)
        improved = torch.isfinite(loss) & (loss < best_loss[run_ids] - min_delta)
        best_loss[run_ids[improved]] = loss[improved]
        best[run_ids[improved]] = C[run_ids[improved]]
    if restore_best:
        final, final_loss = best, best_loss
    else:
        final = C
        final_loss, _ = _forward(torch, C, O, graph)
    broken = ~torch.isfinite(final).all(1)  # an overflowed vector is never written: keep where it started
    final[broken], final_loss[broken] = start[broken], first[broken]
    return (final.cpu().numpy(), first.double().cpu().numpy(), final_loss.double().cpu().numpy(),
            epochs.cpu().numpy(), early.cpu().numpy())
