"""Refine stage benchmark: speed of a refinement round, and SciFact effectiveness.

Two parts (run both by default; ``--part perf`` or ``--part scifact`` for one):

* **perf** - one AOpt-passage round on synthetic unit vectors (dim 384, like all-MiniLM-L6-v2)
  at several sizes (passages N x feedback queries Q, k = 100, topk labels k' = 5, the paper's
  AOpt settings: lr 0.1, <= 100 epochs, patience 5), split into retrieve + label, optimise and
  re-index (the patched index of :mod:`pretriever.refine.search`), beside a full flat
  rebuild for comparison. Then a least-squares fit time = a * Q*k (edges) for the optimise
  step and time = b * Q*N for exact retrieval, used to extrapolate to 21M Wikipedia
  passages and NQ's 58,880 training questions. Also the real thing: every method on
  SciFact's 5,183 abstracts with its 809 training claims (qrels feedback).
* **scifact** - the results table: the base model against linear (the best grid point chosen on
  a validation split of the TRAINING claims), aopt-passage, aopt-query (label-free topk at test
  time, k' chosen on the validation split) and hybrid, honest protocol, nDCG@10 and Recall@100
  on the 300 SciFact test claims; then the oracle variants (test labels, the paper's protocol);
  and how much of the test judgments training feedback could touch at all.

    python bench/bench_refine.py [--index /tmp/refine_work/index] [--work /tmp/refine_work] [--part perf|scifact|all]

Saves ``bench/out/refine_perf.json`` and ``bench/out/refine_scifact.json`` and prints tables.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "data" / "beir" / "scifact"
OUT_DIR = REPO / "bench" / "out"
DIM = 384
K = 100
K_POS = 5
WIKI_N = 21_015_324
NQ_TRAIN = 58_880

console = Console(width=max(shutil.get_terminal_size().columns, 130))


# --- perf ------------------------------------------------------------------------------------------

def synthetic(n: int, q: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    passages = rng.standard_normal((n, DIM), dtype=np.float32)
    passages /= np.linalg.norm(passages, axis=1, keepdims=True)
    # queries near random passages, so top-k lists overlap the way real ones do
    near = passages[rng.integers(0, n, q)] + 0.08 * rng.standard_normal((q, DIM), dtype=np.float32)
    return passages, (near / np.linalg.norm(near, axis=1, keepdims=True)).astype(np.float32)


def one_round(passages: np.ndarray, queries: np.ndarray, threads: int) -> dict:
    import faiss
    import torch

    from pretriever.index.faiss_index import build_faiss_index
    from pretriever.refine.labels import TopkJudge, build_labels
    from pretriever.refine.ops import aopt
    from pretriever.refine.search import PatchedSearcher

    torch.set_num_threads(threads)
    faiss.omp_set_num_threads(threads)
    t = time.perf_counter()
    index = build_faiss_index(passages)
    build = time.perf_counter() - t
    searcher = PatchedSearcher(index, passages)
    t0 = time.perf_counter()
    labels = build_labels(queries, searcher, K, TopkJudge(K_POS))
    t1 = time.perf_counter()
    centres = labels.passages()
    local = np.searchsorted(centres, labels.row)
    res = aopt(searcher.current(centres), queries, local, labels.query, labels.positive)
    t2 = time.perf_counter()
    searcher.set_rows(centres[res.trainable], res.vectors[res.trainable])
    t3 = time.perf_counter()
    scores, rows = searcher.search_arrays(queries, K)  # the next round's retrieval, over the patched index
    t4 = time.perf_counter()
    full = passages.copy()
    full[centres[res.trainable]] = res.vectors[res.trainable]
    t5 = time.perf_counter()
    rebuilt = faiss.IndexFlatIP(DIM)
    rebuilt.add(full)
    t6 = time.perf_counter()
    _, ref = rebuilt.search(queries, K)
    same = float((ref == rows).mean())
    summary = res.summary()
    return {"passages": len(passages), "queries": len(queries), "edges": int(len(labels)),
            "labelled_passages": int(len(centres)), "trained": summary["trained"],
            "epochs_mean": round(summary["epochs_mean"], 1), "stopped_early": summary["stopped_early"],
            "seconds": {"retrieve_label": round(t1 - t0, 3), "optimise": round(t2 - t1, 3),
                        "reindex_patched": round(t3 - t2, 4), "search_patched": round(t4 - t3, 3),
                        "reindex_full_flat": round(t6 - t5, 3), "initial_flat_build": round(build, 3),
                        "round": round(t3 - t0, 3)},
            "patched_equals_rebuilt": same}


def scifact_methods(index_dir: Path, work: Path, threads: int) -> list[dict]:
    """Every method on the real SciFact index with the 809 training claims (qrels), timed per round."""
    from pretriever.refine import RefineConfig
    from pretriever.refine import pipeline as refinement

    vectors, _ = training_vectors(index_dir, work)
    rows = []
    for method in ("linear", "aopt-passage", "aopt-query", "hybrid"):
        cfg = RefineConfig(index=index_dir, out=work / "bench-tmp" / method, queries=SCIFACT / "queries.jsonl",
                           qrels=SCIFACT / "qrels" / "train.tsv", feedback="qrels", method=method, overwrite=True,
                           label_texts=False, threads=threads)
        t = time.perf_counter()
        meta = refinement.run(cfg, query_vectors=vectors).manifest
        total = time.perf_counter() - t
        for r in meta.refine["rounds"]:
            rows.append({"method": method, "side": r["side"], "round": r["round"], **r["seconds"],
                         "edges": r["labels"]["edges"], "moved": r["optimise"].get("trained", r["optimise"].get("moved")),
                         "epochs_mean": r["optimise"].get("epochs_mean")})
        rows.append({"method": method, "side": "all", "round": None, "total_with_write": round(total, 3)})
    shutil.rmtree(work / "bench-tmp", ignore_errors=True)
    return rows


def run_perf(index_dir: Path, work: Path, threads: int, sizes: list[tuple[int, int]]) -> dict:
    results = []
    for n, q in sizes:
        console.print(f"[dim]synthetic round: N={n:,} passages, Q={q:,} queries[/dim]")
        passages, queries = synthetic(n, q)
        results.append(one_round(passages, queries, threads))
        del passages
    table = Table(title=f"one AOpt-passage round, synthetic dim {DIM}, k={K}, {threads} thread(s)")
    for col in ("N passages", "Q queries", "edges", "moved", "epochs", "retrieve+label s", "optimise s",
                "re-index (patched) s", "round s", "full flat rebuild s", "patched = rebuilt"):
        table.add_column(col, justify="right")
    for r in results:
        s = r["seconds"]
        table.add_row(f"{r['passages']:,}", f"{r['queries']:,}", f"{r['edges']:,}", f"{r['trained']:,}",
                      f"{r['epochs_mean']}", f"{s['retrieve_label']:.2f}", f"{s['optimise']:.2f}",
                      f"{s['reindex_patched']:.3f}", f"{s['round']:.2f}", f"{s['reindex_full_flat']:.2f}",
                      f"{r['patched_equals_rebuilt']:.3f}")
    console.print(table)
    # fits: optimise ~ a * edges * epochs; exact retrieval ~ b * Q * N
    edges_epochs = np.array([r["edges"] * r["epochs_mean"] for r in results])
    opt = np.array([r["seconds"]["optimise"] for r in results])
    a = float((edges_epochs @ opt) / (edges_epochs @ edges_epochs))
    qn = np.array([r["queries"] * r["passages"] for r in results], dtype=np.float64)
    ret = np.array([r["seconds"]["retrieve_label"] for r in results])
    b = float((qn @ ret) / (qn @ qn))
    nq_edges = NQ_TRAIN * K
    extrapolation = {
        "assumptions": f"NQ train {NQ_TRAIN:,} questions x k={K} edges, {WIKI_N:,} passages, dim 768 "
                       "(DPR; costs scale with dim, so x2 over the dim-384 fits), 100 epochs, this machine's "
                       f"{threads} thread(s)",
        "optimise_seconds_per_edge_epoch_dim384": a,
        "exact_retrieval_seconds_per_query_passage_dim384": b,
        "optimise_round_seconds": round(a * nq_edges * 100 * 2, 1),
        "exact_flat_retrieval_round_seconds": round(b * NQ_TRAIN * WIKI_N * 2, 1),
        "patched_reindex": "O(changed rows): a flat delta index over at most Q*k rows + an ID filter on the base "
                           "index; no O(N) rebuild inside the loop",
        "final_write": "one streamed pass over N x dim (PatchedVectors) + one FAISS build of the output index",
    }
    console.print(f"fit: optimise {a:.3g} s per edge-epoch; exact retrieval {b:.3g} s per query-passage (dim 384)")
    console.print(f"21M x NQ-train extrapolation (dim 768): optimise {extrapolation['optimise_round_seconds']:,.0f} s "
                  f"per round; exact flat retrieval {extrapolation['exact_flat_retrieval_round_seconds']:,.0f} s per round")
    have_index = index_dir is not None and (index_dir / "index.json").exists()
    real = scifact_methods(index_dir, work, threads) if have_index else []
    if real:
        t2 = Table(title="SciFact: 5,183 abstracts x 809 training claims (qrels), seconds per round")
        for col in ("method", "side", "round", "edges", "moved", "epochs", "retrieve+label", "optimise", "re-index",
                    "round total", "all + write"):
            t2.add_column(col, justify="right")
        for r in real:
            t2.add_row(r["method"], r["side"], str(r.get("round") or ""), f"{r.get('edges', '')}",
                       f"{r.get('moved', '')}", f"{r.get('epochs_mean') or ''}", f"{r.get('retrieve_label', '')}",
                       f"{r.get('optimise', '')}", f"{r.get('reindex', '')}", f"{r.get('total', '')}",
                       f"{r.get('total_with_write', '')}")
        console.print(t2)
    return {"synthetic": results, "extrapolation": extrapolation, "scifact": real, "threads": threads}


# --- SciFact effectiveness ------------------------------------------------------------------------

def training_vectors(index_dir: Path, work: Path):
    """The 809 training claims (qrels/train.tsv order) and their vectors, encoded once and cached."""
    from pretriever.refine.labels import load_feedback

    fb = load_feedback("qrels", SCIFACT / "queries.jsonl", SCIFACT / "qrels" / "train.tsv")
    return encode_cached(index_dir, work, "train", fb.texts), fb


_MODEL = {}


def model():
    if "m" not in _MODEL:
        from pretriever.models import load_model

        _MODEL["m"] = load_model(None)
    return _MODEL["m"]


def encode_cached(index_dir: Path, work: Path, name: str, texts: list[str]) -> np.ndarray:
    from pretriever.index import DenseIndex

    path = work / f"queries-{name}.npy"
    if path.exists():
        vectors = np.load(path)
        if len(vectors) == len(texts):
            return vectors
    vectors = DenseIndex.load(index_dir, model=model()).encode_queries(texts)
    np.save(path, vectors)
    return vectors


class CachedEncoder:
    """A model stand-in that serves cached query vectors (the SciFact claims, encoded once)."""

    def __init__(self, table: dict[str, np.ndarray], inner):
        self.table, self.inner = table, inner
        self.max_seq_length = inner.max_seq_length

    def encode(self, texts, **kw):
        missing = [t for t in texts if t not in self.table]
        if missing:
            for t, v in zip(missing, self.inner.encode(missing, **kw)):
                self.table[t] = np.asarray(v, np.float32)
        return np.stack([self.table[t] for t in texts])


def evaluate(systems, queries, qrels) -> dict:
    from pretriever.evaluate import EvaluationOptions, QrelsTask, evaluate_retrievers

    res = evaluate_retrievers(systems, QrelsTask(queries, qrels), EvaluationOptions(overlap=False))
    return {name: {"nDCG@10": m["nDCG@10"], "Recall@100": m["Recall@100"]} for name, m in res.systems.items()}


def run_scifact(index_dir: Path, work: Path, threads: int | None) -> dict:
    from pretriever.data import load_qrels, load_queries, queries_in_qrels
    from pretriever.index import DenseIndex
    from pretriever.refine import RefineConfig, RefinedIndex
    from pretriever.refine import pipeline as refinement
    from pretriever.refine import grid as refine_grid
    from pretriever.refine.grid import split_queries
    from pretriever.refine.labels import QrelsJudge, build_labels, load_feedback
    from pretriever.refine.scoring import Scorer
    from pretriever.refine.search import PatchedSearcher

    queries_file, train_q, test_q = SCIFACT / "queries.jsonl", SCIFACT / "qrels" / "train.tsv", SCIFACT / "qrels" / "test.tsv"
    test_qrels = load_qrels(test_q)
    test = queries_in_qrels(load_queries(queries_file), test_qrels)
    train_vecs, fb_train = training_vectors(index_dir, work)
    fb_test = load_feedback("qrels", queries_file, test_q)
    test_vecs = encode_cached(index_dir, work, "test", fb_test.texts)
    enc = CachedEncoder(dict(zip(fb_train.texts, train_vecs)) | dict(zip(fb_test.texts, test_vecs)), model())
    out: dict = {"honest": {}, "oracle": {}, "choices": {}, "validation": {}}
    runs = work / "runs"
    base = DenseIndex.load(index_dir, model=enc)
    out["honest"]["base"] = evaluate([base], test, test_qrels)[base.name]
    console.print(f"base: {out['honest']['base']}")
    common = dict(index=index_dir, queries=queries_file, feedback="qrels", overwrite=True, label_texts=False,
                  threads=threads, normalize=False)  # every row states its own settings
    paper = dict(preset="paper", max_epochs=100, patience=5)

    # the validation split of the TRAINING claims (the grid's own split): settings are chosen on it
    fit, val = split_queries(len(fb_train), 0.2, 0)
    fb_fit, fb_val = fb_train.subset(fit), fb_train.subset(val)
    val_queries = dict(zip(fb_val.ids, fb_val.texts))
    val_qrels = {q: fb_val.qrels[q] for q in fb_val.ids}
    fit_qrels = work / "train-fit.tsv"
    with open(fit_qrels, "w") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for q in fb_fit.ids:
            for d, g in fb_fit.qrels[q].items():
                f.write(f"{q}\t{d}\t{g}\n")
    fit_vecs = train_vecs[fit]
    out["validation"]["base"] = evaluate([base], val_queries, val_qrels)[base.name]["nDCG@10"]

    def on_val(**settings) -> float:
        """nDCG@10 on the validation claims of a refinement made with the fit claims only."""
        refinement.run(RefineConfig(out=runs / "val", qrels=fit_qrels, **{**common, **settings}), query_vectors=fit_vecs)
        idx = RefinedIndex.load(runs / "val", model=enc, stored_queries=False, threads=threads)
        return evaluate([idx], val_queries, val_qrels)[idx.name]["nDCG@10"]

    def pick(name: str, grid: list[dict]) -> dict:
        scores = [(on_val(**g), i) for i, g in enumerate(grid)]
        best = max(scores, key=lambda t: (t[0], -t[1]))
        out["validation"][name] = [{**g, "nDCG@10": v} for (v, _), g in zip(scores, grid)]
        console.print(f"{name}: best on validation {grid[best[1]]} nDCG@10 {best[0]:.4f} "
                      f"(base {out['validation']['base']:.4f})")
        return grid[best[1]]

    def final(label: str, **settings) -> None:
        folder = runs / label.replace(" ", "_").replace("/", "-")
        refinement.run(RefineConfig(out=folder, qrels=train_q, **{**common, **settings}), query_vectors=train_vecs)
        idx = RefinedIndex.load(folder, model=enc, threads=threads, name=label)
        out["honest"][label] = {**evaluate([idx], test, test_qrels)[label], "settings": settings}
        console.print(f"{label}: {out['honest'][label]}")

    # 1. linear: the grid on fit -> validation, then refit on all 809 training claims
    grid = refine_grid.run(RefineConfig(out=work / "grid-honest", qrels=train_q, validation=0.2, **common),
                           query_vectors=train_vecs).manifest
    best = grid["best"]
    out["choices"]["linear"] = {"beta": best["beta"], "gamma": best["gamma"], "validation_nDCG@10": best["nDCG@10"]}
    final("linear (grid-tuned)", method="linear", beta=best["beta"], gamma=best["gamma"])
    final("linear (paper 0.6/-0.1)", method="linear", beta=0.6, gamma=-0.1)

    # 2. aopt-passage: the paper's settings, and lr / normalisation / rounds chosen on validation
    final("aopt-passage (paper)", method="aopt-passage", **paper)
    ap = pick("aopt-passage", [dict(method="aopt-passage", learning_rate=lr, normalize=nm, rounds=r)
                               for lr in (0.1, 0.01, 0.001) for nm in (False, True) for r in (1, 2)])
    out["choices"]["aopt-passage"] = ap
    final("aopt-passage (tuned)", **ap)

    # 3. aopt-query, label-free topk feedback at test time: k' (paper lr) and lr x k' chosen on validation
    aq_paper = pick("aopt-query (paper lr)", [dict(method="aopt-query", k_pos=kp, **paper) for kp in (1, 3, 5, 10)])
    final("aopt-query topk (paper lr)", **aq_paper)
    aq = pick("aopt-query", [dict(method="aopt-query", k_pos=kp, learning_rate=lr) for lr in (0.01, 0.001) for kp in (1, 3, 10)])
    out["choices"]["aopt-query"] = aq
    final("aopt-query topk (tuned)", **aq)

    # 4. hybrid: passages, then test-time topk queries against them
    final("hybrid (paper)", method="hybrid", k_pos=aq_paper["k_pos"], **paper)
    final("hybrid (tuned)", method="hybrid", k_pos=aq["k_pos"], learning_rate=ap["learning_rate"], normalize=ap["normalize"],
          rounds=ap["rounds"])

    # diagnostic: is it the representation or a prior? Scale every passage that is relevant to some
    # training claim by (1 + s), nothing else; s chosen on validation
    dense = DenseIndex.load(index_dir)
    ids = dense.passage_ids

    def prior_searcher(fb, vecs, scale):
        labels = build_labels(vecs, PatchedSearcher.of(dense), K, QrelsJudge(fb.ids, fb.qrels, ids))
        rows = np.unique(labels.row[labels.positive])
        searcher = PatchedSearcher.of(dense)
        searcher.set_rows(rows, np.asarray(dense.embeddings)[rows] * (1 + scale))
        return searcher, rows

    val_scorer = Scorer(fb_val, ids)
    prior_val = {}
    for scale in (0.02, 0.05, 0.1, 0.2, 0.5):
        searcher, _ = prior_searcher(fb_fit, fit_vecs, scale)
        prior_val[scale] = val_scorer.score(*searcher.search_arrays(train_vecs[val], K), ["nDCG@10"])["nDCG@10"]
    s_best = max(prior_val, key=lambda s: (prior_val[s], -s))
    searcher, boosted = prior_searcher(fb_train, train_vecs, s_best)
    test_scorer = Scorer(fb_test, ids)
    out["honest"]["control: scale training-positive passages"] = {
        **test_scorer.score(*searcher.search_arrays(test_vecs, K), ["nDCG@10", "Recall@100"]),
        "settings": {"scale": 1 + s_best, "validation_nDCG@10": prior_val}}

    # oracle: the feedback is the 300 test claims with their test labels (the paper's protocol)
    ocommon = dict(common, qrels=test_q, oracle=True)
    grid_o = refine_grid.run(RefineConfig(out=work / "grid-oracle", **ocommon), query_vectors=test_vecs).manifest
    out["choices"]["linear-oracle"] = {"beta": grid_o["best"]["beta"], "gamma": grid_o["best"]["gamma"]}
    for label, settings in (("linear (grid on test)", dict(method="linear", beta=grid_o["best"]["beta"],
                                                            gamma=grid_o["best"]["gamma"])),
                            ("aopt-passage (paper)", dict(method="aopt-passage", **paper)),
                            ("aopt-query (paper, test labels)", dict(method="aopt-query", **paper)),
                            ("hybrid (paper, test labels)", dict(method="hybrid", **paper)),
                            ("aopt-passage (tuned)", ap)):
        folder = runs / ("oracle-" + label.split(" ")[0] + ("-tuned" if "tuned" in label else ""))
        refinement.run(RefineConfig(out=folder, **{**ocommon, **settings}), query_vectors=test_vecs)
        idx = RefinedIndex.load(folder, model=enc, threads=threads, name=label)
        out["oracle"][label] = {**evaluate([idx], test, test_qrels)[label], "settings": settings}
        console.print(f"ORACLE {label}: {out['oracle'][label]}")

    # how much of the test judgments can training feedback touch at all?
    import pyarrow.parquet as pq

    folder = runs / "aopt-passage_(tuned)"
    lab = pq.read_table(folder / "refine" / "labels_passages.parquet", columns=["passage_id", "n_positive"]).to_pylist()
    touched = {r["passage_id"] for r in lab}
    positive = {r["passage_id"] for r in lab if r["n_positive"] > 0}
    emb_base, emb_ref = np.asarray(dense.embeddings), np.asarray(DenseIndex.load(folder).embeddings)
    moved = {ids[i] for i in np.flatnonzero(~np.all(emb_base == emb_ref, axis=1))}
    test_rel = {d for q in test_qrels.values() for d, g in q.items() if g >= 1}
    train_rel = {d for q in fb_train.qrels.values() for d, g in q.items() if g >= 1}
    out["overlap"] = {
        "test_relevant_documents": len(test_rel),
        "train_relevant_documents": len(train_rel),
        "test_relevant_also_train_relevant": len(test_rel & train_rel),
        "test_claims_with_a_train_relevant_document": sum(1 for q in test_qrels.values() if set(q) & train_rel),
        "passages_labelled_by_training_feedback": len(touched),
        "passages_with_a_training_positive": len(positive),
        "passages_moved_by_aopt_passage_tuned": len(moved),
        "test_relevant_labelled": len(test_rel & touched),
        "test_relevant_with_training_positive": len(test_rel & positive),
        "test_relevant_moved": len(test_rel & moved),
    }
    out["per_round_seconds"] = json.loads((folder / "index.json").read_text())["refine"]["rounds"]
    # nDCG@10 split by whether a test claim's relevant documents were training-relevant
    per = {}
    for label in ("base", "linear (grid-tuned)", "aopt-passage (tuned)"):
        idx = DenseIndex.load(index_dir if label == "base" else runs / label.replace(" ", "_"), model=enc)
        from pretriever.evaluate import EvaluationOptions, QrelsTask, evaluate_retrievers

        res = evaluate_retrievers([idx], QrelsTask(test, test_qrels), EvaluationOptions(overlap=False))
        pq_ = res.per_query[idx.name]
        seen = [q for q in test_qrels if set(test_qrels[q]) & train_rel]
        unseen = [q for q in test_qrels if q not in set(seen)]
        per[label] = {"claims_with_a_train_relevant_doc": {"n": len(seen), "nDCG@10": float(np.mean([pq_[q]["nDCG@10"] for q in seen]))},
                      "other_claims": {"n": len(unseen), "nDCG@10": float(np.mean([pq_[q]["nDCG@10"] for q in unseen]))}}
    out["by_overlap"] = per
    print_scifact(out)
    return out


def print_scifact(out: dict) -> None:
    table = Table(title="SciFact test (300 claims): refinement, all-MiniLM-L6-v2 base")
    for col in ("protocol", "system", "nDCG@10", "Recall@100"):
        table.add_column(col, justify="right" if col[0].isupper() and col != "protocol" else "left")
    for protocol in ("honest", "oracle"):
        for name, m in out[protocol].items():
            if not isinstance(m, dict) or "nDCG@10" not in m:
                continue
            table.add_row(protocol.upper() if protocol == "oracle" else protocol, name, f"{m['nDCG@10']:.4f}",
                          f"{m['Recall@100']:.4f}")
    console.print(table)
    console.print(f"choices (validation split of the training claims): {json.dumps(out['choices'])}")
    console.print(out["overlap"])
    console.print(out["by_overlap"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, default=Path("/tmp/refine_work/index"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/refine_work"))
    parser.add_argument("--part", choices=("perf", "scifact", "all"), default="all")
    parser.add_argument("--threads", type=int, default=1, help="torch/FAISS threads for refinement (1: fastest on "
                        "a CPU shared with other jobs)")
    parser.add_argument("--sizes", default="10000x809,100000x809,100000x8090,1000000x809",
                        help="NxQ sizes of the synthetic rounds")
    args = parser.parse_args(argv)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    if args.part in ("perf", "all"):
        sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]
        perf = run_perf(args.index, args.work, args.threads, sizes)
        (OUT_DIR / "refine_perf.json").write_text(json.dumps(perf, indent=2) + "\n")
    if args.part in ("scifact", "all"):
        if not (args.index / "index.json").exists():
            console.print(f"[red]no index at {args.index}: build one with `pretriever index build`[/red]")
            return 2
        res = run_scifact(args.index, args.work, args.threads)
        (OUT_DIR / "refine_scifact.json").write_text(json.dumps(res, indent=2, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
