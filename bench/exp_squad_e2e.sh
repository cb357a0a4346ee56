#!/bin/bash
# End to end on SQuAD's test articles (bench/bench_squad.py, part 3): a corpus of their paragraphs (one BEIR
# document each), a dense all-MiniLM-L6-v2 index, `pretriever answer` for the given questions (answer, title
# and evidence) and `pretriever reader evaluate` over every test question (EM/F1, top-5 accuracy).
# The reader was trained on gold paragraphs alone (passages=1): its selection head never learnt, so answers
# are ranked by span score (--rank span). Answers up to 30 tokens, as in the SQuAD comparison.
# Usage: bash bench/exp_squad_e2e.sh E2E_DIR READER_DIR "question" ...
#   (E2E_DIR holds corpus.jsonl and test-qa.jsonl, written by bench_squad.py; about 1 minute)
set -euo pipefail
export HF_HUB_OFFLINE=1
DIR=${1:?usage: exp_squad_e2e.sh E2E_DIR READER_DIR QUESTION...}
READER=$(cd "${2:?usage: exp_squad_e2e.sh E2E_DIR READER_DIR QUESTION...}" && pwd)
shift 2
cd "$DIR"
t() { local s=$(date +%s); "$@"; echo "TIME $(( $(date +%s) - s ))s: $*" >&2; }
READ=(--reader "$READER" -k 5 --rank span --max-answer-length 30)
t pretriever corpus build corpus.jsonl --out store --overwrite
t pretriever index build store --out index --overwrite
t pretriever answer index "${READ[@]}" "$@"
pretriever answer index "${READ[@]}" --json "$@" > answers.jsonl
t pretriever reader evaluate index test-qa.jsonl "${READ[@]}" --out evaluate.json
