"""Fixed-step explicit Runge–Kutta integration.

``integrate(f, x0, scheme, n_steps)`` solves ``x' = f(t, x)`` on ``t_span = (t0, t1)``
with ``N_t = n_steps`` equal steps of size ``h = (t1 - t0) / N_t``:

* step ``k`` starts at ``t_k = t0 + (t1 - t0) * k / N_t`` (computed from the integer
  ``k``, never accumulated, so there is no drift);
* stage ``i`` of step ``k`` sits at the exact rational position ``(k + c_i) / N_t`` of
  the span, exposed to callers as a :class:`StagePosition` (the OdeBlock uses it to pick
  the weight piece exactly);
* tableau entries equal to zero are skipped, and so is a stage no weight uses (the last stage of an
  embedded pair taken as a fixed-step scheme); equal coefficients of a row are applied once to the
  sum of their stages and a ratio of ±1 is an addition or a subtraction, not a multiplication
  (:func:`combination`: the 3/8 rule's last stage is ``x + h (k1 - k2 + k3)``, as one writes it by
  hand); every coefficient is a Python float, so the loop never synchronises host and device;
* ``f(t, x)`` receives ``t`` as a 0-dim tensor on ``x0``'s device, in its dtype (as torchdiffeq passes
  it: ``torch.sin(t)`` works), all of them made before the first step without a copy from the host
  (:func:`time_tensor`);
* ``t_eval`` asks for the state at chosen times of the step grid (``t0 + k h``), as torchdiffeq's
  ``odeint(f, x0, t)`` returns it at every time of ``t``: the steps stay the ``n_steps`` equal ones
  and nothing is interpolated, so a time off the grid is refused with the grid it must lie on.

Adaptive steps chosen by an embedded pair's error estimate are in :mod:`cnet_lib.core.adaptive`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Callable, Iterator, Optional, Sequence, Union

import torch

from .schemes import Tableau, get_scheme

__all__ = ["StagePosition", "integrate", "integrate_positions", "stage_positions", "step_times", "check_n_steps",
           "weighted_sum", "combination", "grid_indices", "time_tensor"]


@dataclass(frozen=True)
class StagePosition:
    """Where one stage evaluation sits: step ``k`` of ``n_steps``, at fraction ``c`` of it.

    ``tau = (k + c) / n_steps`` is the exact position in the normalised span [0, 1];
    ``t`` is the float time ``t0 + (t1 - t0) * tau``.  ``stage`` is the stage index ``i``.
    """

    k: int
    stage: int
    c: Fraction
    n_steps: int
    t: float

    @property
    def tau(self) -> Fraction:
        """The exact position ``(k + c) / n_steps`` of the stage in the normalised span [0, 1]."""
        return (self.k + self.c) / self.n_steps

    @property
    def side(self) -> int:
        """Which one-sided limit the stage reads at a break point: -1 (left) for c = 1, else +1.

        A stage always reads the weights of its own step's interval [t_k, t_{k+1}]: the
        last stage of a step (c = 1) takes the left limit, every other stage (c = 0
        included) the right limit.
        """
        return -1 if self.c == 1 else 1


def check_n_steps(n_steps) -> int:
    """``n_steps`` itself when it is a positive int (N_t); a TypeError or ValueError that says so otherwise."""
    if isinstance(n_steps, bool) or not isinstance(n_steps, int):
        raise TypeError(f"n_steps must be a positive int (the number of steps N_t), got {n_steps!r}")
    if n_steps < 1:
        raise ValueError(f"n_steps must be >= 1 (the number of steps N_t), got {n_steps}")
    return n_steps


def _check_span(t_span) -> tuple[float, float]:
    try:
        t0, t1 = (float(v) for v in t_span)
    except (TypeError, ValueError):
        raise ValueError(f"t_span must be a pair of numbers (t0, t1), got {t_span!r}") from None
    if not (math.isfinite(t0) and math.isfinite(t1)) or t1 == t0:
        raise ValueError(f"t_span must be two different finite times (t0, t1), got {t_span!r} (e.g. t_span=(0.0, 1.0))")
    return t0, t1


def step_times(n_steps: int, t_span: Sequence[float] = (0.0, 1.0)) -> list[float]:
    """The N_t + 1 grid times ``t0 + (t1 - t0) * k / N_t``, k = 0..N_t."""
    check_n_steps(n_steps)
    t0, t1 = _check_span(t_span)
    return [t0 + (t1 - t0) * k / n_steps for k in range(n_steps + 1)]


def stage_positions(
    scheme: Union[str, Tableau], n_steps: int, t_span: Sequence[float] = (0.0, 1.0)
) -> Iterator[StagePosition]:
    """Every stage evaluation of a run, in the order :func:`integrate` makes them (a stage no weight
    uses, :attr:`Tableau.used_stages`, is not evaluated)."""
    tab = get_scheme(scheme)
    check_n_steps(n_steps)
    t0, t1 = _check_span(t_span)
    used = tab.used_stages
    for k in range(n_steps):
        for i in used:
            c = tab.c[i]
            yield StagePosition(k, i, c, n_steps, t0 + (t1 - t0) * float((k + c) / n_steps))


def integrate_positions(
    f: Callable[[StagePosition, torch.Tensor], torch.Tensor],
    x0: torch.Tensor,
    scheme: Union[str, Tableau],
    n_steps: int,
    t_span: Sequence[float] = (0.0, 1.0),
    return_path: bool = False,
    t_eval: Optional[Sequence] = None,
) -> torch.Tensor:
    """Like :func:`integrate`, but ``f`` receives the exact :class:`StagePosition` of each stage."""
    tab = get_scheme(scheme)
    check_n_steps(n_steps)
    t0, t1 = _check_span(t_span)
    if return_path and t_eval is not None:
        raise ValueError("give return_path=True (the state at every step) or t_eval (the states at chosen times), not both")
    keep = None if t_eval is None else grid_indices(t_eval, n_steps, (t0, t1))
    h = (t1 - t0) / n_steps
    rows, b = combination(tab)
    positions = stage_positions(tab, n_steps, (t0, t1))
    x = x0
    path = [x0] if return_path or keep is not None else None
    used = tab.used_stages
    for _ in range(n_steps):
        ks: list = [None] * tab.stages
        for i in used:
            ks[i] = f(next(positions), _advance(x, h, rows[i], ks) if rows[i] else x)
        x = _advance(x, h, b, ks)
        if path is not None:
            path.append(x)
    if keep is not None:
        return torch.stack([path[k] for k in keep])
    return torch.stack(path) if path is not None else x


Combination = tuple[float, tuple[tuple[float, tuple[int, ...]], ...]]
"""A row ``Σ_j w_j k_j`` as ``(g, ((r, js), ...))``: ``g Σ_groups r Σ_{j in js} k_j``, the first ratio 1."""


@lru_cache(maxsize=None)
def combination(tab: Tableau) -> tuple[tuple[Optional[Combination], ...], Combination]:
    """Each row of ``a`` (``None`` for a stage read at ``x`` itself) and the weights ``b`` of ``tab``, as
    :data:`Combination`: the stages are grouped by equal coefficient (summed before any multiplication), and
    the factor ``g`` is the coefficient that leaves the most groups a ratio of ±1 (an addition or a
    subtraction, no multiplication).  Exact: the grouping compares Fractions, and each float is rounded once
    from its exact ratio.  The 3/8 rule's weights become ``(1/8, ((1, (0, 3)), (3, (1, 2))))``:
    ``(k1 + k4 + 3 (k2 + k3)) / 8``."""
    return tuple(_combination(row) for row in tab.a), _combination(tab.b)


def _combination(row: Sequence[Fraction]) -> Optional[Combination]:
    groups: dict[Fraction, list[int]] = {}
    for j, w in enumerate(row):
        if w != 0:
            groups.setdefault(w, []).append(j)
    if not groups:
        return None
    values = list(groups)
    g = max(values, key=lambda v: (sum(abs(u / v) == 1 for u in values), v == 1, -values.index(v)))
    ordered = [g] + [v for v in values if v != g]
    return float(g), tuple((float(v / g), tuple(groups[v])) for v in ordered)


def _advance(x: torch.Tensor, h: float, comb: Combination, ks: Sequence[torch.Tensor]) -> torch.Tensor:
    """``x + h Σ_j w_j k_j`` for a row given as a :data:`Combination`: ``x + (h g) Σ r S``.  Euler's single weight
    1 is ``x + h * k``, the ResNet update, bit for bit."""
    g, groups = comb
    acc = None
    for r, js in groups:
        s = ks[js[0]]
        for j in js[1:]:
            s = s + ks[j]
        if acc is None:
            acc = s
        elif r == 1.0:
            acc = acc + s
        elif r == -1.0:
            acc = acc - s
        else:
            acc = acc + r * s
    return x + (h * g) * acc


def grid_indices(t_eval: Sequence, n_steps: int, t_span: Sequence[float] = (0.0, 1.0)) -> list[int]:
    """The step index ``k`` of each time of ``t_eval`` on the grid ``t0 + (t1 - t0) k / N_t`` (a float within
    1e-9 of a step of the grid, relative to h, or an exact Fraction on it); a time off the grid raises a
    ValueError that names it and the grid."""
    check_n_steps(n_steps)
    t0, t1 = _check_span(t_span)
    if torch.is_tensor(t_eval):
        t_eval = t_eval.detach().cpu().reshape(-1).tolist()
    try:
        times = list(t_eval)
    except TypeError:
        raise TypeError(f"t_eval must be a sequence of times (or a 1-D tensor), got {t_eval!r}") from None
    if not times:
        raise ValueError("t_eval is empty: give at least one time of the step grid (e.g. t_eval=step_times(n_steps))")
    out = []
    for i, t in enumerate(times):
        if isinstance(t, Fraction):
            s = (t - Fraction(t0)) / (Fraction(t1) - Fraction(t0)) * n_steps
            k = s.numerator if s.denominator == 1 else None
        else:
            s = (float(t) - t0) / (t1 - t0) * n_steps
            k = round(s) if math.isfinite(s) and abs(s - round(s)) <= 1e-9 else None
        if k is None or not 0 <= k <= n_steps:
            h = (t1 - t0) / n_steps
            raise ValueError(
                f"t_eval[{i}] = {t!r} is not a time of the step grid: the {n_steps} steps of h = {h:g} on "
                f"[{t0:g}, {t1:g}] give the state at t0 + k h only (step_times(n_steps, t_span)), nothing is "
                "interpolated. Choose times on that grid, or an n_steps that puts your times on it")
        out.append(int(k))
    return out


def time_tensor(times: Sequence[float], like: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The float ``times`` as 0-dim tensors on ``like``'s device, in its real dtype (float64 for a state that is
    not floating point): what ``f(t, x)`` receives as ``t``.  On the CPU one tensor, unbound; elsewhere each is
    filled on the device (a kernel given the value, no copy from the host: nothing waits, and a CUDA graph can
    capture it)."""
    dtype = like.dtype if like.is_floating_point() or like.is_complex() else torch.float64
    if like.is_complex():
        dtype = torch.empty(0, dtype=dtype).real.dtype
    if like.device.type == "cpu":
        return torch.tensor(list(times), dtype=dtype).unbind(0)
    return tuple(torch.full((), t, dtype=dtype, device=like.device) for t in times)


def weighted_sum(coeffs: Sequence[tuple[int, float]], items: Sequence[torch.Tensor]) -> torch.Tensor:
    """Σ_j w_j items[j] over the ``(j, w_j)`` pairs (the non-zero coefficients only); a lone weight
    1 is no multiplication, so reading one item through it is exact, and a later weight ±1 is an addition or a
    subtraction (the same bits as multiplying by ±1, one operation fewer).  Used for the stages of a
    Runge–Kutta step and for θ(t) = Σ_β φ_β θ̂_β (:mod:`cnet_lib.core.odeblock`)."""
    (j, w), *rest = coeffs
    acc = items[j] if w == 1.0 else w * items[j]
    for j, w in rest:
        if w == 1.0:
            acc = acc + items[j]
        elif w == -1.0:
            acc = acc - items[j]
        else:
            acc = acc + w * items[j]
    return acc


def integrate(
    f: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    x0: torch.Tensor,
    scheme: Union[str, Tableau],
    n_steps: int,
    t_span: Sequence[float] = (0.0, 1.0),
    return_path: bool = False,
    t_eval: Optional[Sequence] = None,
) -> torch.Tensor:
    """Integrate ``x' = f(t, x)`` from ``x0`` over ``t_span`` with ``n_steps`` RK steps.

    Returns ``x(t1)``; with ``return_path=True`` the tensor of shape ``(n_steps + 1, *x0.shape)`` holding the
    state at every grid time (see :func:`step_times`); with ``t_eval`` (times of that grid, floats, Fractions
    or a 1-D tensor, in any order) the tensor of shape ``(len(t_eval), *x0.shape)`` of the states at those
    times, as ``torchdiffeq.odeint(f, x0, t)`` returns them.  A time off the grid is refused (nothing is
    interpolated): choose ``n_steps`` so that the times you want are steps, e.g. ``t_eval=[0.25, 0.5, 1.0]``
    with ``n_steps=8``.  ``t`` is passed to ``f`` as a 0-dim tensor on ``x0``'s device, in its dtype.

    Example::

        x1 = integrate(lambda t, x: torch.cos(t) * x, torch.ones(3), "rk4_classic", n_steps=16)
    """
    tab = get_scheme(scheme)
    times = iter(time_tensor([pos.t for pos in stage_positions(tab, n_steps, t_span)], x0))
    return integrate_positions(lambda pos, x: f(next(times), x), x0, tab, n_steps, t_span, return_path, t_eval)
