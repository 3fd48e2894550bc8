"""How long a T4 (Colab's free GPU) would take for what a faster GPU was measured doing: an estimate, never a
measurement, with its two assumptions stated where it is quoted (``book/gpu.md``, *On a GPU*).

* A T4 reaches the same fraction of its float32 peak as the measured GPU did of its own
  (:data:`FP32_TFLOPS`: the vendors' dense float32 figures), so every GPU time scales by the ratio of the peaks.
* A T4 has no bf16 hardware and runs float32: the measured bf16 graph step is :data:`FP32_OVER_BF16` times
  faster than the float32 one (RK4-classic N_t = 4 on an H200: 16.2 against 27.0 ms, measured by the GPU benchmark of
  2026-11, ``benchmarks/results/bench_gpu.json`` in the git history).

:func:`t4_estimate` applies them to each run's measured seconds (training, evaluation, sweep).  The book and a
reader's install compute it here from the shipped models' own records (:func:`cnet_lib.book.measurements.t4_estimate`),
so a Colab reader sees the same estimate as the book.
"""
from __future__ import annotations

from typing import Mapping, Optional

__all__ = ["FP32_TFLOPS", "FP32_OVER_BF16", "fp32_tflops", "t4_estimate"]

FP32_TFLOPS = {"T4": 8.1, "H100 PCIe": 51.2, "H100": 67.0, "H200": 67.0}
"""Dense float32 peaks (TFLOP/s) by model name; ``H100`` is the SXM part (``NVIDIA H100 80GB HBM3``)."""

FP32_OVER_BF16 = 27.0 / 16.2
"""The float32 graph step over the bf16 one, measured on an H200 (module doc)."""


def fp32_tflops(device_name: str) -> Optional[float]:
    """The float32 peak of the GPU named ``device_name`` (``torch.cuda.get_device_name``), matched by the longest
    model name of :data:`FP32_TFLOPS` it contains; ``None`` for a GPU not in the table."""
    name = str(device_name or "")
    found = [model for model in FP32_TFLOPS if model in name]
    return FP32_TFLOPS[max(found, key=len)] if found else None


def t4_estimate(runs: Mapping[str, Mapping[str, float]], measured_on: str) -> dict:
    """Minutes a T4 would take for each run and for the image chapters together, from ``runs`` = ``{run:
    {"train": s, "eval": s, "sweep": s}}`` measured on the GPU ``measured_on`` (module doc); ``{}`` when that GPU
    has no peak in :data:`FP32_TFLOPS` or ``runs`` is empty (no estimate rather than a wrong one)."""
    peak = fp32_tflops(measured_on)
    if peak is None or not runs:
        return {}
    ratio = peak / FP32_TFLOPS["T4"]
    out = {name: {"measured_s": {k: float(s[k]) for k in ("train", "eval", "sweep")},
                  "t4_minutes": (s["train"] + s["eval"] + s["sweep"]) * FP32_OVER_BF16 * ratio / 60}
           for name, s in runs.items()}
    return {"assumptions": {"peak_ratio": ratio, "fp32_over_bf16": FP32_OVER_BF16, "measured_on": measured_on},
            "runs": out, "image_chapters_minutes": sum(r["t4_minutes"] for r in out.values())}
