#!/bin/bash
# Reader pre-training on qac triplets of the enwiki sample (bench/README.md, "Reader pre-training on
# qac triplets"): store, canned references, qac triplets, a split by article, reader training with
# before/after dev EM, end-to-end reading over dense, BM25 and hybrid retrieval. Every step is a CLI
# command. Usage: bash bench/exp_reader_qac.sh [OUT_DIR]   (about 15 minutes on 2 CPU cores)
set -euo pipefail
export HF_HUB_OFFLINE=1
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$REPO/bench/out/reader-qac}
t() { local s=$(date +%s); "$@"; echo "TIME $(( $(date +%s) - s ))s: $*"; }
bash "$REPO/bench/qac_triplets.sh" "$OUT"   # store, refs, qac, qac-squad.json
cd "$OUT"
t pretriever index build store --out dense --bm25 --overwrite
python - <<'PY'
import json, zlib
data = json.load(open("qac-squad.json"))
train, dev = [], []
for article in data["data"]:  # held out by article: its questions go to one side
    (dev if zlib.crc32(article["title"].encode()) % 5 == 0 else train).append(article)
for name, part in (("qac-train.json", train), ("qac-dev.json", dev)):
    json.dump({"version": "1.1", "data": part}, open(name, "w"))
with open("qac-dev-qa.jsonl", "w") as f:
    for qa in (qa for a in dev for p in a["paragraphs"] for qa in p["qas"]):
        f.write(json.dumps({"question": qa["question"], "answer": sorted({a["text"] for a in qa["answers"]})}) + "\n")
PY
t pretriever reader train qac-train.json --dev qac-dev.json --out qac-reader --passages 4 --batch-size 4 \
    --max-length 192 --max-steps 60 --eval-steps 30 --lr 5e-5 --overwrite
for mode in "" --bm25 --hybrid; do
  t pretriever reader evaluate dense qac-dev-qa.jsonl --reader qac-reader -k 5 $mode --out "e2e${mode:-dense}.json"
done
