#!/bin/bash
# Query-as-context pre-training on SciFact (bench/README.md, "Pre-training on SciFact"): cc pairs from
# the corpus cut into 64-word passages, coCondenser and CoT-MAE pre-training, fine-tuning on the train
# claims, evaluation on the test claims beside the starting model and BM25. Every step is a CLI
# command. Usage: bash bench/exp_pretrain_scifact.sh [OUT_DIR]   (about an hour on 2 CPU cores)
set -euo pipefail
export HF_HUB_OFFLINE=1
REPO=$(cd "$(dirname "$0")/.." && pwd)
SF=$REPO/../shared/data/beir/scifact
OUT=${1:-$REPO/bench/out/pretrain-scifact}
mkdir -p "$OUT" && cd "$OUT"
t() { local s=$(date +%s); "$@"; echo "TIME $(( $(date +%s) - s ))s: $*"; }
t pretriever corpus build "$SF" --out sf-store --overwrite
t pretriever corpus build "$SF" --out sf-psg --words 64 --overwrite
t pretriever mine sf-psg --method cc --out sf-cc --overwrite
for obj in cocondenser cotmae; do
  t pretriever pretrain sf-cc --objective $obj --mix cc:1 --batch-size 16 --max-steps 100 --out pt-$obj --overwrite
done
for m in base cocondenser cotmae; do
  model=$([ $m = base ] && echo "" || echo "--model pt-$m")
  t pretriever train --beir "$SF" --split train $model --out ft-$m --overwrite
done
for m in pt-cocondenser pt-cotmae ft-base ft-cocondenser ft-cotmae; do
  t pretriever index build sf-store --model $m --out idx-$m --overwrite
done
t pretriever index build sf-store --out idx-minilm --overwrite
t pretriever evaluate --index idx-minilm --index idx-pt-cocondenser --index idx-pt-cotmae --index idx-ft-base \
    --index idx-ft-cocondenser --index idx-ft-cotmae --bm25 --queries "$SF" --out eval-pretrain --no-plots
