"""``benchmarks/bench_gpu.py --dry-run`` on the CPU: the GPU benchmark (eager against CUDA graphs, bf16
against float32, ms per step, the preset's extrapolated times and the T4 estimate) runs to the end at tiny
sizes and writes its JSON, so a GPU session never finds it broken by a moved module.  (It replaced the dry
run of ``scripts/gpu_check.sh``, retired when ``scripts/gpu_session.sh`` took over its other jobs: the
``cuda`` tests and the chapters, rehearsed by ``tests/test_gpu_session.py``.)"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.slow  # runs the GPU benchmark's dry run

ROOT = Path(__file__).resolve().parents[1]


def test_bench_gpu_dry_run(tmp_path):
    out = tmp_path / "bench_gpu.json"
    proc = subprocess.run([sys.executable, "benchmarks/bench_gpu.py", "--dry-run", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["dry_run"] and result["machine"]["cuda"] is None
    modes = {(r["scheme"], r["mode"], r["precision"]) for r in result["rows"]}
    assert ("rk4_classic", "eager", "fp32") in modes and len(result["rows"]) >= 2, modes
    assert all(r["median_ms"] > 0 and r["flops"] > 0 for r in result["rows"] if "median_ms" in r)
    assert result["t4_estimate"] and result["extrapolated_train_seconds"] and "T4 ESTIMATE" in proc.stdout


def test_two_steps_are_timed_in_alternating_rounds():
    """StepRunner against make_graphed_callables is timed in alternating rounds (the H100 check session timed
    them one after the other on a shared GPU, 3% apart): every round times both, first one then the other,
    and a slower step comes out slower."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_gpu import alternating_ms

    calls = []

    def fast():
        calls.append("fast")

    def slow():
        calls.append("slow")
        time.sleep(0.004)

    timed = alternating_ms({"fast": fast, "slow": slow}, torch.device("cpu"), rounds=4, per_round=3, warmup=1)
    assert calls[:2] == ["fast", "slow"]  # the warm-up, then the rounds: ABBAAB...
    rounds = [calls[2 + 3 * i] for i in range(8)]
    assert rounds == ["fast", "slow", "slow", "fast", "fast", "slow", "slow", "fast"]
    assert timed["slow"]["median_ms"] >= 4 > timed["fast"]["median_ms"] and timed["fast"]["rounds"] == 4
    assert all(t["min_ms"] <= t["median_ms"] for t in timed.values())


def test_bench_gpu_recipe_dry_run_writes_every_trial_and_starts_none_after_its_deadline(tmp_path):
    """The recipe probe of issue 34 (benchmarks/bench_gpu_recipe.py) runs to the end on the CPU at tiny sizes
    (its next plan, with cutout), records each trial's epochs, and with a deadline already passed starts no trial
    of the first plan and says so."""
    out = tmp_path / "recipe.json"
    proc = subprocess.run([sys.executable, "benchmarks/bench_gpu_recipe.py", "--dry-run", "--trials", "next", "--out",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["dry_run"] and result["timing"] and all(r["median_ms"] > 0 for r in result["timing"])
    assert all(t["status"] == "finished" and len(t["epochs"]) == 3 for t in result["trials"].values()), result["trials"]
    assert all(t["config"]["cutout"] == 8 for t in result["trials"].values())  # the next probe trains with cutout
    late = tmp_path / "late.json"
    proc = subprocess.run([sys.executable, "benchmarks/bench_gpu_recipe.py", "--dry-run", "--skip-timing",
                           "--deadline-s", "0", "--out", str(late)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    statuses = [t["status"] for t in json.loads(late.read_text())["trials"].values()]
    assert len(statuses) == 3 and all(s.startswith("skipped") for s in statuses), statuses
