"""Passages by id: document, text, title, whole documents, samples.

A retriever returns passage ids only; judgments name documents, answers are matched against
passage text, multi-hop gold sets may be titles, training needs texts and random negatives.
:class:`PassageLookup` answers these for the passages asked for, in one DuckDB join per call;
documents and titles are cached. One lookup may serve many threads (the server's pool): its DuckDB
connection is used by one caller at a time.

A server asks for a few passages many times a second: :meth:`PassageLookup.hold` reads a store that
fits into memory once, after which :meth:`PassageLookup.passages` is a dict lookup by the store's own
ids (no query planner per request, no lock, cheap enough to call on an event loop).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pretriever.data.passages import passage_text
from pretriever.data.store import CorpusStore
from pretriever.retrieval import Passage


class PassageLookup:
    """The passages of a corpus store by id: what a retriever's hits (passage ids and scores) leave out.

    Evaluation maps passages to documents (judgments name documents), reads passage texts (answer
    matching, Q-P overlap), titles (multi-hop gold titles) and whole documents; training draws random
    negatives; the server shows the passages it found. Each call is one DuckDB join against the ids
    asked for; document ids and titles are cached. After :meth:`hold`, :meth:`passages` answers from
    memory.

    Requirements:
        A corpus store folder (``pretriever corpus build``): its ``passages`` and ``documents`` tables.

    Inputs:
        +--------------------------------------+--------------------------------------------------+
        | Call                                 | Returns                                          |
        +======================================+==================================================+
        | ``passages(ids)``                    | {id: Passage(passage_id, title, text, doc_id)}   |
        +--------------------------------------+--------------------------------------------------+
        | ``texts(ids)``, ``titles(ids)``,     | {id: value}, None for an id not in the store     |
        | ``doc_ids(ids)``                     |                                                  |
        +--------------------------------------+--------------------------------------------------+
        | ``passage_texts(ids, prepend_title)``| the text a model encodes for each id             |
        +--------------------------------------+--------------------------------------------------+
        | ``document_texts(doc_ids)``,         | whole documents; document id by title            |
        | ``title_documents(titles)``          |                                                  |
        +--------------------------------------+--------------------------------------------------+
        | ``document_passages(doc_ids)``,      | each document's passages in order; how many      |
        | ``title_counts(titles)``             | documents carry each title                       |
        +--------------------------------------+--------------------------------------------------+
        | ``sample(n, seed, prepend_title)``   | n seeded random (id, text) pairs                 |
        +--------------------------------------+--------------------------------------------------+

    Example::

        from pretriever.data import PassageLookup

        lookup = PassageLookup("scifact-store/")  # pretriever corpus build scifact/ --out scifact-store/
        ids = [pid for pid, _ in lookup.sample(3, seed=0, prepend_title=False)]
        for pid, passage in lookup.passages(ids).items():
            print(pid, passage.doc_id, passage.title, passage.text[:60])
        assert lookup.texts(["no-such-id"]) == {"no-such-id": None}
        if lookup.hold(max_bytes=2**30):  # small enough: read into memory for a server
            print(len(lookup.passages(ids)), "passages from memory")
        lookup.close()

    A :class:`pretriever.retrieval.Searcher` (``pretriever.index.IndexFolder.open``) carries one as
    ``searcher.lookup``, so a consumer never opens the store itself.

    Args:
        store: the corpus store, or its folder.
    """

    def __init__(self, store: CorpusStore | Path | str):
        self.store = store if isinstance(store, CorpusStore) else CorpusStore(store)
        self._con = self.store.connect()
        self._doc: dict[str, str | None] = {}  # passage id -> document id (None: not in the store)
        self._title: dict[str, str | None] = {}  # passage id -> its document's title
        self._identity: bool | None = None
        self._held: dict[str, Passage] | None = None  # every passage, when hold() read them into memory
        self._lock = threading.Lock()  # a DuckDB connection serves one caller at a time

    @property
    def path(self) -> Path:
        return self.store.path

    @property
    def held(self) -> bool:
        """Whether :meth:`hold` read the passages into memory (then :meth:`passages` touches no store)."""
        return self._held is not None

    def text_bytes(self) -> int:
        """What :meth:`hold` reads (ids, texts, titles), uncompressed, in bytes: from the Parquet footers, no data
        is read. Held as Python strings, passages take about twice this in memory."""
        total = 0
        for name, wanted in (("passages", {"passage_id", "doc_id", "text"}), ("documents", {"doc_id", "title"})):
            path, is_dir = self.store.table_path(name)
            for file in sorted(path.glob("*.parquet")) if is_dir else [path]:
                meta = pq.ParquetFile(file).metadata
                for group in map(meta.row_group, range(meta.num_row_groups)):
                    total += sum(group.column(c).total_uncompressed_size for c in range(group.num_columns)
                                 if group.column(c).path_in_schema in wanted)
        return total

    def hold(self, max_bytes: int) -> bool:
        """Read every passage (id, title, text, document) into memory when :meth:`text_bytes` is at most
        ``max_bytes``; returns whether it did. The store's ids stay the keys, as they are.

        Args:
            max_bytes: the most passage text to hold.

        Returns:
            Whether the passages are now held.
        """
        if self._held is None and self.text_bytes() <= max_bytes:
            with self._lock:
                rows = self._con.execute("SELECT p.passage_id, d.title, p.text, p.doc_id FROM passages p "
                                         "LEFT JOIN documents d USING (doc_id)").fetchall()
            self._held = {row[0]: Passage(*row) for row in rows}
        return self._held is not None

    @property
    def documents_whole(self) -> bool:
        """True when every passage id is its document id (BEIR stores keep documents whole)."""
        if self._identity is None:
            with self._lock:
                rows = self._con.execute("SELECT 1 FROM passages WHERE passage_id <> doc_id LIMIT 1").fetchall()
            self._identity = not rows
        return self._identity

    def _query(self, ids: list[str], sql: str, column: str = "passage_id") -> list[tuple]:
        """Rows of ``sql``, which joins the view ``_wanted`` (one column ``column`` holding ``ids``)."""
        with self._lock:
            self._con.register("_wanted", pa.table({column: pa.array(ids, pa.string())}))
            try:
                return self._con.execute(sql).fetchall()
            finally:
                self._con.unregister("_wanted")

    def texts(self, ids: Iterable[str]) -> dict[str, str | None]:
        """Passage text by id (None for an id that is not in the store). Texts are not cached:
        they are the bulk of a store, and each system's hits are read once.

        Args:
            ids: passage ids.

        Returns:
            Text by id.
        """
        todo = list(dict.fromkeys(ids))
        out: dict[str, str | None] = dict.fromkeys(todo)
        if todo:
            for pid, doc_id, text in self._query(todo, "SELECT p.passage_id, p.doc_id, p.text FROM passages p "
                                                       "JOIN _wanted w USING (passage_id)"):
                self._doc[pid] = doc_id
                out[pid] = text
        return out

    def titles(self, ids: Iterable[str]) -> dict[str, str | None]:
        """The title of each passage's document (None for an id that is not in the store).

        Args:
            ids: passage ids.

        Returns:
            Title by id.
        """
        ids = list(ids)
        todo = list(dict.fromkeys(i for i in ids if i not in self._title))
        if todo:
            self._title.update(dict.fromkeys(todo))
            for pid, doc_id, title in self._query(todo, "SELECT p.passage_id, p.doc_id, d.title FROM passages p "
                                                        "JOIN _wanted w USING (passage_id) "
                                                        "LEFT JOIN documents d USING (doc_id)"):
                self._doc[pid] = doc_id
                self._title[pid] = title
        return {i: self._title[i] for i in ids}

    def passages(self, ids: Iterable[str]) -> dict[str, Passage]:
        """Title, text and document of each id, in the order asked (None fields for an id not in the store):
        from memory when :meth:`hold` read the store, else in one query.

        Args:
            ids: passage ids.

        Returns:
            A :class:`Passage` by id.
        """
        todo = list(dict.fromkeys(ids))
        if self._held is not None:
            return {i: self._held.get(i) or Passage(i, None, None, None) for i in todo}
        found = {}
        if todo:
            found = {row[0]: Passage(*row) for row in self._query(todo, "SELECT p.passage_id, d.title, p.text, "
                                                                        "p.doc_id FROM passages p JOIN _wanted w "
                                                                        "USING (passage_id) LEFT JOIN documents d "
                                                                        "USING (doc_id)")}
        return {i: found.get(i) or Passage(i, None, None, None) for i in todo}

    def doc_ids(self, ids: Iterable[str]) -> dict[str, str | None]:
        """Each passage's document id (the id itself when documents are kept whole).

        Args:
            ids: passage ids.

        Returns:
            Document id by passage id (None: not in the store).
        """
        ids = list(ids)
        if self.documents_whole:
            return {i: i for i in ids}
        todo = list(dict.fromkeys(i for i in ids if i not in self._doc))
        if todo:
            self._doc.update(dict.fromkeys(todo))
            self._doc.update(self._query(todo, "SELECT p.passage_id, p.doc_id FROM passages p "
                                               "JOIN _wanted w USING (passage_id)"))
        return {i: self._doc[i] for i in ids}

    def document_texts(self, doc_ids: Iterable[str]) -> dict[str, str]:
        """Whole documents' text (their passages in order, joined by a space).

        Args:
            doc_ids: document ids.

        Returns:
            Text by document id; a document not in the store is left out.
        """
        return dict(self._query(list(dict.fromkeys(doc_ids)), "SELECT p.doc_id, string_agg(p.text, ' ' ORDER BY "
                                "p.position) FROM passages p JOIN _wanted USING (doc_id) GROUP BY p.doc_id", "doc_id"))

    def known_documents(self, doc_ids: Iterable[str]) -> set[str]:
        """The given document ids that the store holds (judgments naming another corpus find none).

        Args:
            doc_ids: document ids.

        Returns:
            Those the store holds.
        """
        return {row[0] for row in self._query(list(dict.fromkeys(doc_ids)), "SELECT DISTINCT p.doc_id FROM passages p "
                                              "JOIN _wanted USING (doc_id)", "doc_id")}

    def known_passages(self, ids: Iterable[str]) -> set[str]:
        """The given passage ids that the store holds.

        Args:
            ids: passage ids.

        Returns:
            Those the store holds.
        """
        return {row[0] for row in self._query(list(dict.fromkeys(ids)), "SELECT p.passage_id FROM passages p "
                                              "JOIN _wanted USING (passage_id)")}

    def title_documents(self, titles: Iterable[str]) -> dict[str, str]:
        """Document id by title, for the titles found in the store.

        Args:
            titles: document titles.

        Returns:
            Document id by title (the smallest id when several documents share a title).
        """
        return dict(self._query(list(dict.fromkeys(titles)), "SELECT d.title, min(d.doc_id) FROM documents d "
                                "JOIN _wanted USING (title) GROUP BY d.title", "title"))

    def title_counts(self, titles: Iterable[str]) -> dict[str, int]:
        """How many documents of the store carry each title (a title no document carries is left out).

        Args:
            titles: document titles.

        Returns:
            Number of documents by title.
        """
        return dict(self._query(list(dict.fromkeys(titles)), "SELECT d.title, count(*) FROM documents d "
                                "JOIN _wanted USING (title) GROUP BY d.title", "title"))

    def document_passages(self, doc_ids: Iterable[str]) -> dict[str, list[Passage]]:
        """Every passage of each document, in document order (a document not in the store is left out).

        Args:
            doc_ids: document ids.

        Returns:
            Each document's passages, by document id.
        """
        out: dict[str, list[Passage]] = {}
        for pid, title, text, doc_id in self._query(
                list(dict.fromkeys(doc_ids)), "SELECT p.passage_id, d.title, p.text, p.doc_id FROM passages p "
                "JOIN _wanted USING (doc_id) LEFT JOIN documents d USING (doc_id) ORDER BY p.doc_id, p.position",
                "doc_id"):
            out.setdefault(doc_id, []).append(Passage(pid, title, text, doc_id))
        return out

    def passage_texts(self, ids: Iterable[str], prepend_title: bool) -> dict[str, str]:
        """The text that is encoded for each id (:func:`passage_text`). An id that is not a passage
        but a document of a store cut into passages (qrels name documents) gets the whole document.

        Args:
            ids: passage (or document) ids.
            prepend_title: put the title before the text, as the index did.

        Returns:
            Encoded text by id; an id the store does not hold is left out.
        """
        todo = list(dict.fromkeys(ids))
        found = {pid: passage_text(title, text, prepend_title) for pid, title, text in self._query(
            todo, "SELECT p.passage_id, d.title, p.text FROM passages p JOIN _wanted w USING (passage_id) "
                  "LEFT JOIN documents d USING (doc_id)")}
        rest = [i for i in todo if i not in found]
        if rest:
            titles = dict(self._query(rest, "SELECT doc_id, title FROM documents JOIN _wanted USING (doc_id)",
                                      "doc_id"))
            for doc_id, text in self.document_texts(rest).items():
                found[doc_id] = passage_text(titles.get(doc_id), text, prepend_title)
        return found

    def sample(self, n: int, seed: int, prepend_title: bool) -> list[tuple[str, str]]:
        """``n`` passages (id, text) drawn by a hash of the seed, without reading the store into memory.

        Args:
            n: how many passages.
            seed: the same seed draws the same passages.
            prepend_title: put the title before the text, as the index did.

        Returns:
            ``(passage_id, text)`` pairs.
        """
        with self._lock:
            rows = self._con.execute("SELECT p.passage_id, d.title, p.text FROM passages p LEFT JOIN documents d "
                                     "USING (doc_id) ORDER BY md5(p.passage_id || ?) LIMIT ?",
                                     [f":{seed}", n]).fetchall()
        return [(pid, passage_text(title, text, prepend_title)) for pid, title, text in rows]

    def close(self) -> None:
        self._con.close()
