#!/usr/bin/env bash
# The GPU session (issue 24): ONE command on one GPU machine, at most 10 minutes, that
#   - runs the `cuda` tests and every chapter of _toc.yml on CUDA (image chapters in the `gpu` preset),
#   - times StepRunner against torch.cuda.make_graphed_callables and every live app on the GPU,
#   - and only when the `gpu` preset's models do not ship with seeds 0, 1, 2 (or GPU_SESSION_TRAIN=always):
#     trains its two runs on the data pack from training seeds 0, 1 and 2, with their manifestation sweeps
#     and robustness studies on the 5,000 held-out images, and ships seed 0 (python -m cnet_lib ship's own
#     function) with every seed's numbers (seeds.json),
# and writes what it brings back into OUT within the GPU machine's return limits (8 files, 16 MiB each):
# gpu_session.json, gpu_session.log, chapters.json, cuda_tests.txt, live_apps.json (+ shipped-gpu.tar when
# it trained).
# The stages, their order and the time estimate are in scripts/gpu_session.py.  A rerun on the same (warm)
# machine resumes: finished seeds and studies are loaded from _build/gpu_session, not redone.
#
# Before it, here (once):
#   python -m cnet_lib pack ../shared/data-large shared_pack   # the 45k + 5k images, 25.7 MiB (`book/gpu.md`, "The data pack")
#   bash scripts/gpu_wheels.sh                                 # the notebook stack the GPU image lacks, 26 MiB, in .whl/
# On the device tool (the carried tree stays under its 64 MiB: checkout 3.4 MB + pack + wheels):
#   run(command='bash scripts/gpu_session.sh "$OUT"', carry=["shared_pack", ".whl"], timeout_s=600)
# Afterwards, here:
#   python scripts/session_files.py accept <files_at>         # verifies and installs the gpu folders of cnet_lib/shipped/
#
# Rehearsal on the CPU (tests/test_gpu_session.py): GPU_SESSION_DRY_RUN=1 runs the same stages in the `smoke`
# preset on the CPU (one pendulum and one image chapter) on whatever CNET_DATA_DIR holds.
# GPU_SESSION_TRAIN=always trains the seeds even when the preset's models ship (default auto: reuse them).
# GPU_SESSION_WORK names the work folder (default _build/gpu_session), GPU_SESSION_DEADLINE_S the seconds the
# driver may use before it packs (default 540).  Exit status 0 when every stage passed.
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
missing=$("$PY" - <<'PY'
import importlib.util
need = {"plotly": "plotly", "ipywidgets": "ipywidgets", "nbclient": "nbclient", "nbformat": "nbformat",
        "ipykernel": "ipykernel", "pytest": "pytest", "scipy": "scipy", "torchdiffeq": "torchdiffeq", "tqdm": "tqdm",
        "yaml": "pyyaml", "PIL": "pillow", "filelock": "filelock"}
print(" ".join(pkg for mod, pkg in need.items() if importlib.util.find_spec(mod) is None))
PY
)
if [ -n "$missing" ]; then
    say "gpu_session: missing Python packages: $missing (bash scripts/gpu_wheels.sh here, then carry .whl)"
    exit 2
fi
say "gpu_session on $("$PY" -c "import torch; print(torch.cuda.get_device_name() if torch.cuda.is_available() else 'CPU', '| torch', torch.__version__, '| CUDA', torch.version.cuda)"), data $CNET_DATA_DIR"
args=(--out "$OUT" --work "$WORK" --deadline-s "$DEADLINE")
[ -n "$DRY" ] && args+=(--dry-run)
[ -n "${GPU_SESSION_TRAIN:-}" ] && args+=(--train "$GPU_SESSION_TRAIN")  # auto (default) or always
timeout --kill-after=10 $((DEADLINE + 45)) "$PY" scripts/gpu_session.py "${args[@]}" 2>&1 | tee -a "$LOG"
exit "${PIPESTATUS[0]}"
