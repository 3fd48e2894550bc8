"""``benchmarks/estimate_ddp.py``: the `paper` preset's time on one GPU and on 8 GPUs, estimated from measured
single-GPU steps (the README's "Many GPUs"): its arithmetic, its model checked against a training that was
measured, and the shipped JSON being what it computes from the measured files."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cnet_lib.images.runs.image_presets import image_runs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import estimate_ddp as E  # noqa: E402


def test_the_fits_recover_what_they_were_given():
    assert E.line_fit([1, 2, 4, 8], [3 + 2 * x for x in (1, 2, 4, 8)]) == pytest.approx((3, 2))
    assert E.power_exponent([1, 16, 64], [5 * w ** 0.35 for w in (1, 16, 64)]) == pytest.approx(0.35)
    rows = [{"scheme": "euler", "mode": "eager", "precision": "fp32_cl", "n_steps": n, "median_ms": 2.0 * n,
             "kernels_eager_fp32": 100 * n} for n in (4, 8)]
    assert E.step_lines(rows)[("euler", "eager", "fp32_cl")] == pytest.approx((0, 2))
    assert E.launch_us(rows) == pytest.approx((20.0, 20.0))


def test_the_paper_schedule_and_the_hours_it_takes():
    runs = image_runs("paper")
    assert E.epochs_at(runs["rk4_refined"]) == {1: 20, 2: 20, 4: 20, 8: 10, 16: 10, 32: 40}
    assert E.epochs_at(runs["euler_fixed"]) == {32: 120}
    assert E.run_hours(runs["euler_fixed"], lambda nt: 100.0, 390) == pytest.approx(120 * 390 * 0.1 / 3600)


def test_the_step_model_predicts_a_measured_training():
    """The one-GPU model (lines in N_t of the graphed bf16 steps) against the `gpu` preset's RK4 training
    measured on the H200 (bench_gpu.json, 50,000 images; per-epoch evaluation excluded): within 5%."""
    result = E.compute()
    a, b = result["ms_per_step_at_batch_128"]["rk4_classic graph bf16_cl"]
    cfg = image_runs("gpu")["rk4_refined"]
    predicted = 3600 * E.run_hours(cfg, lambda nt: a + b * nt, 50_000 // cfg.batch_size)
    measured = json.loads((E.RESULTS / "bench_gpu.json").read_text())["measured_train"]["rk4_refined"]["train_seconds"]
    assert predicted == pytest.approx(measured, rel=0.05)


def test_the_shipped_estimate_is_what_the_measured_files_give():
    shipped = json.loads((E.RESULTS / E.OUT).read_text())
    fresh = json.loads(json.dumps(E.compute()))  # tuples as lists, as in the file
    assert _close(shipped, fresh)
    for run in ("rk4_refined", "euler_fixed"):  # what the README says: eager DDP on 8 GPUs loses to one graphed GPU
        r = shipped["runs"][run]
        fast, slow = r["8_gpus_ddp_eager_fp32_hours"]
        assert r["one_gpu_graph_bf16_hours"] < fast < slow
        assert r["8_gpus_ddp_graph_bf16_hours"][1] == pytest.approx(r["one_gpu_graph_bf16_hours"])


def _close(a, b) -> bool:
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        return all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        assert len(a) == len(b)
        return all(_close(x, y) for x, y in zip(a, b))
    assert a == (pytest.approx(b, rel=1e-12) if isinstance(a, float) else b)
    return True
