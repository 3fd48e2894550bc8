"""What refinement saves in training time, measured fairly: SGD steps at every N_t of a schedule, timed
in turn (round robin), and the comparison with the ideal worded from the numbers.

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
:func:`word_speedup` says how the measured ``S`` compares with ``S*``, taking the spread over the rounds
into account.  The timing uses random images (a step's time does not depend on pixel values).
"""
from __future__ import annotations

import contextlib
import dataclasses
import statistics
import time
from typing import Mapping, Optional, Sequence

import torch

from ..runtime import cuda_graphs
from ..runtime.device import precision_for, resolve_device
from ..runtime.rich_text import Rich, join_rich, paragraphs
from ..runtime.rows import format_table
from ..runtime.threads import image_step_flops, threads_for, torch_threads
from ..runtime.vocabulary import scheme_label
from .batches import iterate_batches
from .train_config import TrainConfig, build_model
from .train_loop import SGDStep

__all__ = ["schedule_n_steps", "time_refinement", "log_spread", "word_speedup", "format_refinement_cost"]


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
        yield from iterate_batches(x, y, cfg.batch_size, mean, std, gen, shuffle=True, train_augment=True, drop_last=True)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_refinement(cfg: TrainConfig, rounds: int = 5, steps: int = 3, warmup: int = 2) -> dict:
    """Seconds per SGD step of ``cfg``'s model at every N_t of its schedule (:func:`schedule_n_steps`),
    timed in turn: ``rounds`` rounds of ``steps`` steps per N_t each (after ``warmup`` untimed steps per
    N_t), the order of the N_t rotated every round.  Returns ``n_steps_per_epoch``, ``seconds_per_step``
    (``{N_t: median over the rounds}``), ``per_round`` (``{N_t: [seconds per step of each round]}``),
    ``speedup`` (``S`` of the module doc), ``speedup_range`` (the lowest and highest ``S`` of a single
    round), ``ideal`` (``S*``), ``efficiency`` (``S / S*``), and what was timed (device, threads, batch)."""
    for name, value, low in (("rounds", rounds, 1), ("steps", steps, 1), ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r} (e.g. {name}=3)")
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

    for n in distinct:
        run(n, warmup)
    for r in range(rounds):
        for n in distinct[r % len(distinct):] + distinct[:r % len(distinct)]:
            per_round[n].append(run(n, steps))
    return _summary(cfg, device, schedule, per_round, threads, rounds, steps)


def _speedup(schedule: Sequence[int], t: Mapping[int, float]) -> float:
    return len(schedule) * t[schedule[-1]] / sum(t[n] for n in schedule)


def _summary(cfg: TrainConfig, device: torch.device, schedule: list, per_round: dict, threads: dict, rounds: int,
             steps: int) -> dict:
    """The numbers :func:`time_refinement` returns, from the timings of every round."""
    median = {n: statistics.median(v) for n, v in per_round.items()}
    by_round = [_speedup(schedule, {n: v[r] for n, v in per_round.items()}) for r in range(rounds)]
    ideal = len(schedule) * schedule[-1] / sum(schedule)
    speedup = _speedup(schedule, median)
    return {"n_steps_per_epoch": schedule, "seconds_per_step": median, "per_round": per_round,
            "speedup": speedup, "speedup_range": (min(by_round), max(by_round)), "ideal": ideal,
            "efficiency": speedup / ideal, "rounds": rounds, "steps": steps, "batch_size": cfg.batch_size,
            "device": str(device), "threads": threads, "scheme": cfg.scheme, "channels": list(cfg.channels)}


def log_spread(history: Sequence[Mapping]) -> dict:
    """From a training log: ``{N_t: (fastest, slowest epoch in seconds, epochs)}`` over the epochs at each
    N_t (the first block's N_t), to show how much identical epochs vary."""
    out: dict = {}
    for h in history:
        n = max(h["n_steps"]) if isinstance(h["n_steps"], list) else h["n_steps"]
        lo, hi, k = out.get(n, (float("inf"), 0.0, 0))
        out[n] = (min(lo, h["train_seconds"]), max(hi, h["train_seconds"]), k + 1)
    return out


def _log_sentence(histories: Mapping[str, Sequence[Mapping]]) -> str:
    """How much identical epochs varied in each training log (N_t with at least two epochs)."""
    parts = []
    for label, history in histories.items():
        groups = [f"{k} epochs at N_t = {n} from {lo:.1f} to {hi:.1f} s" for n, (lo, hi, k) in log_spread(history).items()
                  if k >= 2]
        if groups:
            parts.append(f"{label}: " + ", ".join(groups))
    if not parts:
        return ""
    return ("For comparison, the training logs' identical epochs took " + "; ".join(parts) + ". One run's log on a "
            "shared machine is not a fair clock, which is why the steps are timed in turn here.")


def word_speedup(timing: Mapping) -> str:
    """One sentence comparing the measured speed-up ``S`` with the ideal ``S*``: *falls short* when even
    the fastest round's ``S`` is below ``S*``, *exceeds* when even the slowest round's is above it (which a
    cost ``a + bN`` with ``a >= 0`` cannot give: timing noise, or a step growing faster than N_t), and
    *agrees within the spread of the rounds* otherwise."""
    s, (lo, hi), ideal = timing["speedup"], timing["speedup_range"], timing["ideal"]
    head = (f"Measured speed-up {s:.2f}× (single rounds {lo:.2f}–{hi:.2f}×) against the ideal {ideal:.2f}× "
            f"(efficiency {s / ideal:.2f}): ")
    if hi < ideal:
        return head + ("it falls short of the ideal, as the parts of a step that do not grow with N_t (stem, "
                       "stitches, head, data handling) predict.")
    if lo > ideal:
        return head + ("it exceeds the ideal, which a step cost a + b·N_t cannot explain: the timing was disturbed, "
                       "or a step grows faster than N_t on this machine.")
    return head + "the ideal lies within the spread of the rounds: no difference from it can be read from this timing."


def format_refinement_cost(timing: Mapping, histories: Optional[Mapping[str, Sequence[Mapping]]] = None,
                           preset: Optional[str] = None) -> Rich:
    """The report of :func:`time_refinement`: the schedule, a table of seconds per step at each N_t
    (median and range over the rounds), the sentence of :func:`word_speedup`; with the runs' training
    logs (``{label: history}``), how much their identical epochs varied (:func:`log_spread`); under the
    ``smoke`` preset a warning that these timings say nothing about refinement at scale."""
    sched = timing["n_steps_per_epoch"]
    rows = [{"n": n, "median": timing["seconds_per_step"][n], "lo": min(v), "hi": max(v),
             "epochs": sched.count(n)} for n, v in timing["per_round"].items()]
    table = format_table(rows, [("N_t", "n", "{}"), ("epochs at this N_t", "epochs", "{}"),
                                ("seconds per step (median)", "median", "{:.4f}"),
                                ("fastest round", "lo", "{:.4f}"), ("slowest round", "hi", "{:.4f}")], left=0)
    head = (f"{scheme_label(timing['scheme'])} {'-'.join(map(str, timing['channels']))}, N_t per epoch {sched} "
            f"(Σ N_t = {sum(sched)}); {timing['rounds']} rounds of {timing['steps']} step"
            f"{'s' if timing['steps'] != 1 else ''} at each N_t in turn, batch {timing['batch_size']}, on "
            f"{timing['device']}:")
    notes = [word_speedup(timing), _log_sentence(histories or {})]
    if preset == "smoke":
        notes.append("(smoke preset: steps of a few milliseconds are dominated by overhead; these ratios say "
                     "nothing about refinement at scale.)")
    return join_rich([head, table, paragraphs(notes)])
