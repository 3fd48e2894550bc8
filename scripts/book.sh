#!/usr/bin/env bash
# The README's main job: set up, build the whole book (executing every chapter, with a cache)
# into _build/<preset>/_build/html with warnings as errors, and open it.  The preset comes from
# CNET_PRESET (default: the published one, cnet_lib.book.project.PUBLISHED_PRESET: its models and studies
# ship with the book and load on a CPU); see the book's introduction for what each runs.
# It says up front what it will do and about how long it takes; jupyter-book then reports each
# chapter as it executes it.
set -euo pipefail
cd "$(dirname "$0")/.."
# the 45k-image CIFAR-10 copy beside the project (the book's numbers come from it), when there is one and
# nothing else was chosen; the smoke preset takes the small copy (scripts/setup.sh) or its fake data
if [ -z "${CNET_DATA_DIR:-}" ] && [ "${CNET_PRESET:-}" != smoke ] && [ -d ../shared/data-large/cifar-10-batches-py ]; then
    CNET_DATA_DIR=$(cd ../shared/data-large && pwd)
    export CNET_DATA_DIR
fi
# CNET_BOOK_DRY_RUN=1: say what would be built and stop (with an existing .venv, leave it as it is)
if [ -n "${CNET_BOOK_DRY_RUN:-}" ] && [ -x .venv/bin/python ]; then
    echo "== dry run: using the existing .venv"
else
    echo "== setting up .venv (first time: a few minutes; afterwards: seconds)"
    source scripts/setup.sh
fi
# the session's settings, read once from the environment (cnet_lib.runtime.settings.Settings)
if [ -z "${CNET_PRESET:-}" ]; then
    CNET_PRESET=$(.venv/bin/python -c "from cnet_lib.book.project import PUBLISHED_PRESET; print(PUBLISHED_PRESET)")
    export CNET_PRESET
fi
preset=$(.venv/bin/python -c "from cnet_lib.runtime.settings import Settings; print(Settings.from_environment().preset)")
export CNET_PRESET=$preset
.venv/bin/python -m cnet_lib book_plan "$preset"
if [ -n "${CNET_BOOK_DRY_RUN:-}" ]; then
    echo "== dry run: stopping before the build (_build/$preset)"
    exit 0
fi
echo "== building the book with preset '$preset' (CNET_DATA_DIR=${CNET_DATA_DIR:-default download cache})"
t0=$SECONDS
.venv/bin/jupyter-book build . -W --keep-going --path-output "_build/$preset"
index="$PWD/_build/$preset/_build/html/index.html"
echo "== built in $(( (SECONDS - t0) / 60 )) min $(( (SECONDS - t0) % 60 )) s: file://$index"
if [ -z "${CI:-}" ]; then
    .venv/bin/python -m webbrowser -t "file://$index" >/dev/null 2>&1 || true
fi
