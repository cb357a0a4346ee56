#!/bin/bash
# Label-free adaptation on SciFact (bench/README.md, "Label-free adaptation on SciFact"): what a user with the
# corpus and no labels can get. No claim (test or train) is a training or feedback query and no judgment chooses
# a setting: every setting below was fixed before looking at the test claims, which only score the systems.
# Every step is a CLI command; heavy steps run under the shared lock. Usage:
#   bash bench/exp_labelfree_scifact.sh [OUT_DIR]    (about 80 min on the busy shared 2-core machine)
set -euo pipefail
export HF_HUB_OFFLINE=1
REPO=$(cd "$(dirname "$0")/.." && pwd)
SF=${SCIFACT:-$REPO/../shared/data/beir/scifact}
OUT=${1:-$REPO/bench/out/labelfree}
mkdir -p "$OUT" && cd "$OUT"
t() { local s=$(date +%s); flock /tmp/heavy.lock "$@"; echo "TIME $(( $(date +%s) - s ))s: $*"; }
ev() { local out=$1; shift; t pretriever evaluate "$@" --queries "$SF" --out "$out" --no-plots --no-overlap; }

# 1. the starting points: BM25, all-MiniLM-L6-v2, their fusion
t pretriever corpus build "$SF" --out sf-store --overwrite
t pretriever index build sf-store --out sf-index --bm25 --overwrite
ev ev-base --index sf-index --bm25 --hybrid
ev ev-base-cvx --index sf-index --hybrid --fusion convex --alpha 0.5

# 2. search-time dense PRF: Rocchio from the fused top 3 (k = 3, weight 1: fixed a priori, not tuned)
ev ev-prf-rrf --index sf-index --hybrid --prf-k 3
ev ev-prf-cvx --index sf-index --hybrid --fusion convex --alpha 0.5 --prf-k 3

# 3. refine with label-free PRF over mined queries (the 5,085 statement-like titles, never the claims): each
#    title's top 5 of dense + BM25 (RRF) are its pseudo-positives, AOpt moves the passage vectors (default preset)
t pretriever mine sf-store --method tb --negatives none --out sf-tb --overwrite
t pretriever pairs export sf-tb --format jsonl --out tb.jsonl
python -c "
import json
with open('titles.jsonl', 'w') as f:
    for line in open('tb.jsonl'):
        r = json.loads(line)
        f.write(json.dumps({'_id': 'title-' + r['query_doc_id'], 'text': r['query']}) + '\n')"
t pretriever refine run sf-index -q titles.jsonl -f topk --fuse-bm25 -k 100 --k-pos 5 --method aopt-passage \
    --threads 1 --out ref-tb --overwrite
ev ev-ref-tb --index ref-tb --hybrid
ev ev-ref-tb-cvx --index ref-tb --hybrid --fusion convex --alpha 0.5 --prf-k 3
#    the same with dense-only label search (what --fuse-bm25 changes)
t pretriever refine run sf-index -q titles.jsonl -f topk -k 100 --k-pos 5 --method aopt-passage \
    --threads 1 --out ref-tb-dense --overwrite
ev ev-ref-tb-dense --index ref-tb-dense --hybrid

# 4. fine-tune on title -> abstract pairs (title left out of the passages), BM25 hard negatives, 2,000 pairs
t pretriever pairs export sf-tb --format dpr --out tb.json
t pretriever train --dpr tb.json --corpus sf-store --hard-negatives bm25 --no-prepend-title --limit 2000 \
    --out ft-tb --overwrite
t pretriever index build sf-store --model ft-tb --out idx-tb --overwrite
ev ev-tb --index idx-tb --hybrid --bm25-dir sf-index/bm25
ev ev-tb-cvx --index idx-tb --hybrid --fusion convex --alpha 0.5 --bm25-dir sf-index/bm25
ev ev-tb-prf --index idx-tb --hybrid --fusion convex --alpha 0.5 --prf-k 3 --bm25-dir sf-index/bm25
