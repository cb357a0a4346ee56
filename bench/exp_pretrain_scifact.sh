#!/bin/bash
# Query-as-context pre-training on SciFact, fine-tuned in one and two stages (bench/README.md, "Pre-training
# on SciFact"). Every step is a CLI command:
#   - pre-training corpus: the 5,183 abstracts cut into passages of 64 words, cc pairs (two passages of one
#     abstract); qc is not run: no doc2query weights are offline here, so there are no generated queries;
#   - pre-training: coCondenser and CoT-MAE on cc, PT_STEPS steps of batch PT_BATCH, from all-MiniLM-L6-v2;
#   - fine-tuning: the 809 train claims (qrels/train.tsv, 919 judged pairs), one epoch, batch 32, in two
#     stages: retriever 1 with BM25 negatives, retriever 2 with NEGATIVES negatives per claim drawn from the
#     top 200 of retriever 1 (`pretriever finetune --two-stage`), each from the base model, the coCondenser
#     model and the CoT-MAE model;
#   - evaluation: the 300 test claims (qrels/test.tsv), nDCG@10 and R@100, beside zero-shot MiniLM (at the same
#     FT_PASSAGE_LENGTH) and BM25.
# A finished step is skipped when the script runs again (finetune resumes by itself).
# Usage: bash bench/exp_pretrain_scifact.sh [OUT_DIR]   (PT_STEPS, PT_BATCH, NEGATIVES and FT_PASSAGE_LENGTH, the
# word pieces per abstract in fine-tuning, in the environment)
set -euo pipefail
export HF_HUB_OFFLINE=1
REPO=$(cd "$(dirname "$0")/.." && pwd)
SF=$REPO/../shared/data/beir/scifact
OUT=${1:-$REPO/bench/out/pretrain-scifact}
PT_STEPS=${PT_STEPS:-150}
PT_BATCH=${PT_BATCH:-16}
NEGATIVES=${NEGATIVES:-7}
FT_PASSAGE_LENGTH=${FT_PASSAGE_LENGTH:-256}
mkdir -p "$OUT" && cd "$OUT"
t() { local s=$(date +%s); "$@"; echo "TIME $(( $(date +%s) - s ))s: $*"; }
unless() { [ -e "$1" ] && echo "DONE already ($1): ${*:2}" || t "${@:2}"; }

unless sf-store/manifest.json pretriever corpus build "$SF" --out sf-store --overwrite
unless sf-psg/manifest.json pretriever corpus build "$SF" --out sf-psg --words 64 --overwrite
unless sf-cc/pairs.json pretriever mine sf-psg --method cc --out sf-cc --overwrite
for obj in cocondenser cotmae; do
  unless pt-$obj/pretrain.json pretriever pretrain sf-cc --objective $obj --mix cc:1 --batch-size "$PT_BATCH" \
      --max-steps "$PT_STEPS" --out pt-$obj --overwrite
done
for m in base cocondenser cotmae; do
  model=$([ $m = base ] && echo "" || echo "--model pt-$m")
  t pretriever finetune --beir "$SF" --split train --corpus sf-store $model --two-stage --negative-depth 200 \
      --bm25-negatives "$NEGATIVES" --negatives-per-query "$NEGATIVES" --max-passage-length "$FT_PASSAGE_LENGTH" --out ft-$m
  unless ft-$m/stage2-index/index.json pretriever index build sf-store --model ft-$m/stage2 --out ft-$m/stage2-index
  unless eval-$m/results.json pretriever evaluate --index ft-$m/stage1-index --index ft-$m/stage2-index \
      --queries "$SF" --qrels "$SF/qrels/test.tsv" --out eval-$m --no-plots
done
unless idx-minilm/index.json pretriever index build sf-store --out idx-minilm --max-length "$FT_PASSAGE_LENGTH" --bm25
unless eval-zero-shot/results.json pretriever evaluate --index idx-minilm --bm25 --queries "$SF" \
    --qrels "$SF/qrels/test.tsv" --out eval-zero-shot --no-plots
