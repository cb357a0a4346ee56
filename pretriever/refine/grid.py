"""``pretriever refine grid``: the paper's Figure 6 sweep of linear re-weighting (eq. 9).

beta (weight of the mean positive query) runs over 0 .. 0.9 and gamma (weight of the mean
negative query) over 0 .. -0.9, alpha fixed at 1. Pseudo-labels are built once from the *fit*
queries (eq. 9 is a single pass); every grid point rewrites the labelled passages and is scored
on the *validation* queries. Honest protocol (default): fit and validation are a seeded random
split of the feedback (training) queries, so the chosen point never saw a test label. With
``--oracle`` fit and validation are the same queries, as in the paper's Figure 6 (a leak).

Writes ``grid.json`` (every metric at every point, rows gamma, columns beta; the best point by
``select_metric``) and ``grid.png`` (one heat map per metric, like Figure 6).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pretriever.index import IndexFolder
from pretriever.io import atomic_path, write_json
from pretriever.progress import QUIET, Reporter
from pretriever.refine.config import RefineConfig
from pretriever.refine.labels import build_labels
from pretriever.refine.ops import linear_terms
from pretriever.refine.errors import RefineError
from pretriever.refine.pipeline import ORACLE_WARNING, open_feedback
from pretriever.refine.scoring import Scorer, default_metric, metric_names
from pretriever.refine.search import PatchedSearcher
from pretriever.stage import OutputFolder, StageResult

GRID_JSON = "grid.json"
GRID_PNG = "grid.png"


def split_queries(n: int, validation: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(fit, validation) positions: a seeded random split, validation share ``validation``."""
    order = np.random.default_rng(seed).permutation(n)
    n_val = int(round(validation * n))
    return np.sort(order[n_val:]), np.sort(order[:n_val])


@dataclass(kw_only=True)
class GridResult(StageResult):
    """The grid's folder (``out``), its grid.json (``manifest``: every metric at every point, the best point)
    and the heat map written (``plot``; None without one)."""

    plot: Path | None = None


def run(cfg: RefineConfig, report: Reporter = QUIET, *, query_vectors: np.ndarray | None = None, model=None,
        plot: bool = True) -> GridResult:
    """Score every (beta, gamma) point of ``cfg`` and write grid.json (and grid.png with ``plot``);
    ``report`` hears each step and the points scored (task ``grid``)."""
    say = report.message
    if cfg.feedback == "topk":
        raise RefineError("the grid is scored with labels: use --feedback qrels or answers")
    folder = OutputFolder(cfg.out, stage="refine grid", holds="a refine grid", owns=(GRID_JSON, GRID_PNG),
                          error=RefineError, report=report)
    folder.check()  # before the work: an earlier grid's files are replaced, anyone else's folder refused
    feedback, protocol = open_feedback(cfg, report)
    if cfg.oracle:
        say(ORACLE_WARNING)
        fit, val = np.arange(len(feedback)), np.arange(len(feedback))
    else:
        if cfg.validation <= 0:
            raise RefineError("the honest grid scores a validation split of the feedback queries: give "
                              "--validation > 0 (or --oracle to score on the feedback queries themselves)")
        fit, val = split_queries(len(feedback), cfg.validation, cfg.seed)
    index = IndexFolder(cfg.index)
    dense = index.dense(model=model, device=cfg.device)
    lookup = index.store()
    try:
        started = time.perf_counter()
        if query_vectors is None:
            say(f"encoding {len(feedback):,} feedback queries")
            query_vectors = dense.encode_queries(feedback.texts, batch_size=cfg.batch_size)
        query_vectors = np.ascontiguousarray(query_vectors, dtype=np.float32)
        ids = dense.passage_ids
        fit_fb, val_fb = feedback.subset(fit), feedback.subset(val)
        q_fit, q_val = query_vectors[fit], query_vectors[val]
        searcher = PatchedSearcher.of(dense)
        labels = build_labels(q_fit, searcher, cfg.k, fit_fb.judge(ids, lookup, cfg.k_pos, cfg.match))
        centres = labels.passages()
        local = np.searchsorted(centres, labels.row)
        pos_mean, neg_mean = linear_terms(q_fit, local, labels.query, labels.positive, len(centres))
        base = searcher.current(centres).astype(np.float64)
        doc_ids = None if lookup is None or lookup.documents_whole else lookup.doc_ids
        scorer = Scorer(val_fb, ids, val_fb.judge(ids, lookup, cfg.k_pos, cfg.match), doc_ids)
        names = metric_names(feedback.kind)
        select = cfg.select_metric or default_metric(feedback.kind)
        if select not in names:
            raise RefineError(f"select_metric must be one of {', '.join(names)}, got {select!r}")
        values = {m: np.zeros((len(cfg.gammas), len(cfg.betas))) for m in names}
        say(f"grid: {len(cfg.betas)} x {len(cfg.gammas)} points; labels from {len(fit):,} queries, "
            f"scored on {len(val):,}")
        for gi, gamma in enumerate(cfg.gammas):
            for bi, beta in enumerate(cfg.betas):
                new = (base + beta * pos_mean + gamma * neg_mean).astype(np.float32)
                searcher.set_rows(centres, new)
                scores, rows = searcher.search_arrays(q_val, scorer.fetch)
                for m, v in scorer.score(scores, rows, names).items():
                    values[m][gi, bi] = v
                report.progress("grid", gi * len(cfg.betas) + bi + 1, len(cfg.gammas) * len(cfg.betas), unit="points")
        grid_seconds = time.perf_counter() - started
        sel = values[select]
        gi, bi = np.unravel_index(np.argmax(sel), sel.shape)  # ties: the first (smallest |gamma|, beta)
        base_point = [(g, b) for g, b in ((cfg.gammas.index(0.0) if 0.0 in cfg.gammas else None,
                                           cfg.betas.index(0.0) if 0.0 in cfg.betas else None),) if g is not None
                      and b is not None]
        result = {
            "protocol": protocol["name"],
            "protocol_detail": protocol,
            "index": str(cfg.index),
            "feedback": {"kind": feedback.kind, **feedback.sources},
            "split": {"fit": int(len(fit)), "validation": int(len(val)), "seed": cfg.seed,
                      "scored_on": "the fit queries themselves (oracle)" if cfg.oracle else
                      "a held-out validation split of the feedback queries"},
            "k": cfg.k,
            "labels": labels.stats(),
            "alpha": 1.0,
            "betas": cfg.betas,
            "gammas": cfg.gammas,
            "metrics": {m: v.round(6).tolist() for m, v in values.items()},
            "layout": "metrics[m][i][j] is gamma = gammas[i], beta = betas[j]",
            "select_metric": select,
            "best": {"beta": cfg.betas[bi], "gamma": cfg.gammas[gi],
                     **{m: float(values[m][gi, bi]) for m in names}},
            "base": ({m: float(values[m][base_point[0]]) for m in names} if base_point else None),
            "seconds": round(grid_seconds, 3),
        }
        out = Path(cfg.out)
        folder.claim()
        write_json(out / GRID_JSON, result)
        if plot:
            plot_grid(result, out / GRID_PNG)
        folder.seal()
        return GridResult(out=out, manifest=result, plot=out / GRID_PNG if plot else None)
    finally:
        if lookup is not None:
            lookup.close()


def plot_grid(result: dict[str, Any], path: Path) -> None:
    """One heat map per metric (x: beta, y: gamma), the best point boxed, like the paper's Figure 6."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(result["metrics"])
    betas, gammas = result["betas"], result["gammas"]
    cols = 2 if len(names) > 1 else 1
    rows = (len(names) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 5.2 * rows), squeeze=False)
    for ax, name in zip(axes.ravel(), names):
        data = np.array(result["metrics"][name])
        im = ax.imshow(data, cmap="viridis", origin="upper", aspect="auto")
        ax.set_xticks(range(len(betas)), [f"{b:g}" for b in betas])
        ax.set_yticks(range(len(gammas)), [f"{g:g}" for g in gammas])
        ax.set_xlabel("beta (mean positive query)")
        ax.set_ylabel("gamma (mean negative query)")
        ax.set_title(name)
        if data.size <= 144:
            for i in range(data.shape[0]):
                for j in range(data.shape[1]):
                    ax.text(j, i, f"{100 * data[i, j]:.1f}", ha="center", va="center", fontsize=6,
                            color="white" if data[i, j] < data.mean() else "black")
        best = np.unravel_index(np.argmax(data), data.shape)
        ax.add_patch(plt.Rectangle((best[1] - 0.5, best[0] - 0.5), 1, 1, fill=False, edgecolor="red", lw=2))
        fig.colorbar(im, ax=ax, fraction=0.046)
    for ax in axes.ravel()[len(names):]:
        ax.axis("off")
    tag = "ORACLE (feedback = evaluation queries)" if result["protocol"] == "oracle" else \
        f"honest: labels from {result['split']['fit']} queries, scored on {result['split']['validation']} held out"
    fig.suptitle(f"linear re-weighting p' = p + beta*pos_q + gamma*neg_q  [{tag}]", fontsize=10)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
