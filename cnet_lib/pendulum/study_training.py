"""Where and how long a study's batched training runs, measured before it starts.

:func:`estimate_seconds` times a few iterations of the batched training (:func:`cnet_lib.pendulum.train_batched`)
on a device, twice (two lengths, so that the fixed costs, the set-up and on CUDA the capture of the graph, are
told apart from the cost of an iteration), for each phase of the training (the models still training), and
adds up the phases.  :func:`choose_device` does it on the CPU and on the session's accelerator and keeps the
faster: the pendulum's ODE-Nets are tiny, and in float64 a GPU is not faster for every study on every card, so
the choice is measured, on the reader's machine, each time a study is trained (a fraction of a second).
:func:`choose_threads` measures the CPU's side the same way, one thread against every core this process may
use, where the settings leave the thread count to the library (the stacked models' products are split
between the threads, which may change the last bits of a sum: the results agree to round-off,
tests/test_pendulum_batched.py).
:func:`training_notice` is what is said before a training estimated to take more than :data:`NOTICE_SECONDS`.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Optional, Sequence

import torch

from ..runtime.device import resolve_device
from ..runtime.progress import duration
from ..runtime.threads import available_cores
from .batched_training import TrainingJob, train_batched
from .pendulum_presets import PENDULUM_PRESETS

__all__ = ["PROBE_ITERS", "NOTICE_SECONDS", "estimate_seconds", "choose_threads", "choose_device", "training_notice"]

PROBE_ITERS = (8, 24)
"""The two lengths of the probe runs (iterations)."""
NOTICE_SECONDS = 30.0
"""A training estimated to take longer is announced before it starts (:func:`training_notice`)."""


def _phases(jobs: Sequence[TrainingJob]) -> list:
    """``(jobs still training, iterations)`` of each phase, longest-training models first."""
    order = sorted(jobs, key=lambda j: -j.n_iters)
    out, done = [], 0
    for k in range(len(order), 0, -1):
        stop = order[k - 1].n_iters
        if stop > done:
            out.append((order[:k], stop - done))
            done = stop
    return out


def _probe(jobs: Sequence[TrainingJob], n: int, device, threads: int, graphs: bool) -> float:
    """Seconds of ``n`` iterations of ``jobs`` trained together, the set-up included."""
    short = [dataclasses.replace(j, n_iters=n) for j in jobs]
    t0 = time.perf_counter()
    train_batched(short, device=device, progress=False, threads=threads, graphs=graphs)
    return time.perf_counter() - t0


def estimate_seconds(jobs: Sequence[TrainingJob], device, threads: int = 1, graphs: bool = True) -> float:
    """The estimated wall time of ``train_batched(jobs)`` on ``device`` (module doc)."""
    total = 0.0
    a, b = PROBE_ITERS
    for members, iters in _phases(jobs):
        _probe(members, 1, device, threads, graphs)  # warm-up: first kernels, allocations
        ta, tb = _probe(members, a, device, threads, graphs), _probe(members, b, device, threads, graphs)
        per_iter = max(tb - ta, 1e-9) / (b - a)
        total += max(ta - a * per_iter, 0.0) + iters * per_iter
    return total


def choose_threads(jobs: Sequence[TrainingJob], threads: Optional[int] = None) -> tuple:
    """``(threads, {threads: estimated seconds on the CPU})``: ``threads`` where it is given (the settings'
    ``threads``), else one thread or every available core, whichever :func:`estimate_seconds` measures faster
    (``{}`` when nothing was measured)."""
    if threads is not None:
        return threads, {}
    candidates = sorted({1, available_cores()})
    if len(candidates) == 1:
        return 1, {}
    estimates = {n: estimate_seconds(jobs, torch.device("cpu"), n, graphs=False) for n in candidates}
    return min(estimates, key=estimates.get), estimates


def choose_device(jobs: Sequence[TrainingJob], device: Optional[torch.device], threads: int = 1,
                  graphs: bool = True, cpu_seconds: Optional[float] = None) -> tuple:
    """``(device, {device name: estimated seconds})``: the CPU, or ``device`` (the session's) where that is an
    accelerator and its estimate is smaller.  ``cpu_seconds``: the CPU's estimate at ``threads`` where it was
    measured already (:func:`choose_threads`), so the CPU is not probed twice."""
    cpu = cpu_seconds if cpu_seconds is not None else estimate_seconds(jobs, torch.device("cpu"), threads, graphs)
    estimates = {"cpu": cpu}
    device = None if device is None else resolve_device(device)
    if device is not None and device.type != "cpu":
        estimates[str(device)] = estimate_seconds(jobs, device, threads, graphs)
    best = min(estimates, key=estimates.get)
    return torch.device(best), estimates


def _smaller_presets(cfg_name: str) -> list:
    """The presets whose pendulum study trains fewer iterations than ``cfg_name``'s (smallest last)."""
    own = PENDULUM_PRESETS.get(cfg_name)
    if own is None:
        return ["cpu", "smoke"]
    size = lambda c: c.n_iters + c.control_iters  # noqa: E731
    return sorted((n for n, c in PENDULUM_PRESETS.items() if size(c) < size(own)), key=lambda n: -size(PENDULUM_PRESETS[n]))


def training_notice(preset: str, n_models: int, device: torch.device, estimates: dict) -> str:
    """What is said before a long training: how many ODE-Nets, where, the estimated time (and the other
    device's), and how to wait less (a smaller preset: ``%env CNET_PRESET=...`` and the setup cell again)."""
    chosen = estimates[str(device) if str(device) in estimates else device.type]
    others = "; ".join(f"{name}: about {duration(s)}" for name, s in estimates.items() if s != chosen)
    text = (f"Training the {n_models} ODE-Nets of the '{preset}' preset at once on {device}: about {duration(chosen)} "
            f"(estimated from a few iterations just now{'; ' + others if others else ''}).")
    smaller = _smaller_presets(preset)
    if smaller:
        text += (f" To wait less, run %env CNET_PRESET={smaller[0]} (fewer iterations), then the setup cell and this "
                 "cell again.")
    return text
