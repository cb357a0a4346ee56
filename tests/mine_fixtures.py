"""Fixtures and plain-Python re-checks for the mining tests.

The re-checks read the store's Parquet tables with pyarrow into dictionaries and test the
paper's definitions with Python sets, independently of the SQL that mined the pairs.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pretriever import mine
from pretriever.mine import MineConfig

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
    indegree: dict[str, int] = field(default_factory=dict)  # article doc_id -> documents linking to it (0 too)
    target_indegree: dict[str, int] = field(default_factory=dict)  # every link target's title -> the same

    def usable(self, doc_id: str | None) -> bool:
        return doc_id in self.docs and not self.docs[doc_id]["is_disambiguation"]

    def is_article(self, doc_id: str | None) -> bool:
        """An article of the store: a document that is not a disambiguation page (not a red link either)."""
        return self.usable(doc_id)

    def inside(self, link: dict) -> bool:
        """The anchor lies wholly inside the passage it starts in."""
        return 0 <= link["passage_start"] and link["passage_end"] <= len(self.passages[link["passage_id"]]["text"])

    def entity_links(self, pid: str, inside: bool = False) -> list[dict]:
        """Links of a passage to other pages (self-links are not entities of a document); with ``inside``
        only those whose anchor lies wholly inside the passage (what a positive may hold as evidence)."""
        out = []
        for link in self.links_by_passage.get(pid, []):
            title = self.docs[link["doc_id"]]["title"]
            if link["target_title"] is None or link["target_title"] == title or link["target_doc_id"] == link["doc_id"]:
                continue
            if inside and not self.inside(link):
                continue
            out.append(link)
        return out

    def M(self, pid: str, inside: bool = False) -> set[str]:
        """Titles of the entities linked from passage ``pid``."""
        return {link["target_title"] for link in self.entity_links(pid, inside)}

    def M_docs(self, pid: str, inside: bool = False) -> set[str]:
        """Usable documents linked from passage ``pid``."""
        return {l["target_doc_id"] for l in self.entity_links(pid, inside) if self.usable(l["target_doc_id"])}


def load_store(path: Path) -> PyStore:
    s = PyStore()
    for d in read(path / "documents.parquet"):
        s.docs[d["doc_id"]] = d
    for p in read(path / "passages"):
        s.passages[p["passage_id"]] = p
    for x in read(path / "sentences"):
        s.sentences[(x["doc_id"], x["sentence_idx"])] = x
    by_target: dict[str, set[str]] = defaultdict(set)
    by_article: dict[str, set[str]] = defaultdict(set)
    for link in read(path / "links"):
        s.links_by_passage[link["passage_id"]].append(link)
        s.links_by_sentence[(link["doc_id"], link["sentence_idx"])].append(link)
    for pid in list(s.links_by_passage):
        for link in s.entity_links(pid):
            if s.usable(link["doc_id"]):
                by_target[link["target_title"]].add(link["doc_id"])
                if s.is_article(link["target_doc_id"]):
                    by_article[link["target_doc_id"]].add(link["doc_id"])
    s.target_indegree = {e: len(d) for e, d in by_target.items()}
    s.indegree = {doc_id: len(by_article[doc_id]) for doc_id in s.docs if s.is_article(doc_id)}
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


def co_mentions(store: PyStore, entity_ok) -> set[tuple[str, str, str]]:
    """(q passage, p passage, E) triples that satisfy IsCM (HLP, Appendix D) for entities E (link target
    titles) accepted by ``entity_ok(link)``, thresholds aside: E in M(q) from a query sentence holding its
    anchor, E in M(p) and t_Q in M(p) with anchors wholly inside p, E not Q, Q != P."""
    queries: dict[tuple[str, str], set[str]] = defaultdict(set)  # (Q, E) -> passages q with a query linking E
    for (doc, idx), links in store.links_by_sentence.items():
        sentence = store.sentences.get((doc, idx))
        if sentence is None or len(sentence["text"].split()) < 5 or not store.usable(doc):
            continue
        for l in links:
            if sentence["start"] <= l["start"] and l["end"] <= sentence["end"] and l["target_title"] is not None:
                queries[(doc, l["target_title"])].add(l["passage_id"])
    found = set()
    for p, passage in store.passages.items():
        if not store.usable(passage["doc_id"]) or passage["n_words"] < 20:
            continue
        held = store.entity_links(p, inside=True)
        for back in held:
            Q = back["target_doc_id"]
            if not store.usable(Q):
                continue
            for e in held:
                if e["target_title"] != store.docs[Q]["title"] and entity_ok(e):
                    found |= {(q, p, e["target_title"]) for q in queries.get((Q, e["target_title"]), ())}
    return found


def crossing_passage_size(store: PyStore, sizes=range(20, 101)) -> tuple[int, list[tuple[str, str]]]:
    """The smallest passage size (``corpus build --words``) at which links between two articles cross a
    passage boundary, and those links as (source doc_id, target title).

    The documents' text is rebuilt from the store's passages (the gaps between them are whitespace) and cut
    again into chunks of n whitespace-separated words, as the build cuts it.
    """
    texts: dict[str, str] = {}
    for p in sorted(store.passages.values(), key=lambda p: (p["doc_id"], p["start"])):
        text = texts.get(p["doc_id"], "")
        texts[p["doc_id"]] = text + " " * (p["start"] - len(text)) + p["text"]
    links = [l for ls in store.links_by_passage.values() for l in ls
             if store.usable(l["doc_id"]) and store.is_article(l["target_doc_id"]) and l["target_doc_id"] != l["doc_id"]]
    for n in sizes:
        crossing = []
        for doc_id in {l["doc_id"] for l in links}:
            ends = [(m.start(), m.end()) for m in re.finditer(r"\S+(?:\s+\S+){0,%d}" % (n - 1), texts[doc_id])]
            for l in (l for l in links if l["doc_id"] == doc_id):
                if any(start <= l["start"] < end < l["end"] for start, end in ends):
                    crossing.append((doc_id, l["target_title"]))
        if crossing:
            return n, sorted(crossing)
    raise AssertionError(f"no link between articles crosses a passage boundary at any size in {sizes}")


def run(store, out: Path, **options):
    options.setdefault("overwrite", True)
    return mine.run(MineConfig(corpus=store.path, out=out, **options))


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
    """All five methods on the real sample; CM with a 99th-percentile threshold. CM finds no pair there
    (no article of the sample is co-mentioned: see test_cm_sample_has_no_article_to_co_mention)."""
    out = tmp_path_factory.mktemp("mined") / "all"
    result = run(enwiki_store, out, methods=ALL, cm_indegree_percentile=99.0, seed=0)
    return out, result


@pytest.fixture(scope="session")
def co_store(cowiki_store) -> PyStore:
    return load_store(cowiki_store.path)


@pytest.fixture(scope="session")
def mined_co(cowiki_store, tmp_path_factory):
    """DL, CM and WLP on the hand-written co-mention wiki with the paper's defaults (top 10% excluded)."""
    out = tmp_path_factory.mktemp("mined") / "co"
    result = run(cowiki_store, out, methods="dl,cm,wlp", seed=0)
    return out, result
