#!/usr/bin/env bash
# The honest SciFact rows of bench/README.md ("SciFact results") through the command line, as a user runs them:
# each refinement with the 809 TRAINING claims' judgments (qrels/train.tsv), then ONE `pretriever evaluate` of the
# base index and every refined one on the test claims (qrels/test.tsv). Two test claims (1292, 870) repeat
# training claims (1291, 871) word for word: evaluate leaves them out for every system and names each row
# "[298/300 scored: 2 repeat feedback queries]" (issue 26). The settings are those bench/bench_refine.py chose
# on a validation split of the training claims (bench/README.md).
#
#   INDEX=bench/out/scifact-index bash bench/exp_refine_honest_scifact.sh    # a default MiniLM index of SciFact
set -euo pipefail
INDEX=${INDEX:-bench/out/scifact-index}
DATA=${DATA:-../shared/data/beir/scifact}
WORK=${WORK:-bench/out/refine-honest}
mkdir -p "$WORK"

refine() {  # refine NAME OPTIONS...: one honest refinement into $WORK/NAME
  local name=$1
  shift
  pretriever refine run "$INDEX" -q "$DATA/queries.jsonl" -f qrels --qrels "$DATA/qrels/train.tsv" \
    --threads 1 --overwrite --out "$WORK/$name" "$@" > "$WORK/$name.log"
}

refine linear-tuned --method linear --beta 0.3 --gamma -0.1
refine linear-paper --method linear --beta 0.6 --gamma -0.1
refine aopt-passage-paper --method aopt-passage --preset paper
refine aopt-passage --method aopt-passage                        # the default: lr 0.01, renormalised
refine aopt-query-paper --method aopt-query --k-pos 1 --preset paper
refine aopt-query --method aopt-query --k-pos 1 --lr 0.001 --no-normalize
refine hybrid-paper --method hybrid --k-pos 1 --preset paper
refine hybrid --method hybrid --k-pos 1 --lr 0.01 --normalize

# two indexes of one method share a name: evaluate names the second by its folder (e.g.
# all-MiniLM-L6-v2+aopt-passage@aopt-passage is the default lr 0.01 one, all-MiniLM-L6-v2+aopt-passage the paper's)
indexes=()
for name in linear-tuned linear-paper aopt-passage-paper aopt-passage aopt-query-paper aopt-query hybrid-paper hybrid; do
  indexes+=(--index "$WORK/$name")
done
COLUMNS=${COLUMNS:-220} pretriever evaluate --index "$INDEX" "${indexes[@]}" -q "$DATA/queries.jsonl" \
  --qrels "$DATA/qrels/test.tsv" --no-plots --out "$WORK/eval"
