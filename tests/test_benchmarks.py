"""The benchmarks a researcher reruns on a GPU still run: their dry runs on the CPU, at tiny sizes, so that a GPU
machine never finds one broken by a moved module (``benchmarks/README.md``)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # trains tiny models in subprocesses

ROOT = Path(__file__).resolve().parents[1]


def test_bench_gpu_recipe_dry_run_writes_every_trial_and_starts_none_after_its_deadline(tmp_path):
    """The probe toward the paper's accuracy (benchmarks/bench_gpu_recipe.py) runs to the end on the CPU at tiny sizes
    (its next plan, with cutout), records each trial's epochs, and with a deadline already passed starts no trial
    of the first plan and says so."""
    out = tmp_path / "recipe.json"
    proc = subprocess.run([sys.executable, "benchmarks/bench_gpu_recipe.py", "--dry-run", "--trials", "next", "--out",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["dry_run"]
    assert all(t["status"] == "finished" and len(t["epochs"]) == 3 for t in result["trials"].values()), result["trials"]
    assert all(t["config"]["cutout"] == 8 for t in result["trials"].values())  # the next probe trains with cutout
    late = tmp_path / "late.json"
    proc = subprocess.run([sys.executable, "benchmarks/bench_gpu_recipe.py", "--dry-run", "--deadline-s", "0",
                           "--out", str(late)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    statuses = [t["status"] for t in json.loads(late.read_text())["trials"].values()]
    assert len(statuses) == 3 and all(s.startswith("skipped") for s in statuses), statuses
