"""Make a larger MediaWiki dump by repeating the pages of a sample dump.

Copy ``k`` of every page gets page id ``id + k * step`` (``step`` is a power of ten
above the sample's largest id, at least 10,000,000) and, for ``k > 0``, the title
``f"{title} (copy {k})"``, so ids and titles stay unique. The ``<siteinfo>`` header is
kept; redirect targets and links still point at the original titles.

    python bench/make_big_dump.py SAMPLE.xml.bz2 OUT.xml.bz2 --scale 10
"""

from __future__ import annotations

import argparse
import bz2
import re
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


def make_big_dump(sample: Path, out: Path, scale: int) -> Path:
    """Write ``scale`` copies of the pages of ``sample`` into ``out`` (bz2); return ``out``.

    An existing ``out`` newer than ``sample`` is reused.
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
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".part")
    with bz2.open(partial, "wb", compresslevel=6) as f:
        f.write(head)
        for k in range(scale):
            for page in pages:
                f.write(copy_page(page, k, step))
        f.write(tail)
    partial.replace(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sample", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--scale", type=int, default=10)
    args = parser.parse_args()
    print(make_big_dump(args.sample, args.out, args.scale))


if __name__ == "__main__":
    main()
