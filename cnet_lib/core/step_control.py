"""Step-size control for embedded Runge–Kutta pairs: the error norm, the controller, the first step.

All three follow Hairer, Nørsett and Wanner, *Solving Ordinary Differential Equations I* (2nd ed.,
1993), §II.4.  The controller is the plain I-controller of their eq. 4.13, the one of SciPy's ``RK45`` and
``RK23`` (with the same pair, norm and starting step the solve takes SciPy's steps one for one:
``tests/test_core_adaptive.py``), not the stabilised (PI) controller of their code DOPRI5:

* **error norm** (eq. 4.11): with the embedded estimate ``e = y_1 − ŷ_1`` of one step from ``y_0``,

  .. math::

      \\mathrm{err} = \\Big\\lVert \\frac{e}{\\mathrm{atol} + \\mathrm{rtol}\\,\\max(|y_0|, |y_1|)}
      \\Big\\rVert_\\mathrm{RMS},

  and the step is accepted when ``err ≤ 1``.  **A batch** (a state whose first dimension is the batch,
  ``x.dim() ≥ 2``) is measured per sample: ``norm="max"`` (the default here) takes the RMS over each
  sample's entries and then the **largest over the batch**, so that every sample meets the tolerance
  whatever else is in its batch, and a sample's steps do not get longer because easy samples share its
  batch (at the price of a step count that depends on the batch: the hardest sample sets it).
  ``norm="rms"`` takes the RMS over the whole batch, as torchdiffeq does: one hard sample among B easy
  ones then has its error diluted by about √B.  A state of dimension 0 or 1 is one sample.
* **controller** (eq. 4.13): ``h_new = h · min(facmax, max(facmin, fac · err^(−1/(q+1))))`` with
  ``q = min(p, p̂)`` the lower order of the pair, safety factor ``fac = 0.9``, ``facmin = 0.2`` and
  ``facmax = 10`` (DOPRI5's and torchdiffeq's limits), and ``facmax = 1`` for the step right after a
  rejected one (HNW: "it is advisable to put facmax = 1 in the steps right after a step-rejection").
* **first step** (HNW I, §II.4, "Starting step size"): ``d0 = ‖y_0‖``, ``d1 = ‖f(t_0, y_0)‖`` (scaled
  norms as above, with ``|y_0|`` alone), ``h0 = 0.01 d0/d1`` (``10⁻⁶`` if either is below ``10⁻⁵``),
  one explicit Euler step to ``y_0 + h0 f_0`` and ``d2 = ‖f(t_0 + h0, ·) − f_0‖ / h0``, then
  ``h1 = (0.01 / max(d1, d2))^(1/(q+1))`` (``max(10⁻⁶, 10⁻³ h0)`` if both are below ``10⁻¹⁵``) and
  ``h = min(100 h0, h1)``, all capped at the longest step allowed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from .validation import check_float, check_int

__all__ = ["SAFETY", "FACMIN", "FACMAX", "NORMS", "Tolerances", "error_norm", "propose_step", "initial_step"]

SAFETY = 0.9
"""fac in HNW I (4.13): the proposed step aims at 0.9 of the step the error estimate allows."""
FACMIN = 0.2
"""The step shrinks by at most this factor per attempt."""
FACMAX = 10.0
"""The step grows by at most this factor per accepted step (1 right after a rejection)."""
NORMS = ("max", "rms")
"""How the error norm treats a batch: the largest per-sample RMS norm, or the RMS over the whole batch."""


@dataclass(frozen=True)
class Tolerances:
    """What an adaptive solve is asked for: ``rtol`` and ``atol`` (the scale ``atol + rtol·|y|`` of each
    entry's allowed local error), ``max_steps`` (attempted steps, accepted and rejected, before the
    solve stops with an error) and ``norm`` (``"max"`` or ``"rms"`` over a batch, see the module doc).
    Checked when built."""

    rtol: float
    atol: float
    max_steps: int = 10_000
    norm: str = "max"

    def __post_init__(self) -> None:
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            check_float(name, value, low=0, example=1e-3)
            object.__setattr__(self, name, float(value))
        if self.rtol == 0 and self.atol == 0:
            raise ValueError("rtol and atol are both 0: no step can meet a zero tolerance; give a positive rtol or "
                             "atol (e.g. rtol=1e-3, atol=1e-3)")
        check_int("max_steps", self.max_steps, low=1, example=10_000)
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {', '.join(NORMS)} (how the error norm treats a batch), "
                             f"got {self.norm!r}")


def _scaled_norm(z: torch.Tensor, norm: str) -> float:
    """The norm of the scaled error ``z``: per-sample RMS and the largest over the batch (``"max"``), or
    the RMS over every entry (``"rms"``); ``inf`` when an entry is not finite."""
    with torch.no_grad():
        z = z.detach()
        if not bool(torch.isfinite(z).all()):
            return math.inf
        if z.numel() == 0:
            return 0.0
        if norm == "rms" or z.dim() <= 1:
            return z.double().square().mean().sqrt().item()
        return z.double().flatten(1).square().mean(1).sqrt().max().item()


def error_norm(e: torch.Tensor, y0: torch.Tensor, y1: torch.Tensor, rtol: float, atol: float,
               norm: str = "max") -> float:
    """err = ‖e / (atol + rtol·max(|y0|, |y1|))‖ (HNW I, eq. 4.11), the batch treated by ``norm``
    (see the module doc); a step is accepted when it is at most 1.  Computed without gradients."""
    with torch.no_grad():
        scale = atol + rtol * torch.maximum(y0.detach().abs(), y1.detach().abs())
        return _scaled_norm(e.detach() / scale, norm)


def propose_step(h: float, err: float, q: int, facmax: float = FACMAX) -> float:
    """h · min(facmax, max(FACMIN, SAFETY · err^(−1/(q+1)))) (HNW I, eq. 4.13); ``err = 0`` grows the
    step by ``facmax`` and a non-finite ``err`` shrinks it by FACMIN."""
    if not math.isfinite(err):
        return h * FACMIN
    if err == 0:
        return h * facmax
    return h * min(facmax, max(FACMIN, SAFETY * err ** (-1.0 / (q + 1))))


def initial_step(rate: Callable[[float, torch.Tensor], torch.Tensor], x0: torch.Tensor, f0: torch.Tensor,
                 tol: Tolerances, q: int, h_max: float) -> float:
    """The first step size by HNW's starting algorithm (module doc), at most ``h_max``.

    ``f0`` is the rate at the start; ``rate(h, x)`` evaluates it at ``t0 + h`` (one evaluation, which
    the caller counts).  The norms treat a batch as :func:`error_norm` does."""
    with torch.no_grad():
        x0, f0 = x0.detach(), f0.detach()
        scale = tol.atol + tol.rtol * x0.abs()
        d0, d1 = _scaled_norm(x0 / scale, tol.norm), _scaled_norm(f0 / scale, tol.norm)
        h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 or not math.isfinite(d1) else 0.01 * d0 / d1
        h0 = min(h0, h_max)
        f1 = rate(h0, x0 + h0 * f0)
        d2 = _scaled_norm((f1.detach() - f0) / scale, tol.norm) / h0
        big = max(d1, d2)
        h1 = max(1e-6, h0 * 1e-3) if big <= 1e-15 else (0.01 / big) ** (1.0 / (q + 1))
        return min(100 * h0, h1, h_max)
