#!/usr/bin/env bash
# The GPU check: on a machine with one CUDA GPU, in about 6 minutes (8 at most on an H100-class GPU),
#   1. the `cuda` tests (tests/test_cuda.py, and the device guards of tests/test_device_paths.py);
#   2. every chapter of _toc.yml, executed top to bottom (scripts/run_chapters.py): the pendulum chapters in
#      the `smoke` preset, the image chapters in the `gpu` preset on whatever CNET_DATA_DIR holds (default
#      ../shared/data; a dry run executes one of each, how_to_use and manifestation_invariance);
#   3. the GPU benchmark (benchmarks/bench_gpu.py: eager vs CUDA graphs, bf16 vs float32, ms per
#      step for the preset's N_t values, extrapolated preset times, the T4 estimate).
# Usage:  bash scripts/gpu_check.sh [OUTDIR]        (default OUTDIR: _build/gpu_check)
#         GPU_CHECK_TRAIN=1 bash scripts/gpu_check.sh   # + the gpu preset's real training time (minutes more)
#         GPU_CHECK_DRY_RUN=1 bash scripts/gpu_check.sh # rehearse the script on a CPU (image chapters in smoke)
# It uses $PYTHON (default python3), which must have a CUDA build of torch; the library is taken
# from this checkout (PYTHONPATH), nothing is installed.  The log, a JSON summary and the benchmark's
# JSON go to OUTDIR.  Exit status: 0 when every step passed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${1:-_build/gpu_check}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PY=${PYTHON:-python3}
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
if [ -z "${CNET_DATA_DIR:-}" ] && [ -d ../shared/data/cifar-10-batches-py ]; then
    CNET_DATA_DIR=$(cd ../shared/data && pwd)
fi
export CNET_DATA_DIR=${CNET_DATA_DIR:-}
LOG="$OUT/gpu_check.log"
: > "$LOG"
say() { echo "$*" | tee -a "$LOG"; }

DRY=${GPU_CHECK_DRY_RUN:-}
IMAGE_PRESET=gpu
SLACK=1  # the limits below are for a GPU machine; a dry run on a slow, shared CPU gets four times as long
if [ -n "$DRY" ]; then
    IMAGE_PRESET=smoke
    SLACK=4
    say "gpu_check: DRY RUN on the CPU (no cuda tests run, image chapters in smoke, benchmark --dry-run)"
elif ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>>"$LOG"; then
    say "gpu_check: $PY has no CUDA GPU (torch.cuda.is_available() is False); run it on a GPU machine with a CUDA build of torch"
    exit 2
fi
say "gpu_check on $("$PY" -c "import torch; print(torch.cuda.get_device_name() if torch.cuda.is_available() else 'CPU', '| torch', torch.__version__, '| CUDA', torch.version.cuda)")"
say "data: ${CNET_DATA_DIR:-(none set: the image chapters download CIFAR-10, or use fake data offline)}"

missing=$("$PY" - <<'PY'
import importlib.util
need = {"plotly": "plotly", "ipywidgets": "ipywidgets", "nbclient": "nbclient", "nbformat": "nbformat",
        "ipykernel": "ipykernel", "pytest": "pytest", "scipy": "scipy", "torchdiffeq": "torchdiffeq", "tqdm": "tqdm",
        "yaml": "pyyaml"}
print(" ".join(pkg for mod, pkg in need.items() if importlib.util.find_spec(mod) is None))
PY
)
if [ -n "$missing" ]; then
    say "gpu_check: missing Python packages: $missing"
    say "  install them with:  $PY -m pip install $missing"
    say "  (offline: download wheels elsewhere with 'pip download', carry them, 'pip install --no-index <wheels>')"
fi

declare -A STATUS
run_step() {  # name, timeout in seconds, command...
    local name=$1 limit=$2
    shift 2
    local t0=$SECONDS
    say ""
    limit=$((limit * SLACK))
    say "=== $name (limit ${limit} s)"
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$LOG"
    local rc=${PIPESTATUS[0]}
    STATUS[$name]="rc=$rc, $((SECONDS - t0)) s"
    say "=== $name: ${STATUS[$name]}"
    return 0
}

# 1. the cuda tests
if [[ " $missing " == *" pytest "* ]]; then
    STATUS[cuda_tests]="skipped: pytest missing"
else
    run_step cuda_tests 240 "$PY" -m pytest -q -rs -p no:cacheprovider tests/test_cuda.py tests/test_device_paths.py
fi

# 2. the chapters
if [ -n "$missing" ]; then
    STATUS[chapters]="skipped: missing $missing"
else
    only=()
    # a dry run executes one pendulum and one image chapter through the same runner; the JSON lists every
    # chapter of _toc.yml, which the real run executes (tests/test_gpu_check.py checks both)
    [ -n "$DRY" ] && only=(--only how_to_use manifestation_invariance)
    run_step chapters 300 "$PY" scripts/run_chapters.py "$OUT/chapters.json" "$IMAGE_PRESET" "${only[@]}" \
        --save-dir "$OUT/notebooks"
fi

# 3. the benchmark
bench=(benchmarks/bench_gpu.py --out "$OUT/bench_gpu.json")
[ -n "$DRY" ] && bench+=(--dry-run)
limit=150
if [ -n "${GPU_CHECK_TRAIN:-}" ]; then
    bench+=(--train)
    limit=600
fi
run_step bench_gpu "$limit" "$PY" "${bench[@]}"

say ""
say "summary:"
ok=0
for k in cuda_tests chapters bench_gpu; do
    say "  $k: ${STATUS[$k]:-not run}"
    [[ "${STATUS[$k]:-}" == rc=0,* ]] || ok=1
done
"$PY" - "$OUT" <<PY
import json, sys
json.dump({"cuda_tests": "${STATUS[cuda_tests]:-}", "chapters": "${STATUS[chapters]:-}", "bench_gpu": "${STATUS[bench_gpu]:-}"},
          open(sys.argv[1] + "/gpu_check.json", "w"), indent=1)
PY
say "log and results in $OUT"
exit $ok
