"""Cited URLs of a corpus store: the citation -> URL mapping and the unique URLs to fetch."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import pyarrow as pa

from pretriever.data import CorpusStore
from pretriever.references.table import CITATIONS_SCHEMA
from pretriever.references.urls import host_of, normalise_url


def load_citation_urls(store: CorpusStore) -> pa.Table:
    """Every citation of the store: doc_id, citation_idx, url, archive_url (url/archive_url may be null)."""
    return store.read_table("citations", ["doc_id", "citation_idx", "url", "archive_url"],
                            sort_by=["doc_id", "citation_idx"])


@dataclass
class CitedUrls:
    """What a fetch works on: the mapping to write, the URLs in fetch order and the funnel so far."""

    mapping: pa.Table  # citations.parquet: doc_id, citation_idx, url (normalised), archive_url
    targets: list[tuple[str, str | None]]  # (url, archive_url), interleaved over hosts
    funnel: dict[str, int] = field(default_factory=dict)


def cited_urls(citations: pa.Table) -> CitedUrls:
    """Normalise and deduplicate the cited URLs; order them round-robin over hosts.

    The round-robin order (every host's first URL, then every host's second, ...) keeps the
    global connection slots spread over many hosts, so per-host politeness rarely idles them.
    A URL's archive copy is the first archive-url any of its citations gives.
    """
    rows = citations.to_pylist()
    with_url = [r for r in rows if r["url"] and r["url"].strip()]
    mapping, archive = [], {}
    for r in with_url:
        url = normalise_url(r["url"])
        if url is None:
            continue
        archived = normalise_url(r["archive_url"])
        mapping.append({"doc_id": r["doc_id"], "citation_idx": r["citation_idx"], "url": url,
                        "archive_url": archived})
        if archive.get(url) is None:
            archive[url] = archived
    by_host: dict[str, list[str]] = defaultdict(list)
    for url in archive:
        by_host[host_of(url)].append(url)
    queues = list(by_host.values())
    targets = [(queue[rank], archive[queue[rank]]) for rank in range(max(map(len, queues), default=0))
               for queue in queues if rank < len(queue)]
    funnel = {"citations": len(rows), "with_url": len(with_url), "fetchable_url": len(mapping),
              "unique_urls": len(archive), "hosts": len(by_host)}
    return CitedUrls(pa.Table.from_pylist(mapping, schema=CITATIONS_SCHEMA), targets, funnel)
