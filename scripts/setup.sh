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
    if [ -n "${TORCH_INDEX_URL:-}" ]; then  # e.g. the CPU wheels of download.pytorch.org (the publishing workflow)
        .venv/bin/python -m pip install -q "$(grep '^torch==' requirements.txt)" --index-url "$TORCH_INDEX_URL"
    fi
    # byte-compiled at install (pip's default, about a minute on 2 cores): where PYTHONDONTWRITEBYTECODE=1 is set,
    # as on this project's machines, nothing else would write the .pyc files, and every test's subprocess would
    # compile torch again (tried with --no-compile: the suite took 1.7 min longer)
    .venv/bin/python -m pip install -q -r requirements.txt
    .venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .
    echo "$want" > "$stamp"
fi
# the offline CIFAR-10 copy beside the project, when there is one and nothing else was chosen
if [ -z "${CNET_DATA_DIR:-}" ] && [ -d ../shared/data/cifar-10-batches-py ]; then
    CNET_DATA_DIR=$(cd ../shared/data && pwd)
    export CNET_DATA_DIR
fi
# OpenMP threads sleep instead of spinning while they wait: a step with 2 threads then survives
# another job on the machine (book/CONTRIBUTING.md, Maintainers' measurements).  Read once when
# torch starts, so it is set here, before any Python runs.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
