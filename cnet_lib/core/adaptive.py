"""Adaptive steps: an embedded Runge–Kutta pair chooses its own steps for a tolerance.

``integrate_adaptive(f, x0, "dopri5", t_span, rtol=..., atol=...)`` solves ``x' = f(t, x)`` with the
pair's error estimate ``e = h Σ (b_i − b̂_i) k_i`` (:class:`cnet_lib.core.schemes.EmbeddedPair`) and the
controller, norm and first step below (Hairer, Nørsett and Wanner I,
§II.4): a step is accepted when its scaled error norm is at most 1, and rejected (and retried shorter)
otherwise.  The propagated solution is the pair's row ``b`` (for ``bosh3`` and ``dopri5`` the higher
order: local extrapolation).  FSAL pairs reuse their last stage as the next step's first.

**Break points.**  ``breakpoints`` are times where the rate may jump (θ(t) of a piecewise-constant
basis: t = k/M).  No step crosses one: a step that would is shortened to end *exactly* there (its end
time is the break point's float, not an accumulated sum), the first stage after it is evaluated
afresh (an FSAL stage from the left of a jump is the wrong derivative), and a step shortened this way
does not shrink the next one (the next proposal is the larger of the controller's and the step planned
before shortening).  Each stage is told its position as an :class:`AdaptivePosition`: the index of the
interval between break points that its step lies in, and the exact rational position ``tau`` in the
normalised span, clamped to that interval, with the one-sided limit ``side`` (−1 at the interval's
right end, else +1): a stage never reads another interval's weights, whatever the rounding of its
float time (never ``int(t * M)`` on floats).

**What it returns.**  :class:`AdaptiveSolution`: the state at ``t1`` (and the states at the accepted
times with ``return_path``, the states at chosen times with ``t_eval``: those times are break points
as well, so a step ends exactly on each and nothing is interpolated) and :class:`AdaptiveStats`: the accepted grid, the number of rate
evaluations (NFE), accepted and rejected steps and where the rejected ones started.  After
``max_steps`` attempts the solve stops with an error that says what to do.

**Gradients** flow through the accepted steps with their sizes held fixed (the step choice is made
from detached values and is not differentiated: discretise-then-optimise on the chosen grid).  The
book uses the adaptive path for evaluation only.

Also here: the step-size control of an embedded pair, its error norm, controller and first step (:func:`error_norm`,
:func:`propose_step`, :func:`initial_step`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Optional, Sequence, Union

import torch

from .integrate import time_tensor, weighted_sum
from .schemes import EmbeddedPair, Tableau, get_scheme
from .validation import check_float, check_int

__all__ = ["AdaptivePosition", "AdaptiveStats", "AdaptiveSolution", "MaxStepsError", "embedded_step", "check_pair",
           "integrate_adaptive", "integrate_adaptive_positions", "SAFETY", "FACMIN", "FACMAX", "NORMS", "Tolerances",
           "error_norm", "propose_step", "initial_step"]


# Step-size control for embedded Runge–Kutta pairs: the error norm, the controller, the first step.
#
# All three follow Hairer, Nørsett and Wanner, *Solving Ordinary Differential Equations I* (2nd ed.,
# 1993), §II.4.  The controller is the plain I-controller of their eq. 4.13, the one of SciPy's ``RK45`` and
# ``RK23`` (with the same pair, norm and starting step the solve takes SciPy's steps one for one:
# ``tests/test_core_adaptive.py``), not the stabilised (PI) controller of their code DOPRI5:
#
# * **error norm** (eq. 4.11): with the embedded estimate ``e = y_1 − ŷ_1`` of one step from ``y_0``,
#
#   .. math::
#
#       \mathrm{err} = \Big\lVert \frac{e}{\mathrm{atol} + \mathrm{rtol}\,\max(|y_0|, |y_1|)}
#       \Big\rVert_\mathrm{RMS},
#
#   and the step is accepted when ``err ≤ 1``.  **A batch** (a state whose first dimension is the batch,
#   ``x.dim() ≥ 2``) is measured per sample: ``norm="max"`` (the default here) takes the RMS over each
#   sample's entries and then the **largest over the batch**, so that every sample meets the tolerance
#   whatever else is in its batch, and a sample's steps do not get longer because easy samples share its
#   batch (at the price of a step count that depends on the batch: the hardest sample sets it).
#   ``norm="rms"`` takes the RMS over the whole batch, as torchdiffeq does: one hard sample among B easy
#   ones then has its error diluted by about √B.  A state of dimension 0 or 1 is one sample.
# * **controller** (eq. 4.13): ``h_new = h · min(facmax, max(facmin, fac · err^(−1/(q+1))))`` with
#   ``q = min(p, p̂)`` the lower order of the pair, safety factor ``fac = 0.9``, ``facmin = 0.2`` and
#   ``facmax = 10`` (DOPRI5's and torchdiffeq's limits), and ``facmax = 1`` for the step right after a
#   rejected one (HNW: "it is advisable to put facmax = 1 in the steps right after a step-rejection").
# * **first step** (HNW I, §II.4, "Starting step size"): ``d0 = ‖y_0‖``, ``d1 = ‖f(t_0, y_0)‖`` (scaled
#   norms as above, with ``|y_0|`` alone), ``h0 = 0.01 d0/d1`` (``10⁻⁶`` if either is below ``10⁻⁵``),
#   one explicit Euler step to ``y_0 + h0 f_0`` and ``d2 = ‖f(t_0 + h0, ·) − f_0‖ / h0``, then
#   ``h1 = (0.01 / max(d1, d2))^(1/(q+1))`` (``max(10⁻⁶, 10⁻³ h0)`` if both are below ``10⁻¹⁵``) and
#   ``h = min(100 h0, h1)``, all capped at the longest step allowed.

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


# ---------------------------------------------------------------------- the module's own part (its docstring above)

@dataclass(frozen=True)
class AdaptivePosition:
    """Where one stage of an adaptive solve sits: attempt ``step``, stage ``stage`` (−1 for the trial
    evaluation of the first-step algorithm), in interval ``piece`` between break points; ``tau`` is its
    exact position in the normalised span [0, 1] (clamped to its interval), ``side`` the one-sided limit
    it reads at a break point (−1 only at the interval's right end), ``t`` its float time."""

    step: int
    stage: int
    piece: int
    tau: Fraction
    side: int
    t: float


@dataclass(frozen=True)
class AdaptiveStats:
    """What an adaptive solve did: ``t`` the accepted grid (t0 first, t1 last), ``nfe`` the rate
    evaluations (the first step's trial evaluation and the fresh first stage after each break point
    included), ``n_accepted`` and ``n_rejected`` steps, ``rejected_t`` where each rejected attempt
    started, and what it was asked for (``pair``, ``rtol``, ``atol``, ``norm``)."""

    t: tuple
    nfe: int
    n_accepted: int
    n_rejected: int
    rejected_t: tuple
    pair: str
    rtol: float
    atol: float
    norm: str

    def as_dict(self) -> dict:
        """The stats as plain JSON-ready values."""
        return {"t": list(self.t), "nfe": self.nfe, "n_accepted": self.n_accepted, "n_rejected": self.n_rejected,
                "rejected_t": list(self.rejected_t), "pair": self.pair, "rtol": self.rtol, "atol": self.atol,
                "norm": self.norm}


@dataclass(frozen=True)
class AdaptiveSolution:
    """``x``: the state at t1; ``path``: the states at the accepted times ``stats.t`` (with
    ``return_path=True``, else None); ``stats``: :class:`AdaptiveStats`; ``x_eval``: the states at the times
    ``t_eval`` asked for, in their order (shape ``(len(t_eval), *x0.shape)``; None without ``t_eval``)."""

    x: torch.Tensor
    path: Optional[torch.Tensor]
    stats: AdaptiveStats
    x_eval: Optional[torch.Tensor] = None


class MaxStepsError(RuntimeError):
    """An adaptive solve needed more than ``max_steps`` attempts."""


def check_pair(pair: Union[str, Tableau]) -> EmbeddedPair:
    """The :class:`EmbeddedPair` named by ``pair``; a fixed-step scheme is refused with the names of the pairs."""
    tab = get_scheme(pair)
    if not isinstance(tab, EmbeddedPair):
        raise ValueError(f"adaptive steps need an embedded pair (an error estimate), such as 'bosh3' or 'dopri5'; "
                         f"{tab.name!r} is a fixed-step scheme: give it n_steps instead of rtol/atol")
    return tab


def _combine(pair: EmbeddedPair, x: torch.Tensor, h: float, ks: Sequence) -> tuple[torch.Tensor, torch.Tensor]:
    """(y1, e): y1 = x + h Σ b_i k_i and e = h Σ (b_i − b̂_i) k_i."""
    return x + h * weighted_sum(pair.float_b, ks), h * weighted_sum(pair.float_error, ks)


def _stages(pair: EmbeddedPair, x: torch.Tensor, h: float, k1: torch.Tensor, evaluate: Callable) -> list:
    """Every stage of one step from ``x`` (both weight rows use them): k_1 given,
    k_i = evaluate(i, x + h Σ_j a_ij k_j)."""
    ks: list = [None] * pair.stages
    ks[0] = k1
    a = pair.float_a
    for i in range(1, pair.stages):
        ks[i] = evaluate(i, x + h * weighted_sum(a[i], ks) if a[i] else x)
    return ks


def embedded_step(f: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], t: float, x: torch.Tensor, h: float,
                  pair: Union[str, Tableau]) -> tuple[torch.Tensor, torch.Tensor]:
    """One step of an embedded pair from ``(t, x)`` with step ``h``: ``(y1, e)`` where
    ``y1 = x + h Σ b_i k_i`` is the propagated solution and ``e = y1 − ŷ1 = h Σ (b_i − b̂_i) k_i`` the
    embedded error estimate, ``k_i = f(t + c_i h, x + h Σ_j a_ij k_j)`` (``t`` passed to ``f`` as a 0-dim tensor
    on ``x``'s device, in its dtype)."""
    tab = check_pair(pair)
    times = time_tensor([t + float(c) * h for c in tab.c], x)
    ks = _stages(tab, x, h, f(times[0], x), lambda i, xi: f(times[i], xi))
    return _combine(tab, x, h, ks)


def _positions(values: Sequence, name: str) -> list[Fraction]:
    """Positions in [0, 1] of the normalised span, exactly (floats convert exactly)."""
    if torch.is_tensor(values):
        values = values.detach().cpu().reshape(-1).tolist()
    out = []
    for i, p in enumerate(values):
        if isinstance(p, float) and not math.isfinite(p):
            raise ValueError(f"{name}[{i}] = {p!r} is not a finite position")
        q = Fraction(p)
        if not 0 <= q <= 1:
            raise ValueError(f"{name}[{i}] = {p!r} lies outside the span; give positions in [0, 1] of the span")
        out.append(q)
    return out


def _normalised_breakpoints(breakpoints: Sequence) -> tuple[Fraction, ...]:
    """The interval ends 0 = p_0 < ... < p_n = 1 of the normalised span from interior ``breakpoints``."""
    return tuple(sorted(set(_positions(breakpoints, "breakpoints")) | {Fraction(0), Fraction(1)}))


def _check_span(t_span) -> tuple[float, float]:
    try:
        t0, t1 = (float(v) for v in t_span)
    except (TypeError, ValueError):
        raise ValueError(f"t_span must be a pair of numbers (t0, t1), got {t_span!r}") from None
    if not (math.isfinite(t0) and math.isfinite(t1)) or not t1 > t0:
        raise ValueError(f"t_span must be two finite times with t1 > t0 (adaptive steps go forward), got {t_span!r} "
                         "(e.g. t_span=(0.0, 1.0))")
    return t0, t1


class _Solve:
    """The state of one adaptive solve (counters, grid) and its stage positions."""

    def __init__(self, f, pair: EmbeddedPair, t_span, tol: Tolerances, points: tuple):
        self.f, self.pair, self.tol = f, pair, tol
        self.t0, self.t1 = t_span
        self.T0, self.L = Fraction(self.t0), Fraction(self.t1) - Fraction(self.t0)
        self.points = points
        self.ends = [self.t0 + (self.t1 - self.t0) * float(p) for p in points]
        self.ends[0], self.ends[-1] = self.t0, self.t1
        self.nfe = self.attempts = 0
        self.grid, self.rejected = [self.t0], []
        self.c = [float(v) for v in pair.c]

    def position(self, piece: int, stage: int, t: float, at_end: bool = False) -> AdaptivePosition:
        """The stage at float time ``t`` of a step in interval ``piece`` (``at_end``: exactly its right end)."""
        lo, hi = self.points[piece], self.points[piece + 1]
        tau = hi if at_end else min(max((Fraction(t) - self.T0) / self.L, lo), hi)
        return AdaptivePosition(self.attempts, stage, piece, tau, -1 if tau == hi else 1,
                                self.ends[piece + 1] if at_end else t)

    def rate(self, pos: AdaptivePosition, x: torch.Tensor) -> torch.Tensor:
        self.nfe += 1
        return self.f(pos, x)

    def step(self, piece: int, t: float, x, k1, h: float, clipped: bool) -> tuple:
        """One attempt from ``(t, x)``: ``(y1, err, ks)``."""
        pair = self.pair

        c = self.c

        def evaluate(i, xi):
            return self.rate(self.position(piece, i, t + c[i] * h, clipped and c[i] == 1.0), xi)

        ks = _stages(pair, x, h, k1, evaluate)
        y1, e = _combine(pair, x, h, ks)
        return y1, error_norm(e, x, y1, self.tol.rtol, self.tol.atol, self.tol.norm), ks

    def too_many(self, t: float, h: float) -> MaxStepsError:
        tol = self.tol
        return MaxStepsError(
            f"the adaptive solve with {self.pair.name} stopped after max_steps = {tol.max_steps} steps "
            f"({len(self.grid) - 1} accepted, {len(self.rejected)} rejected) at t = {t:.6g} of "
            f"[{self.t0:g}, {self.t1:g}] (last step {h:.3g}) for rtol = {tol.rtol:g}, atol = {tol.atol:g}: "
            "loosen the tolerances (raise rtol or atol) or allow more steps (raise max_steps)")


def _run_piece(solve: _Solve, piece: int, x: torch.Tensor, h: float, first: bool, path: Optional[list]) -> tuple:
    """Integrate across interval ``piece`` from its start: ``(x at its end, the next proposed step)``."""
    pair, tol = solve.pair, solve.tol
    t, end, q = solve.ends[piece], solve.ends[piece + 1], pair.error_order
    k1 = solve.rate(solve.position(piece, 0, t), x)
    if first:
        h = initial_step(lambda dh, xi: solve.rate(solve.position(piece, -1, t + dh), xi), x, k1, tol, q, end - t)
    facmax = FACMAX
    while t < end:
        if solve.attempts >= tol.max_steps:
            raise solve.too_many(t, h)
        clipped = t + h >= end
        h_try = end - t if clipped else h
        if t + h_try == t:
            raise FloatingPointError(f"the adaptive step underflowed at t = {t!r} ({pair.name}, rtol = {tol.rtol:g}, "
                                     f"atol = {tol.atol:g}): the rate is not finite or not smooth there")
        y1, err, ks = solve.step(piece, t, x, k1, h_try, clipped)
        solve.attempts += 1
        if err > 1:
            solve.rejected.append(t)
            h, facmax = propose_step(h_try, err, q, facmax=1.0), 1.0
            continue
        x, t = y1, (end if clipped else t + h_try)
        solve.grid.append(t)
        if path is not None:
            path.append(x)
        h_next = propose_step(h_try, err, q, facmax)
        h, facmax = (max(h_next, h) if clipped else h_next), FACMAX
        if t < end:
            k1 = ks[-1] if pair.fsal else solve.rate(solve.position(piece, 0, t), x)
    return x, h


def integrate_adaptive_positions(
    f: Callable[[AdaptivePosition, torch.Tensor], torch.Tensor],
    x0: torch.Tensor,
    pair: Union[str, Tableau],
    t_span: Sequence[float] = (0.0, 1.0),
    *,
    rtol: float,
    atol: float,
    breakpoints: Sequence = (),
    max_steps: int = 10_000,
    norm: str = "max",
    return_path: bool = False,
    t_eval: Optional[Sequence] = None,
) -> AdaptiveSolution:
    """Like :func:`integrate_adaptive`, but ``f`` receives each stage's :class:`AdaptivePosition`, and
    ``breakpoints`` and ``t_eval`` are positions in the *normalised* span [0, 1] (exact Fractions, like the
    bases' break points; 0 and 1 may be included)."""
    tab = check_pair(pair)
    tol = Tolerances(rtol, atol, max_steps, norm)
    wanted = None if t_eval is None else _positions(t_eval, "t_eval")
    points = _normalised_breakpoints([*breakpoints, *(wanted or ())])
    solve = _Solve(f, tab, _check_span(t_span), tol, points)
    path = [x0] if return_path else None
    at = {Fraction(0): x0}
    x, h = x0, 0.0
    for piece in range(len(solve.points) - 1):
        x, h = _run_piece(solve, piece, x, h, piece == 0, path)
        at[solve.points[piece + 1]] = x
    stats = AdaptiveStats(tuple(solve.grid), solve.nfe, len(solve.grid) - 1, len(solve.rejected),
                          tuple(solve.rejected), tab.name, tol.rtol, tol.atol, tol.norm)
    x_eval = None if wanted is None else torch.stack([at[p] for p in wanted])
    return AdaptiveSolution(x, torch.stack(path) if path is not None else None, stats, x_eval)


def integrate_adaptive(
    f: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    x0: torch.Tensor,
    pair: Union[str, Tableau],
    t_span: Sequence[float] = (0.0, 1.0),
    *,
    rtol: float,
    atol: float,
    breakpoints: Sequence = (),
    max_steps: int = 10_000,
    norm: str = "max",
    return_path: bool = False,
    t_eval: Optional[Sequence] = None,
) -> AdaptiveSolution:
    """Integrate ``x' = f(t, x)`` from ``x0`` over ``t_span`` (t1 > t0) with the embedded ``pair``
    (``"bosh3"``, ``"dopri5"`` or an :class:`EmbeddedPair`) choosing its own steps for ``rtol`` and
    ``atol`` (see the module doc and :mod:`cnet_lib.core.adaptive`: error norm, controller, first
    step; ``norm`` says how a batch is measured).  ``breakpoints`` are times inside the span where ``f``
    may jump: no step crosses one.  ``t_eval``: times in the span (floats or a 1-D tensor) where the state
    is wanted, as torchdiffeq's ``odeint(f, x0, t)`` gives it: each is a break point too, so a step ends on it
    exactly (no interpolation; a point costs a shortened step and a fresh first stage).  ``t`` is passed to
    ``f`` as a 0-dim tensor on ``x0``'s device, in its dtype.  Returns an :class:`AdaptiveSolution` (``.x``,
    ``.path`` with ``return_path=True``, ``.x_eval`` with ``t_eval``, ``.stats``); raises
    :class:`MaxStepsError` after ``max_steps`` attempted steps.

    Example::

        sol = integrate_adaptive(lambda t, x: -x, torch.ones(3), "dopri5", (0.0, 1.0), rtol=1e-6, atol=1e-8,
                                 t_eval=[0.5, 1.0])
        sol.x_eval.shape  # (2, 3)
    """
    t0, t1 = _check_span(t_span)
    start, length = Fraction(t0), Fraction(t1) - Fraction(t0)

    def normalised(times, name):
        if torch.is_tensor(times):
            times = times.detach().cpu().reshape(-1).tolist()
        out = []
        for i, b in enumerate(times):
            if isinstance(b, float) and not math.isfinite(b):
                raise ValueError(f"{name}[{i}] = {b!r} is not a finite time")
            q = (Fraction(b) - start) / length
            if not 0 <= q <= 1:
                raise ValueError(f"{name}[{i}] = {b!r} lies outside the span t_span = ({t0:g}, {t1:g})")
            out.append(q)
        return out

    def rate(pos, x):
        (t,) = time_tensor([pos.t], x)
        return f(t, x)

    return integrate_adaptive_positions(rate, x0, pair, (t0, t1), rtol=rtol, atol=atol,
                                        breakpoints=normalised(breakpoints, "breakpoints"), max_steps=max_steps,
                                        norm=norm, return_path=return_path,
                                        t_eval=None if t_eval is None else normalised(t_eval, "t_eval"))
