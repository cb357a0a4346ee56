"""Read a pairs folder and export it for training code: DPR JSON, sentence-transformers, JSONL, Tevatron.

``dpr``: a JSON list in the format of DPR's training files (Karpukhin et al., 2020):
``question``, ``answers``, ``positive_ctxs``, ``negative_ctxs`` (random negatives),
``hard_negative_ctxs`` (overlap negatives), each context with ``title``, ``text`` and
``passage_id``. ``answers`` holds t_Q for the strategies whose positive links to the
query's document (DL, CM, WLP: the paper's "answer containing"), else it is empty.

``sentence-transformers``: columns ``anchor``, ``positive`` and, when the pairs have
negatives, ``negative``; a Parquet file (``--out x.parquet``; ``datasets.load_dataset(
"parquet", data_files=...)``) or a ``datasets.Dataset.save_to_disk`` folder (any other
``--out``; ``datasets.load_from_disk``).

``jsonl``: every column of every pair, one JSON object a line.

``tevatron``: the JSONL that Tevatron's trainers read (``docs/datasets.md`` of texttron/tevatron),
one pair a line: ``query_id`` (the pair id), ``query``, ``answers`` (as for DPR),
``positive_passages`` and ``negative_passages``, each passage ``{docid, title, text}``. The
``title`` is left empty: Tevatron prepends a non-empty title to the text, and the pairs'
texts are already what ``pretriever train`` sees (HLP leaves titles out; ``mine
--prepend-title`` puts them in the text). Read by Tevatron main, v2 and v1.5 (their own
``TrainDataset``, which takes this legacy ``positive_passages`` layout): ``--dataset_name json
--dataset_path FILE``. Not by v1, whose ``--train_dir`` wants its own pre-tokenised files.
Tevatron draws ``--train_group_size - 1`` negatives per query and fails on an empty list, so
pairs without negatives (``mine --negatives none``) train with ``--train_group_size 1``; the
export says so.

``squad``: SQuAD v1.1 JSON (``{"version": "v1.1", "data": [{"title", "paragraphs": [{"context",
"qas": [{"id", "question", "answers": [{"text", "answer_start"}]}]}]}]}``) for reader training,
from pairs that carry an answer span in their positive (qac); one article per pair.
``dpr-reader``: DPR's reader input (the retriever-results JSON that DPR's ``preprocess_retriever_data``
reads): ``[{"question", "answers", "ctxs": [{"id", "title", "text", "score", "has_answer"}]}]``, from
the pairs with an answer (qac): the positive block (``has_answer`` true), the pair's negative and BM25's
top ``negatives`` passages for the question (DPR's retriever output has ``n_docs`` = 100; its reader
trains on 24 per question) from the store and the reference pages (:class:`ReaderContexts`, built by
:class:`pretriever.reader.negatives.PairsContexts`), the question's own source passage and the positive
left out. Each has ``has_answer`` by DPR's string matching and ``score``, its BM25 score for the question
(the positive's too), best first. ``ctxs`` holds exactly DPR's ``ReaderPassage`` fields, which it builds
with ``ReaderPassage(**ctx)``.

For qac, DPR's ``answers`` holds the answer entity, and the DPR, Tevatron and SQuAD records carry
``context_source`` (reference or link) with ``block_words``/``block_stride`` and
``source_passage_id`` (the statement's own passage, which ``reader prepare`` leaves out) (jsonl has every
column); the sentence-transformers columns are the texts the trainer reads, so it has none.
"""

from __future__ import annotations

import itertools
import json
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pretriever.data import AnswerMatcher
from pretriever.data.pairs import PairsDir, PairsError
from pretriever.data.reading import squad_article
from pretriever.io import PARQUET_OPTIONS, atomic_path
from pretriever.retrieval import Hit, Passage
from pretriever.stage import FolderError, OutputFolder

FORMATS = ("dpr", "sentence-transformers", "jsonl", "squad", "tevatron", "dpr-reader")
ANSWER_CONTAINING = {"dl", "cm", "wlp"}
DPR_N_DOCS = 100  # contexts per question in DPR's retriever output (conf/dense_retriever.yaml, n_docs)
READER_BATCH = 256  # questions searched at once


class ReaderContexts(Protocol):
    """The retriever behind the dpr-reader export: its top passages for a question, their texts, and the score of
    any passage it holds (the positive, the mined negative), retrieved or not."""

    def search(self, queries: list[str], k: int) -> list[list[Hit]]: ...

    def passages(self, ids: Iterable[str]) -> dict[str, Passage]: ...

    def scores_of(self, query: str, passage_ids: Sequence[str]) -> list[float]: ...


def _ctx(title: str | None, text: str | None, passage_id: str | None) -> dict[str, Any]:
    return {"title": title or "", "text": text or "", "passage_id": passage_id}


def _answers(row: dict[str, Any]) -> list[str]:
    if row.get("answer"):  # qac: the entity taken out of the question
        return [row["answer"]]
    return [row["query_title"]] if row["method"] in ANSWER_CONTAINING and row.get("query_title") else []


def _qac_source(row: dict[str, Any]) -> dict[str, Any]:
    """qac: where the context came from (reference: the cited page; link: a linked article), and its block size."""
    if not row.get("context_source"):
        return {}
    return {"context_source": row["context_source"], "block_words": row.get("block_words"),
            "block_stride": row.get("block_stride"), "source_passage_id": row.get("query_passage_id")}


def dpr_record(row: dict[str, Any]) -> dict[str, Any]:
    """One mined pair as a DPR retriever-training record: the pair's negative goes to ``negative_ctxs`` (random) or
    ``hard_negative_ctxs`` (overlap).
    """
    negative = (_ctx(row["negative_title"], row["negative_text"], row["negative_passage_id"])
                if row.get("negative_passage_id") else None)
    return {
        "dataset": f"pretriever-{row['method']}",
        "pair_id": row["pair_id"],
        "question": row["query"],
        "answers": _answers(row),
        "positive_ctxs": [_ctx(row["positive_title"], row["positive_text"], row["positive_passage_id"])],
        "negative_ctxs": [negative] if negative and row.get("negative_kind") == "random" else [],
        "hard_negative_ctxs": [negative] if negative and row.get("negative_kind") == "overlap" else [],
        **_qac_source(row),
    }


def tevatron_record(row: dict[str, Any]) -> dict[str, Any]:
    """One pair as a Tevatron training instance (see the module docstring)."""
    def passage(prefix: str) -> dict[str, str]:
        return {"docid": row[f"{prefix}_passage_id"] or "", "title": "", "text": row[f"{prefix}_text"] or ""}

    return {"query_id": row["pair_id"], "query": row["query"], "answers": _answers(row),
            "positive_passages": [passage("positive")],
            "negative_passages": [passage("negative")] if row.get("negative_passage_id") else [],
            **_qac_source(row)}


def dpr_reader_record(row: dict[str, Any], matcher: AnswerMatcher, contexts: ReaderContexts,
                      retrieved: Sequence[Hit] = (), negatives: int = DPR_N_DOCS) -> dict[str, Any]:
    """One qac pair as DPR reader input (see the module docstring): its positive and negative, then the first
    ``negatives`` of ``retrieved`` (BM25's hits for the question) that are neither nor the question's source."""
    answers = _answers(row)
    own = [row["positive_passage_id"], *([row["negative_passage_id"]] if row.get("negative_passage_id") else [])]
    scores = dict(zip(own, contexts.scores_of(row["query"], own)))
    ctxs = [{"id": row["positive_passage_id"], "title": row.get("positive_title") or "", "text": row["positive_text"],
             "score": scores[row["positive_passage_id"]], "has_answer": True}]
    if row.get("negative_passage_id"):
        ctxs.append({"id": row["negative_passage_id"], "title": row.get("negative_title") or "",
                     "text": row["negative_text"] or "", "score": scores[row["negative_passage_id"]],
                     "has_answer": matcher.has_answer(answers, row["negative_text"] or "")})
    left_out = {*own, row.get("query_passage_id")}
    hits = [h for h in retrieved if h.passage_id not in left_out][:negatives]
    texts = contexts.passages(h.passage_id for h in hits)
    for hit in hits:
        passage = texts[hit.passage_id]
        ctxs.append({"id": hit.passage_id, "title": passage.title or "", "text": passage.text or "",
                     "score": hit.score, "has_answer": matcher.has_answer(answers, passage.text or "")})
    ctxs.sort(key=lambda c: -c["score"])  # best first, as a retriever lists them (stable: the positive on a tie)
    return {"question": row["query"], "answers": answers, "ctxs": ctxs, "pair_id": row["pair_id"],
            **_qac_source(row)}


def export_pairs(pairs: PairsDir, fmt: str, out: Path, methods: list[str], notes: list[str] | None = None,
                 contexts: ReaderContexts | None = None, negatives: int = DPR_N_DOCS) -> int:
    """Write the pairs of ``methods`` to ``out`` in ``fmt``; returns the number of pairs written. What the
    reader of the file must know (the Tevatron option that pairs without negatives need) goes to ``notes``.
    ``dpr-reader`` needs ``contexts`` (:class:`pretriever.reader.negatives.PairsContexts`), which scores every
    context and adds its top ``negatives`` for each question."""
    out = Path(out)
    check_out(out, fmt)
    if fmt == "dpr":
        return _export_dpr(pairs, out, methods)
    if fmt == "jsonl":
        return _export_jsonl(pairs, out, methods)
    if fmt == "tevatron":
        without = [0]

        def record(row: dict[str, Any]) -> dict[str, Any]:
            rec = tevatron_record(row)
            without[0] += not rec["negative_passages"]
            return rec

        n = _export_jsonl(pairs, out, methods, record)
        if without[0] and notes is not None:
            notes.append(f"{without[0]:,} of {n:,} pairs have no negative (mined with --negatives none?): train "
                         "with Tevatron's --train_group_size 1, else it fails drawing negatives from an empty list")
        return n
    if fmt == "sentence-transformers":
        return _export_st(pairs, out, methods)
    if fmt == "squad":
        return _export_squad(pairs, out, methods)
    if fmt == "dpr-reader":
        if contexts is None:
            raise PairsError("the dpr-reader export scores its contexts and finds negatives with BM25: give "
                             "contexts=pretriever.reader.negatives.PairsContexts(pairs)")
        if negatives < 0:
            raise PairsError(f"negatives must be 0 or more, got {negatives}")
        return _export_dpr_reader(pairs, out, methods, contexts, negatives)
    raise PairsError(f"unknown export format {fmt!r}; choose from {', '.join(FORMATS)}")


def check_out(out: Path, fmt: str) -> None:
    """Refuse an --out that the export would fail on or destroy: a folder where a file goes, or a folder that
    is not a saved dataset where a datasets folder replaces it."""
    if fmt == "sentence-transformers" and out.suffix != ".parquet":
        try:
            _dataset_folder(out).check()
        except FolderError as err:
            raise PairsError(f"--out {out} is not a saved dataset that a datasets folder may replace: {err} "
                             "(or give one ending in .parquet)") from None
    elif out.is_dir():
        raise PairsError(f"--out {out} is a folder; the {fmt} export is one file: give a file path")


def _export_dpr(pairs: PairsDir, out: Path, methods: list[str]) -> int:
    n = 0
    with atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write("[")
        for row in pairs.rows(methods):
            f.write(("\n" if n == 0 else ",\n") + json.dumps(dpr_record(row), ensure_ascii=False))
            n += 1
        f.write("\n]\n")
    return n


def _export_squad(pairs: PairsDir, out: Path, methods: list[str]) -> int:
    """Pairs with an answer span -> SQuAD v1.1; pairs without one (other methods) are skipped."""
    n = 0
    with atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write('{"version": "v1.1", "data": [')
        for row in pairs.rows(methods):
            if row.get("answer") is None or row.get("answer_start") is None:
                continue
            f.write(("\n" if n == 0 else ",\n") + json.dumps(squad_article(row), ensure_ascii=False))
            n += 1
        f.write("\n]}\n")
        if n == 0:
            raise PairsError(f"the pairs of {', '.join(methods)} in {pairs.path} have no answers to write as SQuAD; "
                             "mine them with --method qac")
    return n


def _export_dpr_reader(pairs: PairsDir, out: Path, methods: list[str], contexts: ReaderContexts,
                       negatives: int) -> int:
    """Pairs with an answer -> DPR reader input; pairs without one are skipped, as for SQuAD. Questions are
    searched a batch at a time, deep enough to leave ``negatives`` once the pair's own passages are out."""
    matcher, n = AnswerMatcher("string"), 0
    with atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write("[")
        answered = (row for row in pairs.rows(methods) if row.get("answer") is not None)
        while batch := list(itertools.islice(answered, READER_BATCH)):
            found = contexts.search([r["query"] for r in batch], negatives + 3) if negatives else [[]] * len(batch)
            for row, hits in zip(batch, found):
                record = dpr_reader_record(row, matcher, contexts, hits, negatives)
                f.write(("\n" if n == 0 else ",\n") + json.dumps(record, ensure_ascii=False))
                n += 1
        f.write("\n]\n")
        if n == 0:
            raise PairsError(f"the pairs of {', '.join(methods)} in {pairs.path} have no answers to write for a "
                             "reader; mine them with --method qac")
    return n


def _export_jsonl(pairs: PairsDir, out: Path, methods: list[str],
                  record: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> int:
    """One JSON object a line, streamed: each pair as it is, or as ``record`` makes it."""
    n = 0
    with atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8") as f:
        for row in pairs.rows(methods):
            f.write(json.dumps(record(row) if record else row, ensure_ascii=False) + "\n")
            n += 1
    return n


def _st_batches(pairs: PairsDir, methods: list[str], with_negative: bool) -> Iterator[pa.RecordBatch]:
    columns = ["query", "positive_text"] + (["negative_text"] if with_negative else [])
    names = ["anchor", "positive"] + (["negative"] if with_negative else [])
    for batch in pairs.batches(methods, columns=columns):
        if with_negative:  # a triplet needs all three texts
            batch = batch.filter(pc.is_valid(batch.column(2)))
        yield pa.RecordBatch.from_arrays(batch.columns, names=names)


def _export_st(pairs: PairsDir, out: Path, methods: list[str]) -> int:
    with_negative = pairs.manifest.option("negatives", "none") != "none"
    schema = pa.schema([("anchor", pa.string()), ("positive", pa.string())]
                       + ([("negative", pa.string())] if with_negative else []))
    if out.suffix == ".parquet":
        n = 0
        with atomic_path(out) as tmp:
            with pq.ParquetWriter(tmp, schema, **PARQUET_OPTIONS) as writer:
                for batch in _st_batches(pairs, methods, with_negative):
                    writer.write_batch(batch)
                    n += batch.num_rows
        return n
    try:
        import datasets  # optional and slow to import: only this export format needs it
    except ImportError as err:
        raise PairsError("writing a datasets folder needs the `datasets` package (pip install datasets); "
                         "or give an --out ending in .parquet") from err
    table = pa.Table.from_batches(list(_st_batches(pairs, methods, with_negative)), schema=schema)
    ds = datasets.Dataset(table)
    folder = _dataset_folder(out)
    folder.check()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        ds.save_to_disk(str(tmp))
        folder.prepare(overwrite=True)  # an earlier export's files go; anything else in the folder stays
        for item in tmp.iterdir():
            item.replace(out / item.name)
        folder.seal()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return table.num_rows


def _dataset_folder(out: Path) -> OutputFolder:
    """A sentence-transformers export's folder (``datasets.Dataset.save_to_disk``): replaced by a new export."""
    return OutputFolder(out, stage="pairs export", holds="exported pairs (a saved dataset)",
                        owns=("data-*.arrow", "dataset_info.json", "state.json"), error=PairsError)
