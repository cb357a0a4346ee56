"""Multi-hop questions (HotpotQA style) and their gold sets.

JSONL or a JSON list, one question per object with ``question`` and its gold set, which is
either passage ids (``gold_passages``, ``gold_ids`` or ``passage_ids``: the store's
``passage_id``) or document titles (``gold_titles`` or ``titles``; HotpotQA's own
``supporting_facts`` ``[[title, sentence], ...]`` and MDR's ``sp`` ``[{"title": ...}]`` are
read as titles). A question counts as answered at k when *every* gold passage (or a passage
of every gold title) is among the top k.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pretriever.data.beir import DatasetError
from pretriever.io import read_jsonl


@dataclass
class MultiHopExample:
    """A multi-hop question and the gold set it needs all of (ids or titles, as :func:`load_multihop` says)."""
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
    """Multi-hop questions and their gold sets, and whether the gold are ``passage`` ids or ``title``s.

    Args:
        path: a JSON list or JSONL file of questions with gold passage ids or titles.

    Returns:
        The questions, and ``passage`` or ``title``.

    Raises:
        DatasetError: the file is missing or an item is malformed (the message names it).
    """
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
        items = list(read_jsonl(path, DatasetError))
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
