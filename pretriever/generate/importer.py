"""``pretriever generate --from FILE``: queries generated elsewhere, into the same table.

Accepted files (one passage or document per line):

* TSV: ``id<TAB>query[<TAB>query...]``; several lines may share an id.
* JSONL: ``{"id": ..., "predicted_queries": [...]}`` (the published docTTTTTquery
  expansions), or with ``passage_id``/``doc_id``/``_id`` and ``queries``/``query``/``text``
  (a string or a list).

Ids name passages or documents (``--key``; ``auto`` takes whichever matches more ids).
A document's queries go to its first passage. Candidates are numbered per passage in file
order; lines with an unknown id or no query are skipped and counted. A line that cannot be read
(no tab, bad JSON: a file cut off?) stops the import unless ``--skip-bad-lines``, which counts it.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path

import pyarrow as pa

from pretriever.generate.config import GenerateConfig
from pretriever.generate.errors import GenerateError
from pretriever.generate.folder import SCHEMA, GenerateResult, finish, open_passages, prepare, queries_folder
from pretriever.io import write_parquet

ID_KEYS = ("passage_id", "doc_id", "id", "_id", "docid", "pid")
QUERY_KEYS = ("predicted_queries", "queries", "query", "text")


def _parse(line: str, is_json: bool) -> tuple[str, list[str]]:
    """(id, queries) of one line; ValueError saying what is wrong with it."""
    if not is_json:
        key, sep, rest = line.partition("\t")
        if not sep or not key.strip():
            raise ValueError("expected id<TAB>query" + ("" if sep else " (no tab: cut off?)"))
        return key.strip(), rest.split("\t")
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as err:
        raise ValueError(f"not valid JSON ({err})") from None
    key = next((obj[k] for k in ID_KEYS if isinstance(obj, dict) and k in obj), None)
    value = next((obj[k] for k in QUERY_KEYS if isinstance(obj, dict) and k in obj), None)
    if key is None or value is None:
        raise ValueError(f"needs an id ({', '.join(ID_KEYS)}) and queries ({', '.join(QUERY_KEYS)})")
    return str(key), [value] if isinstance(value, str) else [str(v) for v in value]


def read_lines(path: Path, skip_bad_lines: bool = False) -> tuple[list[tuple[str, list[str]]], int]:
    """(id, queries) per line of a TSV or JSONL file, and the number of bad lines; bad lines are an error
    naming them unless ``skip_bad_lines``."""
    if not path.is_file():
        raise GenerateError(f"{path}: no such file to import queries from")
    is_json = path.suffix.lower() in (".jsonl", ".json", ".ndjson")
    out: list[tuple[str, list[str]]] = []
    bad: list[tuple[int, str]] = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            try:
                out.append(_parse(line, is_json))
            except ValueError as err:
                bad.append((n, str(err)))
    if bad and not skip_bad_lines:
        (first, why), others = bad[0], [str(n) for n, _ in bad[1:6]]
        more = f" (also line{'s' if len(others) > 1 else ''} {', '.join(others)}{' ...' if len(bad) > 6 else ''})"
        raise GenerateError(f"{path}: {len(bad):,} bad line{'s' if len(bad) > 1 else ''}: {path.name}:{first}: "
                            f"{why}{more if others else ''}; fix the file, or give --skip-bad-lines to import "
                            "the other lines (the bad ones are counted)")
    return out, len(bad)


def passage_keys(cfg: GenerateConfig) -> tuple[list[str], dict[str, str]]:
    """Passage ids in index order, and each document's first passage."""
    source = open_passages(cfg.corpus)
    try:
        table = source.store.read_table("passages", ["passage_id", "doc_id", "position"]).to_pydict()
        order = [pid for ids, _ in source.iter_parts(False) for pid in ids]
    finally:
        source.close()
    first: dict[str, tuple[int, str]] = {}
    for pid, doc, position in zip(table["passage_id"], table["doc_id"], table["position"]):
        if doc not in first or position < first[doc][0]:
            first[doc] = (position, pid)
    return order, {doc: pid for doc, (_, pid) in first.items()}


def import_queries(cfg: GenerateConfig) -> GenerateResult:
    """Write ``cfg.from_file``'s queries as the generated_queries table of ``cfg.out``.

    Args:
        cfg: the settings; ``from_file`` names the queries (passage or document id, query).

    Returns:
        The folder written and its manifest.
    """
    started = time.perf_counter()
    assert cfg.from_file is not None
    queries_folder(cfg.out).check()  # someone else's folder is refused before the file is read
    lines, bad_lines = read_lines(cfg.from_file, cfg.skip_bad_lines)
    order, first = passage_keys(cfg)
    known = set(order)
    key = cfg.key
    if key == "auto":
        ids = {k for k, _ in lines}
        key = "passage" if len(ids & known) >= len(ids & set(first)) else "doc"
    queries: dict[str, list[str]] = defaultdict(list)
    skipped = {"bad_lines": bad_lines, "unknown_id": 0, "empty_query": 0}
    for k, qs in lines:
        pid = k if key == "passage" and k in known else first.get(k) if key == "doc" else None
        if pid is None:
            skipped["unknown_id"] += 1
            continue
        for q in qs:
            if q.strip():
                queries[pid].append(q.strip())
            else:
                skipped["empty_query"] += 1
    rows = [(pid, c, q) for pid in order for c, q in enumerate(queries.get(pid, ()))]
    if not rows:
        raise GenerateError(f"{cfg.from_file}: none of its {len(lines):,} lines names a {key} id of {cfg.corpus} "
                            "(try --key passage or --key doc)")
    prepare(cfg, {"from": str(cfg.from_file), "key": key})  # only now: a failed import leaves no state
    table = pa.table({"passage_id": [r[0] for r in rows], "candidate": [r[1] for r in rows],
                      "text": [r[2] for r in rows]}, schema=SCHEMA)
    part = cfg.out / "parts" / "part-000000.parquet"
    write_parquet(table, part)
    result = GenerateResult(cfg, out=cfg.out, passages=len(queries), queries=len(rows), skipped=skipped)
    result.seconds = time.perf_counter() - started
    finish(cfg, [part], result, len(order), {"imported_from": str(cfg.from_file), "key": key, "skipped": skipped})
    return result
