"""Make a larger MediaWiki dump by repeating the pages of a sample dump.

Copy ``k`` of every page gets page id ``id + k * step`` (``step`` is a power of ten
above the sample's largest id, at least 10,000,000) and, for ``k > 0``, the title
``f"{title} (copy {k})"``, so ids and titles stay unique. The ``<siteinfo>`` header is
kept; redirect targets and links still point at the original titles.

    python bench/make_big_dump.py SAMPLE.xml.bz2 OUT.xml.bz2 --scale 10
    python bench/make_big_dump.py SAMPLE.xml.bz2 OUT-multistream.xml.bz2 --scale 10 --pages-per-stream 100
"""

from __future__ import annotations

import argparse
import bz2
import itertools
import re
from collections.abc import Iterator
from pathlib import Path

_PAGE = re.compile(rb"[ \t]*<page>.*?</page>[ \t]*\n?", re.S)  # with its indentation and newline
_PAGE_ID = re.compile(rb"(<ns>[^<]*</ns>\s*<id>)(\d+)(</id>)")
_TITLE = re.compile(rb"<title>(.*?)</title>", re.S)


def read_dump(path: Path) -> bytes:
    """The decompressed XML of a ``.xml`` or ``.xml.bz2`` dump."""
    with open(path, "rb") as raw:
        compressed = raw.read(3) == b"BZh"
    return bz2.open(path).read() if compressed else path.read_bytes()


def id_step(pages: list[bytes]) -> int:
    """A power of ten above every page id, and at least 10,000,000."""
    largest = max((int(m.group(2)) for p in pages if (m := _PAGE_ID.search(p))), default=0)
    return max(10_000_000, 10 ** len(str(largest)))


def copy_page(page: bytes, k: int, step: int) -> bytes:
    """Copy ``k`` of one ``<page>`` element: id shifted by ``k * step``, title suffixed."""
    if k == 0:
        return page
    page = _PAGE_ID.sub(lambda m: m.group(1) + str(int(m.group(2)) + k * step).encode() + m.group(3), page, count=1)
    return _TITLE.sub(lambda m: b"<title>" + m.group(1) + f" (copy {k})".encode() + b"</title>", page, count=1)


def make_big_dump(sample: Path, out: Path, scale: int, pages_per_stream: int = 0) -> Path:
    """Write ``scale`` copies of the pages of ``sample`` into ``out`` (bz2); return ``out``.

    With ``pages_per_stream``, ``out`` is a multistream dump (see :func:`write_multistream`) with its
    index beside it. An existing ``out`` newer than ``sample`` is reused.
    """
    if out.exists() and out.stat().st_mtime > sample.stat().st_mtime:
        return out
    xml = read_dump(sample)
    matches = list(_PAGE.finditer(xml))
    if not matches:
        raise ValueError(f"{sample}: no <page> elements")
    head, tail = xml[: matches[0].start()], xml[matches[-1].end():]
    pages = [m.group() for m in matches]
    step = id_step(pages)
    copies = (copy_page(page, k, step) for k in range(scale) for page in pages)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".part")
    if pages_per_stream:
        write_multistream(head, copies, tail, partial, multistream_index(out), pages_per_stream)
    else:
        with bz2.open(partial, "wb", compresslevel=6) as f:
            f.write(head)
            f.writelines(copies)
            f.write(tail)
    partial.replace(out)
    return out


def multistream_index(dump: Path) -> Path:
    """Where Wikipedia puts a multistream dump's index: ``X-multistream.xml.bz2`` -> ``X-multistream-index.txt.bz2``."""
    return dump.with_name(dump.name.replace(".xml.bz2", "-index.txt.bz2"))


def write_multistream(head: bytes, pages: Iterator[bytes], tail: bytes, out: Path, index: Path,
                      pages_per_stream: int = 100) -> None:
    """Wikipedia's multistream layout: the header in a bz2 stream of its own, then one stream per
    ``pages_per_stream`` pages, then the tail in a stream of its own; ``index`` (bz2) lists every page as
    ``offset:page_id:title``, the offset being its stream's first byte."""
    with open(out, "wb") as f, bz2.open(index, "wt", encoding="utf-8") as lines:
        f.write(bz2.compress(head))
        while group := list(itertools.islice(pages, pages_per_stream)):
            offset = f.tell()
            for page in group:
                page_id, title = _PAGE_ID.search(page).group(2), _TITLE.search(page).group(1)
                lines.write(f"{offset}:{page_id.decode()}:{title.decode()}\n")
            f.write(bz2.compress(b"".join(group)))
        f.write(bz2.compress(tail))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sample", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--scale", type=int, default=10)
    parser.add_argument("--pages-per-stream", type=int, default=0,
                        help="write a multistream dump (and its index beside it) with this many pages per stream")
    args = parser.parse_args()
    print(make_big_dump(args.sample, args.out, args.scale, args.pages_per_stream))


if __name__ == "__main__":
    main()
