"""The pairs to pre-train on, and the batches of each epoch.

x is a pair's positive passage and y its query. Rows with a ``candidate`` (method qc)
are grouped by (method, passage): each epoch draws one candidate per passage (eq. 12 of
Wu et al., 2023). The draws are independent, with replacement, as the official code's
``random.sample(spans, 1)`` per read: over 5 epochs a passage with C = 5 candidates sees
about 3.4 distinct ones (5 x (1 - 0.8^5)), not all 5.

cc rows that name their document (``query_doc_id``, as ``pretriever mine`` writes them) are
grouped by document, and each time a document is read (once per epoch) two of its passages
are drawn anew as (x, y), as the official coCondenser/CoT-MAE datasets draw two random
spans per document per read (``random.sample(spans, 2)``) instead of pairs fixed at mining
time (:func:`batch_texts`). A cc file without document ids keeps its pairs as mined.

With ``mix``, each example's method is drawn with the given shares, so one batch mixes
contexts (Table 4; caskcsg's ``get_cltype`` draws the context type per example); the epoch
ends when a drawn method has no example left. A (query, positive) that two methods both gave
is kept once, by the first (in file order), and counted in ``duplicate_across`` (as
``pretriever train`` and ``pairs export`` do). Everything is drawn from NumPy generators
seeded by (seed, epoch), so a resumed run sees the same batches.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pretriever.data.pairs import open_pair_files
from pretriever.io import text_pair_hashes
from pretriever.pretrain.errors import PretrainError


@dataclass
class PretrainPairs:
    """The pairs a pre-training run draws its batches from: the texts (x, y) and each row's method, with the
    groups an epoch samples one row of (a passage's generated queries, a document's passages), so an epoch counts
    units, not rows.
    """

    x: list[str]
    y: list[str]
    method: np.ndarray  # method code per row
    methods: list[str]
    groups: list[np.ndarray]  # rows that share a passage (qc candidates), a document (cc), or a single row
    duplicate_across: dict[str, int] = field(default_factory=dict)  # rows left to an earlier method that has them
    unlisted: str | None = None  # the files read from a folder without pairs.json (see find_pair_files)
    spans: list[list[str]] = field(default_factory=list)  # the passages of each cc document
    span_set: np.ndarray | None = None  # per row: its document's index in ``spans``, or -1 (a pair as mined)

    @property
    def per_method(self) -> dict[str, int]:
        """Units per epoch (passages for qc, documents for cc, pairs otherwise) per method."""
        codes = np.array([self.method[g[0]] for g in self.groups])
        return {m: int((codes == i).sum()) for i, m in enumerate(self.methods)}


def _rng(seed: int, *parts: object) -> np.random.Generator:
    return np.random.default_rng([seed, *(zlib.crc32(str(p).encode()) for p in parts)])


def load_pairs(path, methods: list[str] | None = None) -> PretrainPairs:
    """The (x, y) texts of a pairs folder, only ``methods`` when given; empty texts are left out, and so is a
    (query, positive) that an earlier method already gave (counted per method in ``duplicate_across``)."""
    files, unlisted = open_pair_files(path)
    x: list[str] = []
    y: list[str] = []
    method_names: list[str] = []
    keys: list[tuple] = []
    first_method: dict[int, str] = {}  # (query, positive) hash -> the method that gave it first
    duplicates: dict[str, int] = {}
    for f in files:
        names = pq.ParquetFile(f.path).schema_arrow.names
        columns = [f.query, f.positive] + [c for c in ("method", "positive_passage_id", "candidate", "query_doc_id")
                                           if c in names]
        t = pq.read_table(f.path, columns=columns)
        meth = (pc.utf8_lower(t["method"].fill_null(f.default_method)) if "method" in names
                else pa.array([f.default_method] * t.num_rows)).to_pylist()
        q, p = t[f.query].to_pylist(), t[f.positive].to_pylist()
        pid = t["positive_passage_id"].to_pylist() if "positive_passage_id" in names else [None] * t.num_rows
        cand = t["candidate"].to_pylist() if "candidate" in names else [None] * t.num_rows
        doc = t["query_doc_id"].to_pylist() if "query_doc_id" in names else [None] * t.num_rows
        pair = text_pair_hashes(t[f.query], t[f.positive]).tolist()
        for i in range(t.num_rows):
            if methods is not None and meth[i] not in methods or not q[i] or not p[i]:
                continue
            if first_method.setdefault(pair[i], meth[i]) != meth[i]:
                duplicates[meth[i]] = duplicates.get(meth[i], 0) + 1
                continue
            x.append(p[i])
            y.append(q[i])
            method_names.append(meth[i])
            if cand[i] is not None and pid[i] is not None:
                keys.append((meth[i], pid[i]))
            elif meth[i] == "cc" and doc[i] is not None:
                keys.append(("cc-doc", doc[i]))
            else:
                keys.append((len(keys),))
    if not x:
        raise PretrainError(f"{path} holds no pairs with both a query and a positive passage"
                            + (f" for method(s) {', '.join(methods)}" if methods else ""))
    names = list(dict.fromkeys(method_names))
    missing = [m for m in (methods or []) if m not in names]
    if missing:
        raise PretrainError(f"--mix names method(s) {', '.join(missing)} that {path} does not hold "
                            f"(it has: {', '.join(names)})")
    groups: dict[tuple, list[int]] = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    spans: list[list[str]] = []
    span_set = np.full(len(x), -1, dtype=np.int64)
    for k, rows in groups.items():
        if k[0] == "cc-doc":
            span_set[rows] = len(spans)
            spans.append(list(dict.fromkeys(t for r in rows for t in (x[r], y[r]))))
    code = {m: i for i, m in enumerate(names)}
    return PretrainPairs(x=x, y=y, method=np.array([code[m] for m in method_names], dtype=np.int32),
                         methods=names, groups=[np.array(g) for g in groups.values()], duplicate_across=duplicates,
                         unlisted=unlisted, spans=spans, span_set=span_set)


def epoch_batches(pairs: PretrainPairs, epoch: int, batch_size: int, seed: int,
                  mix: dict[str, float] | None) -> list[np.ndarray]:
    """The batches (row numbers) of one epoch: one row per group, shuffled, full batches only; with ``mix``
    each example's method drawn with the shares."""
    rng = _rng(seed, "epoch", epoch)
    rows = np.array([g[rng.integers(len(g))] for g in pairs.groups])
    rows = rows[rng.permutation(len(rows))]
    if mix is None:
        return [rows[i:i + batch_size] for i in range(0, len(rows) - batch_size + 1, batch_size)]
    names = list(mix)
    per = [rows[pairs.method[rows] == pairs.methods.index(m)] for m in names]
    taken = [0] * len(names)
    drawn = rng.choice(len(names), size=len(rows) + 1, p=np.array([mix[n] for n in names]))
    picked: list[int] = []
    for m in drawn.tolist():  # the epoch ends when a drawn method has no example left
        if taken[m] == len(per[m]):
            break
        picked.append(int(per[m][taken[m]]))
        taken[m] += 1
    full = len(picked) - len(picked) % batch_size
    return [np.array(picked[i:i + batch_size]) for i in range(0, full, batch_size)]


def batch_texts(pairs: PretrainPairs, rows: np.ndarray, epoch: int, seed: int) -> tuple[list[str], list[str]]:
    """The (x, y) texts of a batch: a pair as mined, or for a cc document two of its passages drawn anew for
    this read (seeded by seed, epoch and document, so a resumed run draws the same)."""
    xs: list[str] = []
    ys: list[str] = []
    for r in rows.tolist():
        s = -1 if pairs.span_set is None else int(pairs.span_set[r])
        if s < 0 or len(pairs.spans[s]) < 2:
            xs.append(pairs.x[r])
            ys.append(pairs.y[r])
            continue
        spans = pairs.spans[s]
        a, b = _rng(seed, "spans", epoch, s).choice(len(spans), 2, replace=False).tolist()
        xs.append(spans[a])
        ys.append(spans[b])
    return xs, ys
