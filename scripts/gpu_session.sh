#!/usr/bin/env bash
# The GPU session (issues 24 and 45): ONE command on one GPU machine, at most 10 minutes, resumable across commands.
# It trains, unit by unit (one training seed of one run), what the `gpu` preset's next recipe still lacks
# (scripts/session_state.py): seeds 0, 1, 2 of its main runs (rk4_refined, euler_fixed; each stored as it ships in
# float16, swept, studied for robustness and adaptive steps), seed 0 shipped (python -m cnet_lib ship's writer), then
# seeds 0, 1, 2 of its control runs (rk4_fixed, euler_refined; swept).  What earlier commands finished comes from the
# carried state folder (gpu_state/, written by `session_files.py accept`; seed 0's models shipped together wait in
# gpu_state_models/, not carried, and gpu_state/seed0.json says they are done) and the shipped models: only what is
# missing is trained.  With nothing to train (or GPU_SESSION_TRAIN=never) it checks CUDA with the preset's models:
# the `cuda` tests, every chapter of _toc.yml on CUDA, StepRunner against torch.cuda.make_graphed_callables, the
# pendulum's batched training and every live app (these need the notebook stack: carry .whl).
# It writes what it brings back into OUT within the GPU machine's return limits (8 files, 16 MiB each):
# gpu_session.json, gpu_session.log, seeds-gpu.json (every unit's numbers), shipped-gpu-<run>.tar (seed 0's main
# runs, when trained), throughput.json (GPU_SESSION_THROUGHPUT=1), and the checks' chapters.json, cuda_tests.txt,
# live_apps.json, pendulum_batched.json.  The stages, their order and time estimates are in scripts/gpu_session.py.
#
# Before it, here (once):
#   python -m cnet_lib pack ../shared/data-large shared_pack   # the 45k + 5k images, 25.7 MiB (`book/gpu.md`, "The data pack")
#   bash scripts/gpu_wheels.sh                                 # only for the checks: the notebook stack, 26 MiB, in .whl/
# On the device tool (the working tree that travels stays under 64 MiB: checkout + pack + gpu_state, or + .whl;
# `python scripts/session_files.py carry [--with-wheels]` says what to carry and whether it fits):
#   run(command='GPU_SESSION_THROUGHPUT=1 bash scripts/gpu_session.sh "$OUT"', carry=["shared_pack", "gpu_state"], timeout_s=600)
# Afterwards, here:
#   python scripts/session_files.py accept <files_at>         # verifies; keeps the units in gpu_state/ (seed 0's pair
#                                                              # in gpu_state_models/), and once the recipe's main
#                                                              # seeds are done installs its models in
#                                                              # cnet_lib/shipped/ and switches the preset to it
#
# Rehearsal on the CPU (tests/test_gpu_session.py): GPU_SESSION_DRY_RUN=1 runs the same stages in the `smoke`
# preset on the CPU (one pendulum and one image chapter) on whatever CNET_DATA_DIR holds.
# GPU_SESSION_TRAIN: auto (default: what is missing), always (every unit again), never (the checks alone).
# GPU_SESSION_RECIPE: auto (default: the next recipe), current, or a recipe's name (image_presets.GPU_RECIPES).
# GPU_SESSION_STATE names the state folder (default gpu_state/ when it exists), GPU_SESSION_SHIPPED the folder of
# the shipped models (default cnet_lib/shipped; the rehearsal's own), GPU_SESSION_WORK the work folder
# (default _build/gpu_session: a rerun on the same machine continues from it), GPU_SESSION_DEADLINE_S the seconds
# the driver may use before it packs (default 540), GPU_SESSION_SEEDS the training seeds (default "0 1 2"),
# GPU_SESSION_STOP_AFTER a number of units after which no unit starts (a deadline rehearsed).  Exit status 0 when no stage failed or was stopped (a unit left for the next
# command by the deadline is neither).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${1:-_build/gpu_session/out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PY=${PYTHON:-python3}
LOG="$OUT/gpu_session.log"
: > "$LOG"
say() { echo "$*" | tee -a "$LOG"; }
DRY=${GPU_SESSION_DRY_RUN:-}
DEADLINE=${GPU_SESSION_DEADLINE_S:-540}
WORK=${GPU_SESSION_WORK:-$ROOT/_build/gpu_session}

if [ -d .whl ] && [ -z "$DRY" ]; then  # the carried wheels, in a folder of their own (the image's packages untouched)
    if "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/cnet-site \
            .whl/*.whl >>"$LOG" 2>&1; then
        export PYTHONPATH=/tmp/cnet-site
    else
        say "gpu_session: installing the carried wheels failed (the log says why)"
    fi
fi
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
if [ -z "${CNET_DATA_DIR:-}" ] && [ -d shared_pack/cifar-10-webp ]; then
    export CNET_DATA_DIR=$ROOT/shared_pack
fi
if [ -z "${CNET_DATA_DIR:-}" ]; then
    say "gpu_session: no data: carry shared_pack (python -m cnet_lib pack ../shared/data-large shared_pack) or set CNET_DATA_DIR"
    exit 2
fi
if [ -z "$DRY" ] && ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>>"$LOG"; then
    say "gpu_session: $PY has no CUDA GPU (torch.cuda.is_available() is False); run it on a GPU machine"
    exit 2
fi
missing() {  # the packages of "$@" (import name:package name) that $PY cannot import
    "$PY" - "$@" <<'PY'
import importlib.util, sys
print(" ".join(pair.split(":")[1] for pair in sys.argv[1:] if importlib.util.find_spec(pair.split(":")[0]) is None))
PY
}
core=$(missing numpy:numpy tqdm:tqdm yaml:pyyaml PIL:pillow filelock:filelock scipy:scipy)
if [ -n "$core" ]; then
    say "gpu_session: missing Python packages: $core (bash scripts/gpu_wheels.sh here, then carry .whl)"
    exit 2
fi
notebooks=$(missing plotly:plotly ipywidgets:ipywidgets nbclient:nbclient nbformat:nbformat ipykernel:ipykernel \
    pytest:pytest torchdiffeq:torchdiffeq)
[ -n "$notebooks" ] && say "gpu_session: no checks this time: $notebooks missing (bash scripts/gpu_wheels.sh here, then carry .whl)"
say "gpu_session on $("$PY" -c "import torch; print(torch.cuda.get_device_name() if torch.cuda.is_available() else 'CPU', '| torch', torch.__version__, '| CUDA', torch.version.cuda)"), data $CNET_DATA_DIR"
args=(--out "$OUT" --work "$WORK" --deadline-s "$DEADLINE")
[ -n "$DRY" ] && args+=(--dry-run)
[ -n "$notebooks" ] && args+=(--no-notebooks)
[ -n "${GPU_SESSION_TRAIN:-}" ] && args+=(--train "$GPU_SESSION_TRAIN")  # auto (default), always or never
[ -n "${GPU_SESSION_RECIPE:-}" ] && args+=(--recipe "$GPU_SESSION_RECIPE")
[ -n "${GPU_SESSION_STATE:-}" ] && args+=(--state "$GPU_SESSION_STATE")
[ -n "${GPU_SESSION_SHIPPED:-}" ] && args+=(--shipped "$GPU_SESSION_SHIPPED")  # the rehearsal's shipped folder
[ -n "${GPU_SESSION_STOP_AFTER:-}" ] && args+=(--stop-after-units "$GPU_SESSION_STOP_AFTER")
# shellcheck disable=SC2206  # the training seeds, a list: "0 1 2" (the default)
[ -n "${GPU_SESSION_SEEDS:-}" ] && args+=(--seeds $GPU_SESSION_SEEDS)
[ "${GPU_SESSION_THROUGHPUT:-}" = 1 ] && args+=(--throughput)
timeout --kill-after=10 $((DEADLINE + 45)) "$PY" scripts/gpu_session.py "${args[@]}" 2>&1 | tee -a "$LOG"
exit "${PIPESTATUS[0]}"
