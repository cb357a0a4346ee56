"""Reading evaluation inputs: BEIR queries and judgments, multi-hop gold sets.

* BEIR ``queries.jsonl``: one ``{"_id", "text"}`` a line (a BEIR dataset folder is accepted
  and its ``queries.jsonl`` read).
* Judgments: BEIR's qrels TSV (header ``query-id  corpus-id  score``) or TREC qrels
  (``qid 0 docid rel``, whitespace-separated, no header). A folder means its ``qrels/test.tsv``.
  Judged ids are *document* ids (BEIR ``_id``). Scores are kept as integers; relevance is
  ``score >= 1`` (pytrec_eval's default), and grades count in nDCG.
* Multi-hop (HotpotQA style), JSONL or a JSON list, one question per object with ``question``
  and its gold set, which is either passage ids (``gold_passages``, ``gold_ids`` or
  ``passage_ids``: the store's ``passage_id``) or document titles (``gold_titles`` or
  ``titles``; HotpotQA's own ``supporting_facts`` ``[[title, sentence], ...]`` and MDR's
  ``sp`` ``[{"title": ...}]`` are read as titles). A question counts as answered at k when
  *every* gold passage (or a passage of every gold title) is among the top k.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


class DatasetError(ValueError):
    """An evaluation input cannot be read; the message names the file and the line."""


def _beir_file(path: Path, name: str) -> Path:
    path = Path(path)
    if path.is_dir():
        path = path / name
    if not path.is_file():
        raise DatasetError(f"{path}: no such file")
    return path


def load_queries(path: Path | str) -> dict[str, str]:
    """BEIR queries: ``{_id: text}`` in file order."""
    path = _beir_file(Path(path), "queries.jsonl")
    queries: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise DatasetError(f"{path}, line {line_no}: not JSON ({err.msg})") from None
            if not isinstance(obj, dict) or "_id" not in obj or not isinstance(obj.get("text"), str):
                raise DatasetError(f"{path}, line {line_no}: expected a BEIR query {{\"_id\": ..., \"text\": ...}}")
            queries[str(obj["_id"])] = obj["text"]
    if not queries:
        raise DatasetError(f"{path}: holds no queries")
    return queries


def load_qrels(path: Path | str) -> dict[str, dict[str, int]]:
    """Judgments ``{query_id: {doc_id: score}}`` from a BEIR qrels TSV or a TREC qrels file."""
    path = Path(path)
    if path.is_dir():
        path = path / "qrels" / "test.tsv"
    if not path.is_file():
        raise DatasetError(f"{path}: no such file")
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            if line_no == 1 and parts[0].lower() in ("query-id", "query_id", "qid"):
                continue  # BEIR header
            if len(parts) == 3:
                qid, did, score = parts
            elif len(parts) == 4:
                qid, _, did, score = parts
            else:
                raise DatasetError(f"{path}, line {line_no}: expected `query-id corpus-id score` (BEIR) or "
                                   f"`qid 0 docid rel` (TREC), got {len(parts)} field(s)")
            try:
                value = int(float(score))
            except ValueError:
                raise DatasetError(f"{path}, line {line_no}: the score {score!r} is not a number") from None
            qrels.setdefault(qid, {})[did] = value
    if not qrels:
        raise DatasetError(f"{path}: holds no judgments")
    return qrels


def queries_in_qrels(queries: dict[str, str], qrels: dict[str, dict[str, int]],
                     queries_path: Path | str = "queries", qrels_path: Path | str = "qrels") -> dict[str, str]:
    """The queries that have judgments, in qrels order (as BEIR does); judged queries must have a text."""
    missing = [q for q in qrels if q not in queries]
    if missing:
        raise DatasetError(f"{len(missing)} judged query id(s) of {qrels_path} are not in {queries_path} "
                           f"(e.g. {', '.join(missing[:5])}): are these the queries of the same dataset?")
    return {q: queries[q] for q in qrels}


@dataclass
class MultiHopExample:
    question: str
    gold: list[str]  # passage ids or document titles (see ``by``)
    qid: str = ""


_ID_KEYS = ("gold_passages", "gold_ids", "passage_ids")
_TITLE_KEYS = ("gold_titles", "titles")


def _gold(obj: dict, where: str) -> tuple[list[str], str]:
    for keys, by in ((_ID_KEYS, "passage"), (_TITLE_KEYS, "title")):
        for key in keys:
            if key in obj:
                value = obj[key]
                if not isinstance(value, list) or not value or not all(isinstance(v, (str, int)) for v in value):
                    raise DatasetError(f"{where}: {key!r} must be a non-empty list of ids or titles")
                return list(dict.fromkeys(str(v) for v in value)), by
    if "supporting_facts" in obj:  # HotpotQA: [[title, sentence index], ...]
        facts = obj["supporting_facts"]
        if not isinstance(facts, list) or not facts or not all(isinstance(f, list) and f for f in facts):
            raise DatasetError(f"{where}: 'supporting_facts' must be HotpotQA's [[title, sentence], ...]")
        return list(dict.fromkeys(str(f[0]) for f in facts)), "title"
    if "sp" in obj:  # MDR: [{"title": ..., "text": ...}, ...]
        sp = obj["sp"]
        if not isinstance(sp, list) or not sp or not all(isinstance(s, dict) and "title" in s for s in sp):
            raise DatasetError(f"{where}: 'sp' must be MDR's [{{\"title\": ...}}, ...]")
        return list(dict.fromkeys(str(s["title"]) for s in sp)), "title"
    raise DatasetError(f"{where}: no gold set: give 'gold_passages' (passage ids) or 'gold_titles' "
                       "(or HotpotQA's 'supporting_facts')")


def load_multihop(path: Path | str) -> tuple[list[MultiHopExample], str]:
    """Multi-hop questions and their gold sets, and whether the gold are ``passage`` ids or ``title``s."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: no such file")
    text = path.read_text(encoding="utf-8")
    items: list[tuple[str, object]] = []
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise DatasetError(f"{path}: not JSON ({err.msg} at line {err.lineno})") from None
        items = [(f"{path}, item {i}", obj) for i, obj in enumerate(data)]
    else:
        for line_no, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    items.append((f"{path}, line {line_no}", json.loads(line)))
                except json.JSONDecodeError as err:
                    raise DatasetError(f"{path}, line {line_no}: not JSON ({err.msg})") from None
    examples, kinds = [], set()
    for where, obj in items:
        if not isinstance(obj, dict) or not isinstance(obj.get("question"), str):
            raise DatasetError(f"{where}: expected an object with a \"question\" string")
        gold, by = _gold(obj, where)
        kinds.add(by)
        if len(kinds) > 1:
            raise DatasetError(f"{where}: mixes gold passage ids and gold titles; use one kind per file")
        qid = obj.get("_id", obj.get("id", len(examples)))
        examples.append(MultiHopExample(question=obj["question"], gold=gold, qid=str(qid)))
    if not examples:
        raise DatasetError(f"{path}: holds no questions")
    return examples, kinds.pop()
