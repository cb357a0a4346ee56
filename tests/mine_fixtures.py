"""Fixtures and plain-Python re-checks for the mining tests.

The re-checks read the store's Parquet tables with pyarrow into dictionaries and test the
paper's definitions with Python sets, independently of the SQL that mined the pairs.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pretriever.mine import MineConfig, mine

ALL = "dl,cm,ict,wlp,bfs"


def read(path: Path) -> list[dict]:
    if path.is_dir():
        rows: list[dict] = []
        for part in sorted(path.glob("*.parquet")):
            rows += pq.read_table(part).to_pylist()
        return rows
    return pq.read_table(path).to_pylist()


@dataclass
class PyStore:
    """The store as Python dictionaries."""

    docs: dict[str, dict] = field(default_factory=dict)
    passages: dict[str, dict] = field(default_factory=dict)
    sentences: dict[tuple[str, int], dict] = field(default_factory=dict)
    links_by_passage: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))
    links_by_sentence: dict[tuple[str, int], list[dict]] = field(default_factory=lambda: defaultdict(list))
    indegree: dict[str, int] = field(default_factory=dict)

    def usable(self, doc_id: str | None) -> bool:
        return doc_id in self.docs and not self.docs[doc_id]["is_disambiguation"]

    def entity_links(self, pid: str) -> list[dict]:
        """Links of a passage to other pages (self-links are not entities of a document)."""
        out = []
        for link in self.links_by_passage.get(pid, []):
            title = self.docs[link["doc_id"]]["title"]
            if link["target_title"] is None or link["target_title"] == title or link["target_doc_id"] == link["doc_id"]:
                continue
            out.append(link)
        return out

    def M(self, pid: str) -> set[str]:
        """Titles of the entities linked from passage ``pid``."""
        return {link["target_title"] for link in self.entity_links(pid)}

    def M_docs(self, pid: str) -> set[str]:
        """Usable documents linked from passage ``pid``."""
        return {l["target_doc_id"] for l in self.entity_links(pid) if self.usable(l["target_doc_id"])}


def load_store(path: Path) -> PyStore:
    s = PyStore()
    for d in read(path / "documents.parquet"):
        s.docs[d["doc_id"]] = d
    for p in read(path / "passages"):
        s.passages[p["passage_id"]] = p
    for x in read(path / "sentences"):
        s.sentences[(x["doc_id"], x["sentence_idx"])] = x
    linkers: dict[str, set[str]] = defaultdict(set)
    for link in read(path / "links"):
        s.links_by_passage[link["passage_id"]].append(link)
        s.links_by_sentence[(link["doc_id"], link["sentence_idx"])].append(link)
    for pid in list(s.links_by_passage):
        for link in s.entity_links(pid):
            if s.usable(link["doc_id"]):
                linkers[link["target_title"]].add(link["doc_id"])
    s.indegree = {e: len(d) for e, d in linkers.items()}
    return s


def percentile_threshold(indegree: dict[str, int], percentile: float) -> int:
    """K such that entities with in-degree >= K are at most (100 - percentile)% of all, K smallest."""
    values = sorted(indegree.values())
    allowed = (100 - percentile) / 100 * len(values)
    k = values[-1] + 1
    for candidate in sorted(set(values), reverse=True):
        if sum(1 for v in values if v >= candidate) <= allowed + 1e-9:
            k = candidate
        else:
            break
    return k


def run(store, out: Path, **options):
    options.setdefault("overwrite", True)
    return mine(MineConfig(corpus=store.path, out=out, **options))


def pairs_of(out: Path, method: str) -> list[dict]:
    path = out / f"{method}.parquet"
    return pq.read_table(path).to_pylist() if path.exists() else []


def distinct_pairs_of(out: Path, methods: list[str]) -> list[dict]:
    """The pairs of ``methods`` in order, a (query, positive) that an earlier method gave left out:
    what an export or a training run over several methods sees."""
    seen, rows = set(), []
    for method in methods:
        for row in pairs_of(out, method):
            key = (row["query"], row["positive_text"])
            if key not in seen:
                seen.add(key)
                rows.append(row)
    return rows


@pytest.fixture(scope="session")
def py_store(enwiki_store) -> PyStore:
    return load_store(enwiki_store.path)


@pytest.fixture(scope="session")
def mined_all(enwiki_store, tmp_path_factory):
    """All five methods on the real sample; CM with a 99th-percentile threshold (the default
    leaves no co-mentionable entity on 105 articles, see test_cm_default_threshold_explains)."""
    out = tmp_path_factory.mktemp("mined") / "all"
    result = run(enwiki_store, out, methods=ALL, cm_indegree_percentile=99.0, seed=0)
    return out, result
