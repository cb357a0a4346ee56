"""The pairs to pre-train on, and the batches of each epoch.

x is a pair's positive passage and y its query. Rows with a ``candidate`` (method qc)
are grouped by (method, passage): each epoch draws one candidate per passage (eq. 12 of
Wu et al., 2023), so C candidates give C different contexts over C epochs instead of C
copies of the passage per epoch. With ``mix``, every step takes its batch from one method
drawn with the given shares (Table 4: "in a training step, we randomly choose ...").
A (query, positive) that two methods both gave is kept once, by the first (in file order), and
counted in ``duplicate_across`` (as ``pretriever train`` and ``pairs export`` do).
Everything is drawn from NumPy generators seeded by (seed, epoch), so a resumed run sees
the same batches.
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
    x: list[str]
    y: list[str]
    method: np.ndarray  # method code per row
    methods: list[str]
    groups: list[np.ndarray]  # rows that share a passage (qc candidates) or a single row
    duplicate_across: dict[str, int] = field(default_factory=dict)  # rows left to an earlier method that has them
    unlisted: str | None = None  # the files read from a folder without pairs.json (see find_pair_files)

    @property
    def per_method(self) -> dict[str, int]:
        """Units per epoch (passages for qc, pairs otherwise) per method."""
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
        columns = [f.query, f.positive] + [c for c in ("method", "positive_passage_id", "candidate") if c in names]
        t = pq.read_table(f.path, columns=columns)
        meth = (pc.utf8_lower(t["method"].fill_null(f.default_method)) if "method" in names
                else pa.array([f.default_method] * t.num_rows)).to_pylist()
        q, p = t[f.query].to_pylist(), t[f.positive].to_pylist()
        pid = t["positive_passage_id"].to_pylist() if "positive_passage_id" in names else [None] * t.num_rows
        cand = t["candidate"].to_pylist() if "candidate" in names else [None] * t.num_rows
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
            keys.append((meth[i], pid[i]) if cand[i] is not None and pid[i] is not None else (len(keys),))
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
    code = {m: i for i, m in enumerate(names)}
    return PretrainPairs(x=x, y=y, method=np.array([code[m] for m in method_names], dtype=np.int32),
                         methods=names, groups=[np.array(g) for g in groups.values()], duplicate_across=duplicates,
                         unlisted=unlisted)


def epoch_batches(pairs: PretrainPairs, epoch: int, batch_size: int, seed: int,
                  mix: dict[str, float] | None) -> list[np.ndarray]:
    """The batches (row numbers) of one epoch: one candidate per group, shuffled, full batches only."""
    rng = _rng(seed, "epoch", epoch)
    rows = np.array([g[rng.integers(len(g))] for g in pairs.groups])
    rows = rows[rng.permutation(len(rows))]
    if mix is None:
        return [rows[i:i + batch_size] for i in range(0, len(rows) - batch_size + 1, batch_size)]
    per: dict[str, list[np.ndarray]] = {}
    for m in mix:
        mine = rows[pairs.method[rows] == pairs.methods.index(m)]
        per[m] = [mine[i:i + batch_size] for i in range(0, len(mine) - batch_size + 1, batch_size)]
    batches: list[np.ndarray] = []
    names = list(mix)
    while all(per[m] for m in names):  # a step's method is drawn with the shares; the epoch ends when one runs out
        m = names[rng.choice(len(names), p=np.array([mix[n] for n in names]))]
        batches.append(per[m].pop(0))
    return batches
