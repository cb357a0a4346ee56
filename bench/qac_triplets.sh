#!/bin/bash
# qac triplets of the enwiki sample plus the canned reference pages (tests/data/cmore_pages), as SQuAD JSON:
# store, references, `mine --method qac --context links` (both routes: the cited pages and linked articles),
# `pairs export --format squad`. Used by bench/exp_reader_qac.sh and bench/bench_squad.py.
# Usage: bash bench/qac_triplets.sh OUT_DIR   (writes OUT_DIR/store, refs, qac and qac-squad.json; ~1 minute)
set -euo pipefail
export HF_HUB_OFFLINE=1
REPO=$(cd "$(dirname "$0")/.." && pwd)
DUMP=$REPO/../shared/data/wiki/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2
OUT=${1:?usage: qac_triplets.sh OUT_DIR}
mkdir -p "$OUT" && cd "$OUT"
t() { local s=$(date +%s); "$@"; echo "TIME $(( $(date +%s) - s ))s: $*"; }
t pretriever corpus build "$DUMP" --out store --overwrite
python - "$REPO" <<'PY'
import json, pathlib, sys
pages = pathlib.Path(sys.argv[1]) / "tests" / "data" / "cmore_pages"
with open("pages.jsonl", "w") as f:
    for url, name in json.loads((pages / "index.json").read_text()).items():
        f.write(json.dumps({"url": url, "html": (pages / name).read_text()}) + "\n")
PY
t pretriever references import pages.jsonl --corpus store --out refs --overwrite
t pretriever mine store --method qac --references refs --context links --out qac --overwrite
t pretriever pairs export qac --format squad --out qac-squad.json
