"""Many solves of the pendulum at once: adaptive ones, each choosing its own steps, and fixed-step ones of
different lengths, with one batched evaluation of all their rates per stage.

The adaptive chapter solves the pendulum with every rate (the true f and each ODE-Net) at every tolerance:
one by one, that is ~10⁵ steps of a two-number state, each paying torch's per-call overhead.  Here the solves
of one pair advance together: solve m has its own state, time, step size, tolerance and counters, and
:func:`adaptive_solves` runs, per attempt, the pair's stages for every solve at once (state (M, 2), each row
with its own step); the accept/reject decisions and the next steps are each solve's own, in Python floats,
with the rules of :func:`cnet_lib.core.integrate_adaptive` (:mod:`cnet_lib.core.step_control`: error norm,
controller, first step; one interval, no break points, a pair whose last stage is the next step's first).  A
finished solve's row is carried along unchanged.  :func:`fixed_solves` does the same for fixed-step rollouts of
different step counts.

Each solve equals its own :func:`~cnet_lib.core.integrate_adaptive` up to the round-off of evaluating the
ODE-Nets with batched products (tests/test_pendulum_batched.py: same step counts, states within 1e-12).
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import torch
from torch import nn

from ..core.adaptive import MaxStepsError, check_pair
from ..core.integrate import weighted_sum
from ..core.schemes import get_scheme
from ..core.step_control import FACMAX, propose_step
from .odenet import ODENet, StackedRate

__all__ = ["MemberRates", "adaptive_solves", "fixed_solves"]


class MemberRates(nn.Module):
    """The rates of M solves evaluated at once: row m of ``x`` (M, 2) goes to ``rates[member[m]]``.

    ODE-Nets are evaluated together (:class:`cnet_lib.pendulum.StackedRate` over the members' weights); any
    other rate (the true f) is a function of ``x`` (..., 2), evaluated on every row and kept on its own."""

    def __init__(self, rates: Sequence, member: Sequence[int]):
        super().__init__()
        nets = [r for r in rates if isinstance(r, ODENet)]
        filler = nets[0] if nets else ODENet(1).double()
        self.stacked = StackedRate([rates[i] if isinstance(rates[i], ODENet) else filler for i in member]) if nets else None
        self.others = [(rates[i], torch.tensor([j == i for j in member]).unsqueeze(1))
                       for i in sorted(set(member)) if not isinstance(rates[i], ODENet)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.stacked(x) if self.stacked is not None else torch.zeros_like(x)
        for rate, rows in self.others:
            out = torch.where(rows, rate(x), out)
        return out


def _rms_rows(z: torch.Tensor) -> list:
    """The RMS of each row (inf where a row is not finite), as :func:`cnet_lib.core.step_control.error_norm`
    measures a single state."""
    finite = torch.isfinite(z).all(1)
    return torch.where(finite, torch.nan_to_num(z).square().mean(1).sqrt(), torch.inf).tolist()


def _initial_steps(rate, x0, f0, rtol, atol, q: int, h_max: float) -> list:
    """HNW's first step of every solve (:func:`cnet_lib.core.step_control.initial_step`, row by row)."""
    scale = atol + rtol * x0.abs()
    d0, d1 = _rms_rows(x0 / scale), _rms_rows(f0 / scale)
    h0 = [min(1e-6 if a < 1e-5 or b < 1e-5 or not math.isfinite(b) else 0.01 * a / b, h_max) for a, b in zip(d0, d1)]
    h0_t = torch.tensor(h0, dtype=x0.dtype).unsqueeze(1)
    f1 = rate(x0 + h0_t * f0)
    d2 = [d / h for d, h in zip(_rms_rows((f1 - f0) / scale), h0)]
    out = []
    for h, b1, b2 in zip(h0, d1, d2):
        big = max(b1, b2)
        h1 = max(1e-6, h * 1e-3) if big <= 1e-15 else (0.01 / big) ** (1.0 / (q + 1))
        out.append(min(100 * h, h1, h_max))
    return out


class _Solves:
    """The per-solve state of :func:`adaptive_solves` in Python floats: time, step, facmax and counters."""

    def __init__(self, h: list, t_end: float, max_steps: int, stages: int):
        M = len(h)
        self.h, self.t, self.facmax = list(h), [0.0] * M, [FACMAX] * M
        self.nfe, self.accepted, self.rejected = [2] * M, [0] * M, [0] * M  # k1 and the first step's trial
        self.active = list(range(M))
        self.t_end, self.max_steps, self.stages = t_end, max_steps, stages

    def tries(self, pair: str) -> tuple:
        """``(h_try, clipped)`` of every solve (0 for a finished one), checked like one solve's."""
        h_try, clipped = [0.0] * len(self.h), [False] * len(self.h)
        for m in self.active:
            t, h = self.t[m], self.h[m]
            if self.accepted[m] + self.rejected[m] >= self.max_steps:
                raise MaxStepsError(f"the adaptive solve {m} with {pair} stopped after max_steps = {self.max_steps} "
                                    f"steps at t = {t:.6g}: loosen its tolerances or allow more steps")
            clipped[m] = t + h >= self.t_end
            h_try[m] = self.t_end - t if clipped[m] else h
            if t + h_try[m] == t:
                raise FloatingPointError(f"the adaptive step of solve {m} underflowed at t = {t!r} ({pair})")
        return h_try, clipped

    def decide(self, errs: list, h_try: list, clipped: list, q: int) -> list:
        """Accept or reject each active solve's attempt; returns the accepted solves."""
        accepted = []
        for m in self.active:
            self.nfe[m] += self.stages - 1
            if errs[m] > 1:
                self.rejected[m] += 1
                self.h[m], self.facmax[m] = propose_step(h_try[m], errs[m], q, facmax=1.0), 1.0
                continue
            accepted.append(m)
            self.accepted[m] += 1
            self.t[m] = self.t_end if clipped[m] else self.t[m] + h_try[m]
            h_next = propose_step(h_try[m], errs[m], q, self.facmax[m])
            self.h[m], self.facmax[m] = (max(h_next, self.h[m]) if clipped[m] else h_next), FACMAX
        self.active = [m for m in self.active if self.t[m] < self.t_end]
        return accepted


def adaptive_solves(rate: Callable, x0: torch.Tensor, pair: str, t_end: float, rtol: Sequence[float],
                    atol: Sequence[float], max_steps: int = 10_000) -> tuple:
    """Solve ``x' = rate(x)`` row by row from ``x0`` (M, 2) over [0, t_end] with the FSAL ``pair``, row m with
    tolerances ``rtol[m]``, ``atol[m]`` (module doc).  Returns ``(x at t_end (M, 2), stats)`` with ``stats`` a
    list of dicts ``nfe, n_accepted, n_rejected`` per row."""
    tab = check_pair(pair)
    if not tab.fsal:
        raise ValueError(f"adaptive_solves needs a pair whose last stage is the next first (FSAL); {tab.name} is not")
    q, M = tab.error_order, x0.shape[0]
    rt = torch.tensor(list(rtol), dtype=x0.dtype).unsqueeze(1)
    at = torch.tensor(list(atol), dtype=x0.dtype).unsqueeze(1)
    with torch.no_grad():
        x, k1 = x0.clone(), rate(x0)
        state = _Solves(_initial_steps(rate, x, k1, rt, at, q, float(t_end)), float(t_end), max_steps, tab.stages)
        while state.active:
            h_try, clipped = state.tries(tab.name)
            H = torch.tensor(h_try, dtype=x.dtype).unsqueeze(1)
            ks = [k1] + [None] * (tab.stages - 1)
            for i in range(1, tab.stages):
                ks[i] = rate(x + H * weighted_sum(tab.float_a[i], ks) if tab.float_a[i] else x)
            y1, e = x + H * weighted_sum(tab.float_b, ks), H * weighted_sum(tab.float_error, ks)
            errs = _rms_rows(e / (at + rt * torch.maximum(x.abs(), y1.abs())))
            taken = state.decide(errs, h_try, clipped, q)
            if taken:
                rows = torch.zeros(M, 1, dtype=torch.bool)
                rows[taken] = True
                x, k1 = torch.where(rows, y1, x), torch.where(rows, ks[-1], k1)
    stats = [dict(nfe=state.nfe[m], n_accepted=state.accepted[m], n_rejected=state.rejected[m]) for m in range(M)]
    return x, stats


def fixed_solves(rate: Callable, x0: torch.Tensor, scheme: str, t_end: float, n_steps: Sequence[int]) -> torch.Tensor:
    """Row m of ``x0`` (M, 2) rolled out with ``scheme`` for ``n_steps[m]`` equal steps over [0, t_end], as
    :func:`cnet_lib.integrate` does it; returns the states at t_end (M, 2)."""
    tab = get_scheme(scheme)
    H = torch.tensor([float(t_end) / n for n in n_steps], dtype=x0.dtype).unsqueeze(1)
    steps = torch.tensor(list(n_steps)).unsqueeze(1)
    x = x0.clone()
    with torch.no_grad():
        for k in range(max(n_steps)):
            ks = [None] * tab.stages
            for i in tab.used_stages:
                ks[i] = rate(x + H * weighted_sum(tab.float_a[i], ks) if tab.float_a[i] else x)
            x = torch.where(steps > k, x + H * weighted_sum(tab.float_b, ks), x)
    return x
