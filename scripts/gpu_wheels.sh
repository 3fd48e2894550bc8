#!/usr/bin/env bash
# The Python packages a GPU machine lacks for the checks of scripts/gpu_session.sh (the chapters and the live apps:
# its image has torch, scipy, pillow, pytest, tqdm, filelock, pyyaml, but not the notebook stack), downloaded here
# as CPython 3.12 manylinux wheels at the exact pins of requirements.txt into .whl/ (ignored by git, carried to the
# GPU machine: the session script installs them with pip --no-index into a folder of its own).  A session that
# only trains needs none of them: leave .whl home then (the carried tree must stay under 64 MiB with the data pack
# and gpu_state/).
# Usage: bash scripts/gpu_wheels.sh        (prints the total size; the carried tree must stay under 64 MiB)
set -euo pipefail
cd "$(dirname "$0")/.."
NEED="plotly ipywidgets widgetsnbextension jupyterlab_widgets comm ipython ipython_pygments_lexers jedi parso
matplotlib-inline pexpect ptyprocess prompt_toolkit wcwidth stack-data asttokens executing pure_eval nbclient nbformat
fastjsonschema jsonschema jsonschema-specifications referencing rpds-py jupyter_core jupyter_client platformdirs
traitlets pyzmq tornado ipykernel debugpy nest-asyncio2"
PY=${PYTHON:-.venv/bin/python}
mkdir -p .whl
for name in $NEED; do
    pin=$(grep -i "^${name}==" requirements.txt || true)
    [ -n "$pin" ] || { echo "gpu_wheels: $name is not pinned in requirements.txt" >&2; exit 1; }
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any -d .whl "$pin"
done
du -sh .whl
