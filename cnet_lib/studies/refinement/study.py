"""The study of the chapter *Refinement training*, as numbers: what a refinement keeps, how θ(t) moved during
training, and what refinement saves in training time, measured fairly.

* :func:`refinement_check`: a refined model's θ(t) and outputs against the original's;
* :func:`change_per_epoch`: the largest change of the recorded θ(t) during each epoch (:func:`largest_change`);
* :func:`epoch_seconds`: what a run's training log says of its epochs (median seconds at each N_t, totals);
* :func:`time_refinement`: SGD steps at every N_t of a schedule, timed in turn (round robin), and the speed-up they
  give against the ideal (:func:`schedule_ideal`); :func:`recorded_timing`, the same from a run's own training log;
  :func:`refinement_cost`, the cost of refinement read from a training log;
* :func:`whole_runs`: the book's record of two whole training runs, refined and at fixed depth, one epoch of each in
  turn (``benchmarks/bench_refinement.py``).

A training log is a poor clock on a shared machine: the same epoch can take twice as long when another
job runs (the ``cpu`` preset's Euler model, six identical epochs, took 74 to 189 s).  Comparing a
refinement run with fixed depth from such a log compares different moments of the machine.  So
:func:`time_refinement` builds the run's model at each N_t of its schedule and times a few SGD steps of
each **in turn**, several rounds, the order rotated each round, so that a slow spell of the machine hits
every N_t alike (the same design as ``benchmarks/bench_refinement.py``).  A step here is what an epoch
repeats: a batch drawn and augmented, forward, loss, backward, SGD update (at the run's batch size, on
its device, with its threads, precision and CUDA graphs).  Every epoch of a run has the same number of
steps, so the speed-up of the schedule over ``E`` epochs at its final N_t is

    S = E · t(N_final) / Σ_e t(N_e),    against the ideal    S* = E · N_final / Σ_e N_e,

with ``t(N)`` the median seconds per step at N_t = N.  Any part of a step that does not grow with N_t
(stem, stitches, head, data handling) makes ``S`` smaller than ``S*``: with ``t(N) = a + bN``, ``a > 0``.
:func:`~.show.word_speedup` says how the measured ``S`` compares with ``S*``, taking the spread over the rounds
into account.  The timing uses random images (a step's time does not depend on pixel values).

A step of the ``gpu`` preset's model takes milliseconds on a GPU and about a second on a 2-core CPU: the grid
that times it well on a GPU (7 rounds of 20 steps) took four minutes on such a CPU.  With ``budget_s`` the timing
fits what the machine can do in that many seconds: one warm-up step of each N_t says how long a round
takes, and the steps per round, then the rounds (never fewer than :data:`MIN_ROUNDS`), are cut to fit.  The
result says how many were timed.  Beside it, the run's own record (:func:`recorded_timing`): the median epoch at
each N_t of its training log, on the machine that trained it (for the shipped models, the GPU).

Every function returns plain values; :mod:`.show` draws and words them.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import statistics
import time
from pathlib import Path
from typing import Mapping, Optional, Sequence

import numpy as np
import torch

from ...images.data.batches import iterate_batches
from ...images.runs.theta_record import theta_curve
from ...images.training.train_config import TrainConfig, build_model
from ...images.training.train_loop import SGDStep
from ...images.training.train_state import read_results
from ...core.models import ContinuousNet
from ...runtime.device import image_step_flops, precision_for, resolve_device, threads_for, torch_threads
from ...runtime import cuda_graphs
from ..stats import two_proportions

__all__ = ["refinement_check", "largest_change", "change_per_epoch", "n_steps_of", "epoch_seconds", "MIN_ROUNDS",
           "schedule_n_steps", "time_refinement", "fit_budget", "log_spread", "recorded_timing", "refinement_cost",
           "schedule_ideal", "WHOLE_RUNS", "whole_runs"]


# --------------------------------------------------------------------------- what a refinement keeps
@torch.no_grad()
def refinement_check(model: ContinuousNet, x: torch.Tensor, n_times: int = 16) -> dict:
    """What ``model.refine()`` keeps, on a refined deep copy (``model`` is not changed).

    Returns ``{"n_basis": (M before, after), "n_steps": (N_t before, after), "n_parameters":
    (before, after)`` (first block's M and N_t), ``"n_times", "theta_identical"`` (every weight of
    every block equal bit for bit at ``n_times`` times t = k / n_times), ``"old_graph_identical"``
    (the refined model on the old N_t gives the original's logits bit for bit on ``x``),
    ``"new_graph_max_change"`` (largest logit change on the refined graph)``}``.
    """
    refined = copy.deepcopy(model).refine()
    ts = [k / n_times for k in range(n_times)]
    same = all(torch.equal(a.theta(t)[n], b.theta(t)[n])
               for a, b in zip(model.blocks, refined.blocks) for t in ts for n in a.theta(t))
    before = model(x)
    with refined.manifested(n_steps=[b.n_steps for b in model.blocks]):
        old_graph = refined(x)
    new_graph = refined(x)
    m0, m1 = model.blocks[0], refined.blocks[0]
    return {"n_basis": (m0.n_basis, m1.n_basis), "n_steps": (m0.n_steps, m1.n_steps),
            "n_parameters": (model.n_parameters(), refined.n_parameters()), "n_times": n_times,
            "theta_identical": same, "old_graph_identical": torch.equal(before, old_graph),
            "new_graph_max_change": (before - new_graph).abs().max().item()}


# --------------------------------------------------------------------------- θ(t) epoch by epoch
def largest_change(before: dict, after: dict, n_grid: int = 256) -> float:
    """The largest |θ_after(t) − θ_before(t)| over the recorded entries of one block of two θ snapshots
    (``snapshot["blocks"][b]``, :func:`cnet_lib.images.runs.theta_record.theta_snapshot`), on ``n_grid`` interior
    points of [0, 1] (midpoints of a uniform grid: no break point is hit); the curves are those of
    :func:`~cnet_lib.images.runs.theta_record.theta_curve`."""
    grid = (np.arange(n_grid) + 0.5) / n_grid
    worst = 0.0
    for entry, coeffs in after["entries"].items():
        ta, va = theta_curve(coeffs, after["basis"])
        tb, vb = theta_curve(before["entries"][entry], before["basis"])
        worst = max(worst, float(np.max(np.abs(np.interp(grid, ta, va) - np.interp(grid, tb, vb)))))
    return worst


def change_per_epoch(snapshots: Sequence[dict], block: int = 0, n_grid: int = 256) -> list[dict]:
    """The largest change of the recorded θ(t) of one block during each epoch (:func:`largest_change`
    between consecutive snapshots): one row ``{"epoch", "n_basis_before", "n_basis_after", "refined",
    "largest_change"}`` per epoch; ``refined``: the model was refined before this epoch."""
    rows = []
    for prev, snap in zip(snapshots[:-1], snapshots[1:]):
        a, b = prev["blocks"][block], snap["blocks"][block]
        rows.append({"epoch": snap["epoch"], "n_basis_before": a["n_basis"], "n_basis_after": b["n_basis"],
                     "refined": bool(snap.get("refined")), "largest_change": largest_change(a, b, n_grid)})
    return rows


# --------------------------------------------------------------------------- a training log's epochs
def n_steps_of(entry: Mapping) -> int:
    """The N_t of one epoch of a training log (the largest over the blocks)."""
    n = entry["n_steps"]
    return max(n) if isinstance(n, (list, tuple)) else n


def epoch_seconds(history: Sequence[Mapping]) -> dict:
    """What a training log says of its epochs: ``{"n_steps_per_epoch", "median": {N_t: median seconds of its
    epochs}, "total"`` (seconds of training, evaluation excluded), ``"final_n_steps", "epochs"}``."""
    schedule = [n_steps_of(h) for h in history]
    if not schedule:
        raise ValueError("the run's training log is empty: a trained run has one entry per epoch")
    median = {n: statistics.median(h["train_seconds"] for h, m in zip(history, schedule) if m == n)
              for n in sorted(set(schedule))}
    return {"n_steps_per_epoch": schedule, "median": median, "total": float(sum(h["train_seconds"] for h in history)),
            "final_n_steps": schedule[-1], "epochs": len(schedule)}


# --------------------------------------------------------------------------- the speed-up, timed in turn
MIN_ROUNDS = 3
"""The fewest rounds a budget leaves: the spread over the rounds needs a few of them."""


def schedule_n_steps(cfg: TrainConfig) -> list[int]:
    """N_t of every epoch of ``cfg``: the initial N_t, doubled before each epoch listed in ``refine_at``."""
    start = cfg.n_steps or cfg.n_basis
    return [start * 2 ** sum(1 for r in cfg.refine_at if r <= e) for e in range(cfg.epochs)]


def _stepper(cfg: TrainConfig, n: int, device: torch.device):
    """The run's model at N_t = M = ``n`` with its SGD optimizer, as one :class:`SGDStep`."""
    torch.manual_seed(cfg.seed)
    model = build_model(dataclasses.replace(cfg, n_basis=n, n_steps=None, refine_at=())).to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    graph_cls = cuda_graphs.graph_class(device, cfg.cuda_graphs)
    return SGDStep(model, opt, precision_for(device, cfg.amp, graphs=graph_cls is not None), graph_cls)


def _batches(cfg: TrainConfig, device: torch.device, gen: torch.Generator):
    """Endless training batches of random uint8 images, drawn and augmented as in training."""
    n = 4 * cfg.batch_size
    x = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=gen).to(device)
    y = torch.randint(0, 10, (n,), generator=gen).to(device)
    mean, std = torch.full((3,), 0.5, device=device), torch.full((3,), 0.25, device=device)
    while True:
        yield from iterate_batches(x, y, cfg.batch_size, mean, std, gen, shuffle=True, train_augment=True, drop_last=True,
                                   cutout=cfg.cutout)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def fit_budget(round_seconds: float, rounds: int, steps: int, budget_s: Optional[float]) -> tuple[int, int]:
    """``(rounds, steps)`` cut to fit ``budget_s`` seconds when one step of every N_t takes ``round_seconds``: first
    fewer steps per round (down to one), then fewer rounds (down to :data:`MIN_ROUNDS`, or ``rounds`` if fewer);
    unchanged without a budget or when they fit."""
    if budget_s is None or round_seconds * rounds * steps <= budget_s:
        return rounds, steps
    steps = max(1, min(steps, int(budget_s / (round_seconds * rounds))))
    if round_seconds * rounds * steps > budget_s:
        rounds = max(min(MIN_ROUNDS, rounds), min(rounds, int(budget_s / round_seconds)))
    return rounds, steps


def time_refinement(cfg: TrainConfig, rounds: int = 5, steps: int = 3, warmup: int = 2,
                    budget_s: Optional[float] = None) -> dict:
    """Seconds per SGD step of ``cfg``'s model at every N_t of its schedule (:func:`schedule_n_steps`),
    timed in turn: ``rounds`` rounds of ``steps`` steps per N_t each (after ``warmup`` untimed steps per
    N_t), the order of the N_t rotated every round; with ``budget_s``, as many of them as fit that many seconds
    (:func:`fit_budget`; the warm-up is then one step per N_t, which sizes the rounds).  Returns
    ``n_steps_per_epoch``, ``seconds_per_step`` (``{N_t: median over the rounds}``), ``per_round`` (``{N_t: [seconds
    per step of each round]}``), ``speedup`` (``S`` of the module doc), ``speedup_range`` (the lowest and highest
    ``S`` of a single round), ``ideal`` (``S*``), ``efficiency`` (``S / S*``), and what was timed (device, threads,
    batch, the rounds and steps timed, ``budget_s``)."""
    for name, value, low in (("rounds", rounds, 1), ("steps", steps, 1), ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r} (e.g. {name}=3)")
    if budget_s is not None and (isinstance(budget_s, bool) or not isinstance(budget_s, (int, float)) or not budget_s > 0):
        raise ValueError(f"budget_s must be a number of seconds > 0 or None, got {budget_s!r} (e.g. budget_s=20)")
    device = resolve_device(cfg.device)
    schedule = schedule_n_steps(cfg)
    distinct = sorted(set(schedule))
    gen = torch.Generator().manual_seed(cfg.seed)
    batches = _batches(cfg, device, gen)
    steppers = {n: _stepper(cfg, n, device) for n in distinct}
    threads = {n: threads_for(image_step_flops(cfg.channels, cfg.batch_size, steppers[n].model.blocks[0].scheme.stages,
                                               [n] * len(cfg.channels)), override=cfg.threads) for n in distinct}
    per_round: dict = {n: [] for n in distinct}

    def run(n: int, k: int) -> float:
        with torch_threads(threads[n]) if device.type == "cpu" else contextlib.nullcontext():
            _sync(device)
            t0 = time.perf_counter()
            for _ in range(k):
                xb, yb = next(batches)
                steppers[n](xb, yb)
            _sync(device)
            return (time.perf_counter() - t0) / max(k, 1)

    if budget_s is not None:
        warmup = min(warmup, 1)
    last = {n: 0.0 for n in distinct}
    for n in distinct:
        for _ in range(warmup):
            last[n] = run(n, 1)
    rounds, steps = fit_budget(sum(last.values()), rounds, steps, budget_s)
    for r in range(rounds):
        for n in distinct[r % len(distinct):] + distinct[:r % len(distinct)]:
            per_round[n].append(run(n, steps))
    return {**_summary(cfg, device, schedule, per_round, threads, rounds, steps), "budget_s": budget_s}


def schedule_ideal(schedule: Sequence[int]) -> float:
    """The ideal speed-up ``S*`` of a refinement schedule (N_t of every epoch) over training at its last N_t for as
    many epochs: epochs × final N_t / Σ N_t, an epoch's cost taken proportional to its N_t."""
    schedule = list(schedule)
    return len(schedule) * schedule[-1] / sum(schedule)


def _speedup(schedule: Sequence[int], t: Mapping[int, float]) -> float:
    return len(schedule) * t[schedule[-1]] / sum(t[n] for n in schedule)


def _summary(cfg: TrainConfig, device: torch.device, schedule: list, per_round: dict, threads: dict, rounds: int,
             steps: int) -> dict:
    """The numbers :func:`time_refinement` returns, from the timings of every round."""
    median = {n: statistics.median(v) for n, v in per_round.items()}
    by_round = [_speedup(schedule, {n: v[r] for n, v in per_round.items()}) for r in range(rounds)]
    ideal = schedule_ideal(schedule)
    speedup = _speedup(schedule, median)
    return {"n_steps_per_epoch": schedule, "seconds_per_step": median, "per_round": per_round,
            "speedup": speedup, "speedup_range": (min(by_round), max(by_round)), "ideal": ideal,
            "efficiency": speedup / ideal, "rounds": rounds, "steps": steps, "batch_size": cfg.batch_size,
            "device": str(device), "threads": threads, "scheme": cfg.scheme, "channels": list(cfg.channels)}


def log_spread(history: Sequence[Mapping]) -> dict:
    """From a training log: ``{N_t: (fastest, slowest epoch in seconds, epochs)}`` over the epochs at each
    N_t, to show how much identical epochs vary."""
    out: dict = {}
    for h in history:
        n = n_steps_of(h)
        lo, hi, k = out.get(n, (float("inf"), 0.0, 0))
        out[n] = (min(lo, h["train_seconds"]), max(hi, h["train_seconds"]), k + 1)
    return out


def recorded_timing(run) -> dict:
    """What a trained run's own record says of refinement's cost (``run``: a
    :class:`~cnet_lib.images.runs.run_loading.StudyRun`, or anything with its ``history`` and ``out_dir``):
    ``seconds_per_epoch`` (``{N_t: the median epoch at that N_t}`` of its training log), the speed-up ``S`` of the
    module doc with those medians in place of ``t(N)`` (every epoch has the same number of steps), its ``ideal``
    ``S*``, and the ``machine`` that trained it (its results file's environment; empty when there is none)."""
    log = epoch_seconds(run.history)
    schedule, per_epoch = log["n_steps_per_epoch"], log["median"]
    record = read_results(Path(run.out_dir)) or {}
    return {"n_steps_per_epoch": schedule, "seconds_per_epoch": per_epoch, "speedup": _speedup(schedule, per_epoch),
            "ideal": schedule_ideal(schedule), "machine": dict(record.get("environment") or {})}


def refinement_cost(history: Sequence[dict]) -> dict:
    """Training time of a refinement schedule against fixed depth at its final N_t.

    ``fixed_depth_estimate`` = epochs × (mean seconds per epoch measured at the final N_t): an
    *estimate* (no fixed-depth RK4 run is trained).  ``ideal`` = epochs × final N_t / Σ N_t over
    the epochs: the speed-up if an epoch's cost were proportional to N_t.
    """
    nts = [n_steps_of(h) for h in history]
    final = nts[-1]
    at_final = [h["train_seconds"] for h, n in zip(history, nts) if n == final]
    per_epoch = sum(at_final) / len(at_final)
    total = sum(h["train_seconds"] for h in history)
    estimate = len(history) * per_epoch
    return {"epochs": len(history), "n_steps_per_epoch": nts, "final_n_steps": final, "sum_n_steps": sum(nts),
            "train_seconds": total, "seconds_per_epoch_at_final": per_epoch, "epochs_at_final": len(at_final),
            "fixed_depth_estimate": estimate, "speedup": estimate / total if total > 0 else float("nan"),
            "ideal": schedule_ideal(nts)}


# --------------------------------------------------------------------------- two whole runs, refined and at fixed depth
WHOLE_RUNS = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "bench_refinement.json"
"""The record of two whole training runs, refined and at fixed depth (written by ``benchmarks/bench_refinement.py``,
kept in the book's repository; an install from a wheel has none)."""


def whole_runs(path: Optional[Path] = None) -> Optional[dict]:
    """The book's record of two whole training runs of one model, refined and at fixed depth from the start, one epoch
    of each in turn (``path``, default :data:`WHOLE_RUNS`; ``None`` where there is no record): ``{"channels",
    "scheme", "n_train", "n_test", "epochs", "schedule"`` (N_t per epoch of the refined run), ``"final_n_steps"``,
    ``"seconds": {"refined", "fixed"}``, ``"speedup", "ideal"`` (:func:`schedule_ideal` of the schedule),
    ``"accuracy": {"refined", "fixed"}``, ``"difference"`` (refined minus fixed depth, with its 95% interval as if
    the two were measured on independent images: :func:`~cnet_lib.studies.stats.two_proportions`),
    ``"environment"`` (the machine), ``"created_utc"}``."""
    path = Path(path) if path is not None else WHOLE_RUNS
    if not path.is_file():
        return None
    r = json.loads(path.read_text(encoding="utf-8"))
    s, refined, fixed = r["settings"], r["runs"]["refined"], r["runs"]["fixed"]
    n = s["n_test"]
    return {"channels": list(s["channels"]), "scheme": r["scheme"], "n_train": s["n_train"], "n_test": n,
            "epochs": s["epochs"], "schedule": list(refined["n_steps"]), "final_n_steps": refined["n_steps"][-1],
            "seconds": {"refined": refined["train_seconds"], "fixed": fixed["train_seconds"]},
            "speedup": r["speedup"], "ideal": schedule_ideal(refined["n_steps"]),
            "accuracy": {"refined": refined["final_test_acc"], "fixed": fixed["final_test_acc"]},
            "difference": two_proportions(fixed["final_test_acc"], n, refined["final_test_acc"], n),
            "environment": dict(r.get("environment") or {}), "created_utc": r.get("created_utc")}
