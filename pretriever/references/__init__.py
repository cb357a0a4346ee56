"""Stage 1b: the pages that citations point at, fetched politely and safely or imported from crawls.

``pretriever references fetch`` downloads the cited URLs of a corpus store; ``pretriever
references import`` reads pre-crawled pages (WARC, JSONL). Both write the same ``references``
table, which the ``qac`` mining method (C-MORE) reads.
"""
