"""``bash scripts/gpu_check.sh`` rehearsed on the CPU (``GPU_CHECK_DRY_RUN=1``): every step of the GPU
check (the device tests, the chapters, the GPU benchmark) runs to the end and writes its JSON.  A GPU
session has minutes to spare; a script broken by a moved module must fail here, not there.  The dry run
executes one pendulum and one image chapter through the same runner (scripts/run_chapters.py) that the
real run uses for every chapter of _toc.yml, which the JSON lists (nbmake and the book build execute every
chapter already); the script gives each step four times its GPU limit in a dry run, so a slow runner passes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cnet_lib.book.toc import toc_notebooks

ROOT = Path(__file__).resolve().parents[1]


def test_gpu_check_dry_run(tmp_path):
    env = {**os.environ, "GPU_CHECK_DRY_RUN": "1", "PYTHON": sys.executable}
    out = subprocess.run(["bash", "scripts/gpu_check.sh", str(tmp_path)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=3000)  # the script's own step limits (x4 in a dry run) end it sooner
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    summary = json.loads((tmp_path / "gpu_check.json").read_text())
    assert set(summary) == {"cuda_tests", "chapters", "bench_gpu"}
    assert all(v.startswith("rc=0") for v in summary.values()), summary
    chapters = json.loads((tmp_path / "chapters.json").read_text())
    assert chapters["toc"] == [nb.stem for nb in toc_notebooks(ROOT)], "the real run executes every chapter of _toc.yml"
    assert set(chapters["chapters"]) == {"how_to_use", "manifestation_invariance"}, "a dry run: one pendulum, one image chapter"
    assert all(c["status"] == "passed" for c in chapters["chapters"].values()), chapters
    assert json.loads((tmp_path / "bench_gpu.json").read_text())
