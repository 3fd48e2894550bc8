#!/usr/bin/env bash
# The README's test command: sets everything up on a fresh machine, then runs every test —
# unit tests, every chapter through nbmake (smoke preset), the book build with warnings as
# errors, and the headless-Chromium check of the built pages.  Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
# Debian packages the tests need: chromium (the browser check) and bubblewrap (the grader's sandbox)
missing=()
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    missing+=(chromium chromium-driver)
fi
if ! command -v bwrap >/dev/null 2>&1; then
    missing+=(bubblewrap)
fi
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "note: some tests need Debian's ${missing[*]} (sudo apt-get install ${missing[*]})" >&2
    fi
fi
export CNET_PRESET=smoke
# two test processes (pytest-xdist), each test file whole in one of them (its module fixtures built once): on CI's two
# cores much of the suite waits on subprocesses, kernels and browsers, so two files at a time use the cores
# (book/CONTRIBUTING.md, Maintainers' measurements); CNET_TEST_WORKERS=0 runs everything in this one process
exec .venv/bin/python -m pytest -n "${CNET_TEST_WORKERS:-2}" --dist loadfile "$@"
