#!/usr/bin/env bash
# Set-up shared by scripts/test.sh and scripts/book.sh: a virtual environment in .venv with
# the exact pins of requirements.txt (torch 2.13.0 CPU) and this package, editable.
# Re-running is cheap: pip is skipped while requirements.txt and pyproject.toml are unchanged.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
stamp=.venv/.cnet-installed
want=$(cat requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -r requirements.txt
    .venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .
    echo "$want" > "$stamp"
fi
# the offline CIFAR-10 copy beside the project, when there is one and nothing else was chosen
if [ -z "${CNET_DATA_DIR:-}" ] && [ -d ../shared/data/cifar-10-batches-py ]; then
    CNET_DATA_DIR=$(cd ../shared/data && pwd)
    export CNET_DATA_DIR
fi
