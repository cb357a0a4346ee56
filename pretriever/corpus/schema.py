"""Arrow schemas of the corpus store's tables: the contract every later stage reads.

``docs/architecture.md`` explains each column; keep the two in step.
"""

from __future__ import annotations

import pyarrow as pa

STR, I32, BOOL = pa.string(), pa.int32(), pa.bool_()

PAGES = pa.schema([
    ("doc_id", STR), ("title", STR), ("namespace", I32), ("status", STR),
    ("redirect_to", STR), ("is_disambiguation", BOOL), ("n_passages", I32),
    ("n_sentences", I32), ("n_links", I32), ("n_citations", I32), ("n_words", I32),
    ("reason", STR),
])

PASSAGES = pa.schema([
    ("passage_id", STR), ("doc_id", STR), ("position", I32), ("section_idx", I32),
    ("start", I32), ("n_words", I32), ("text", STR),
])

SENTENCES = pa.schema([
    ("doc_id", STR), ("sentence_idx", I32), ("passage_id", STR), ("section_idx", I32),
    ("start", I32), ("end", I32), ("text", STR), ("has_hole", BOOL), ("is_list_item", BOOL),
])

SECTIONS = pa.schema([
    ("doc_id", STR), ("section_idx", I32), ("start", I32), ("title", STR),
])

# Links as parsed; the build's finalize step adds the resolved target (see LINKS).
RAW_LINKS = pa.schema([
    ("doc_id", STR), ("link_idx", I32), ("passage_id", STR), ("sentence_idx", I32),
    ("start", I32), ("end", I32), ("passage_start", I32), ("passage_end", I32),
    ("anchor", STR), ("written_target", STR),
])

LINKS = pa.schema(list(RAW_LINKS) + [
    ("target_title", STR), ("target_doc_id", STR), ("via_redirect", BOOL),
])

CITATIONS = pa.schema([
    ("doc_id", STR), ("citation_idx", I32), ("passage_id", STR), ("sentence_idx", I32),
    ("position", I32), ("statement", STR), ("template", STR), ("url", STR),
    ("title", STR), ("archive_url", STR), ("name", STR), ("raw", STR),
])

DOCUMENTS = pa.schema([
    ("doc_id", STR), ("title", STR), ("is_disambiguation", BOOL), ("n_passages", I32),
    ("n_sentences", I32), ("n_links", I32), ("n_citations", I32), ("n_words", I32),
])

# What a wiki page says it is about: its infobox templates and its categories (none for other formats).
PAGE_TAGS = pa.schema([("doc_id", STR), ("tag_idx", I32), ("source", STR), ("name", STR)])

REDIRECTS = pa.schema([("title", STR), ("target_title", STR), ("hops", I32)])

# Tables written chunk by chunk by the workers, in the order they are written.
CHUNK_TABLES: dict[str, pa.Schema] = {
    "pages": PAGES, "passages": PASSAGES, "sentences": SENTENCES, "sections": SECTIONS,
    "links_raw": RAW_LINKS, "citations": CITATIONS, "page_tags": PAGE_TAGS,
}

# Tables of a finished store: name -> (schema, stored as a directory of part files?)
STORE_TABLES: dict[str, tuple[pa.Schema, bool]] = {
    "documents": (DOCUMENTS, False), "pages": (PAGES, False), "redirects": (REDIRECTS, False),
    "passages": (PASSAGES, True), "sentences": (SENTENCES, True), "sections": (SECTIONS, True),
    "links": (LINKS, True), "citations": (CITATIONS, True), "page_tags": (PAGE_TAGS, True),
}
