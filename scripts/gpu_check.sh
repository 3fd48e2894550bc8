#!/usr/bin/env bash
# What a maintainer checks on a machine with a CUDA GPU, in one command (the book's page On a GPU):
#   1. the cuda tests: training, resume, sweeps, the live apps and the ResNet map on CUDA, graphed steps against
#      eager ones, devices named every way (tests/test_cuda.py, tests/test_device_paths.py);
#   2. every chapter in the published preset on the GPU, timed: benchmarks/results/gpu_chapters.json, which the
#      chapter cards quote (then `cnet notebook_tools fix` and commit the file and the notebooks);
#   3. the pendulum's batched training on CUDA: benchmarks/results/pendulum_batched-gpu-cuda.json.
# Run it in an environment with the machine's CUDA build of torch and this package installed (pip install -e .,
# with requirements.txt less its torch line); CNET_DATA_DIR names the CIFAR-10 folder (or the data pack).
# To train and ship the gpu preset's models again first: book/gpu.md, "Shipping them".
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA GPU here')"
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
"$PY" -m pytest -q -p no:cacheprovider tests/test_cuda.py tests/test_device_paths.py
"$PY" benchmarks/bench_book.py gpu --name gpu_chapters ${CNET_DATA_DIR:+--data-dir "$CNET_DATA_DIR"}
"$PY" benchmarks/bench_pendulum_batched.py --preset gpu --device cuda
