#!/usr/bin/env bash
# The README's test command: sets everything up on a fresh machine, then runs every test —
# unit tests, every chapter through nbmake (smoke preset), the book build with warnings as
# errors, and the headless-Chromium check of the built pages.  Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
    else
        echo "note: the browser test needs Debian's chromium and chromium-driver (sudo apt-get install chromium chromium-driver)" >&2
    fi
fi
export CNET_PRESET=smoke
exec .venv/bin/python -m pytest "$@"
