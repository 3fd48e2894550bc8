"""Shared timing helpers for the benchmarks: interleaved repeats, medians, JSON records."""
from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch


def interleaved_median(fns: dict, repeats: int = 7, warmup: int = 2) -> dict:
    """Median seconds per call of each function, measured in interleaved rounds so that
    load from other processes hits every candidate alike."""
    for _ in range(warmup):
        for f in fns.values():
            f()
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def machine() -> dict:
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cuda": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
    }


def write_result(name: str, payload: dict) -> Path:
    out = Path(__file__).parent / "results" / f"{name}.json"
    out.parent.mkdir(exist_ok=True)
    payload = {"benchmark": name, "date": time.strftime("%Y-%m-%d"), "machine": machine(), **payload}
    out.write_text(json.dumps(payload, indent=2))
    return out
