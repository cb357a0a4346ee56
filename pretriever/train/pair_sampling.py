"""Mined pairs -> the training set: find the pair files, check them, sample (--limit, --mix), write.

The pairs folder is read through :mod:`pretriever.data.pairs` (a mined folder, any folder of Parquet
pair files, or a sentence-transformers export). A folder without ``pairs.json`` is read whole, and the
run says (and records in train.json) every file it read.

Sampling reads the texts once at most: the ``method`` column and the null counts of the row
groups decide which rows are eligible; when several methods are combined, one streaming pass
hashes each (query, positive) so that a pair two methods both found is trained on once (the
first method keeps it; the others count it as ``duplicate_across``); a seeded NumPy generator
picks row numbers, and one streaming pass copies the picked rows into an Arrow file that the
trainer memory-maps. So a 20-million-pair run holds 8 bytes per pair, not the pairs.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pretriever.data.pairs import PairFile, PairsError, open_pair_files
from pretriever.io import text_pair_hashes
from pretriever.train.errors import TrainError

TRAIN_SCHEMA = {True: pa.schema([("anchor", pa.string()), ("positive", pa.string()), ("negative", pa.string())]),
                False: pa.schema([("anchor", pa.string()), ("positive", pa.string())])}


@dataclass
class PairsScan:
    """Which rows of which files can be trained on, per method."""

    files: list[PairFile]
    unlisted: str | None  # the files read from a folder without pairs.json (see find_pair_files)
    methods: list[str]  # in order of first appearance
    total: dict[str, int]  # rows per method
    eligible: dict[str, np.ndarray]  # global row numbers (over the files in order) per method
    with_negatives: bool
    negatives_note: str
    without_negative: dict[str, int] = field(default_factory=dict)  # rows left out for lack of a negative
    without_text: dict[str, int] = field(default_factory=dict)  # rows with an empty query or positive
    duplicate_across: dict[str, int] = field(default_factory=dict)  # (query, positive) an earlier method has

    @property
    def available(self) -> dict[str, int]:
        return {m: len(self.eligible[m]) for m in self.methods}


def _valid(path: Path, column: str, rows: int) -> np.ndarray:
    """Non-null (and non-empty) rows of a text column; row groups without nulls are not read."""
    pf = pq.ParquetFile(path)
    out = np.ones(rows, dtype=bool)
    start = 0
    leaf = pf.metadata.schema.names.index(column) if column in pf.metadata.schema.names else None
    for rg in range(pf.metadata.num_row_groups):
        n = pf.metadata.row_group(rg).num_rows
        stats = pf.metadata.row_group(rg).column(leaf).statistics if leaf is not None else None
        if stats is not None and stats.has_null_count and stats.null_count == 0 and stats.has_min_max \
                and stats.min not in ("", b""):
            start += n
            continue
        values = pf.read_row_group(rg, columns=[column]).column(0)
        ok = pc.and_(pc.is_valid(values), pc.greater(pc.utf8_length(values.cast(pa.string())), 0))
        out[start:start + n] = ok.fill_null(False).to_numpy(zero_copy_only=False)
        start += n
    return out


def _methods_of(f: PairFile) -> tuple[np.ndarray, list[str]]:
    """Per-row method codes of a file and the code -> name list."""
    if f.method_column is None:
        return np.zeros(f.rows, dtype=np.int32), [f.default_method]
    column = pq.read_table(f.path, columns=[f.method_column]).column(0)
    if column.null_count:
        column = column.fill_null(f.default_method)
    encoded = pc.dictionary_encode(pc.utf8_lower(column.cast(pa.string()))).combine_chunks()
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32), encoded.dictionary.to_pylist()


def scan_pairs(path: Path, use_negatives: bool = True, only: list[str] | None = None) -> PairsScan:
    """Files, methods and the eligible rows of each; ``only`` keeps just these methods (--mix)."""
    try:
        files, unlisted = open_pair_files(path)
    except PairsError as err:  # train's own error, as before the reading moved to the data layer
        raise TrainError(str(err)) from err
    methods: list[str] = []
    per_file: list[tuple[np.ndarray, list[str]]] = []
    for f in files:
        codes, names = _methods_of(f)
        per_file.append((codes, names))
        for name in names:
            if name not in methods:
                methods.append(name)
    if only is not None:
        unknown = [m for m in only if m not in methods]
        if unknown:
            raise TrainError(f"--mix names method(s) {', '.join(unknown)} that {path} does not hold "
                             f"(it has: {', '.join(methods) or 'none'})")
    wanted = set(only) if only is not None else set(methods)

    # negatives are used when every file holding a wanted method has some
    relevant = [i for i, (codes, names) in enumerate(per_file)
                if any(names[c] in wanted for c in np.unique(codes))]
    negative_valid: dict[int, np.ndarray] = {}
    with_negatives, note = False, "not asked for (--no-negatives)"
    if use_negatives:
        lacking = [files[i].path.name for i in relevant if files[i].negative is None]
        if lacking:
            note = f"none: {', '.join(lacking)} has no negative column; in-batch negatives only"
        else:
            for i in relevant:
                negative_valid[i] = _valid(files[i].path, files[i].negative, files[i].rows)
            empty = [files[i].path.name for i in relevant if not negative_valid[i].any()]
            if empty:
                note = f"none: {', '.join(empty)} has no negative passages (mined with --negatives none?)"
            else:
                with_negatives, note = True, "one extra negative per pair (the pairs' negative_text)"

    total = {m: 0 for m in methods}
    without_negative = {m: 0 for m in methods}
    without_text = {m: 0 for m in methods}
    eligible_parts: dict[str, list[np.ndarray]] = {m: [] for m in methods}
    offset = 0
    for i, f in enumerate(files):
        codes, names = per_file[i]
        ok_text = _valid(f.path, f.query, f.rows) & _valid(f.path, f.positive, f.rows)
        ok_negative = negative_valid.get(i, np.ones(f.rows, dtype=bool)) if with_negatives else None
        for code, name in enumerate(names):
            rows = codes == code
            if not rows.any():
                continue
            total[name] += int(rows.sum())
            without_text[name] += int((rows & ~ok_text).sum())
            keep = rows & ok_text
            if ok_negative is not None:
                without_negative[name] += int((keep & ~ok_negative).sum())
                keep &= ok_negative
            eligible_parts[name].append(np.flatnonzero(keep).astype(np.int64) + offset)
        offset += f.rows
    eligible = {m: (np.concatenate(eligible_parts[m]) if eligible_parts[m] else np.zeros(0, dtype=np.int64))
                for m in methods}
    if only is not None:
        methods = [m for m in methods if m in wanted]
    duplicates = _drop_duplicates_across(files, methods, eligible) if len(methods) > 1 else {}
    return PairsScan(files=files, unlisted=unlisted, methods=methods, total={m: total[m] for m in methods},
                     eligible={m: eligible[m] for m in methods}, with_negatives=with_negatives, negatives_note=note,
                     without_negative={m: without_negative[m] for m in methods},
                     without_text={m: without_text[m] for m in methods},
                     duplicate_across={m: duplicates.get(m, 0) for m in methods})


def _pair_hashes(files: list[PairFile], batch_size: int = 65536) -> np.ndarray:
    """A 64-bit hash of (query, positive) for every row of the files, in global row order."""
    parts = []
    for f in files:
        for batch in pq.ParquetFile(f.path).iter_batches(batch_size=batch_size, columns=[f.query, f.positive]):
            parts.append(text_pair_hashes(batch.column(0), batch.column(1)))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)


def _drop_duplicates_across(files: list[PairFile], methods: list[str], eligible: dict[str, np.ndarray]) -> dict[str, int]:
    """Leave each (query, positive) to the first method (in ``methods`` order) that has it; returns how many
    rows each later method lost. ``eligible`` is changed in place."""
    hashes = _pair_hashes(files)
    seen = np.zeros(0, dtype=np.uint64)
    dropped = {}
    for m in methods:
        mine = hashes[eligible[m]]
        repeat = np.isin(mine, seen)
        dropped[m] = int(repeat.sum())
        eligible[m] = eligible[m][~repeat]
        seen = np.union1d(seen, mine)
    return dropped


def plan_mix(available: dict[str, int], mix: dict[str, float], limit: int | None) -> dict[str, int]:
    """Pairs per method so that the mixture has the given shares of the budget.

    The budget is ``limit`` or else the largest total the available pairs allow with these
    shares. Shares are rounded by largest remainder, so the counts add up to the budget.
    """
    unknown = [m for m in mix if m not in available]
    if unknown:
        raise TrainError(f"--mix names unknown method(s) {', '.join(unknown)}; "
                         f"available: {', '.join(available) or 'none'}")
    if limit is None:
        budget = min(int(np.floor(available[m] / w + 1e-9)) for m, w in mix.items())
    else:
        budget = limit
    exact = {m: w * budget for m, w in mix.items()}
    counts = {m: int(np.floor(x + 1e-9)) for m, x in exact.items()}
    rest = budget - sum(counts.values())
    for m in sorted(mix, key=lambda m: (-(exact[m] - counts[m]), list(mix).index(m)))[:max(rest, 0)]:
        counts[m] += 1
    short = {m: (n, available[m]) for m, n in counts.items() if n > available[m]}
    if short:
        detail = ", ".join(f"{m} needs {n:,} but has {a:,}" for m, (n, a) in short.items())
        raise TrainError(f"--mix with a budget of {budget:,} pairs cannot be met: {detail}; "
                         "lower --limit or change the shares")
    if budget == 0 or sum(counts.values()) == 0:
        raise TrainError(f"--mix leaves no pairs to train on (available: "
                         f"{', '.join(f'{m} {n:,}' for m, n in available.items())})")
    return counts


def named_rng(seed: int, name: str) -> np.random.Generator:
    """A generator for one named draw (a method's sample, a query's negatives): the same seed and name always
    give the same draw, whatever else is drawn."""
    return np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(name.encode("utf-8"))]))


def select_rows(scan: PairsScan, mix: dict[str, float] | None, limit: int | None,
                seed: int) -> tuple[np.ndarray, dict[str, int]]:
    """Sorted global row numbers to train on, and how many per method (seeded, reproducible)."""
    available = scan.available
    if sum(available.values()) == 0:
        raise TrainError("no pair has both a query and a positive passage"
                         + (" and a negative (train with --no-negatives to use pairs without one)"
                            if scan.with_negatives else ""))
    if mix is not None:
        counts = plan_mix(available, mix, limit)
        parts = [np.sort(named_rng(seed, m).choice(scan.eligible[m], counts[m], replace=False)) for m in mix]
        rows = np.sort(np.concatenate(parts))
        return rows, {m: counts[m] for m in scan.methods if m in counts}
    everything = np.sort(np.concatenate([scan.eligible[m] for m in scan.methods]))
    if limit is not None and limit < len(everything):
        rows = np.sort(named_rng(seed, "limit").choice(everything, limit, replace=False))
    else:
        rows = everything
    counts = {m: int(np.isin(scan.eligible[m], rows, assume_unique=True).sum()) for m in scan.methods}
    return rows, {m: n for m, n in counts.items() if n}


def write_selected(scan: PairsScan, rows: np.ndarray, out: Path, batch_size: int = 8192) -> int:
    """Copy the chosen rows (anchor, positive[, negative]) into an Arrow stream file; returns the count."""
    schema = TRAIN_SCHEMA[scan.with_negatives]
    total_rows = sum(f.rows for f in scan.files)
    chosen = np.zeros(total_rows, dtype=bool)
    chosen[rows] = True
    written = 0
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
        offset = 0
        for f in scan.files:
            mask = chosen[offset:offset + f.rows]
            offset += f.rows
            if not mask.any():
                continue
            columns = [f.query, f.positive] + ([f.negative] if scan.with_negatives else [])
            start = 0
            for batch in pq.ParquetFile(f.path).iter_batches(batch_size=batch_size, columns=columns):
                take = mask[start:start + batch.num_rows]
                start += batch.num_rows
                if not take.any():
                    continue
                batch = batch.filter(pa.array(take))
                arrays = [batch.column(batch.schema.get_field_index(c)).cast(pa.string()) for c in columns]
                writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=schema))
                written += batch.num_rows
    tmp.replace(out)
    return written


def negative_columns(count: int) -> list[str]:
    """The training columns of ``count`` hard negatives: ``negative`` alone, else ``negative_1`` ... ``negative_n``
    (MultipleNegativesRankingLoss reads every column after anchor and positive as a negative)."""
    return ["negative"] if count == 1 else [f"negative_{j}" for j in range(1, count + 1)]


def write_records(records: dict[str, list[str]], out: Path) -> int:
    """Write in-memory columns (anchor, positive, then any negatives) as the training Arrow file."""
    schema = pa.schema([(name, pa.string()) for name in records])
    table = pa.table({name: pa.array(records[name], pa.string()) for name in schema.names}, schema=schema)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
        writer.write_table(table, max_chunksize=8192)
    tmp.replace(out)
    return table.num_rows
